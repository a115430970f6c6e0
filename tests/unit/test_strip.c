/* SPDX-License-Identifier: MIT */
/*
 * Unit tests of ops/strip.c: prefix stripping (policy.md section 8).
 * Outputs are read back with libarchive (names, attributes, data) and as
 * raw blocks (the pax records actually written).
 */
#include <archive.h>
#include <archive_entry.h>
#include <errno.h>
#include <fcntl.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>
#include <cmocka.h>

#include "index.h"
#include "policy.h"
#include "strip.h"
#include "support.h"
#include "array.h"

/* ---- wsnap_strip_name ------------------------------------------------ */

static void expect_name(const char *name, const char *prefix, const char *want)
{
	char out[256];
	long n = wsnap_strip_name(name, strlen(name), prefix, out, sizeof(out));

	if (n < 0)
		fail_msg("'%s' below '%s': %ld, want '%s'", name, prefix, n,
			 want);
	assert_string_equal(out, want);
	assert_int_equal(n, (long)strlen(want));
}

static void expect_outside(const char *name, const char *prefix)
{
	char out[256];

	assert_int_equal(
		wsnap_strip_name(name, strlen(name), prefix, out, sizeof(out)),
		-1);
}

static void test_strip_name_prefix_itself_is_root(void **state)
{
	expect_name("workspace", "workspace", ".");
	expect_name("workspace/", "workspace", ".");
	expect_name("./workspace/.", "workspace", ".");
	expect_name("a/b", "a/b", ".");
	expect_name("a//./b/", "a/b", ".");
}

static void test_strip_name_root_entries_stay_root(void **state)
{
	expect_name("", "workspace", ".");
	expect_name(".", "workspace", ".");
	expect_name("./", "workspace", ".");
	expect_name("./.", "workspace", ".");
}

static void test_strip_name_within_loses_prefix(void **state)
{
	expect_name("workspace/pkg", "workspace", "pkg");
	expect_name("workspace/pkg/", "workspace", "pkg");
	expect_name("./workspace//pkg/./main.py", "workspace", "pkg/main.py");
	expect_name("a/b/c/d", "a/b", "c/d");
}

/* Component-wise, never a string prefix. */
static void test_strip_name_outside_rejected(void **state)
{
	expect_outside("workspace2/x", "workspace");
	expect_outside("work", "workspace");
	expect_outside("x/workspace", "workspace");
	expect_outside("a", "a/b");
	expect_outside("a/bc", "a/b");
	expect_outside("a/c/b", "a/b");
}

static void test_strip_name_too_long(void **state)
{
	char out[4];

	assert_int_equal(wsnap_strip_name("p/abcdef", 8, "p", out, sizeof(out)),
			 -2);
}

/* ---- archives ---------------------------------------------------------- */

struct membuf {
	unsigned char *data;
	size_t len, cap;
};

static la_ssize_t membuf_write(struct archive *a, void *ctx, const void *buf,
			       size_t len)
{
	struct membuf *m = ctx;

	if (m->len + len > m->cap) {
		m->cap = (m->len + len) * 2;
		m->data = realloc(m->data, m->cap);
		assert_non_null(m->data);
	}
	memcpy(m->data + m->len, buf, len);
	m->len += len;
	return (la_ssize_t)len;
}

/* Entries with attributes ts_add_* does not set: owners, atime, xattr. */
static struct archive_entry *rich_entry(const char *name, unsigned type,
					unsigned mode)
{
	struct archive_entry *e = archive_entry_new();

	archive_entry_set_pathname(e, name);
	archive_entry_set_filetype(e, type);
	archive_entry_set_perm(e, mode);
	archive_entry_set_uid(e, 1234);
	archive_entry_set_gid(e, 567);
	archive_entry_set_uname(e, "alice");
	archive_entry_set_gname(e, "staff");
	archive_entry_set_mtime(e, 1700000000, 987654321);
	archive_entry_set_atime(e, 1700000100, 5);
	archive_entry_xattr_add_entry(e, "user.origin", "snapshot", 8);
	return e;
}

static unsigned char *rich_archive(size_t *len)
{
	struct membuf m = {0};
	struct archive *w = archive_write_new();
	struct archive_entry *e;
	static char sparse[1u << 20];

	assert_int_equal(archive_write_set_format_pax(w), ARCHIVE_OK);
	assert_int_equal(archive_write_open(w, &m, NULL, membuf_write, NULL),
			 ARCHIVE_OK);
	e = rich_entry("workspace/", AE_IFDIR, 0755);
	assert_int_equal(archive_write_header(w, e), ARCHIVE_OK);
	archive_entry_free(e);
	e = rich_entry("workspace/pkg/", AE_IFDIR, 0700);
	assert_int_equal(archive_write_header(w, e), ARCHIVE_OK);
	archive_entry_free(e);
	e = rich_entry("workspace/pkg/main.py", AE_IFREG, 0755);
	archive_entry_set_size(e, 12);
	assert_int_equal(archive_write_header(w, e), ARCHIVE_OK);
	assert_int_equal(archive_write_data(w, "print('hi')\n", 12), 12);
	archive_entry_free(e);
	e = rich_entry("workspace/pkg/link", AE_IFLNK, 0777);
	archive_entry_set_symlink(e, "main.py");
	assert_int_equal(archive_write_header(w, e), ARCHIVE_OK);
	archive_entry_free(e);
	/* a sparse file: data at 0 and in the middle, a hole at the end */
	memset(sparse, 0, sizeof(sparse));
	memset(sparse, 'S', 512);
	memset(sparse + (512u << 10), 'M', 1024);
	e = rich_entry("workspace/sparse", AE_IFREG, 0644);
	archive_entry_set_size(e, sizeof(sparse));
	archive_entry_sparse_add_entry(e, 0, 512);
	archive_entry_sparse_add_entry(e, 512u << 10, 1024);
	assert_int_equal(archive_write_header(w, e), ARCHIVE_OK);
	assert_int_equal(archive_write_data(w, sparse, sizeof(sparse)),
			 (la_ssize_t)sizeof(sparse));
	archive_entry_free(e);
	assert_int_equal(archive_write_close(w), ARCHIVE_OK);
	archive_write_free(w);
	*len = m.len;
	return m.data;
}

/* An empty read-write file for the output. */
static int out_file(void)
{
	int fd = memfd_create("strip-out", MFD_CLOEXEC);

	assert_true(fd >= 0);
	return fd;
}

static enum wsnap_status strip(int in_fd, int out_fd,
			       const struct wsnap_policy *p, const char *prefix,
			       struct wsnap_error *err)
{
	struct wsnap_strip_stats st;

	wsnap_error_clear(err);
	return wsnap_strip_run(in_fd, out_fd, p, prefix, NULL, &st, err);
}

static enum wsnap_status strip_bytes(const unsigned char *tar, size_t len,
				     int out_fd, const struct wsnap_policy *p,
				     const char *prefix,
				     struct wsnap_error *err)
{
	int fd = ts_memfd(tar, len);
	enum wsnap_status s = strip(fd, out_fd, p, prefix, err);

	close(fd);
	return s;
}

static enum wsnap_status strip_archive(struct ts_archive *a, int out_fd,
				       const char *prefix,
				       struct wsnap_error *err)
{
	struct wsnap_policy p;
	unsigned char *tar;
	enum wsnap_status s;
	size_t len;

	tar = ts_archive_finish(a, 1, &len);
	wsnap_policy_init(&p);
	s = strip_bytes(tar, len, out_fd, &p, prefix, err);
	wsnap_policy_release(&p);
	free(tar);
	return s;
}

static void expect_ok(enum wsnap_status s, const struct wsnap_error *err)
{
	if (s != WSNAP_OK)
		fail_msg("strip failed (%d): '%s': %s", (int)s, err->member,
			 err->reason);
}

static unsigned char *read_all(int fd, size_t *len)
{
	struct stat st;
	unsigned char *buf;

	assert_int_equal(fstat(fd, &st), 0);
	buf = malloc((size_t)st.st_size + 1);
	assert_non_null(buf);
	assert_int_equal(pread(fd, buf, (size_t)st.st_size, 0), st.st_size);
	*len = (size_t)st.st_size;
	return buf;
}

/* Opens the output with libarchive (caller frees the archive). */
static struct archive *open_output(const unsigned char *data, size_t len)
{
	struct archive *r = archive_read_new();

	archive_read_support_format_tar(r);
	assert_int_equal(archive_read_open_memory(r, data, len), ARCHIVE_OK);
	return r;
}

static void next(struct archive *r, struct archive_entry **e, const char *name)
{
	assert_int_equal(archive_read_next_header(r, e), ARCHIVE_OK);
	assert_string_equal(archive_entry_pathname(*e), name);
}

static void expect_rich(struct archive_entry *e)
{
	const char *xname;
	const void *xval;
	size_t xlen;
	int n;

	assert_int_equal(archive_entry_uid(e), 1234);
	assert_int_equal(archive_entry_gid(e), 567);
	assert_string_equal(archive_entry_uname(e), "alice");
	assert_string_equal(archive_entry_gname(e), "staff");
	assert_int_equal(archive_entry_mtime(e), 1700000000);
	assert_int_equal(archive_entry_mtime_nsec(e), 987654321);
	assert_int_equal(archive_entry_atime(e), 1700000100);
	/* libarchive 3.6 writes each xattr under two keys and reads both
	 * back: 2 entries here, as in the input, never more (a rewrite must
	 * not double them) */
	n = archive_entry_xattr_reset(e);
	assert_true(n >= 1 && n <= 2);
	while (n-- > 0) {
		assert_int_equal(
			archive_entry_xattr_next(e, &xname, &xval, &xlen),
			ARCHIVE_OK);
		assert_string_equal(xname, "user.origin");
		assert_int_equal(xlen, 8);
		assert_memory_equal(xval, "snapshot", 8);
	}
}

/* workspace/... becomes ., pkg, pkg/main.py, every attribute kept. */
static void test_strip_workspace_becomes_root(void **state)
{
	struct wsnap_policy p;
	struct wsnap_error err;
	struct archive_entry *e;
	struct archive *r;
	unsigned char *tar, *out;
	size_t len, outlen;
	char buf[64];
	int fd = out_file();

	tar = rich_archive(&len);
	wsnap_policy_init(&p);
	expect_ok(strip_bytes(tar, len, fd, &p, "workspace", &err), &err);
	out = read_all(fd, &outlen);
	r = open_output(out, outlen);
	next(r, &e, "./");
	assert_int_equal(archive_entry_filetype(e), AE_IFDIR);
	expect_rich(e);
	next(r, &e, "pkg/");
	assert_int_equal(archive_entry_perm(e), 0700);
	expect_rich(e);
	next(r, &e, "pkg/main.py");
	assert_int_equal(archive_entry_perm(e), 0755);
	assert_int_equal(archive_entry_size(e), 12);
	expect_rich(e);
	assert_int_equal(archive_read_data(r, buf, sizeof(buf)), 12);
	assert_memory_equal(buf, "print('hi')\n", 12);
	next(r, &e, "pkg/link");
	assert_string_equal(archive_entry_symlink(e), "main.py");
	expect_rich(e);
	next(r, &e, "sparse");
	assert_int_equal(archive_entry_size(e), 1u << 20);
	assert_true(archive_entry_sparse_count(e) >= 2);
	expect_rich(e);
	{
		const void *blk;
		size_t blen;
		la_int64_t off;
		uint64_t data = 0;
		bool saw_m = false;

		while (archive_read_data_block(r, &blk, &blen, &off) ==
		       ARCHIVE_OK) {
			data += blen;
			if (off == (512 << 10) && blen >= 1024 &&
			    ((const char *)blk)[0] == 'M')
				saw_m = true;
		}
		assert_true(saw_m);
		assert_true(data < (64u << 10)); /* holes not stored */
	}
	assert_int_equal(archive_read_next_header(r, &e), ARCHIVE_EOF);
	archive_read_free(r);
	free(out);
	free(tar);
	wsnap_policy_release(&p);
	close(fd);
}

static void test_strip_outside_prefix_rejected(void **state)
{
	struct ts_archive *a = ts_archive_new();
	struct wsnap_error err;
	struct stat st;
	int fd = out_file();

	ts_add_dir(a, "workspace", 0755);
	ts_add_file(a, "workspace/a", 0644, "a", 1);
	ts_add_file(a, "workspace2/b", 0644, "b", 1);
	assert_int_equal(strip_archive(a, fd, "workspace", &err),
			 WSNAP_REJECTED);
	assert_string_equal(err.member, "workspace2/b");
	assert_string_equal(err.reason,
			    "member does not start with prefix: workspace");
	/* nothing was written before the input was validated */
	assert_int_equal(fstat(fd, &st), 0);
	assert_int_equal(st.st_size, 0);
	close(fd);
}

/* The single-member rules run on the original name first. */
static void test_strip_single_member_rules_on_original_name(void **state)
{
	struct ts_archive *a = ts_archive_new();
	struct wsnap_error err;
	int fd = out_file();

	ts_add_file(a, "workspace/a", 0644, "a", 1);
	ts_add_raw_member(a, "workspace/../etc/passwd", '0', 0644, "x", 1,
			  NULL);
	assert_int_equal(strip_archive(a, fd, "workspace", &err),
			 WSNAP_REJECTED);
	assert_string_equal(err.member, "workspace/../etc/passwd");
	assert_string_equal(err.reason, "parent traversal");
	close(fd);

	fd = out_file();
	a = ts_archive_new();
	ts_add_raw_member(a, "/workspace/x", '0', 0644, "x", 1, NULL);
	assert_int_equal(strip_archive(a, fd, "workspace", &err),
			 WSNAP_REJECTED);
	assert_string_equal(err.member, "/workspace/x");
	assert_string_equal(err.reason, "absolute path");
	close(fd);
}

/* Symlinks pass the input check; the caller's policy judges the result. */
static void test_strip_result_validated_with_policy(void **state)
{
	struct ts_archive *a = ts_archive_new();
	struct wsnap_policy p;
	struct wsnap_error err;
	unsigned char *tar;
	size_t len;
	int fd = out_file();

	ts_add_file(a, "workspace/f", 0644, "f", 1);
	ts_add_symlink(a, "workspace/link", "f");
	tar = ts_archive_finish(a, 1, &len);
	wsnap_policy_init(&p);
	p.no_symlinks = true;
	assert_int_equal(strip_bytes(tar, len, fd, &p, "workspace", &err),
			 WSNAP_REJECTED);
	assert_string_equal(err.member, "link");
	assert_string_equal(err.reason, "symlink member not allowed");
	wsnap_policy_release(&p);
	free(tar);
	close(fd);
}

static void test_strip_empty_prefix_is_usage(void **state)
{
	struct ts_archive *a = ts_archive_new();
	struct wsnap_error err;
	int fd = out_file();

	ts_add_file(a, "f", 0644, "f", 1);
	assert_int_equal(strip_archive(a, fd, "./", &err), WSNAP_USAGE);
	close(fd);
}

/* Collects the values of one pax key from every 'x' header of a tar. */
static int pax_values(const unsigned char *tar, size_t len, const char *key,
		      char values[][512], int max)
{
	size_t off = 0, klen = strlen(key);
	int n = 0;

	while (off + WSNAP_TAR_BLOCK <= len && tar[off] != 0) {
		char sizef[WSNAP_TAR_LEN(size) + 1];
		uint64_t size;
		size_t rec;

		memcpy(sizef, tar + off + WSNAP_TAR_OFF(size),
		       WSNAP_TAR_LEN(size));
		sizef[WSNAP_TAR_LEN(size)] = '\0';
		size = strtoull(sizef, NULL, 8);
		if (tar[off + WSNAP_TAR_OFF(typeflag)] == WSNAP_TAR_PAX) {
			const char *p =
				(const char *)tar + off + WSNAP_TAR_BLOCK;
			const char *end = p + size;

			while (p < end) {
				char *sp;
				unsigned long rl = strtoul(p, &sp, 10);

				assert_true(rl > 0 && p + rl <= end);
				if (strncmp(sp + 1, key, klen) == 0 &&
				    sp[1 + klen] == '=' && n < max) {
					size_t vl = (size_t)(p + rl - 1 -
							     (sp + 2 + klen));

					assert_true(vl < 512);
					memcpy(values[n], sp + 2 + klen, vl);
					values[n][vl] = '\0';
					n++;
				}
				p += rl;
			}
		}
		rec = WSNAP_TAR_BLOCK +
		      (size_t)((size + WSNAP_TAR_BLOCK - 1) / WSNAP_TAR_BLOCK *
			       WSNAP_TAR_BLOCK);
		off += rec;
	}
	return n;
}

/* Regression for the stale-path hazard: a 134-character pax name renamed
 * must carry the new name in its pax 'path', and the old one nowhere. */
static void test_strip_long_pax_name_rewritten(void **state)
{
	struct ts_archive *a = ts_archive_new();
	char name[160], want[160], values[4][512];
	struct wsnap_error err;
	struct archive_entry *e;
	struct archive *r;
	unsigned char *out;
	size_t outlen;
	int fd = out_file(), n;

	memcpy(name, "workspace/", 10);
	memset(name + 10, 'n', 124);
	name[134] = '\0';
	memset(want, 'n', 124);
	want[124] = '\0';
	ts_add_dir(a, "workspace", 0755);
	ts_add_file(a, name, 0644, "long", 4);
	expect_ok(strip_archive(a, fd, "workspace", &err), &err);
	out = read_all(fd, &outlen);
	n = pax_values(out, outlen, "path", values, 4);
	assert_int_equal(n, 1);
	assert_string_equal(values[0], want);
	assert_null(memmem(out, outlen, "workspace", 9));
	r = open_output(out, outlen);
	next(r, &e, "./");
	next(r, &e, want);
	archive_read_free(r);
	free(out);
	close(fd);
}

/* A long name that becomes short needs no pax path at all. */
static void test_strip_long_name_becoming_short(void **state)
{
	struct ts_archive *a = ts_archive_new();
	char name[200], values[4][512];
	struct wsnap_error err;
	struct archive_entry *e;
	struct archive *r;
	unsigned char *out;
	size_t outlen;
	int fd = out_file();

	/* a first component of 160 bytes: no ustar prefix split, so the
	 * input has a pax path */
	memset(name, 'p', 160);
	memcpy(name + 160, "/short", 7);
	ts_add_file(a, name, 0644, "s", 1);
	name[160] = '\0';
	expect_ok(strip_archive(a, fd, name, &err), &err);
	out = read_all(fd, &outlen);
	assert_int_equal(pax_values(out, outlen, "path", values, 4), 0);
	assert_null(memmem(out, outlen, "ppppp", 5));
	r = open_output(out, outlen);
	next(r, &e, "short");
	archive_read_free(r);
	free(out);
	close(fd);
}

/* A compressed input from a pipe (spilled) or a file (read again). */
static void check_stream(const char *filter, bool pipe)
{
	struct ts_archive *a = ts_archive_new();
	struct wsnap_policy p;
	struct wsnap_error err;
	struct archive_entry *e;
	struct archive *r;
	unsigned char *tar, *z, *out;
	size_t len, zlen, outlen;
	int in, fd = out_file();

	ts_add_dir(a, "ws/", 0755);
	ts_add_file(a, "ws/pkg/main.py", 0644, "main", 4);
	tar = ts_archive_finish(a, 1, &len);
	z = ts_compress(tar, len, filter, &zlen);
	in = pipe ? ts_pipefd(z, zlen) : ts_memfd(z, zlen);
	wsnap_policy_init(&p);
	expect_ok(strip(in, fd, &p, "ws", &err), &err);
	close(in);
	out = read_all(fd, &outlen);
	r = open_output(out, outlen);
	next(r, &e, "./");
	next(r, &e, "pkg/main.py");
	archive_read_free(r);
	wsnap_policy_release(&p);
	free(out);
	free(tar);
	free(z);
	close(fd);
}

static void test_strip_gzip_pipe(void **state)
{
	check_stream("gzip", true);
}

static void test_strip_xz_pipe(void **state)
{
	check_stream("xz", true);
}

static void test_strip_compressed_file_read_again(void **state)
{
	check_stream("gzip", false);
	check_stream("zstd", false);
}

/* Names are bytes: not valid UTF-8 survives the rewrite unchanged. */
static void test_strip_non_utf8_name_kept(void **state)
{
	struct ts_archive *a = ts_archive_new();
	struct wsnap_error err;
	struct wsnap_policy p;
	struct wsnap_index *idx;
	struct wsnap_reader_opts o = {0};
	int fd = out_file();

	ts_add_file(a, "w/caf\xe9", 0644, "x", 1);
	ts_add_file(a, "w/\xc3\xa9t\xc3\xa9", 0644, "y", 1);
	expect_ok(strip_archive(a, fd, "w", &err), &err);
	wsnap_policy_init(&p);
	assert_int_equal(wsnap_index_build(&idx, fd, &p, &o, &err), WSNAP_OK);
	assert_int_equal(wsnap_index_count(idx), 3);
	assert_string_equal(wsnap_index_node(idx, 2)->path, "caf\xe9");
	assert_string_equal(wsnap_index_node(idx, 3)->path,
			    "\xc3\xa9t\xc3\xa9");
	wsnap_index_free(idx);
	wsnap_policy_release(&p);
	close(fd);
}

/* Appends a pax 'x' header holding one "path" record, as Python's tarfile
 * writes it for any non-ASCII name (UTF-8, no hdrcharset). */
static void add_pax_path(struct ts_archive *a, const char *path)
{
	char rec[1024];
	size_t body = strlen(" path=\n") + strlen(path), len = body;
	int n;

	/* the record's length counts its own digits */
	while ((size_t)snprintf(NULL, 0, "%zu", len) + body != len)
		len = (size_t)snprintf(NULL, 0, "%zu", len) + body;
	n = snprintf(rec, sizeof(rec), "%zu path=%s\n", len, path);
	assert_true(n > 0 && (size_t)n == len);
	ts_add_raw_member(a, "PaxHeader", 'x', 0644, rec, len, NULL);
}

/*
 * strip-prefix of a pax archive whose names are non-ASCII (a Python
 * workspace snapshot: 'workspace/café.txt') failed with 'invalid tar
 * stream': the copy's libarchive reader warns that a UTF-8 pax name cannot
 * be converted to the C locale, and the warning was taken for an error.
 * Names in several scripts, emoji, invalid UTF-8 and a long pax name, from
 * a plain file, a compressed file and a compressed pipe.
 */
static void check_pax_names(const char *filter, bool pipe)
{
	static const char *const names[] = {
		"caf\xc3\xa9.txt",
		"\xe6\x97\xa5\xe6\x9c\xac\xe8\xaa\x9e/\xe3\x83\x95\xe3\x82\xa1",
		"\xd0\xb6\xd0\xb6\xd0\xb6/\xce\xb1\xce\xb2\xce\xb3",
		"\xd8\xb9\xd8\xb1\xd8\xa8\xd9\x8a \xd7\xa2\xd7\x91\xd7\xa8",
		"\xe0\xa4\xb9\xe0\xa4\xbf\xe0\xa4\x82\xe0\xa4\xa6\xe0\xa5\x80",
		"emoji\xf0\x9f\x98\x80",
		"bad\xff\xfe.txt",
	};
	struct ts_archive *a = ts_archive_new();
	char path[512], longname[500];
	struct wsnap_reader_opts o = {0};
	struct wsnap_index *idx;
	struct wsnap_policy p;
	struct wsnap_error err;
	unsigned char *tar, *z = NULL, *in_bytes;
	size_t len, zlen, i, nnames = ARRAY_SIZE(names);
	int in, fd = out_file();

	ts_add_raw_member(a, "workspace/", '5', 0755, NULL, 0, NULL);
	for (i = 0; i < nnames; i++) {
		snprintf(path, sizeof(path), "workspace/%s", names[i]);
		add_pax_path(a, path);
		ts_add_raw_member(a, "placeholder", '0', 0644, "x", 1, NULL);
	}
	/* a long name of two-byte characters: two components of 240 bytes */
	memcpy(longname, "workspace/", 10);
	for (i = 0; i < 240; i++)
		memcpy(longname + 10 + 2 * i + (i >= 120), "\xc3\xa9", 2);
	longname[250] = '/';
	longname[491] = '\0';
	add_pax_path(a, longname);
	ts_add_raw_member(a, "placeholder", '0', 0644, "y", 1, NULL);
	tar = ts_archive_finish(a, 1, &len);
	in_bytes = tar;
	zlen = len;
	if (filter) {
		z = ts_compress(tar, len, filter, &zlen);
		in_bytes = z;
	}
	in = pipe ? ts_pipefd(in_bytes, zlen) : ts_memfd(in_bytes, zlen);
	wsnap_policy_init(&p);
	expect_ok(strip(in, fd, &p, "workspace", &err), &err);
	close(in);
	/* the names, as bytes, in the rewritten archive */
	assert_int_equal(wsnap_index_build(&idx, fd, &p, &o, &err), WSNAP_OK);
	for (i = 0; i < nnames; i++)
		assert_int_not_equal(
			wsnap_index_lookup(idx, names[i], strlen(names[i])), 0);
	assert_int_not_equal(
		wsnap_index_lookup(idx, longname + 10, strlen(longname + 10)),
		0);
	wsnap_index_free(idx);
	wsnap_policy_release(&p);
	free(tar);
	free(z);
	close(fd);
}

static void test_strip_pax_utf8_names(void **state)
{
	check_pax_names(NULL, false);
	check_pax_names("gzip", false);
	check_pax_names("zstd", true);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_strip_name_prefix_itself_is_root),
		cmocka_unit_test(test_strip_name_root_entries_stay_root),
		cmocka_unit_test(test_strip_name_within_loses_prefix),
		cmocka_unit_test(test_strip_name_outside_rejected),
		cmocka_unit_test(test_strip_name_too_long),
		cmocka_unit_test(test_strip_workspace_becomes_root),
		cmocka_unit_test(test_strip_outside_prefix_rejected),
		cmocka_unit_test(
			test_strip_single_member_rules_on_original_name),
		cmocka_unit_test(test_strip_result_validated_with_policy),
		cmocka_unit_test(test_strip_empty_prefix_is_usage),
		cmocka_unit_test(test_strip_long_pax_name_rewritten),
		cmocka_unit_test(test_strip_long_name_becoming_short),
		cmocka_unit_test(test_strip_gzip_pipe),
		cmocka_unit_test(test_strip_xz_pipe),
		cmocka_unit_test(test_strip_compressed_file_read_again),
		cmocka_unit_test(test_strip_non_utf8_name_kept),
		cmocka_unit_test(test_strip_pax_utf8_names),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
