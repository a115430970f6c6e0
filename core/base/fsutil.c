/* SPDX-License-Identifier: MIT */
/*
 * File system helpers (fsutil.h).
 *
 * Removal keeps one open directory per level it descends (so the bound on
 * depth also bounds the descriptors), works on names relative to the
 * directory it opened (a rename above it cannot redirect it) and checks
 * the file system of every directory it opened, not of the name it
 * looked up.
 */
#include "fsutil.h"

/* Listings of one directory while removing it (see remove_at). */
#define WSNAP_FS_REMOVE_ROUNDS 16u

#include <dirent.h>
#include <fcntl.h>
#include <limits.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "grow.h"

#define DIR_FLAGS (O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC)

/* ---- I/O ---- */

int wsnap_read_full(int fd, void *buf, size_t len, size_t *done)
{
	*done = 0;
	while (*done < len) {
		ssize_t n;

		WSNAP_RETRY_EINTR(n,
				  read(fd, (char *)buf + *done, len - *done));
		if (n < 0)
			return errno;
		if (n == 0)
			break;
		*done += (size_t)n;
	}
	return 0;
}

int wsnap_pread_full(int fd, void *buf, size_t len, uint64_t off, size_t *done)
{
	*done = 0;
	if (off > (uint64_t)INT64_MAX || len > (uint64_t)INT64_MAX - off)
		return EINVAL;
	while (*done < len) {
		ssize_t n;

		WSNAP_RETRY_EINTR(n, pread(fd, (char *)buf + *done, len - *done,
					   (off_t)(off + *done)));
		if (n < 0)
			return errno;
		if (n == 0)
			break;
		*done += (size_t)n;
	}
	return 0;
}

int wsnap_write_full(int fd, const void *buf, size_t len)
{
	size_t done = 0;

	while (done < len) {
		ssize_t n;

		WSNAP_RETRY_EINTR(
			n, write(fd, (const char *)buf + done, len - done));
		if (n < 0)
			return errno;
		if (n == 0)
			return EIO;
		done += (size_t)n;
	}
	return 0;
}

int wsnap_waitpid(pid_t pid, int *wstatus)
{
	pid_t r;

	WSNAP_RETRY_EINTR(r, waitpid(pid, wstatus, 0));
	return r < 0 ? errno : 0;
}

/* ---- temporary files ---- */

const char *wsnap_fs_tmpdir(const char *dir)
{
	if (!dir || !*dir)
		dir = getenv("TMPDIR");
	return dir && *dir ? dir : "/tmp";
}

int wsnap_fs_tmpfile(const char *dir, const char *tag, struct wsnap_error *err)
{
	size_t dl, tl;
	char *path;
	int fd;

	dir = wsnap_fs_tmpdir(dir);
	fd = open(dir, O_TMPFILE | O_RDWR | O_EXCL | O_CLOEXEC, 0600);
	if (fd >= 0)
		return fd;
	dl = strlen(dir);
	tl = strlen(tag);
	path = malloc(dl + 1 + tl + sizeof("-XXXXXX"));
	if (!path) {
		wsnap_error_io(err, ENOMEM, NULL, "out of memory");
		return -1;
	}
	memcpy(path, dir, dl);
	path[dl] = '/';
	memcpy(path + dl + 1, tag, tl);
	memcpy(path + dl + 1 + tl, "-XXXXXX", sizeof("-XXXXXX"));
	fd = mkostemp(path, O_CLOEXEC);
	if (fd < 0)
		wsnap_error_io(err, errno, dir, "cannot create temporary file");
	else
		unlink(path);
	free(path);
	return fd;
}

int wsnap_fs_tmpfile_beside(const char *path, const char *tag, char **tmp,
			    int *fd)
{
	const char *slash = strrchr(path, '/');
	size_t dl = slash ? (size_t)(slash - path) + 1 : 0;
	size_t bl = strlen(path + dl), tl = strlen(tag);
	char *t = malloc(dl + 1 + bl + tl + sizeof("XXXXXX"));
	int e;

	*tmp = NULL;
	if (!t)
		return ENOMEM;
	memcpy(t, path, dl);
	t[dl] = '.';
	memcpy(t + dl + 1, path + dl, bl);
	memcpy(t + dl + 1 + bl, tag, tl);
	memcpy(t + dl + 1 + bl + tl, "XXXXXX", sizeof("XXXXXX"));
	*fd = mkostemp(t, O_CLOEXEC);
	if (*fd < 0) {
		e = errno;
		free(t);
		return e;
	}
	*tmp = t;
	return 0;
}

/* ---- the path buffer ---- */

int wsnap_pathbuf_init(struct wsnap_pathbuf *pb, const char *start, size_t max)
{
	size_t sl = strlen(start);

	memset(pb, 0, sizeof(*pb));
	pb->max = max;
	if (sl > max)
		return ENAMETOOLONG;
	pb->buf = wsnap_grow(NULL, &pb->cap, sl + 1 > 256 ? sl + 1 : 256, 1);
	if (!pb->buf)
		return ENOMEM;
	memcpy(pb->buf, start, sl + 1);
	pb->len = sl;
	return 0;
}

int wsnap_pathbuf_push(struct wsnap_pathbuf *pb, const char *name, size_t nl)
{
	size_t need = pb->len + 1 + nl + 1;
	char *nb;

	if (nl > pb->max || need - 1 > pb->max)
		return ENAMETOOLONG;
	nb = wsnap_grow(pb->buf, &pb->cap, need, 1);
	if (!nb)
		return ENOMEM;
	pb->buf = nb;
	pb->buf[pb->len] = '/';
	memcpy(pb->buf + pb->len + 1, name, nl);
	pb->len += 1 + nl;
	pb->buf[pb->len] = '\0';
	return 0;
}

void wsnap_pathbuf_cut(struct wsnap_pathbuf *pb, size_t len)
{
	if (len < pb->len) {
		pb->len = len;
		pb->buf[len] = '\0';
	}
}

void wsnap_pathbuf_release(struct wsnap_pathbuf *pb)
{
	free(pb->buf);
	memset(pb, 0, sizeof(*pb));
}

/* ---- directories ---- */

int wsnap_fs_open_dir_nofollow(const char *abs, int *fd)
{
	const char *p = abs, *end;
	char name[NAME_MAX + 1];
	int cur, next, e;

	*fd = -1;
	if (*p != '/')
		return EINVAL;
	cur = open("/", DIR_FLAGS);
	if (cur < 0)
		return errno;
	for (;;) {
		size_t nl;

		while (*p == '/')
			p++;
		if (!*p)
			break;
		end = strchr(p, '/');
		nl = end ? (size_t)(end - p) : strlen(p);
		if (nl > NAME_MAX) {
			close(cur);
			return ENAMETOOLONG;
		}
		memcpy(name, p, nl);
		name[nl] = '\0';
		if (strcmp(name, ".") == 0 || strcmp(name, "..") == 0) {
			close(cur);
			return EINVAL;
		}
		next = openat(cur, name, DIR_FLAGS);
		e = errno;
		close(cur);
		if (next < 0)
			return e;
		cur = next;
		p += nl;
	}
	*fd = cur;
	return 0;
}

/* The directory name of parent, opened: *fd and its stat in *sb. */
static int open_dir_at(int parent, const char *name, unsigned flags,
		       struct stat *sb, int *fd)
{
	*fd = openat(parent, name, DIR_FLAGS);
	if (*fd < 0 && errno == EACCES && (flags & WSNAP_FS_REMOVE_CHMOD) &&
	    fchmodat(parent, name, 0700, AT_SYMLINK_NOFOLLOW) == 0)
		*fd = openat(parent, name, DIR_FLAGS);
	if (*fd < 0)
		return errno;
	if (fstat(*fd, sb) != 0) {
		int e = errno;

		close(*fd);
		*fd = -1;
		return e;
	}
	return 0;
}

void wsnap_fs_id_set(struct wsnap_fs_id *id, const struct stat *sb)
{
	id->dev = (uint64_t)sb->st_dev;
	id->ino = (uint64_t)sb->st_ino;
}

bool wsnap_fs_id_same(const struct stat *sb, const struct wsnap_fs_id *id)
{
	return (uint64_t)sb->st_dev == id->dev &&
	       (uint64_t)sb->st_ino == id->ino;
}

static int remove_at(int parent, const char *name, dev_t dev, unsigned flags,
		     const struct wsnap_fs_id *want, unsigned depth)
{
	struct dirent *de;
	struct stat sb;
	bool again = true;
	int fd, e = 0;
	unsigned round;
	DIR *d;

	if (fstatat(parent, name, &sb, AT_SYMLINK_NOFOLLOW) != 0)
		return errno == ENOENT ? 0 : errno;
	if (want && (!S_ISDIR(sb.st_mode) || !wsnap_fs_id_same(&sb, want)))
		return ESTALE;
	if (!S_ISDIR(sb.st_mode))
		return unlinkat(parent, name, 0) != 0 && errno != ENOENT ? errno
									 : 0;
	if (sb.st_dev != dev)
		return EXDEV; /* something is mounted there */
	if (depth > WSNAP_FS_REMOVE_MAX_DEPTH)
		return ELOOP;
	e = open_dir_at(parent, name, flags, &sb, &fd);
	if (e)
		return e == ENOENT ? 0 : e;
	/* what was opened, not what was looked up, decides */
	if (sb.st_dev != dev || (want && !wsnap_fs_id_same(&sb, want))) {
		close(fd);
		return sb.st_dev != dev ? EXDEV : ESTALE;
	}
	d = fdopendir(fd);
	if (!d) {
		e = errno;
		close(fd);
		return e;
	}
	/* entries removed while listing may hide others: list until none,
	 * a bounded number of times (someone adding entries as fast as they
	 * go gets ENOTEMPTY, not a loop without end) */
	for (round = 0; again && !e && round < WSNAP_FS_REMOVE_ROUNDS;
	     round++) {
		again = false;
		rewinddir(d);
		while (!e) {
			errno = 0;
			de = readdir(d);
			if (!de) {
				e = errno;
				break;
			}
			if (strcmp(de->d_name, ".") == 0 ||
			    strcmp(de->d_name, "..") == 0)
				continue;
			e = remove_at(dirfd(d), de->d_name, dev, flags, NULL,
				      depth + 1);
			again = true;
		}
	}
	closedir(d);
	if (!e && unlinkat(parent, name, AT_REMOVEDIR) != 0 && errno != ENOENT)
		e = errno;
	return e;
}

int wsnap_fs_remove_tree(int dirfd, const char *name, unsigned flags,
			 const struct wsnap_fs_id *want)
{
	struct stat sb;

	if (fstat(dirfd, &sb) != 0)
		return errno;
	return remove_at(dirfd, name, sb.st_dev, flags, want, 0);
}
