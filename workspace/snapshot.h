/* SPDX-License-Identifier: MIT */
/*
 * Mounting a snapshot in the background, shared by 'wsnap mount' and
 * 'wsnap hydrate' (through wsnap_mount_snapshot, mounts.h): the libfuse
 * arguments of a snapshot mount, and the fork of the filesystem daemon with
 * its readiness pipe. Defined in snapshot.c, with wsnap_mount_snapshot.
 */
#ifndef WSNAP_SNAPSHOT_H
#define WSNAP_SNAPSHOT_H

#include "error.h"
#include "fs.h"
#include "fsutil.h"

/*
 * Appends to fargs (FUSE_ARGS_INIT'ed, freed by the caller) the arguments
 * of a snapshot mount: a program name, ours options first (the source,
 * as findmnt, df and mountinfo show it: fsname=source, escaped for
 * libfuse's option parser), the user's fuse_opts (comma-joined, libfuse
 * escapes kept; may be NULL), and last the options that make it
 * read-only, permission-checked by the kernel and of type fuse.wsnap (by
 * which 'wsnap unmount' recognizes it), so that they win. Returns 0, or
 * -1 when out of memory.
 */
int wsnap_mount_fuse_args(struct fuse_args *fargs, const char *source,
			  const char *fuse_opts);

/*
 * The source of a snapshot mount of archive: its absolute path (symlinks
 * resolved), "-" for standard input, a URL without its credentials, query
 * and fragment (remote.h); malloc'd, NULL when out of memory
 * or when the path cannot be resolved.
 */
char *wsnap_mount_source(const char *archive);

/*
 * Forks the filesystem daemon for se (a session of wsnap_fs_session_new,
 * handed over: destroyed here in every case) serving fs at mountpoint
 * (absolute), and returns once the mount answers, or with the daemon's
 * error when it could not mount, or with WSNAP_IO when it exited without
 * saying. The daemon is a detached copy of this process: it holds what fs
 * points to (the index, its archive descriptor or spill file) from the
 * fork on. made (NULL when none) is the mountpoint directory made for the
 * mount (mountpoint.h): the daemon removes it once its mount is gone.
 */
enum wsnap_status wsnap_mount_background(struct fuse_session *se,
					 struct wsnap_fs *fs,
					 const char *mountpoint,
					 const struct wsnap_fs_id *made,
					 struct wsnap_error *err);

#endif
