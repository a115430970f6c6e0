/* SPDX-License-Identifier: MIT */
/*
 * The index cache directory (cache.h).
 */
#include "cache.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "grow.h"
#include "hash.h"

#define ENTRY_SUFFIX ".idx"
#define TMP_PREFIX   ".tmp-"
#define TMP_MAX_AGE  3600 /* seconds */
#define PATH_MAX_LEN 4096

/* Why the directory is not used, into why. Returns false. */
static bool refuse(char *why, size_t whylen, const char *what, const char *dir,
		   const char *reason, int e)
{
	snprintf(why, whylen, "%s '%s' not used: %s%s%s", what, dir, reason,
		 e ? ": " : "", e ? strerror(e) : "");
	return false;
}

/* Whether the open directory fd may hold the cache (the invariants of
 * cache.h); why set when not. */
static bool dir_ok(int fd, const char *what, const char *path, char *why,
		   size_t whylen)
{
	struct stat sb;

	if (fstat(fd, &sb) != 0)
		return refuse(why, whylen, what, path, "cannot stat", errno);
	if (sb.st_uid != geteuid()) {
		char r[64];

		snprintf(r, sizeof(r), "owned by uid %ju, not by uid %ju",
			 (uintmax_t)sb.st_uid, (uintmax_t)geteuid());
		return refuse(why, whylen, what, path, r, 0);
	}
	if (sb.st_mode & (S_IWGRP | S_IWOTH))
		return refuse(why, whylen, what, path,
			      "writable by group or others", 0);
	return true;
}

/* Bytes from text: digits, then an optional K, M, G or T (powers of 1024,
 * an optional 'iB' or 'B' after it). false when it is not one. */
static bool parse_bytes(const char *s, uint64_t *out)
{
	uint64_t v = 0, mul = 1;
	const char *p = s;

	if (*p < '0' || *p > '9')
		return false;
	for (; *p >= '0' && *p <= '9'; p++) {
		if (v > (UINT64_MAX - (uint64_t)(*p - '0')) / 10)
			return false;
		v = v * 10 + (uint64_t)(*p - '0');
	}
	switch (*p) {
	case 'K':
		mul = 1ull << 10;
		break;
	case 'M':
		mul = 1ull << 20;
		break;
	case 'G':
		mul = 1ull << 30;
		break;
	case 'T':
		mul = 1ull << 40;
		break;
	case '\0':
		break;
	default:
		return false;
	}
	if (*p && *++p) {
		if (strcmp(p, "iB") != 0 && strcmp(p, "B") != 0)
			return false;
	}
	if (v > UINT64_MAX / mul)
		return false;
	*out = v * mul;
	return true;
}

/* Where the cache is, into buf; false when no variable says. */
static bool cache_path(char *buf, size_t cap)
{
	const char *d = getenv("WSNAP_CACHE_DIR");
	int n;

	if (d && *d)
		n = snprintf(buf, cap, "%s", d);
	else if ((d = getenv("XDG_CACHE_HOME")) && d[0] == '/')
		n = snprintf(buf, cap, "%s/wsnap", d);
	else if ((d = getenv("HOME")) && *d)
		n = snprintf(buf, cap, "%s/.cache/wsnap", d);
	else
		return false;
	return n > 0 && (size_t)n < cap;
}

/*
 * Opens the directory at path one component at a time. A component that
 * exists is opened as it is (a symlink in $HOME is the user's business),
 * except the last, which must not be a symlink; a missing one is made 0700,
 * and from there on nothing is followed. Returns the descriptor or -1 with
 * errno (ELOOP: the last component, or one below a made one, is a symlink).
 */
static int open_walk(const char *path)
{
	const char *s = path;
	bool made = false;
	int cur, next, e;

	cur = open(path[0] == '/' ? "/" : ".",
		   O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	while (cur >= 0) {
		char comp[NAME_MAX + 1];
		size_t len;
		int flags;

		while (*s == '/')
			s++;
		if (!*s)
			break;
		len = strcspn(s, "/");
		if (len > NAME_MAX ||
		    (len == 2 && s[0] == '.' && s[1] == '.')) {
			e = len > NAME_MAX ? ENAMETOOLONG : EINVAL;
			close(cur);
			errno = e;
			return -1;
		}
		memcpy(comp, s, len);
		comp[len] = '\0';
		s += len;
		while (*s == '/')
			s++;
		flags = O_RDONLY | O_DIRECTORY | O_CLOEXEC |
			(made || !*s ? O_NOFOLLOW : 0);
		next = openat(cur, comp, flags);
		if (next < 0 && errno == ENOENT) {
			if (mkdirat(cur, comp, 0700) != 0 && errno != EEXIST) {
				e = errno;
				close(cur);
				errno = e;
				return -1;
			}
			made = true;
			next = openat(cur, comp, flags | O_NOFOLLOW);
		}
		e = errno;
		close(cur);
		cur = next;
		errno = e;
	}
	return cur;
}

bool wsnap_cache_open_as(struct wsnap_cache *c, const char *what, char *why,
			 size_t whylen)
{
	char path[PATH_MAX_LEN];
	const char *max = getenv("WSNAP_CACHE_MAX");
	int fd;

	c->dirfd = -1;
	c->max_bytes = WSNAP_CACHE_DEFAULT_MAX;
	why[0] = '\0';
	if (max && *max && !parse_bytes(max, &c->max_bytes))
		c->max_bytes = WSNAP_CACHE_DEFAULT_MAX;
	if (!cache_path(path, sizeof(path))) {
		snprintf(why, whylen,
			 "%s not used: neither "
			 "WSNAP_CACHE_DIR, XDG_CACHE_HOME nor "
			 "HOME is set",
			 what);
		return false;
	}
	fd = open_walk(path);
	if (fd < 0)
		return refuse(why, whylen, what, path,
			      errno == ELOOP || errno == ENOTDIR
				      ? "not a directory (or a symlink)"
				      : "cannot open",
			      errno == ELOOP || errno == ENOTDIR ? 0 : errno);
	if (!dir_ok(fd, what, path, why, whylen)) {
		close(fd);
		return false;
	}
	c->dirfd = fd;
	return true;
}

bool wsnap_cache_open(struct wsnap_cache *c, char *why, size_t whylen)
{
	return wsnap_cache_open_as(c, "index cache", why, whylen);
}

int wsnap_cache_subdir(const struct wsnap_cache *c, const char *name,
		       const char *what, char *why, size_t whylen)
{
	const int flags = O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC;
	int fd;

	why[0] = '\0';
	if (c->dirfd < 0) {
		snprintf(why, whylen, "%s not used: no cache directory", what);
		return -1;
	}
	fd = openat(c->dirfd, name, flags);
	if (fd < 0 && errno == ENOENT) {
		if (mkdirat(c->dirfd, name, 0700) != 0 && errno != EEXIST) {
			refuse(why, whylen, what, name, "cannot make", errno);
			return -1;
		}
		fd = openat(c->dirfd, name, flags);
	}
	if (fd < 0) {
		refuse(why, whylen, what, name,
		       errno == ELOOP || errno == ENOTDIR
			       ? "not a directory (or a symlink)"
			       : "cannot open",
		       errno == ELOOP || errno == ENOTDIR ? 0 : errno);
		return -1;
	}
	if (!dir_ok(fd, what, name, why, whylen)) {
		close(fd);
		return -1;
	}
	return fd;
}

void wsnap_cache_close(struct wsnap_cache *c)
{
	if (c->dirfd >= 0)
		close(c->dirfd);
	c->dirfd = -1;
}

int wsnap_cache_get(struct wsnap_cache *c, const char *name)
{
	struct stat sb;
	int fd;

	if (c->dirfd < 0)
		return -1;
	fd = openat(c->dirfd, name, O_RDONLY | O_NOFOLLOW | O_CLOEXEC);
	if (fd < 0)
		return -1;
	if (fstat(fd, &sb) != 0 || !S_ISREG(sb.st_mode) ||
	    sb.st_uid != geteuid()) {
		close(fd);
		return -1;
	}
	futimens(fd, NULL); /* used: last to be pruned */
	return fd;
}

int wsnap_cache_tmp(struct wsnap_cache *c, char tmp[WSNAP_CACHE_TMP_LEN + 1])
{
	struct wsnap_hash_key k;
	int fd, tries;

	if (c->dirfd < 0) {
		errno = EBADF;
		return -1;
	}
	for (tries = 0; tries < 16; tries++) {
		wsnap_hash_key_init(&k);
		snprintf(tmp, WSNAP_CACHE_TMP_LEN + 1, TMP_PREFIX "%016" PRIx64,
			 k.k0 ^ k.k1);
		fd = openat(c->dirfd, tmp,
			    O_RDWR | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC,
			    0600);
		if (fd >= 0 || errno != EEXIST)
			return fd;
	}
	return -1;
}

void wsnap_cache_discard(struct wsnap_cache *c, const char *tmp)
{
	if (c->dirfd >= 0)
		unlinkat(c->dirfd, tmp, 0);
}

int wsnap_cache_commit(struct wsnap_cache *c, const char *tmp, const char *name)
{
	if (renameat(c->dirfd, tmp, c->dirfd, name) != 0) {
		int e = errno;

		wsnap_cache_discard(c, tmp);
		return e;
	}
	wsnap_cache_prune(c, name);
	return 0;
}

struct entry {
	char name[NAME_MAX + 1];
	uint64_t size;
	struct timespec mtime;
};

static int entry_age_cmp(const void *a, const void *b)
{
	const struct entry *x = a, *y = b;

	if (x->mtime.tv_sec != y->mtime.tv_sec)
		return x->mtime.tv_sec < y->mtime.tv_sec ? -1 : 1;
	if (x->mtime.tv_nsec != y->mtime.tv_nsec)
		return x->mtime.tv_nsec < y->mtime.tv_nsec ? -1 : 1;
	return strcmp(x->name, y->name);
}

static bool is_entry_name(const char *n)
{
	size_t len = strlen(n), sl = sizeof(ENTRY_SUFFIX) - 1;

	return len > sl && n[0] != '.' &&
	       strcmp(n + len - sl, ENTRY_SUFFIX) == 0;
}

void wsnap_cache_prune(struct wsnap_cache *c, const char *keep)
{
	struct entry *ents = NULL;
	size_t n = 0, cap = 0, i;
	uint64_t total = 0;
	struct dirent *de;
	time_t now = time(NULL);
	DIR *d;
	int fd;

	if (c->dirfd < 0)
		return;
	fd = openat(c->dirfd, ".", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	d = fd >= 0 ? fdopendir(fd) : NULL;
	if (!d) {
		if (fd >= 0)
			close(fd);
		return;
	}
	while ((de = readdir(d))) {
		struct stat sb;
		struct entry *ne;

		if (fstatat(c->dirfd, de->d_name, &sb, AT_SYMLINK_NOFOLLOW) ||
		    !S_ISREG(sb.st_mode))
			continue;
		if (strncmp(de->d_name, TMP_PREFIX, sizeof(TMP_PREFIX) - 1) ==
		    0) {
			if (now - sb.st_mtim.tv_sec >= TMP_MAX_AGE)
				unlinkat(c->dirfd, de->d_name, 0);
			continue;
		}
		if (!is_entry_name(de->d_name) || strlen(de->d_name) > NAME_MAX)
			continue;
		total += (uint64_t)sb.st_size;
		if (keep && strcmp(de->d_name, keep) == 0)
			continue;
		ne = wsnap_grow(ents, &cap, n + 1, sizeof(*ents));
		if (!ne)
			break;
		ents = ne;
		snprintf(ents[n].name, sizeof(ents[n].name), "%s", de->d_name);
		ents[n].size = (uint64_t)sb.st_size;
		ents[n].mtime = sb.st_mtim;
		n++;
	}
	closedir(d);
	if (total > c->max_bytes && n) {
		qsort(ents, n, sizeof(*ents), entry_age_cmp);
		for (i = 0; i < n && total > c->max_bytes; i++)
			if (unlinkat(c->dirfd, ents[i].name, 0) == 0)
				total -= ents[i].size;
	}
	free(ents);
}
