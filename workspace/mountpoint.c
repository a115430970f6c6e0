/* SPDX-License-Identifier: MIT */
/*
 * Mountpoints made by 'wsnap mount', and their markers (mountpoint.h).
 *
 * Invariants:
 *  - every call acts in the parent directory opened one component at a
 *    time without following a symlink, on names relative to it;
 *  - the marker's text is a function of the directory's identity (device,
 *    inode, ctime), so a marker is trusted for the directory there now
 *    only when it is byte for byte the text that directory would have;
 *  - a directory is removed only with rmdir (never when it holds
 *    anything), and only after its marker was found trusted for it.
 * A name swapped between the check and rmdir needs write access to the
 * parent, which lets its holder remove the directory anyway; rmdir
 * removes nothing but an empty directory whatever happens.
 */
#include "mountpoint.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "hydrate_impl.h"

#define MARKER_MAGIC "wsnap-mountpoint 1\n"
/* The magic line and three numbers: more is not a marker of ours. */
#define MARKER_MAX 128

/* The parent of abs, opened; its last component in *base. 0 or errno. */
static int open_parent(const char *abs, const char **base, int *pfd)
{
	char *parent = wsnap_hydrate_parent(abs);
	int e;

	*pfd = -1;
	*base = wsnap_hydrate_base(abs);
	if (!parent)
		return ENOMEM;
	e = **base ? wsnap_fs_open_dir_nofollow(parent, pfd) : EINVAL;
	free(parent);
	return e;
}

/* ".NAME.wsnap-mountpoint" into buf (capacity cap, at most NAME_MAX + 1:
 * one name); false when it does not fit. */
static bool marker_name(const char *base, char *buf, size_t cap)
{
	int n = snprintf(buf, cap, ".%s" WSNAP_MOUNTPOINT_MARKER, base);

	return n > 0 && (size_t)n < cap;
}

/* The marker text of the directory sb describes, into buf; its length. */
static size_t marker_text(const struct stat *sb, char *buf, size_t cap)
{
	int n = snprintf(
		buf, cap, MARKER_MAGIC "%llu %llu %lld.%09ld\n",
		(unsigned long long)sb->st_dev, (unsigned long long)sb->st_ino,
		(long long)sb->st_ctim.tv_sec, (long)sb->st_ctim.tv_nsec);

	return n > 0 && (size_t)n < cap ? (size_t)n : 0;
}

/* Writes the marker of sb as mname in pfd, replacing a marker of ours
 * that was left there. 0 or errno. */
static int write_marker(int pfd, const char *mname, const struct stat *sb)
{
	char text[MARKER_MAX];
	size_t len = marker_text(sb, text, sizeof(text));
	struct stat ms;
	int fd, e, tries;

	if (!len)
		return EOVERFLOW;
	for (tries = 0; tries < 2; tries++) {
		fd = openat(pfd, mname,
			    O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW |
				    O_CLOEXEC,
			    0600);
		if (fd >= 0 || errno != EEXIST)
			break;
		/* only a regular file of ours goes; anything else stays */
		if (fstatat(pfd, mname, &ms, AT_SYMLINK_NOFOLLOW) != 0 ||
		    !S_ISREG(ms.st_mode) || ms.st_uid != geteuid() ||
		    unlinkat(pfd, mname, 0) != 0)
			return EEXIST;
	}
	if (fd < 0)
		return errno;
	e = wsnap_write_full(fd, text, len);
	if (close(fd) != 0 && !e)
		e = errno;
	if (e)
		unlinkat(pfd, mname, 0);
	return e;
}

enum wsnap_status wsnap_mountpoint_make(const char *abs, struct wsnap_fs_id *id,
					struct wsnap_error *err)
{
	char mname[NAME_MAX + 1];
	const char *base;
	struct stat sb;
	int pfd, dfd, e;

	e = open_parent(abs, &base, &pfd);
	if (e)
		return wsnap_error_io(err, e, abs, "cannot make mountpoint");
	if (!marker_name(base, mname, sizeof(mname))) {
		close(pfd);
		return wsnap_error_io(err, ENAMETOOLONG, abs,
				      "cannot make mountpoint (no room for "
				      "its marker)");
	}
	if (mkdirat(pfd, base, 0755) != 0) {
		e = errno;
		close(pfd);
		return wsnap_error_io(err, e, abs, "cannot make mountpoint");
	}
	dfd = openat(pfd, base, WSNAP_HYDRATE_DIR_FLAGS);
	e = dfd < 0 ? errno : fstat(dfd, &sb) != 0 ? errno : 0;
	if (dfd >= 0)
		close(dfd);
	if (!e)
		e = write_marker(pfd, mname, &sb);
	if (e) {
		unlinkat(pfd, base, AT_REMOVEDIR);
		close(pfd);
		return wsnap_error_io(err, e, abs,
				      "cannot record the mountpoint made");
	}
	wsnap_fs_id_set(id, &sb);
	close(pfd);
	return WSNAP_OK;
}

/* Whether mname in pfd is a trusted marker for the directory sb. */
static bool marker_names(int pfd, const char *mname, const struct stat *sb)
{
	char want[MARKER_MAX], got[MARKER_MAX];
	size_t wlen = marker_text(sb, want, sizeof(want)), n;
	struct stat ms;
	bool ok;
	int fd;

	fd = openat(pfd, mname,
		    O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_NOCTTY | O_CLOEXEC);
	if (fd < 0)
		return false;
	ok = wlen && fstat(fd, &ms) == 0 && S_ISREG(ms.st_mode) &&
	     ms.st_uid == geteuid() && !(ms.st_mode & (S_IWGRP | S_IWOTH)) &&
	     (uint64_t)ms.st_size == wlen &&
	     wsnap_read_full(fd, got, sizeof(got), &n) == 0 && n == wlen &&
	     memcmp(got, want, wlen) == 0;
	close(fd);
	return ok;
}

bool wsnap_mountpoint_remove(const char *abs, const struct wsnap_fs_id *want)
{
	char mname[NAME_MAX + 1];
	const char *base;
	struct stat sb;
	bool removed = false;
	int pfd;

	if (open_parent(abs, &base, &pfd) != 0)
		return false;
	if (marker_name(base, mname, sizeof(mname)) &&
	    fstatat(pfd, base, &sb, AT_SYMLINK_NOFOLLOW) == 0 &&
	    S_ISDIR(sb.st_mode) && (!want || wsnap_fs_id_same(&sb, want)) &&
	    marker_names(pfd, mname, &sb)) {
		removed = unlinkat(pfd, base, AT_REMOVEDIR) == 0;
		/* one that got an entry since the check stays, and is no
		 * longer a mountpoint made by wsnap (an entry made before the
		 * check changed its ctime: then nothing was done) */
		if (removed || errno == ENOTEMPTY || errno == EEXIST)
			unlinkat(pfd, mname, 0);
	}
	close(pfd);
	return removed;
}
