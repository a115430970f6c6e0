/* SPDX-License-Identifier: MIT */
/*
 * What hydrate.c (mounts, teardown) and hydrate_state.c (the state, its
 * trust) share; internal to workspace/.
 */
#ifndef WSNAP_HYDRATE_IMPL_H
#define WSNAP_HYDRATE_IMPL_H

#include <fcntl.h>

#include "hydrate.h"

#define WSNAP_HYDRATE_STATE_FILE "state"
#define WSNAP_HYDRATE_STATE_TMP	 "state.tmp"

/* The names hydrate makes in the state directory. */
#define WSNAP_HYDRATE_LOWER "lower"
#define WSNAP_HYDRATE_UPPER "upper"
#define WSNAP_HYDRATE_WORK  "work"

#define WSNAP_HYDRATE_DIR_FLAGS                                                \
	(O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC)

/*
 * Opens the state directory dir (absolute) to act in it: *pfd its parent,
 * *sfd itself, both reached without following a symlink. dir must be a
 * directory owned by the caller, not writable by group or others, and,
 * when want is not NULL, the directory it identifies. Returns 1 (both
 * open), 0 when there is no state directory, -1 with err set (WSNAP_IO)
 * when it is refused.
 */
int wsnap_hydrate_dir_open(const char *dir, const struct wsnap_fs_id *want,
			   int *pfd, int *sfd, struct wsnap_error *err);

/* wsnap_hydrate_dir_open of st's state directory, which must be there and
 * be the one st->dir_id identifies when set. Errors: WSNAP_IO. */
enum wsnap_status
wsnap_hydrate_dir_open_made(const struct wsnap_hydrate_state *st, int *pfd,
			    int *sfd, struct wsnap_error *err);

/* The directory of an absolute path, malloc'd ("/" for "/x"); NULL when
 * out of memory. */
char *wsnap_hydrate_parent(const char *path);

/* The last component of an absolute path. */
const char *wsnap_hydrate_base(const char *path);

/* Whether the work directory of st lies in its state directory. */
bool wsnap_hydrate_work_inside(const struct wsnap_hydrate_state *st);

/*
 * Whether every path st names is one hydrate makes for st->workspace (the
 * rules in hydrate.h); when not, err is set (WSNAP_IO) naming the path.
 */
bool wsnap_hydrate_paths_ok(const struct wsnap_hydrate_state *st,
			    struct wsnap_error *err);

#endif
