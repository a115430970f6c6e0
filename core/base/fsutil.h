/* SPDX-License-Identifier: MIT */
/*
 * File system helpers written once for core, ops, workspace and tools:
 * I/O that retries EINTR, temporary files, a bounded path buffer, opening
 * a directory without following symlinks, and removing a tree.
 *
 * The sign convention for errno values, here and in every module:
 *  - a function that reports an errno and nothing else returns 0 on success
 *    or the positive errno value (never -1 with errno set, never -errno);
 *  - a function that takes a struct wsnap_error * follows error.h: it
 *    returns the status, or -1 for a descriptor it did not make, with err
 *    set;
 *  - a function that returns a byte count (ssize_t) returns a negative
 *    errno on failure, as the FUSE layer wants it (wsnap_index_pread);
 *  - a system call's own -1 with errno set goes no further than the
 *    function that made the call.
 * Exceptions kept until their callers can change: wsnap_index_extent()
 * and wsnap_index_data_check() return -errno (their callers in ops/export.c
 * compare with 0 by sign).
 */
#ifndef WSNAP_FSUTIL_H
#define WSNAP_FSUTIL_H

#include <errno.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "error.h"

/*
 * Runs call, assigning its result to r, again while it fails with EINTR:
 * WSNAP_RETRY_EINTR(n, read(fd, buf, len));
 */
#define WSNAP_RETRY_EINTR(r, call)                                             \
	do                                                                     \
		(r) = (call);                                                  \
	while ((r) < 0 && errno == EINTR)

/*
 * read(2) into buf until len bytes or end of file. *done is set to the
 * bytes read (fewer than len only at end of file or on failure). Returns 0
 * or an errno.
 */
int wsnap_read_full(int fd, void *buf, size_t len, size_t *done);

/* The same with pread(2) from offset off (at most INT64_MAX - len). */
int wsnap_pread_full(int fd, void *buf, size_t len, uint64_t off, size_t *done);

/* write(2) of all len bytes. Returns 0 or an errno (EIO: nothing written). */
int wsnap_write_full(int fd, const void *buf, size_t len);

/* waitpid(2) of pid, without options, into *wstatus. Returns 0 or an
 * errno. */
int wsnap_waitpid(pid_t pid, int *wstatus);

/* The directory for temporary files: dir when set and not empty, else
 * $TMPDIR when set and not empty, else "/tmp". */
const char *wsnap_fs_tmpdir(const char *dir);

/*
 * An unlinked read-write temporary file in wsnap_fs_tmpdir(dir): O_TMPFILE
 * where the file system has it, else "DIR/tag-XXXXXX" made by mkostemp and
 * unlinked at once. Returns the descriptor (close-on-exec), or -1 with err
 * set: WSNAP_IO, "out of memory", or "cannot create temporary file" with
 * the directory.
 */
int wsnap_fs_tmpfile(const char *dir, const char *tag, struct wsnap_error *err);

/*
 * A new file "DIR/.BASEtagXXXXXX" (mode 0600, close-on-exec) beside path
 * "DIR/BASE" (or "BASE"), for writing a file that is then renamed into
 * place. Sets *tmp to its malloc'd name (the caller frees it) and *fd.
 * Returns 0 or an errno (ENOMEM, or mkostemp's).
 */
int wsnap_fs_tmpfile_beside(const char *path, const char *tag, char **tmp,
			    int *fd);

/*
 * A path built one component at a time ("." then "./a", "./a/b" ...),
 * never longer than max bytes.
 */
struct wsnap_pathbuf {
	char *buf; /* NUL-terminated */
	size_t len;
	size_t cap;
	size_t max; /* most bytes of buf, without the NUL */
};

/* buf set to start (at most max bytes). Returns 0 or ENOMEM (or
 * ENAMETOOLONG). */
int wsnap_pathbuf_init(struct wsnap_pathbuf *pb, const char *start, size_t max);

/* Appends "/" and the nl bytes of name. Returns 0, ENAMETOOLONG past max
 * (then pb is unchanged) or ENOMEM. */
int wsnap_pathbuf_push(struct wsnap_pathbuf *pb, const char *name, size_t nl);

/* Back to the first len bytes (a length the path had before). */
void wsnap_pathbuf_cut(struct wsnap_pathbuf *pb, size_t len);

void wsnap_pathbuf_release(struct wsnap_pathbuf *pb);

/*
 * Opens the directory at the absolute path abs one component at a time,
 * each with O_NOFOLLOW: a symlink anywhere in the path is ELOOP (or
 * ENOTDIR), "." and ".." components are EINVAL. Sets *fd (O_RDONLY,
 * O_DIRECTORY, close-on-exec). Returns 0 or an errno.
 */
int wsnap_fs_open_dir_nofollow(const char *abs, int *fd);

/* What identifies a file while it exists. */
struct wsnap_fs_id {
	uint64_t dev;
	uint64_t ino;
};

struct stat;

/* The identity of the file sb describes into *id. */
void wsnap_fs_id_set(struct wsnap_fs_id *id, const struct stat *sb);

/* Whether sb describes the file id identifies. */
bool wsnap_fs_id_same(const struct stat *sb, const struct wsnap_fs_id *id);

/* Levels below its top that wsnap_fs_remove_tree descends at most. */
#define WSNAP_FS_REMOVE_MAX_DEPTH 1024u

enum wsnap_fs_remove_flags {
	/* a directory that cannot be opened (EACCES) gets mode 0700 first
	 * (never through a symlink) */
	WSNAP_FS_REMOVE_CHMOD = 1 << 0,
};

/*
 * Removes the entry name of the directory dirfd and, when it is a
 * directory, everything below it. Never follows a symlink (one is removed
 * as itself) and never enters a directory on another file system than
 * dirfd's (EXDEV: a mount there stays, and so does the path to it);
 * deeper than WSNAP_FS_REMOVE_MAX_DEPTH is ELOOP. When want is not NULL
 * the entry must be the directory it identifies (checked on the opened
 * directory), else ESTALE with nothing removed. A missing entry is
 * success. Returns 0 or the errno of the first failure, which stops the
 * removal (what was removed before it stays removed).
 */
int wsnap_fs_remove_tree(int dirfd, const char *name, unsigned flags,
			 const struct wsnap_fs_id *want);

#endif
