/* SPDX-License-Identifier: MIT */
/*
 * Safe export: writes a validated index to a directory (policy.md section 7).
 *
 * The index is already validated (sections 3-5, and 8 when the policy had a
 * strip prefix): export only decides how to put it on disk without ever
 * creating, modifying or removing anything outside the destination root,
 * whatever exists there and whatever another process does meanwhile.
 *
 * Invariants (each names the attack it blocks):
 *  - every path is reached from the destination root descriptor one
 *    component at a time, never by name from the current directory, and no
 *    symlink is ever followed: openat2(RESOLVE_BENEATH | RESOLVE_NO_SYMLINKS)
 *    where the kernel has it, else openat(O_NOFOLLOW | O_DIRECTORY) per
 *    component. A symlink planted among the parents (before or during the
 *    export) is refused, not followed: 'symlink in parent path'.
 *  - nothing is checked by name and then used by name: a leaf is created
 *    with O_EXCL / mkdirat / symlinkat and, when it exists, removed with
 *    unlinkat(flags 0), which never removes a directory (EISDIR is the
 *    'destination directory already exists' rejection). Unlinking a symlink
 *    removes the link, never its target.
 *  - directory descriptors are cached along the path of the last member (a
 *    stack of at most WSNAP_EXPORT_MAX_CACHED_FDS open descriptors): a
 *    descriptor of a directory stays that directory, so swapping a cached
 *    directory for a symlink afterwards cannot redirect a write. (A process
 *    that may move directories out of the destination can move our files
 *    out too, at any time: that is outside any extractor's control.)
 *  - regular files are created 0600 and get their final mode (fchmod of the
 *    still-open descriptor) only once every byte is written: a failure
 *    midway (disk full, archive changed) leaves a private partial file.
 *  - pass 1 (archive order): directories and regular files; pass 2:
 *    symlinks, so no file of the archive is ever written through a symlink
 *    of the archive; pass 3: directory mtimes, deepest first.
 *  - a destination that does not exist is built under a temporary name in
 *    its parent directory and renamed into place (RENAME_NOREPLACE) only on
 *    success; on failure the temporary tree is removed (without following
 *    symlinks), so nothing is left behind.
 *
 * Part of the index (opts->select, the PATH operands of 'wsnap export'):
 * only the selected nodes are written; their other ancestors are made
 * like implicit directories (mode 0755 and the index's default mtime when
 * export creates them, left alone when they exist), whatever the archive
 * says of them.
 *
 * Metadata: files get the sanitized mode of the index (7.6) and the
 * archived mtime; symlinks their archived target and mtime; directories the
 * export creates get 0755 (whatever the umask); pre-existing directories
 * keep their mode. Directory members get the archived mtime (pass 3);
 * implicit directories get the index's default mtime when export creates
 * them, and are left alone when they already existed. Ownership is never
 * restored. atimes are not set.
 *
 *  - on a destination that folds case or normalization (or that cannot be
 *    told not to), the archive's directories whose entries would not stay
 *    what they are (two names folding alike, a symlink target resolved
 *    differently folded) are refused before anything is written into them:
 *    'destination folds case: <rel>' (export_case.c).
 *
 * The first error stops the export: destination-state rejections are
 * WSNAP_REJECTED (member = the rel path), system errors WSNAP_IO (member =
 * DEST/rel path, errnum set). When pass 1 writes files on several threads
 * (opts->workers), the error reported is that of the earliest failing file
 * in archive order; files later in the archive may have been written by
 * then (a fresh destination is removed on failure all the same).
 */
#ifndef WSNAP_EXPORT_H
#define WSNAP_EXPORT_H

#include <signal.h>
#include <stdbool.h>
#include <stdint.h>
#include <sys/stat.h>

#include "error.h"
#include "index.h"

/* Reasons of section 7 (the first is the whole reason; the others are
 * followed by ': <rel>'). */
#define WSNAP_REASON_SYMLINK_PARENT   "symlink in parent path"
#define WSNAP_REASON_PARENT_NOT_DIR   "destination parent is not a directory"
#define WSNAP_REASON_DIRECTORY_EXISTS "destination directory already exists"
#define WSNAP_REASON_FOLDS_CASE	      "destination folds case"

/* Most directory descriptors kept open by the parent cache. */
#define WSNAP_EXPORT_MAX_CACHED_FDS 64

struct wsnap_export_progress {
	uint64_t members_done; /* nodes written (all passes count once) */
	uint64_t members_total;
	uint64_t bytes_done; /* file bytes written */
	uint64_t bytes_total;
};

/* Called now and then during the export and once at its end. */
typedef void (*wsnap_export_progress_fn)(
	void *ctx, const struct wsnap_export_progress *progress);

/* Called for each node written (pass 1 and 2), for -v listings. */
typedef void (*wsnap_export_node_fn)(void *ctx, const struct wsnap_node *node);

enum wsnap_export_flags {
	/* Do not use openat2 even where the kernel has it (tests of the
	 * per-component fallback). */
	WSNAP_EXPORT_NO_OPENAT2 = 1 << 0,
	/* Do not use copy_file_range (tests of the pread/pwrite copy). */
	WSNAP_EXPORT_NO_COPY_RANGE = 1 << 1,
	/* The index has no data descriptor (built without keep_data): file
	 * data is read from opts->input_fd, the archive the index was built
	 * from. An uncompressed archive is read in place at the index's
	 * offsets; a compressed one is decompressed again from its start, in
	 * one forward pass (pass 1 follows archive order), so that no
	 * temporary copy of it is ever made. */
	WSNAP_EXPORT_INPUT = 1 << 2,
};

struct wsnap_export_opts {
	unsigned flags; /* enum wsnap_export_flags */
	wsnap_export_progress_fn progress;
	wsnap_export_node_fn node;
	void *ctx; /* passed to progress and node */
	/* When it becomes non-zero (a signal handler sets it), the export
	 * stops before the next member as a failure: WSNAP_IO, EINTR,
	 * 'interrupted' (a fresh destination is removed). May be NULL. */
	const volatile sig_atomic_t *cancel;
	/* With WSNAP_EXPORT_INPUT: the archive (a regular file, read with
	 * pread, not closed), and its fstat taken before the index was built.
	 * The archive must still match it (device, inode, size, mtime) before
	 * and after pass 1, else WSNAP_IO, EIO, 'archive changed since it was
	 * read'. */
	int input_fd;
	const struct stat *input_stat;
	/* Threads writing the regular files of pass 1: 0 chooses (one per
	 * online CPU, at most 4, for 1024 files or more); 1 writes them on
	 * the calling thread; N > 1 uses N whatever the count (tests).
	 * A compressed input read again, or a node callback, means 1. */
	unsigned workers;
	/* Whether the directory open on fd folds case (1) or not (0); NULL:
	 * wsnap_export_dir_folds. Tests put their own. */
	int (*dir_folds)(int fd);
	/* Per ino, an enum wsnap_select_mark (select.h): only YES nodes are
	 * written, PARENT ones made as implicit directories. NULL: all. */
	const unsigned char *select;
};

struct wsnap_export_stats {
	uint64_t members;   /* nodes written in passes 1 and 2 */
	uint64_t dirs;	    /* directories created (members and implicit) */
	uint64_t dirs_kept; /* directories that existed and were merged */
	uint64_t files;
	uint64_t symlinks;
	uint64_t replaced; /* existing non-directories unlinked first */
	uint64_t bytes;	   /* file bytes written (logical sizes) */
	bool created;	   /* DEST did not exist and was created */
	bool openat2;	   /* openat2 was available and used */
	bool copy_range;   /* copy_file_range was used for data */
};

/*
 * Exports idx (built with keep_data, so file data can be read, or see
 * WSNAP_EXPORT_INPUT) to the directory dest. dest itself is the user's choice
 * and is opened normally (a symlink naming it is followed); everything under it
 * follows the invariants above. When dest does not exist it is created
 * atomically; when it exists it must be a directory and members are merged into
 * it (7.4). opts may be NULL; stats (may be NULL) is filled also on failure
 * with what was done. Errors: WSNAP_REJECTED (destination state),
 * WSNAP_IO (errnum set: ENOSPC for a full disk, EIO when the archive
 * changed since the index was built, ...), WSNAP_USAGE (empty dest).
 */
enum wsnap_status wsnap_export_run(const struct wsnap_index *idx,
				   const char *dest,
				   const struct wsnap_export_opts *opts,
				   struct wsnap_export_stats *stats,
				   struct wsnap_error *err);

/*
 * Whether the directory open on fd may compare names other than byte for
 * byte (policy.md 7.7): 1 when it folds case or normalization, or when that
 * cannot be told (a filesystem type not known to compare bytes: FAT, exFAT,
 * NTFS, HFS+, FUSE, network filesystems; or a probe that fails); 0 for
 * ext2/3/4, f2fs, tmpfs, btrfs, ramfs and overlayfs without the casefold
 * flag (FS_IOC_GETFLAGS, FS_CASEFOLD_FL) and XFS without ASCII-CI. Only
 * reads.
 */
int wsnap_export_dir_folds(int fd);

#endif
