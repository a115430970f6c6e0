/* SPDX-License-Identifier: MIT */
/*
 * Hydrated workspaces (cli.md 'wsnap hydrate'): a snapshot mounted
 * read-only as the lower layer of an overlay whose upper directory takes
 * every change, mounted at WORKSPACE.
 *
 * The state directory of WORKSPACE is its sibling '.<name>.wsnap' (so that
 * it is found again from WORKSPACE alone, and lies on the same filesystem
 * as the workspace's parent, where the changes are expected to go):
 *
 *	.<name>.wsnap/state    the state file, written atomically
 *	.<name>.wsnap/lower/   mountpoint of the snapshot (type fuse.wsnap)
 *	.<name>.wsnap/upper/   the upper directory, unless --upper DIR
 *	.<name>.wsnap/work/    overlayfs' work directory
 *
 * The work directory must be on the upper directory's filesystem: with
 * --upper DIR on another filesystem than the state directory it is DIR's
 * sibling '.<name of DIR>.wsnap-work' instead, recorded in the state with
 * its device and inode once hydrate made it.
 *
 * The state file holds one 'key value' line per fact, values
 * percent-encoded (any byte of a path survives): the workspace, the
 * archive (absolute path and identity: device, inode, size, mtime, ctime),
 * the policy's fingerprint, the overlay kind and the lower, upper and work
 * directories, and whether the upper directory is ours (made by hydrate,
 * removed by unmount) or the user's (kept).
 *
 * Trust (policy.md section 11): the state is hostile input. It is read,
 * and acted on, only when the state directory is reached without
 * following a symlink, is a directory owned by the caller and not
 * writable by group or others, and its file is a regular file of the
 * caller's that parses whole (bounded sizes, every key once, numbers in
 * range). Every path it names must be one hydrate makes for that
 * workspace: lower, work and a fresh upper directory inside the state
 * directory, or the work directory beside --upper DIR with the identity
 * it had when made (a changed one is refused; one without an identity is
 * left alone). Anything else is refused before anything changes.
 *
 * Invariants:
 *  - the state file exists before anything is mounted and goes last, so a
 *    hydrate or an unmount cut short leaves state that 'wsnap unmount'
 *    finishes taking down;
 *  - unmount takes the overlay down first, then the snapshot, then the
 *    state; a busy overlay is refused before anything changes;
 *  - removal never follows a symlink nor crosses into another mount, and
 *    acts on names relative to directories opened without following a
 *    symlink (fsutil.h);
 *  - a failed hydrate removes only what it made: the state directory is
 *    acted in only when its identity is the one mkdir gave, the outside
 *    work directory only once it was made by this run.
 */
#ifndef WSNAP_HYDRATE_H
#define WSNAP_HYDRATE_H

#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h>

#include "diff.h"
#include "error.h"
#include "fsutil.h"
#include "index.h"
#include "policy.h"
#include "upper.h"

enum wsnap_overlay {
	WSNAP_OVERLAY_AUTO = 0, /* kernel where permitted, else fuse */
	WSNAP_OVERLAY_KERNEL,	/* kernel overlayfs (mount type overlay) */
	WSNAP_OVERLAY_FUSE,	/* fuse-overlayfs (fuse.fuse-overlayfs) */
};

/* Hex digits of a policy fingerprint. */
#define WSNAP_HYDRATE_POLICY_ID_LEN 32

/* What identifies the archive file a workspace was hydrated from. */
struct wsnap_hydrate_archive_id {
	bool valid; /* false for standard input */
	uint64_t dev;
	uint64_t ino;
	uint64_t size;
	int64_t mtime_sec;
	int64_t mtime_nsec;
	int64_t ctime_sec;
	int64_t ctime_nsec;
};

struct wsnap_hydrate_state {
	char *workspace; /* absolute */
	char *dir;	 /* the state directory */
	char *archive;	 /* absolute path, or "-" */
	struct wsnap_hydrate_archive_id arc;
	char policy[WSNAP_HYDRATE_POLICY_ID_LEN + 1];
	enum wsnap_overlay kind;
	char *lower;
	char *upper;
	char *work;
	bool own_upper; /* made by hydrate: removed by unmount */
	/* the work directory outside the state directory, as made */
	bool work_id_valid;
	struct wsnap_fs_id work_id;
	/* the state directory as opened (not saved: found again each time) */
	bool dir_id_valid;
	struct wsnap_fs_id dir_id;
	/*
	 * Not saved: set by hydrate to the path of a member that
	 * fuse-overlayfs cannot present (wsnap_upper_fuse_hidden), whose
	 * overlay is then refused; NULL when there is none.
	 */
	const char *fuse_hidden;
};

/* Frees what st holds; st may be reused after. */
void wsnap_hydrate_state_release(struct wsnap_hydrate_state *st);

/*
 * The state directory of a workspace (absolute, resolved path): a
 * malloc'd string, or NULL when out of memory or when the workspace is
 * "/" (no sibling).
 */
char *wsnap_hydrate_state_dir(const char *workspace);

/*
 * The work directory beside an upper directory "DIR/NAME" (absolute):
 * "DIR/.NAME.wsnap-work", malloc'd; NULL when out of memory or when upper
 * is "/".
 */
char *wsnap_hydrate_work_sibling(const char *upper);

/*
 * Makes the state directory st->dir (mode 0700) and records its identity
 * in st. Errors: WSNAP_IO (EEXIST when anything is there; EPERM when what
 * is there once made is not the caller's own directory).
 */
enum wsnap_status wsnap_hydrate_state_create(struct wsnap_hydrate_state *st,
					     struct wsnap_error *err);

/*
 * Makes the directory name (mode, less the umask) in the state directory
 * st made (st->dir_id), and opens it into *fd unless fd is NULL (the
 * caller closes it). Errors: WSNAP_IO.
 */
enum wsnap_status wsnap_hydrate_make_in(const struct wsnap_hydrate_state *st,
					const char *name, mode_t mode, int *fd,
					struct wsnap_error *err);

/*
 * Makes the work directory st->work (mode 0700). Outside the state
 * directory, records its identity in st and saves the state again. Errors:
 * WSNAP_IO (EEXIST when anything is there: it is not ours).
 */
enum wsnap_status wsnap_hydrate_make_work(struct wsnap_hydrate_state *st,
					  struct wsnap_error *err);

/*
 * Reads the state of the workspace (absolute, resolved path) into *st,
 * under the trust rules above. Returns 1 when it has state, 0 when it has
 * none (not hydrated), -1 with err set (WSNAP_IO) when the state exists
 * but is not trusted, cannot be read or makes no sense.
 */
int wsnap_hydrate_state_load(struct wsnap_hydrate_state *st,
			     const char *workspace, struct wsnap_error *err);

/* Writes st's state file atomically (temporary file + rename) into the
 * state directory, which must be the one st->dir_id identifies. */
enum wsnap_status wsnap_hydrate_state_save(const struct wsnap_hydrate_state *st,
					   struct wsnap_error *err);

/*
 * The fingerprint of everything in a policy that shapes the index, as
 * WSNAP_HYDRATE_POLICY_ID_LEN hex digits and a NUL into out: equal
 * policies give equal fingerprints.
 */
void wsnap_hydrate_policy_id(const struct wsnap_policy *p,
			     char out[WSNAP_HYDRATE_POLICY_ID_LEN + 1]);

/*
 * Fills *id for the archive at path (not valid when it is "-" or a URL:
 * a remote source pins its object itself). Errors: WSNAP_IO when it cannot
 * be stat'ed.
 */
enum wsnap_status wsnap_hydrate_archive_id(const char *path,
					   struct wsnap_hydrate_archive_id *id,
					   struct wsnap_error *err);

/* True when both identify the same, unchanged file. */
bool wsnap_hydrate_archive_same(const struct wsnap_hydrate_archive_id *a,
				const struct wsnap_hydrate_archive_id *b);

/*
 * Mounts the overlay of st (lower, upper, work) at st->workspace, of kind
 * st->kind; WSNAP_OVERLAY_AUTO tries the kernel's and falls back to
 * fuse-overlayfs, and sets st->kind to the one mounted. fuse-overlayfs is
 * refused, naming the member, when st->fuse_hidden is set. Returns once
 * the workspace answers. Errors: WSNAP_IO (both messages when both
 * failed).
 */
enum wsnap_status wsnap_hydrate_mount_overlay(struct wsnap_hydrate_state *st,
					      struct wsnap_error *err);

/*
 * Takes down what st describes, in order: the overlay at the workspace (if
 * mounted there), the snapshot at the lower directory (if mounted), then
 * the work directory, the upper directory when it is ours, and the state
 * directory. Mounts whose daemon died are cleared. Without lazy a busy
 * mount is refused (WSNAP_IO, errnum EBUSY) and nothing after it is done;
 * with lazy mounts are detached. A mount of another type on top of the
 * workspace is refused, and so is, before anything changes, a state that
 * breaks the trust rules above. The state directory stays until
 * everything before it is done, so a later call finishes the job.
 */
enum wsnap_status wsnap_hydrate_teardown(const struct wsnap_hydrate_state *st,
					 bool lazy, struct wsnap_error *err);

/*
 * The changes the upper directory upper_fd holds over the lower layer,
 * the directory lower_fd (the snapshot mount, or any directory that is
 * the lower layer), as hydrate_changes.c defines them (what 'wsnap diff
 * ARCHIVE WORKSPACE' would list), into *count. fmt says how upper_fd
 * marks whiteouts, opaque and redirected directories; merged_fd (or -1)
 * is the workspace, for fuse-overlayfs's '.wh.' names; label names the
 * workspace in messages, lower_label the lower layer. Neither descriptor
 * is closed. Errors: WSNAP_IO (a layer that cannot be read),
 * WSNAP_REJECTED (what no snapshot can hold: a FIFO, a device).
 */
enum wsnap_status
wsnap_hydrate_count_changes(int lower_fd, const char *lower_label, int upper_fd,
			    int merged_fd, enum wsnap_upper_format fmt,
			    const char *label, uint64_t *count,
			    struct wsnap_error *err);

/*
 * Whether st may be torn down without losing work: WSNAP_OK when its
 * upper directory is the user's (--upper DIR, never removed), or its own
 * and without changes. Else WSNAP_IO with the refusal of cli.md 'wsnap
 * unmount' (one line: how many paths changed, and the hint to 'wsnap
 * pack WORKSPACE OUT' or --discard), or, when the changes cannot be
 * counted (the snapshot not mounted, a layer unreadable), a refusal that
 * says why. Nothing is changed.
 */
enum wsnap_status
wsnap_hydrate_keep_changes(const struct wsnap_hydrate_state *st,
			   struct wsnap_error *err);

enum wsnap_hydrate_unmount_flags {
	WSNAP_HYDRATE_LAZY = 1 << 0,	/* detach busy mounts */
	WSNAP_HYDRATE_DISCARD = 1 << 1, /* drop the changes of an own upper */
};

/*
 * 'wsnap unmount' of a path: when it is a hydrated workspace (it has a
 * state directory), tears it down and returns 1 with *status set; returns
 * 0 when it is not one (the caller handles the path), with *status
 * untouched. Without WSNAP_HYDRATE_DISCARD, a workspace whose own upper
 * directory holds changes is refused first (wsnap_hydrate_keep_changes).
 */
int wsnap_hydrate_unmount(const char *abs, unsigned flags,
			  enum wsnap_status *status, struct wsnap_error *err);

/*
 * Side B of 'wsnap diff ARCHIVE WORKSPACE' computed from the upper
 * directory (upper.h) instead of read through the overlay. It is used only
 * when it gives the full comparison's answer: the path resolves to a
 * hydrated workspace whose overlay and snapshot are mounted, hydrated from
 * the very file ARCHIVE names (same device, inode, size, mtime and ctime)
 * under a policy with the same fingerprint, so that side A's index is the
 * workspace's lower layer.
 */
struct wsnap_hydrate_diff {
	int upper_fd;
	int merged_fd; /* the workspace (fuse-overlayfs only), or -1 */
	enum wsnap_upper_format fmt;
	struct wsnap_upper *view;
	const char *declined; /* why the view was given up, or NULL */
};

/*
 * Whether path is such a workspace of archive under policy: 1 (then the
 * upper directory is open in hd), else 0. Never fails: anything amiss
 * means the full comparison. hd must be released in every case.
 */
int wsnap_hydrate_diff_check(struct wsnap_hydrate_diff *hd, const char *archive,
			     const char *path,
			     const struct wsnap_policy *policy);

/*
 * After a check that said 1: the merged view over idx (side A's index,
 * built from archive under policy; both must outlive hd) and *side over
 * it. label names the workspace in messages, archive_label the archive.
 * When the layers cannot say what the workspace shows (upper.h), hd is
 * released (upper_fd -1), hd->declined says why, *side is untouched and
 * the caller compares through the overlay. Errors: the walker's and
 * builder's for the merged tree (as the full comparison would report
 * them), WSNAP_IO.
 */
enum wsnap_status wsnap_hydrate_diff_side(struct wsnap_hydrate_diff *hd,
					  const struct wsnap_index *idx,
					  const char *label,
					  const char *archive_label,
					  const struct wsnap_policy *policy,
					  struct wsnap_diff_side *side,
					  struct wsnap_error *err);

void wsnap_hydrate_diff_release(struct wsnap_hydrate_diff *hd);

#endif
