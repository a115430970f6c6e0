/* SPDX-License-Identifier: MIT */
/*
 * Mountpoints that 'wsnap mount' makes (cli.md 'wsnap mount': a
 * MOUNTPOINT that does not exist is made, and removed again at unmount).
 *
 * Only the last component is made (mkdir, mode 0755 less the umask), in
 * its parent opened without following a symlink, and never through one:
 * a dangling symlink at the path is an existing entry, not a missing one.
 * What was made is recorded beside it, in the parent, in the marker file
 * '.NAME.wsnap-mountpoint' (mode 0600): a magic line and the directory's
 * device, inode and ctime. The marker is what lets the unmount, in another
 * process, tell a directory wsnap made from one it did not (policy.md
 * section 11): it is trusted only when it is a regular file of the
 * caller's, not writable by group or others, read from the parent reached
 * without following a symlink, and its text is exactly the one the
 * directory there now would have; so a marker copied beside another
 * directory, or a directory replaced, changed (chmod, an entry made in
 * it) or mounted over since, names nothing, and nothing is removed. The
 * directory goes only when it is empty (rmdir), the marker with it.
 *
 * Who removes: 'wsnap unmount' after it unmounted, and the filesystem
 * daemon itself once its mount is gone (an unmount by umount(8) or
 * fusermount3), whichever comes first; the daemon only the very directory
 * it made.
 */
#ifndef WSNAP_MOUNTPOINT_H
#define WSNAP_MOUNTPOINT_H

#include <stdbool.h>

#include "error.h"
#include "fsutil.h"

/* The marker of "DIR/NAME" is "DIR/.NAME" WSNAP_MOUNTPOINT_MARKER. */
#define WSNAP_MOUNTPOINT_MARKER ".wsnap-mountpoint"

/*
 * Makes the directory abs (absolute; its parent resolved and existing),
 * which must not exist, and its marker. On success *id identifies it.
 * Errors: WSNAP_IO ('cannot make mountpoint', with the errno: EEXIST when
 * anything is there, ENOENT for a missing parent); nothing is left behind.
 */
enum wsnap_status wsnap_mountpoint_make(const char *abs, struct wsnap_fs_id *id,
					struct wsnap_error *err);

/*
 * Once nothing is mounted at abs: removes the directory there and its
 * marker when the marker is trusted and names that directory (and, when
 * want is not NULL, that directory is the one want identifies). Never
 * fails: anything amiss leaves everything as it is. Returns true when the
 * directory was removed.
 */
bool wsnap_mountpoint_remove(const char *abs, const struct wsnap_fs_id *want);

#endif
