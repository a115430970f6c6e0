/* SPDX-License-Identifier: MIT */
/*
 * The state of a hydrated workspace (hydrate.h): the state directory and
 * its file, written by hydrate and read back by unmount and diff, and the
 * identities that tie them to what hydrate made.
 *
 * The state file is hostile input (anyone who can make an entry beside
 * the workspace can put one there): it is read only from a trusted state
 * directory (wsnap_hydrate_dir_open), at most STATE_MAX_BYTES, and parsed
 * whole before anything acts on it: the magic line first, then one
 * 'key value' line per known key, each key once, values percent-encoded
 * (paths) or numbers in range; anything else refuses the whole state.
 */
#include "hydrate_impl.h"

#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "mounts.h"
#include "remote.h"

#define STATE_MAGIC	"wsnap-hydrate 1"
#define STATE_MAX_BYTES (256u << 10)
/* An encoded path: every byte of PATH_MAX - 1 as %XX. */
#define VALUE_MAX (3 * PATH_MAX)

static const char *const kind_names[] = {
	[WSNAP_OVERLAY_AUTO] = "auto",
	[WSNAP_OVERLAY_KERNEL] = "kernel",
	[WSNAP_OVERLAY_FUSE] = "fuse",
};

void wsnap_hydrate_state_release(struct wsnap_hydrate_state *st)
{
	free(st->workspace);
	free(st->dir);
	free(st->archive);
	free(st->lower);
	free(st->upper);
	free(st->work);
	memset(st, 0, sizeof(*st));
}

char *wsnap_hydrate_state_dir(const char *workspace)
{
	const char *slash = strrchr(workspace, '/');
	size_t plen, nlen;
	char *out;

	if (!slash || !slash[1])
		return NULL;
	plen = (size_t)(slash - workspace);
	nlen = strlen(slash + 1);
	out = malloc(plen + nlen + sizeof("/..wsnap"));
	if (!out)
		return NULL;
	memcpy(out, workspace, plen);
	out[plen] = '/';
	out[plen + 1] = '.';
	memcpy(out + plen + 2, slash + 1, nlen);
	memcpy(out + plen + 2 + nlen, ".wsnap", sizeof(".wsnap"));
	return out;
}

const char *wsnap_hydrate_base(const char *path)
{
	const char *slash = strrchr(path, '/');

	return slash ? slash + 1 : path;
}

char *wsnap_hydrate_parent(const char *path)
{
	size_t len = (size_t)(wsnap_hydrate_base(path) - path);

	return strndup(path, len > 1 ? len - 1 : 1);
}

char *wsnap_hydrate_work_sibling(const char *upper)
{
	const char *base = wsnap_hydrate_base(upper);
	size_t plen = (size_t)(base - upper), blen = strlen(base);
	char *out;

	if (!*base)
		return NULL;
	out = malloc(plen + 1 + blen + sizeof(".wsnap-work"));
	if (!out)
		return NULL;
	memcpy(out, upper, plen);
	out[plen] = '.';
	memcpy(out + plen + 1, base, blen);
	memcpy(out + plen + 1 + blen, ".wsnap-work", sizeof(".wsnap-work"));
	return out;
}

/* Whether path is "dir/name". */
static bool is_child(const char *path, const char *dir, const char *name)
{
	size_t dl = strlen(dir);

	return strncmp(path, dir, dl) == 0 && path[dl] == '/' &&
	       strcmp(path + dl + 1, name) == 0;
}

bool wsnap_hydrate_work_inside(const struct wsnap_hydrate_state *st)
{
	return is_child(st->work, st->dir, WSNAP_HYDRATE_WORK);
}

/* ---- trust ---- */

static int untrusted(struct wsnap_error *err, int errnum, const char *path,
		     const char *why)
{
	wsnap_error_io(err, errnum, path,
		       "untrusted state of a hydrated workspace (%s)", why);
	return -1;
}

/* Whether the caller owns sb, else err set. */
static bool owned(const struct stat *sb, const char *path,
		  struct wsnap_error *err)
{
	char why[64];

	if (sb->st_uid == geteuid())
		return true;
	snprintf(why, sizeof(why), "owned by uid %u, not by uid %u",
		 (unsigned)sb->st_uid, (unsigned)geteuid());
	untrusted(err, 0, path, why);
	return false;
}

/* The failure to open name in parent, classified; -1 (err set) or 0. */
static int open_failed(int parent, const char *name, const char *path,
		       struct wsnap_error *err)
{
	int e = errno;
	struct stat sb;

	if (e == ENOENT)
		return 0;
	if (fstatat(parent, name, &sb, AT_SYMLINK_NOFOLLOW) == 0) {
		if (S_ISLNK(sb.st_mode))
			return untrusted(err, 0, path, "a symlink");
		if (!S_ISDIR(sb.st_mode) && e == ENOTDIR)
			return untrusted(err, 0, path, "not a directory");
	}
	wsnap_error_io(err, e, path, "cannot open");
	return -1;
}

int wsnap_hydrate_dir_open(const char *dir, const struct wsnap_fs_id *want,
			   int *pfd, int *sfd, struct wsnap_error *err)
{
	char *parent = wsnap_hydrate_parent(dir);
	struct stat sb;
	int e, rc = -1;

	*pfd = *sfd = -1;
	if (!parent) {
		wsnap_error_io(err, ENOMEM, dir, "out of memory");
		return -1;
	}
	e = wsnap_fs_open_dir_nofollow(parent, pfd);
	if (e == ELOOP || e == ENOTDIR)
		untrusted(err, e, dir, "reached through a symlink");
	else if (e)
		wsnap_error_io(err, e, parent, "cannot open");
	if (e)
		goto out;
	*sfd = openat(*pfd, wsnap_hydrate_base(dir), WSNAP_HYDRATE_DIR_FLAGS);
	if (*sfd < 0) {
		rc = open_failed(*pfd, wsnap_hydrate_base(dir), dir, err);
		goto out;
	}
	if (fstat(*sfd, &sb) != 0) {
		wsnap_error_io(err, errno, dir, "cannot stat");
		goto out;
	}
	if (!owned(&sb, dir, err))
		goto out;
	if (sb.st_mode & (S_IWGRP | S_IWOTH)) {
		untrusted(err, 0, dir, "writable by group or others");
		goto out;
	}
	if (want && !wsnap_fs_id_same(&sb, want)) {
		untrusted(err, 0, dir, "replaced since hydrate made it");
		goto out;
	}
	rc = 1;
out:
	if (rc != 1) {
		if (*sfd >= 0)
			close(*sfd);
		if (*pfd >= 0)
			close(*pfd);
		*pfd = *sfd = -1;
	}
	free(parent);
	return rc;
}

/* Whether p is an absolute path without empty, "." or ".." components. */
static bool canonical(const char *p)
{
	size_t len = strlen(p), n;

	if (p[0] != '/' || len >= PATH_MAX)
		return false;
	if (len == 1)
		return true;
	while (*p) {
		p++; /* the '/' */
		n = strcspn(p, "/");
		if (n == 0 || n > NAME_MAX || (n == 1 && p[0] == '.') ||
		    (n == 2 && p[0] == '.' && p[1] == '.'))
			return false;
		p += n;
	}
	return true;
}

/* True when path a lies within b (equal, or below it). */
static bool within(const char *a, const char *b)
{
	size_t lb = strlen(b);

	return strcmp(b, "/") == 0 ||
	       (strncmp(a, b, lb) == 0 && (a[lb] == '\0' || a[lb] == '/'));
}

static bool not_ours(const char *path, struct wsnap_error *err)
{
	untrusted(err, 0, path, "names a directory hydrate does not make");
	return false;
}

bool wsnap_hydrate_paths_ok(const struct wsnap_hydrate_state *st,
			    struct wsnap_error *err)
{
	char *want, *sib;
	bool same;

	if (!st->workspace || !st->dir || !st->lower || !st->upper ||
	    !st->work || !st->archive)
		return not_ours(st->dir ? st->dir : "", err);
	want = wsnap_hydrate_state_dir(st->workspace);
	same = want && strcmp(want, st->dir) == 0;
	free(want);
	if (!canonical(st->workspace) || !same)
		return not_ours(st->dir, err);
	if (!is_child(st->lower, st->dir, WSNAP_HYDRATE_LOWER))
		return not_ours(st->lower, err);
	if (st->own_upper
		    ? !is_child(st->upper, st->dir, WSNAP_HYDRATE_UPPER)
		    : !canonical(st->upper) || within(st->upper, st->dir) ||
			      within(st->dir, st->upper))
		return not_ours(st->upper, err);
	if (wsnap_hydrate_work_inside(st))
		return !st->work_id_valid || not_ours(st->work, err);
	if (st->own_upper)
		return not_ours(st->work, err);
	sib = wsnap_hydrate_work_sibling(st->upper);
	same = sib && strcmp(sib, st->work) == 0;
	free(sib);
	return same || not_ours(st->work, err);
}

/* ---- writing the state file ---- */

static bool plain_byte(unsigned char c)
{
	return c > ' ' && c < 0x7f && c != '%';
}

static void put_encoded(FILE *f, const char *key, const char *s)
{
	const unsigned char *p = (const unsigned char *)s;

	fputs(key, f);
	fputc(' ', f);
	for (; *p; p++) {
		if (plain_byte(*p))
			fputc(*p, f);
		else
			fprintf(f, "%%%02X", *p);
	}
	fputc('\n', f);
}

static void put_state(FILE *f, const struct wsnap_hydrate_state *st)
{
	const struct wsnap_hydrate_archive_id *a = &st->arc;

	fprintf(f, "%s\n", STATE_MAGIC);
	put_encoded(f, "workspace", st->workspace);
	put_encoded(f, "archive", st->archive);
	if (a->valid)
		fprintf(f,
			"archive-id %" PRIu64 " %" PRIu64 " %" PRIu64
			" %" PRId64 " %" PRId64 " %" PRId64 " %" PRId64 "\n",
			a->dev, a->ino, a->size, a->mtime_sec, a->mtime_nsec,
			a->ctime_sec, a->ctime_nsec);
	fprintf(f, "policy %s\n", st->policy);
	fprintf(f, "overlay %s\n", kind_names[st->kind]);
	put_encoded(f, "lower", st->lower);
	put_encoded(f, "upper", st->upper);
	fprintf(f, "own-upper %d\n", st->own_upper ? 1 : 0);
	put_encoded(f, "work", st->work);
	if (st->work_id_valid)
		fprintf(f, "work-id %" PRIu64 " %" PRIu64 "\n", st->work_id.dev,
			st->work_id.ino);
}

enum wsnap_status
wsnap_hydrate_dir_open_made(const struct wsnap_hydrate_state *st, int *pfd,
			    int *sfd, struct wsnap_error *err)
{
	int rc = wsnap_hydrate_dir_open(
		st->dir, st->dir_id_valid ? &st->dir_id : NULL, pfd, sfd, err);

	if (rc == 0)
		return wsnap_error_io(err, ENOENT, st->dir, "cannot open");
	return rc == 1 ? WSNAP_OK : WSNAP_IO;
}

enum wsnap_status wsnap_hydrate_state_save(const struct wsnap_hydrate_state *st,
					   struct wsnap_error *err)
{
	char *tmp = wsnap_path_join(st->dir, WSNAP_HYDRATE_STATE_TMP);
	enum wsnap_status status = WSNAP_IO;
	int pfd = -1, sfd = -1, fd;
	FILE *f = NULL;

	if (!tmp) {
		wsnap_error_io(err, ENOMEM, st->dir, "out of memory");
		goto out;
	}
	if (wsnap_hydrate_dir_open_made(st, &pfd, &sfd, err) != WSNAP_OK)
		goto out;
	fd = openat(sfd, WSNAP_HYDRATE_STATE_TMP,
		    O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC | O_NOFOLLOW,
		    0600);
	if (fd < 0 || !(f = fdopen(fd, "w"))) {
		wsnap_error_io(err, errno, tmp, "cannot write");
		if (fd >= 0)
			close(fd);
		goto out;
	}
	put_state(f, st);
	if (fflush(f) != 0 || fsync(fileno(f)) != 0) {
		wsnap_error_io(err, errno, tmp, "cannot write");
		fclose(f);
		goto out;
	}
	if (fclose(f) != 0) {
		wsnap_error_io(err, errno, tmp, "cannot write");
		goto out;
	}
	if (renameat(sfd, WSNAP_HYDRATE_STATE_TMP, sfd,
		     WSNAP_HYDRATE_STATE_FILE) != 0)
		wsnap_error_io(err, errno, st->dir,
			       "cannot write the state in");
	else
		status = WSNAP_OK;
out:
	if (status != WSNAP_OK && sfd >= 0)
		unlinkat(sfd, WSNAP_HYDRATE_STATE_TMP, 0);
	if (sfd >= 0)
		close(sfd);
	if (pfd >= 0)
		close(pfd);
	free(tmp);
	return status;
}

/* ---- reading it back ---- */

/* Reads the state file of the trusted directory sfd (at most
 * STATE_MAX_BYTES) into a malloc'd, NUL-terminated buffer of *len bytes.
 * Returns 1, 0 when there is none, -1 with err set. */
static int read_state_file(int sfd, const char *path, char **out, size_t *len,
			   struct wsnap_error *err)
{
	struct stat sb;
	char *buf = NULL;
	int fd, e, rc = -1;

	*out = NULL;
	fd = openat(sfd, WSNAP_HYDRATE_STATE_FILE,
		    O_RDONLY | O_CLOEXEC | O_NOFOLLOW | O_NONBLOCK | O_NOCTTY);
	if (fd < 0) {
		if (errno == ENOENT)
			return 0;
		if (errno == ELOOP)
			return untrusted(err, 0, path, "a symlink");
		wsnap_error_io(err, errno, path, "cannot read");
		return -1;
	}
	if (fstat(fd, &sb) != 0) {
		wsnap_error_io(err, errno, path, "cannot read");
		goto out;
	}
	if (!S_ISREG(sb.st_mode)) {
		untrusted(err, 0, path, "not a regular file");
		goto out;
	}
	if (!owned(&sb, path, err))
		goto out;
	if (sb.st_size > (off_t)STATE_MAX_BYTES) {
		wsnap_error_io(err, EFBIG, path, "cannot read");
		goto out;
	}
	buf = malloc(STATE_MAX_BYTES + 1);
	if (!buf) {
		wsnap_error_io(err, ENOMEM, path, "out of memory");
		goto out;
	}
	e = wsnap_read_full(fd, buf, STATE_MAX_BYTES + 1, len);
	if (e || *len > STATE_MAX_BYTES) {
		wsnap_error_io(err, e ? e : EFBIG, path, "cannot read");
		goto out;
	}
	buf[*len] = '\0';
	*out = buf;
	buf = NULL;
	rc = 1;
out:
	free(buf);
	close(fd);
	return rc;
}

static int hexval(char c)
{
	if (c >= '0' && c <= '9')
		return c - '0';
	if (c >= 'A' && c <= 'F')
		return c - 'A' + 10;
	if (c >= 'a' && c <= 'f')
		return c - 'a' + 10;
	return -1;
}

/* Decodes a percent-encoded path (len bytes, at most VALUE_MAX) into a
 * malloc'd string; NULL when it is malformed (a byte put_encoded would
 * have encoded, a bad escape, a NUL) or memory runs out. */
static char *decode(const char *s, size_t len)
{
	char *out;
	size_t i, n = 0;

	if (len == 0 || len > VALUE_MAX)
		return NULL;
	out = malloc(len + 1);
	if (!out)
		return NULL;
	for (i = 0; i < len; i++) {
		if (s[i] != '%') {
			if (!plain_byte((unsigned char)s[i]))
				goto bad;
			out[n++] = s[i];
			continue;
		}
		if (len - i < 3 || hexval(s[i + 1]) < 0 || hexval(s[i + 2]) < 0)
			goto bad;
		out[n] = (char)(hexval(s[i + 1]) * 16 + hexval(s[i + 2]));
		if (!out[n])
			goto bad;
		n++;
		i += 2;
	}
	out[n] = '\0';
	return out;
bad:
	free(out);
	return NULL;
}

/* A decimal number without sign at *p, at most max; *p moves past it. */
static bool parse_num(const char **p, uint64_t max, uint64_t *v)
{
	const char *s = *p;

	*v = 0;
	if (*s < '0' || *s > '9')
		return false;
	for (; *s >= '0' && *s <= '9'; s++) {
		unsigned d = (unsigned)(*s - '0');

		if (*v > (max - d) / 10)
			return false;
		*v = *v * 10 + d;
	}
	*p = s;
	return true;
}

/* " N" (first: "N") of numbers separated by one space. */
static bool next_u64(const char **p, bool first, uint64_t *v)
{
	if (!first && *(*p)++ != ' ')
		return false;
	return parse_num(p, UINT64_MAX, v);
}

static bool next_i64(const char **p, int64_t *v)
{
	bool neg;
	uint64_t m;

	if (*(*p)++ != ' ')
		return false;
	neg = **p == '-';
	if (neg)
		(*p)++;
	if (!parse_num(p, neg ? (uint64_t)INT64_MAX + 1 : INT64_MAX, &m))
		return false;
	*v = neg ? (int64_t)(0 - m) : (int64_t)m;
	return true;
}

static bool parse_archive_id(const char *p, struct wsnap_hydrate_archive_id *a)
{
	if (!next_u64(&p, true, &a->dev) || !next_u64(&p, false, &a->ino) ||
	    !next_u64(&p, false, &a->size) || !next_i64(&p, &a->mtime_sec) ||
	    !next_i64(&p, &a->mtime_nsec) || !next_i64(&p, &a->ctime_sec) ||
	    !next_i64(&p, &a->ctime_nsec) || *p)
		return false;
	if (a->mtime_nsec < 0 || a->mtime_nsec > 999999999 ||
	    a->ctime_nsec < 0 || a->ctime_nsec > 999999999)
		return false;
	a->valid = true;
	return true;
}

static bool parse_fs_id(const char *p, struct wsnap_fs_id *id)
{
	return next_u64(&p, true, &id->dev) && next_u64(&p, false, &id->ino) &&
	       !*p;
}

enum state_key {
	K_WORKSPACE,
	K_ARCHIVE,
	K_ARCHIVE_ID,
	K_POLICY,
	K_OVERLAY,
	K_LOWER,
	K_UPPER,
	K_OWN_UPPER,
	K_WORK,
	K_WORK_ID,
	K_COUNT,
};

static const char *const key_names[K_COUNT] = {
	[K_WORKSPACE] = "workspace",
	[K_ARCHIVE] = "archive",
	[K_ARCHIVE_ID] = "archive-id",
	[K_POLICY] = "policy",
	[K_OVERLAY] = "overlay",
	[K_LOWER] = "lower",
	[K_UPPER] = "upper",
	[K_OWN_UPPER] = "own-upper",
	[K_WORK] = "work",
	[K_WORK_ID] = "work-id",
};

/* Every key but the identities must be there. */
#define KEYS_REQUIRED                                                          \
	(((1u << K_COUNT) - 1) & ~(1u << K_ARCHIVE_ID) & ~(1u << K_WORK_ID))

static bool parse_policy(struct wsnap_hydrate_state *st, const char *v)
{
	size_t i;

	for (i = 0; i < WSNAP_HYDRATE_POLICY_ID_LEN; i++)
		if (!((v[i] >= '0' && v[i] <= '9') ||
		      (v[i] >= 'a' && v[i] <= 'f')))
			return false;
	if (v[i])
		return false;
	memcpy(st->policy, v, WSNAP_HYDRATE_POLICY_ID_LEN + 1);
	return true;
}

/* A remote archive's URL as hydrate writes it: its own label (remote.h),
 * without credentials, query or fragment. */
static bool remote_label(const char *v)
{
	char *label = wsnap_remote_is_url(v) ? wsnap_remote_label(v) : NULL;
	bool same = label && strcmp(label, v) == 0;

	free(label);
	return same;
}

static bool parse_value(struct wsnap_hydrate_state *st, enum state_key k,
			const char *v)
{
	char **slot[K_COUNT] = {
		[K_WORKSPACE] = &st->workspace, [K_ARCHIVE] = &st->archive,
		[K_LOWER] = &st->lower,		[K_UPPER] = &st->upper,
		[K_WORK] = &st->work,
	};

	if (slot[k]) {
		*slot[k] = decode(v, strlen(v));
		return *slot[k] &&
		       (canonical(*slot[k]) ||
			(k == K_ARCHIVE && (strcmp(*slot[k], "-") == 0 ||
					    remote_label(*slot[k]))));
	}
	switch (k) {
	case K_ARCHIVE_ID:
		return parse_archive_id(v, &st->arc);
	case K_WORK_ID:
		st->work_id_valid = parse_fs_id(v, &st->work_id);
		return st->work_id_valid;
	case K_POLICY:
		return parse_policy(st, v);
	case K_OVERLAY:
		if (strcmp(v, kind_names[WSNAP_OVERLAY_KERNEL]) == 0)
			st->kind = WSNAP_OVERLAY_KERNEL;
		else if (strcmp(v, kind_names[WSNAP_OVERLAY_FUSE]) == 0)
			st->kind = WSNAP_OVERLAY_FUSE;
		return st->kind != WSNAP_OVERLAY_AUTO;
	case K_OWN_UPPER:
		st->own_upper = v[0] == '1';
		return (v[0] == '0' || v[0] == '1') && !v[1];
	default:
		return false;
	}
}

/* One 'key value' line into st; false when it makes no sense: an unknown
 * or repeated key, or a bad value. */
static bool parse_line(struct wsnap_hydrate_state *st, char *line,
		       unsigned *seen)
{
	char *sp = strchr(line, ' ');
	unsigned k;

	if (!sp || !sp[1])
		return false;
	*sp = '\0';
	for (k = 0; k < K_COUNT; k++)
		if (strcmp(line, key_names[k]) == 0)
			break;
	if (k == K_COUNT || (*seen & (1u << k)))
		return false;
	*seen |= 1u << k;
	return parse_value(st, (enum state_key)k, sp + 1);
}

/* The whole file (len bytes in buf) into st. */
static bool parse_state(struct wsnap_hydrate_state *st, char *buf, size_t len)
{
	size_t ml = strlen(STATE_MAGIC);
	unsigned seen = 0;
	char *line, *nl;

	if (strlen(buf) != len || len <= ml || memcmp(buf, STATE_MAGIC, ml) ||
	    buf[ml] != '\n' || buf[len - 1] != '\n')
		return false;
	for (line = buf + ml + 1; *line; line = nl + 1) {
		nl = strchr(line, '\n');
		*nl = '\0';
		if (!parse_line(st, line, &seen))
			return false;
	}
	return (seen & KEYS_REQUIRED) == KEYS_REQUIRED;
}

int wsnap_hydrate_state_load(struct wsnap_hydrate_state *st,
			     const char *workspace, struct wsnap_error *err)
{
	char *dir = NULL, *path = NULL, *buf = NULL;
	int pfd = -1, sfd = -1, rc;
	struct stat sb;
	size_t len;

	memset(st, 0, sizeof(*st));
	dir = wsnap_hydrate_state_dir(workspace);
	if (!dir)
		return 0;
	path = wsnap_path_join(dir, WSNAP_HYDRATE_STATE_FILE);
	if (!path) {
		free(dir);
		wsnap_error_io(err, ENOMEM, workspace, "out of memory");
		return -1;
	}
	rc = wsnap_hydrate_dir_open(dir, NULL, &pfd, &sfd, err);
	if (rc == 1 && fstat(sfd, &sb) != 0) {
		wsnap_error_io(err, errno, dir, "cannot stat");
		rc = -1;
	}
	if (rc == 1) {
		wsnap_fs_id_set(&st->dir_id, &sb);
		st->dir_id_valid = true;
		rc = read_state_file(sfd, path, &buf, &len, err);
	}
	if (rc <= 0)
		goto out;
	if (!parse_state(st, buf, len) ||
	    strcmp(st->workspace, workspace) != 0) {
		wsnap_error_io(err, EINVAL, path,
			       "state of a hydrated workspace makes no sense "
			       "(remove it by hand once nothing is mounted)");
		rc = -1;
		goto out;
	}
	st->dir = dir;
	dir = NULL;
	if (!wsnap_hydrate_paths_ok(st, err))
		rc = -1;
out:
	if (rc != 1)
		wsnap_hydrate_state_release(st);
	if (sfd >= 0)
		close(sfd);
	if (pfd >= 0)
		close(pfd);
	free(buf);
	free(path);
	free(dir);
	return rc;
}
