/* SPDX-License-Identifier: MIT */
/*
 * Test support library: see support.h.
 *
 * Invariants:
 *  - the writer uses libarchive's full pax format: its restricted pax
 *    variant silently drops sub-second mtimes; the full one still writes
 *    no extended header for a member that needs none;
 *  - the libarchive writer of a struct ts_archive has no blocking
 *    (bytes_per_block 0): every byte it produces reaches the buffer as soon
 *    as the entry is finished, so raw appends interleave in order;
 *  - the writer's own end-of-archive marker is never captured: the end is
 *    written by ts_archive_finish alone, so tests choose it.
 */
#include "support.h"

#include <archive.h>
#include <archive_entry.h>
#include <errno.h>
#include <fcntl.h>
#include <ftw.h>
#include <pthread.h>
#include <setjmp.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <unistd.h>
#include <cmocka.h>

struct ts_buf {
	unsigned char *data;
	size_t len;
	size_t cap;
};

struct ts_archive {
	struct ts_buf buf;
	struct archive *w;
	int capture; /* writer output goes to buf while set */
	int64_t mtime_sec;
	long mtime_nsec;
};

static void ts_die(const char *what, struct archive *a)
{
	fail_msg("test support: %s%s%s", what, a ? ": " : "",
		 a && archive_error_string(a) ? archive_error_string(a) : "");
}

static void *ts_xmalloc(size_t n)
{
	void *p = malloc(n ? n : 1);

	if (!p)
		ts_die("out of memory", NULL);
	return p;
}

static void ts_buf_append(struct ts_buf *b, const void *data, size_t len)
{
	if (len > SIZE_MAX - b->len)
		ts_die("buffer overflow", NULL);
	if (b->len + len > b->cap) {
		size_t cap = b->cap ? b->cap : 4096;
		unsigned char *p;

		while (cap < b->len + len) {
			if (cap > SIZE_MAX / 2)
				ts_die("buffer overflow", NULL);
			cap *= 2;
		}
		p = realloc(b->data, cap);
		if (!p)
			ts_die("out of memory", NULL);
		b->data = p;
		b->cap = cap;
	}
	if (len)
		memcpy(b->data + b->len, data, len);
	b->len += len;
}

static la_ssize_t ts_archive_write_cb(struct archive *w, void *ctx,
				      const void *data, size_t len)
{
	struct ts_archive *a = ctx;

	if (a->capture)
		ts_buf_append(&a->buf, data, len);
	return (la_ssize_t)len;
}

/* Default mtime of members (writer and raw headers) when not set. */
#define TS_MTIME 1700000000

struct ts_archive *ts_archive_new(void)
{
	struct ts_archive *a = ts_xmalloc(sizeof(*a));

	memset(a, 0, sizeof(*a));
	a->mtime_sec = TS_MTIME;
	a->w = archive_write_new();
	if (!a->w)
		ts_die("archive_write_new", NULL);
	if (archive_write_set_format_pax(a->w) != ARCHIVE_OK ||
	    archive_write_add_filter_none(a->w) != ARCHIVE_OK ||
	    archive_write_set_bytes_per_block(a->w, 0) != ARCHIVE_OK ||
	    archive_write_set_bytes_in_last_block(a->w, 1) != ARCHIVE_OK)
		ts_die("writer setup", a->w);
	a->capture = 1;
	if (archive_write_open(a->w, a, NULL, ts_archive_write_cb, NULL) !=
	    ARCHIVE_OK)
		ts_die("archive_write_open", a->w);
	return a;
}

void ts_set_mtime(struct ts_archive *a, int64_t sec, long nsec)
{
	a->mtime_sec = sec;
	a->mtime_nsec = nsec;
}

/* Writes one entry through libarchive; WARN (e.g. a name that is not valid
 * in the locale, written as hdrcharset=BINARY) is fine. */
static void ts_write_entry(struct ts_archive *a, struct archive_entry *e,
			   const void *data, size_t len)
{
	const unsigned char *p = data;

	archive_entry_set_mtime(e, a->mtime_sec, a->mtime_nsec);
	archive_entry_set_uid(e, 1000);
	archive_entry_set_gid(e, 1000);
	if (archive_write_header(a->w, e) < ARCHIVE_WARN)
		ts_die("archive_write_header", a->w);
	while (len > 0) {
		la_ssize_t n = archive_write_data(a->w, p, len);

		if (n <= 0)
			ts_die("archive_write_data", a->w);
		p += n;
		len -= (size_t)n;
	}
	if (archive_write_finish_entry(a->w) < ARCHIVE_WARN)
		ts_die("archive_write_finish_entry", a->w);
	archive_entry_free(e);
}

static struct archive_entry *ts_entry(const char *name, unsigned type,
				      unsigned mode)
{
	struct archive_entry *e = archive_entry_new();

	if (!e)
		ts_die("archive_entry_new", NULL);
	archive_entry_copy_pathname(e, name);
	archive_entry_set_filetype(e, type);
	archive_entry_set_perm(e, mode);
	return e;
}

void ts_add_file(struct ts_archive *a, const char *name, unsigned mode,
		 const void *data, size_t len)
{
	struct archive_entry *e = ts_entry(name, AE_IFREG, mode);

	archive_entry_set_size(e, (la_int64_t)len);
	ts_write_entry(a, e, data, len);
}

void ts_add_dir(struct ts_archive *a, const char *name, unsigned mode)
{
	ts_write_entry(a, ts_entry(name, AE_IFDIR, mode), NULL, 0);
}

void ts_add_symlink(struct ts_archive *a, const char *name, const char *target)
{
	struct archive_entry *e = ts_entry(name, AE_IFLNK, 0777);

	archive_entry_copy_symlink(e, target);
	ts_write_entry(a, e, NULL, 0);
}

void ts_add_hardlink(struct ts_archive *a, const char *name, const char *target)
{
	struct archive_entry *e = ts_entry(name, AE_IFREG, 0644);

	archive_entry_copy_hardlink(e, target);
	archive_entry_set_size(e, 0);
	ts_write_entry(a, e, NULL, 0);
}

void ts_add_special(struct ts_archive *a, const char *name, unsigned type)
{
	struct archive_entry *e = ts_entry(name, type, 0644);

	if (type == AE_IFCHR || type == AE_IFBLK)
		archive_entry_set_rdev(e, makedev(1, 3));
	ts_write_entry(a, e, NULL, 0);
}

/* Writes v in octal into a field of n bytes (n - 1 digits and a NUL), or
 * in base-256 when it does not fit. */
static void ts_raw_number(unsigned char *field, size_t n, uint64_t v)
{
	char tmp[32];
	int len;

	if (n - 1 < 22 && v >> (3 * (n - 1)) != 0) {
		size_t i;

		memset(field, 0, n);
		field[0] = 0x80;
		for (i = n - 1; i > 0 && v; i--, v >>= 8)
			field[i] = (unsigned char)(v & 0xff);
		return;
	}
	len = snprintf(tmp, sizeof(tmp), "%0*llo", (int)(n - 1),
		       (unsigned long long)v);
	if (len < 0 || (size_t)len != n - 1)
		ts_die("raw number", NULL);
	memcpy(field, tmp, n - 1);
	field[n - 1] = '\0';
}

void ts_raw_checksum(unsigned char block[WSNAP_TAR_BLOCK])
{
	unsigned sum = 0;
	char tmp[16];
	size_t i;

	memset(block + WSNAP_TAR_OFF(chksum), ' ', WSNAP_TAR_LEN(chksum));
	for (i = 0; i < WSNAP_TAR_BLOCK; i++)
		sum += block[i];
	if (snprintf(tmp, sizeof(tmp), "%06o", sum) != 6)
		ts_die("checksum", NULL);
	memcpy(block + WSNAP_TAR_OFF(chksum), tmp, 6);
	block[WSNAP_TAR_OFF(chksum) + 6] = '\0';
	block[WSNAP_TAR_OFF(chksum) + 7] = ' ';
}

void ts_raw_header(unsigned char block[WSNAP_TAR_BLOCK], const char *name,
		   char typeflag, unsigned mode, uint64_t size,
		   const char *linkname)
{
	size_t nlen = strlen(name);

	if (nlen > WSNAP_TAR_LEN(name) ||
	    (linkname && strlen(linkname) > WSNAP_TAR_LEN(linkname)))
		ts_die("raw header name longer than 100 bytes", NULL);
	memset(block, 0, WSNAP_TAR_BLOCK);
	memcpy(block + WSNAP_TAR_OFF(name), name, nlen);
	ts_raw_number(block + WSNAP_TAR_OFF(mode), WSNAP_TAR_LEN(mode),
		      mode & 07777);
	ts_raw_number(block + WSNAP_TAR_OFF(uid), WSNAP_TAR_LEN(uid), 0);
	ts_raw_number(block + WSNAP_TAR_OFF(gid), WSNAP_TAR_LEN(gid), 0);
	ts_raw_number(block + WSNAP_TAR_OFF(size), WSNAP_TAR_LEN(size), size);
	ts_raw_number(block + WSNAP_TAR_OFF(mtime), WSNAP_TAR_LEN(mtime),
		      TS_MTIME);
	block[WSNAP_TAR_OFF(typeflag)] = (unsigned char)typeflag;
	if (linkname)
		memcpy(block + WSNAP_TAR_OFF(linkname), linkname,
		       strlen(linkname));
	memcpy(block + WSNAP_TAR_OFF(magic), WSNAP_TAR_POSIX_MAGIC,
	       WSNAP_TAR_MAGIC_LEN);
	ts_raw_checksum(block);
}

void ts_add_raw(struct ts_archive *a, const void *data, size_t len)
{
	ts_buf_append(&a->buf, data, len);
}

void ts_add_raw_member(struct ts_archive *a, const char *name, char typeflag,
		       unsigned mode, const void *data, size_t len,
		       const char *linkname)
{
	static const unsigned char zeros[WSNAP_TAR_BLOCK];
	unsigned char block[WSNAP_TAR_BLOCK];

	ts_raw_header(block, name, typeflag, mode, len, linkname);
	ts_add_raw(a, block, sizeof(block));
	ts_add_raw(a, data, len);
	if (len % WSNAP_TAR_BLOCK)
		ts_add_raw(a, zeros, WSNAP_TAR_BLOCK - len % WSNAP_TAR_BLOCK);
}

unsigned char *ts_archive_finish(struct ts_archive *a, int end_marker,
				 size_t *len)
{
	static const unsigned char zeros[2 * WSNAP_TAR_BLOCK]; /* end marker */
	unsigned char *out;

	/* The writer's own trailer is not captured. */
	a->capture = 0;
	archive_write_free(a->w);
	if (end_marker)
		ts_buf_append(&a->buf, zeros, sizeof(zeros));
	out = a->buf.data ? a->buf.data : ts_xmalloc(1);
	*len = a->buf.len;
	free(a);
	return out;
}

static la_ssize_t ts_buf_write_cb(struct archive *w, void *ctx,
				  const void *data, size_t len)
{
	ts_buf_append(ctx, data, len);
	return (la_ssize_t)len;
}

unsigned char *ts_compress(const void *data, size_t len, const char *filter,
			   size_t *outlen)
{
	struct ts_buf b = {0};
	struct archive *w = archive_write_new();
	struct archive_entry *e = archive_entry_new();
	const unsigned char *p = data;

	if (!w || !e)
		ts_die("out of memory", NULL);
	if (archive_write_set_format_raw(w) != ARCHIVE_OK ||
	    archive_write_add_filter_by_name(w, filter) != ARCHIVE_OK ||
	    archive_write_set_bytes_per_block(w, 0) != ARCHIVE_OK ||
	    archive_write_set_bytes_in_last_block(w, 1) != ARCHIVE_OK ||
	    archive_write_open(w, &b, NULL, ts_buf_write_cb, NULL) !=
		    ARCHIVE_OK)
		ts_die("compressor setup", w);
	archive_entry_set_pathname(e, "raw");
	archive_entry_set_filetype(e, AE_IFREG);
	archive_entry_set_size(e, (la_int64_t)len);
	if (archive_write_header(w, e) != ARCHIVE_OK)
		ts_die("compressor header", w);
	while (len > 0) {
		la_ssize_t n = archive_write_data(w, p, len);

		if (n <= 0)
			ts_die("compressor data", w);
		p += n;
		len -= (size_t)n;
	}
	if (archive_write_close(w) != ARCHIVE_OK)
		ts_die("compressor close", w);
	archive_write_free(w);
	archive_entry_free(e);
	*outlen = b.len;
	return b.data ? b.data : ts_xmalloc(1);
}

static void ts_write_all(int fd, const void *data, size_t len)
{
	const unsigned char *p = data;

	while (len > 0) {
		ssize_t n = write(fd, p, len);

		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0)
			ts_die("write", NULL);
		p += n;
		len -= (size_t)n;
	}
}

int ts_memfd(const void *data, size_t len)
{
	int fd = memfd_create("ts-archive", MFD_CLOEXEC);

	if (fd < 0)
		ts_die("memfd_create", NULL);
	ts_write_all(fd, data, len);
	if (lseek(fd, 0, SEEK_SET) != 0)
		ts_die("lseek", NULL);
	return fd;
}

struct ts_feeder {
	int fd;
	unsigned char *data;
	size_t len;
};

/* Feeds the pipe; stops quietly when the reader closed its end. */
static void *ts_feeder_main(void *arg)
{
	struct ts_feeder *f = arg;
	size_t off = 0;

	while (off < f->len) {
		ssize_t n = write(f->fd, f->data + off, f->len - off);

		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0)
			break;
		off += (size_t)n;
	}
	close(f->fd);
	free(f->data);
	free(f);
	return NULL;
}

int ts_pipefd(const void *data, size_t len)
{
	struct ts_feeder *f = ts_xmalloc(sizeof(*f));
	pthread_t t;
	int fds[2];

	/* a reader that stops early must not kill the test */
	signal(SIGPIPE, SIG_IGN);
	if (pipe2(fds, O_CLOEXEC) != 0)
		ts_die("pipe", NULL);
	f->fd = fds[1];
	f->data = ts_xmalloc(len);
	if (len)
		memcpy(f->data, data, len);
	f->len = len;
	if (pthread_create(&t, NULL, ts_feeder_main, f) != 0)
		ts_die("pthread_create", NULL);
	pthread_detach(t);
	return fds[0];
}

static char *ts_join(const char *dir, const char *name)
{
	size_t dl = strlen(dir), nl = strlen(name);
	char *p = ts_xmalloc(dl + nl + 2);

	memcpy(p, dir, dl);
	p[dl] = '/';
	memcpy(p + dl + 1, name, nl + 1);
	return p;
}

char *ts_tempdir(void)
{
	const char *tmp = getenv("TMPDIR");
	char *path;

	if (!tmp || !*tmp)
		tmp = "/tmp";
	path = ts_join(tmp, "wsnap-test-XXXXXX");
	if (!mkdtemp(path))
		ts_die("mkdtemp", NULL);
	return path;
}

char *ts_tempdir_real(void)
{
	char *t = ts_tempdir(), *real = realpath(t, NULL);

	if (!real)
		ts_die("realpath of a temporary directory", NULL);
	free(t);
	return real;
}

static int ts_rm_one(const char *path, const struct stat *st, int flag,
		     struct FTW *ftw)
{
	if (remove(path) != 0 && errno != ENOENT)
		fail_msg("test support: cannot remove '%s': %s", path,
			 strerror(errno));
	return 0;
}

void ts_rmtree(const char *path)
{
	struct stat st;

	if (lstat(path, &st) != 0)
		return;
	/* FTW_PHYS: symlinks are removed, never followed */
	if (nftw(path, ts_rm_one, 16, FTW_DEPTH | FTW_PHYS | FTW_MOUNT) != 0)
		ts_die("nftw", NULL);
}

char *ts_write_file(const char *dir, const char *name, const void *data,
		    size_t len)
{
	char *path = ts_join(dir, name);
	int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);

	if (fd < 0)
		fail_msg("test support: cannot create '%s': %s", path,
			 strerror(errno));
	ts_write_all(fd, data, len);
	if (close(fd) != 0)
		ts_die("close", NULL);
	return path;
}
