/* SPDX-License-Identifier: MIT */
/*
 * Mounts as the tools see them, shared by mount, unmount and hydrate:
 * what is mounted at a path (/proc/self/mountinfo), taking a FUSE mount
 * down (fusermount3), mounting a snapshot in the background, and running a
 * helper program with its error output captured for a message.
 */
#ifndef WSNAP_MOUNTS_H
#define WSNAP_MOUNTS_H

#include <stdbool.h>
#include <stddef.h>

#include "error.h"
#include "index.h"

/* Most bytes of a helper program's error output kept for a message. */
#define WSNAP_RUN_MSG_MAX 1024

/* Longest file system type kept from mountinfo ("fuse.fuse-overlayfs"). */
#define WSNAP_FSTYPE_MAX 64

/*
 * Runs argv[0] (found through PATH) with argv, standard input from
 * /dev/null, standard error captured: its last non-empty line (where
 * helpers put the error, after any warnings) goes into msg (capacity cap,
 * NUL-terminated, "" when there was none). Returns the exit status (127 when
 * the program cannot be run, 128 + N when killed by signal N), or -1 with err
 * set when no process could be started.
 */
int wsnap_run(char *const argv[], char *msg, size_t cap,
	      struct wsnap_error *err);

/*
 * The absolute path of path without following its last component, which
 * may be a dead FUSE mount that answers ENOTCONN (realpath() fails there)
 * or, when missing is not NULL, missing (then *missing is set). Returns a
 * malloc'd string, or NULL with err set (WSNAP_IO).
 */
char *wsnap_mounts_resolve(const char *path, bool *missing,
			   struct wsnap_error *err);

/* "dir/name" as a malloc'd string, or NULL when out of memory. */
char *wsnap_path_join(const char *dir, const char *name);

/*
 * Whether something is mounted at abs (an absolute, resolved path): 1 with
 * the type of the topmost mount there in fstype (capacity cap; "overlay",
 * "fuse.wsnap" ...), 0 when nothing is, -1 with err set when mountinfo
 * cannot be read.
 */
int wsnap_mounts_type_at(const char *abs, char *fstype, size_t cap,
			 struct wsnap_error *err);

/*
 * fusermount3 -u (-uz when lazy) on abs. A busy mount is refused by the
 * kernel with nothing changed: WSNAP_IO with errnum EBUSY. Other failures
 * carry fusermount3's message in the reason.
 */
enum wsnap_status wsnap_mounts_fusermount(const char *abs, bool lazy,
					  struct wsnap_error *err);

/*
 * Mounts idx (built with keep_data) read-only at mountpoint (absolute, an
 * empty directory) exactly as 'wsnap mount' does without options: the
 * filesystem daemon is a detached copy of this process, and the call
 * returns once the mount answers. source is what the mount shows as its
 * source (the archive's absolute path, wsnap_mount_source). idx stays the
 * caller's. Errors: WSNAP_IO (the mount failed; libfuse's message in the
 * reason). Defined in snapshot.c, on the pieces snapshot.h declares.
 */
enum wsnap_status wsnap_mount_snapshot(const struct wsnap_index *idx,
				       const char *source,
				       const char *mountpoint,
				       struct wsnap_error *err);

#endif
