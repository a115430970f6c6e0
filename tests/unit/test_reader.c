/* SPDX-License-Identifier: MIT */
/*
 * Unit tests of core/tar/reader.c: every tar flavour and compression, from a
 * seekable memfd and from a pipe, the raw typeflags, data offsets, and the
 * stream rules of policy.md section 5 (each ends as '<tar>' invalid tar
 * stream). Members are recorded by a callback; no builder involved. The
 * file is long because it is one test program whose cases share the
 * raw-archive builders below.
 */
#include <archive.h>
#include <archive_entry.h>
#include <errno.h>
#include <fcntl.h>
#include <locale.h>
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
#include <lzma.h>

#include "reader.h"
#include "seek.h"
#include "stream.h"
#include "support.h"
#include "array.h"

/* ---- recording callback ------------------------------------------------- */

struct rmember {
	char *name;
	size_t name_len;
	enum wsnap_raw_type type;
	char typeflag;
	char *link; /* NULL when the reader gave none */
	uint32_t mode;
	uint64_t size;
	uint64_t data_offset;
	uint64_t ext_bytes;
	int64_t mtime_sec;
	uint32_t mtime_nsec;
	struct wsnap_sparse_run *runs;
	size_t nsparse;
};

struct rec {
	struct rmember *m;
	size_t n, cap;
	size_t stop_at; /* 1-based member at which to fail; 0 never */
};

static char *dup_bytes(const char *p, size_t n)
{
	char *s = malloc(n + 1);

	assert_non_null(s);
	memcpy(s, p, n);
	s[n] = '\0';
	return s;
}

static enum wsnap_status record_cb(void *ctx, const struct wsnap_raw_member *m,
				   struct wsnap_error *err)
{
	struct rec *rec = ctx;
	struct rmember *r;

	/* the contract: NUL-terminated, lengths exact */
	assert_int_equal(strlen(m->name), m->name_len);
	if (m->linkname)
		assert_int_equal(strlen(m->linkname), m->linkname_len);
	if (rec->n == rec->cap) {
		rec->cap = rec->cap ? rec->cap * 2 : 16;
		rec->m = realloc(rec->m, rec->cap * sizeof(*rec->m));
		assert_non_null(rec->m);
	}
	r = &rec->m[rec->n++];
	memset(r, 0, sizeof(*r));
	r->name = dup_bytes(m->name, m->name_len);
	r->name_len = m->name_len;
	r->type = m->type;
	r->typeflag = m->typeflag;
	if (m->linkname)
		r->link = dup_bytes(m->linkname, m->linkname_len);
	r->mode = m->mode;
	r->size = m->size;
	r->data_offset = m->data_offset;
	r->ext_bytes = m->ext_bytes;
	r->mtime_sec = m->mtime_sec;
	r->mtime_nsec = m->mtime_nsec;
	if (m->nsparse) {
		assert_non_null(m->sparse);
		r->runs = malloc(m->nsparse * sizeof(*r->runs));
		assert_non_null(r->runs);
		memcpy(r->runs, m->sparse, m->nsparse * sizeof(*r->runs));
		r->nsparse = m->nsparse;
	} else {
		assert_null(m->sparse);
	}
	if (rec->stop_at && rec->n == rec->stop_at)
		return wsnap_error_reject(err, m->name, "stopped by test");
	return WSNAP_OK;
}

static void rec_release(struct rec *rec)
{
	size_t i;

	for (i = 0; i < rec->n; i++) {
		free(rec->m[i].name);
		free(rec->m[i].link);
		free(rec->m[i].runs);
	}
	free(rec->m);
	memset(rec, 0, sizeof(*rec));
}

/* ---- running the reader ------------------------------------------------- */

enum src { SRC_MEMFD, SRC_PIPE };

struct run {
	struct rec rec;
	struct wsnap_reader_result res;
	struct wsnap_error err;
	enum wsnap_status st;
};

/* Spill compressed files instead of recording seek points (the spill path
 * with a memfd). */
static bool run_no_seek;
/* Record gzip's seek points from a pipe too (seek_stream). */
static bool run_seek_stream;

static void run_fd(struct run *run, int fd, bool keep)
{
	struct wsnap_reader_opts opts = {.keep_data = keep,
					 .no_seek = run_no_seek,
					 .seek_stream = run_seek_stream};

	memset(run, 0, sizeof(*run));
	run->st = wsnap_reader_run(fd, &opts, record_cb, &run->rec, &run->res,
				   &run->err);
}

static void run_bytes(struct run *run, const void *data, size_t len,
		      enum src src, bool keep)
{
	int fd = src == SRC_MEMFD ? ts_memfd(data, len) : ts_pipefd(data, len);

	run_fd(run, fd, keep);
	close(fd);
}

static void run_release(struct run *run)
{
	rec_release(&run->rec);
	if (run->res.data_fd >= 0)
		close(run->res.data_fd);
	run->res.data_fd = -1;
	wsnap_seek_table_free(run->res.seek);
	run->res.seek = NULL;
}

static void assert_invalid_stream(const struct run *run)
{
	assert_int_equal(run->st, WSNAP_REJECTED);
	assert_string_equal(run->err.member, "<tar>");
	assert_string_equal(run->err.reason, "invalid tar stream");
	assert_int_equal(run->res.data_fd, -1);
}

/* The bytes must be an invalid tar stream from a memfd and from a pipe. */
static void expect_invalid(const void *data, size_t len)
{
	struct run run;
	int s;

	for (s = SRC_MEMFD; s <= SRC_PIPE; s++) {
		run_bytes(&run, data, len, (enum src)s, true);
		assert_invalid_stream(&run);
		run_release(&run);
	}
}

/* Reads len bytes at off of fd. */
static unsigned char *read_at(int fd, uint64_t off, size_t len)
{
	unsigned char *buf = malloc(len ? len : 1);
	size_t got = 0;

	assert_non_null(buf);
	while (got < len) {
		ssize_t n = pread(fd, buf + got, len - got, (off_t)(off + got));

		assert_true(n > 0);
		got += (size_t)n;
	}
	return buf;
}

static void assert_data_at(int fd, uint64_t off, const void *want, size_t len)
{
	unsigned char *got = read_at(fd, off, len);

	assert_memory_equal(got, want, len);
	free(got);
}

/* ---- building raw archives ---------------------------------------------- */

/* Appends one pax record "<len> key=value\n" to buf (value raw bytes). */
static void pax_record(char *buf, size_t cap, size_t *used, const char *key,
		       const void *val, size_t vlen)
{
	size_t klen = strlen(key), body = klen + vlen + 3, len, digits;
	char num[24];
	int w;

	/* len counts its own digits */
	for (digits = 1;; digits++) {
		len = body + digits;
		w = snprintf(num, sizeof(num), "%zu", len);
		if ((size_t)w == digits)
			break;
	}
	assert_true(*used + len <= cap);
	memcpy(buf + *used, num, digits);
	buf[*used + digits] = ' ';
	memcpy(buf + *used + digits + 1, key, klen);
	buf[*used + digits + 1 + klen] = '=';
	memcpy(buf + *used + digits + 2 + klen, val, vlen);
	buf[*used + len - 1] = '\n';
	*used += len;
}

static void pax_str(char *buf, size_t cap, size_t *used, const char *key,
		    const char *val)
{
	pax_record(buf, cap, used, key, val, strlen(val));
}

/* An extended header ('x' or 'g') with the given body. */
static void add_ext(struct ts_archive *a, char tf, const char *body, size_t len)
{
	ts_add_raw_member(a, tf == 'g' ? "GlobalHead" : "PaxHeader/x", tf, 0644,
			  body, len, NULL);
}

/* One 'x' header with a single record, then a raw member. */
static void add_pax_member(struct ts_archive *a, const char *key,
			   const void *val, size_t vlen, const char *name,
			   char tf, const void *data, size_t len,
			   const char *link)
{
	char body[4096];
	size_t used = 0;

	pax_record(body, sizeof(body), &used, key, val, vlen);
	add_ext(a, 'x', body, used);
	ts_add_raw_member(a, name, tf, 0644, data, len, link);
}

static void put_octal(unsigned char *f, size_t n, uint64_t v)
{
	char tmp[32];

	assert_int_equal(snprintf(tmp, sizeof(tmp), "%0*llo", (int)(n - 1),
				  (unsigned long long)v),
			 (int)(n - 1));
	memcpy(f, tmp, n - 1);
	f[n - 1] = '\0';
}

/* Writes one old GNU sparse entry (offset, numbytes) at e. */
static void put_sparse_entry(unsigned char *e, const uint64_t run[2])
{
	put_octal(e + WSNAP_TAR_SPARSE_OFF(offset),
		  WSNAP_TAR_SPARSE_LEN(offset), run[0]);
	put_octal(e + WSNAP_TAR_SPARSE_OFF(numbytes),
		  WSNAP_TAR_SPARSE_LEN(numbytes), run[1]);
}

static const unsigned char zero_block[WSNAP_TAR_BLOCK];

/* Data bytes of a run: a pattern that differs per run. */
static unsigned char *run_bytes_pattern(uint64_t len, int seed)
{
	unsigned char *p = malloc(len ? len : 1);
	uint64_t i;

	assert_non_null(p);
	for (i = 0; i < len; i++)
		p[i] = (unsigned char)('a' + (seed * 7 + i) % 26);
	return p;
}

static void add_padded(struct ts_archive *a, const void *p, size_t len)
{
	ts_add_raw(a, p, len);
	if (len % WSNAP_TAR_BLOCK)
		ts_add_raw(a, zero_block,
			   WSNAP_TAR_BLOCK - len % WSNAP_TAR_BLOCK);
}

/* Stores the data of runs back to back, padded. */
static void add_run_data(struct ts_archive *a, const uint64_t (*runs)[2],
			 size_t n)
{
	size_t i, total = 0;

	for (i = 0; i < n; i++) {
		unsigned char *p = run_bytes_pattern(runs[i][1], (int)i);

		ts_add_raw(a, p, runs[i][1]);
		total += runs[i][1];
		free(p);
	}
	if (total % WSNAP_TAR_BLOCK)
		ts_add_raw(a, zero_block,
			   WSNAP_TAR_BLOCK - total % WSNAP_TAR_BLOCK);
}

/*
 * An old GNU sparse member ('S'): the first four runs in the header, the
 * rest in extension blocks of 21. stored overrides the size field when
 * not 0 (to make it disagree with the map).
 */
static void add_gnu_sparse(struct ts_archive *a, const char *name,
			   uint64_t realsize, const uint64_t (*runs)[2],
			   size_t n, uint64_t stored)
{
	const size_t entry = sizeof(struct wsnap_tar_sparse);
	const size_t in_header = WSNAP_TAR_GNU_SPARSE_N;
	const size_t per_ext = WSNAP_TAR_GNU_EXT_SPARSE_N;
	unsigned char h[WSNAP_TAR_BLOCK], ext[WSNAP_TAR_BLOCK];
	size_t i, done;
	uint64_t sum = 0;

	for (i = 0; i < n; i++)
		sum += runs[i][1];
	ts_raw_header(h, name, WSNAP_TAR_GNU_SPARSE, 0644,
		      stored ? stored : sum, NULL);
	memcpy(h + WSNAP_TAR_OFF(magic), WSNAP_TAR_GNU_MAGIC,
	       WSNAP_TAR_MAGIC_LEN);
	for (i = 0; i < n && i < in_header; i++)
		put_sparse_entry(h + WSNAP_TAR_OFF(gnu.sparse) + entry * i,
				 runs[i]);
	h[WSNAP_TAR_OFF(gnu.isextended)] = n > in_header;
	put_octal(h + WSNAP_TAR_OFF(gnu.realsize), WSNAP_TAR_LEN(gnu.realsize),
		  realsize);
	ts_raw_checksum(h);
	ts_add_raw(a, h, sizeof(h));
	for (done = in_header; done < n; done += per_ext) {
		memset(ext, 0, sizeof(ext));
		for (i = 0; i < per_ext && done + i < n; i++)
			put_sparse_entry(ext + WSNAP_TAR_EXT_OFF(sparse) +
						 entry * i,
					 runs[done + i]);
		ext[WSNAP_TAR_EXT_OFF(isextended)] = done + per_ext < n;
		ts_add_raw(a, ext, sizeof(ext));
	}
	add_run_data(a, runs, n);
}

/* Checks a recorded sparse file against its runs and the data fd. */
static void assert_sparse(const struct rmember *m, int fd, uint64_t realsize,
			  const uint64_t (*runs)[2], size_t n)
{
	uint64_t phys = m->data_offset;
	size_t i, k = 0;

	assert_int_equal(m->type, WSNAP_RAW_FILE);
	assert_int_equal(m->size, realsize);
	for (i = 0; i < n; i++) {
		unsigned char *want;

		if (runs[i][1] == 0)
			continue; /* empty runs are not reported */
		assert_true(k < m->nsparse);
		assert_int_equal(m->runs[k].offset, runs[i][0]);
		assert_int_equal(m->runs[k].length, runs[i][1]);
		want = run_bytes_pattern(runs[i][1], (int)i);
		assert_data_at(fd, phys, want, runs[i][1]);
		free(want);
		phys += runs[i][1];
		k++;
	}
	assert_int_equal(k, m->nsparse);
}

/* ---- flavours ----------------------------------------------------------- */

static void test_reader_ustar_typeflags(void **state)
{
	struct ts_archive *a = ts_archive_new();
	struct run run;
	unsigned char *tar;
	size_t len;
	const struct {
		const char *name;
		char tf;
		enum wsnap_raw_type type;
		bool data;
	} want[] = {
		{"file", '0', WSNAP_RAW_FILE, true},
		{"old", '\0', WSNAP_RAW_FILE, true},
		{"oldslash/", '\0', WSNAP_RAW_DIR, false},
		{"contig", '7', WSNAP_RAW_FILE, true},
		{"dir", '5', WSNAP_RAW_DIR, false},
		{"sym", '2', WSNAP_RAW_SYMLINK, false},
		{"hard", '1', WSNAP_RAW_HARDLINK, false},
		{"chr", '3', WSNAP_RAW_OTHER, false},
		{"blk", '4', WSNAP_RAW_OTHER, false},
		{"fifo", '6', WSNAP_RAW_OTHER, false},
		{"unknown", 'Z', WSNAP_RAW_OTHER, true},
		{"dumpdir", 'D', WSNAP_RAW_OTHER, true},
		{"multivol", 'M', WSNAP_RAW_OTHER, true},
		{"oldlong", 'N', WSNAP_RAW_OTHER, true},
	};
	size_t i;

	for (i = 0; i < ARRAY_SIZE(want); i++) {
		bool link = want[i].tf == '1' || want[i].tf == '2';

		ts_add_raw_member(a, want[i].name, want[i].tf, 0640,
				  want[i].data ? "payload" : NULL,
				  want[i].data ? 7 : 0, link ? "file" : NULL);
	}
	tar = ts_archive_finish(a, 1, &len);
	run_bytes(&run, tar, len, SRC_MEMFD, true);
	assert_int_equal(run.st, WSNAP_OK);
	assert_int_equal(run.rec.n, ARRAY_SIZE(want));
	assert_false(run.res.spilled);
	assert_string_equal(run.res.compression, "none");
	for (i = 0; i < run.rec.n; i++) {
		const struct rmember *m = &run.rec.m[i];

		assert_string_equal(m->name, want[i].name);
		assert_int_equal(m->typeflag, want[i].tf);
		assert_int_equal(m->type, want[i].type);
		assert_int_equal(m->mode, 0640);
		assert_int_equal(m->mtime_sec, 1700000000);
		if (m->type == WSNAP_RAW_FILE && want[i].data) {
			assert_int_equal(m->size, 7);
			assert_data_at(run.res.data_fd, m->data_offset,
				       "payload", 7);
		} else {
			assert_int_equal(m->size, 0);
		}
		if (m->type == WSNAP_RAW_SYMLINK ||
		    m->type == WSNAP_RAW_HARDLINK)
			assert_string_equal(m->link, "file");
		else
			assert_null(m->link);
	}
	run_release(&run);
	free(tar);
}

static void test_reader_writer_members(void **state)
{
	struct ts_archive *a = ts_archive_new();
	char longname[300], longtarget[250];
	struct run run;
	unsigned char *tar;
	size_t len;
	int s;

	memset(longname, 'n', sizeof(longname) - 1);
	longname[sizeof(longname) - 1] = '\0';
	longname[WSNAP_TAR_LEN(name)] = '/'; /* just past the name field */
	memset(longtarget, 't', sizeof(longtarget) - 1);
	longtarget[sizeof(longtarget) - 1] = '\0';
	ts_set_mtime(a, 1234567890, 123456789);
	ts_add_dir(a, "d", 0755);
	ts_add_file(a, longname, 04755, "long", 4);
	ts_add_symlink(a, "s", longtarget);
	ts_add_hardlink(a, "h", longname);
	ts_add_special(a, "fifo", AE_IFIFO);
	ts_add_special(a, "chr", AE_IFCHR);
	ts_set_mtime(a, -5, 0);
	ts_add_file(a, "old", 0644, "", 0);
	tar = ts_archive_finish(a, 1, &len);

	for (s = SRC_MEMFD; s <= SRC_PIPE; s++) {
		const struct rmember *m;

		run_bytes(&run, tar, len, (enum src)s, true);
		assert_int_equal(run.st, WSNAP_OK);
		assert_int_equal(run.rec.n, 7);
		m = run.rec.m;
		assert_string_equal(m[0].name, "d/");
		assert_int_equal(m[0].type, WSNAP_RAW_DIR);
		assert_int_equal(m[0].typeflag, '5');
		assert_int_equal(m[0].mtime_sec, 1234567890);
		assert_int_equal(m[0].mtime_nsec, 123456789);
		assert_string_equal(m[1].name, longname);
		assert_int_equal(m[1].type, WSNAP_RAW_FILE);
		assert_int_equal(m[1].mode, 04755);
		assert_int_equal(m[1].size, 4);
		assert_data_at(run.res.data_fd, m[1].data_offset, "long", 4);
		assert_int_equal(m[2].type, WSNAP_RAW_SYMLINK);
		assert_string_equal(m[2].link, longtarget);
		assert_int_equal(m[3].type, WSNAP_RAW_HARDLINK);
		assert_int_equal(m[3].typeflag, '1');
		assert_string_equal(m[3].link, longname);
		assert_int_equal(m[4].type, WSNAP_RAW_OTHER);
		assert_int_equal(m[4].typeflag, '6');
		assert_int_equal(m[5].type, WSNAP_RAW_OTHER);
		assert_int_equal(m[5].typeflag, '3');
		assert_int_equal(m[6].mtime_sec, -5);
		assert_int_equal(run.res.spilled, s == SRC_PIPE);
		assert_true(run.res.data_fd >= 0);
		run_release(&run);
	}
	free(tar);
}

static void test_reader_pax_global_header(void **state)
{
	struct ts_archive *a = ts_archive_new();
	char body[256];
	size_t used = 0, len;
	struct run run;
	unsigned char *tar;

	pax_str(body, sizeof(body), &used, "comment", "global");
	pax_str(body, sizeof(body), &used, "mtime", "1600000000.5");
	add_ext(a, 'g', body, used);
	ts_add_raw_member(a, "f", '0', 0644, "abc", 3, NULL);
	ts_add_raw_member(a, "z", 'Z', 0644, NULL, 0, NULL);
	tar = ts_archive_finish(a, 1, &len);
	run_bytes(&run, tar, len, SRC_MEMFD, true);
	assert_int_equal(run.st, WSNAP_OK);
	assert_int_equal(run.rec.n, 2);
	/* the 'g' header is no member, and its typeflag is not reported */
	assert_string_equal(run.rec.m[0].name, "f");
	assert_int_equal(run.rec.m[0].typeflag, '0');
	assert_int_equal(run.rec.m[0].mtime_sec, 1600000000);
	assert_int_equal(run.rec.m[0].mtime_nsec, 500000000);
	assert_int_equal(run.rec.m[0].data_offset, 3 * WSNAP_TAR_BLOCK);
	assert_data_at(run.res.data_fd, run.rec.m[0].data_offset, "abc", 3);
	assert_int_equal(run.rec.m[1].typeflag, 'Z');
	run_release(&run);
	free(tar);
}

static void test_reader_pax_path_and_linkpath(void **state)
{
	struct ts_archive *a = ts_archive_new();
	char body[512];
	size_t used = 0, len;
	struct run run;
	unsigned char *tar;

	add_pax_member(a, "path", "real/name", 9, "fake", '0', "xyz", 3, NULL);
	pax_str(body, sizeof(body), &used, "path", "link");
	pax_str(body, sizeof(body), &used, "linkpath", "../target");
	add_ext(a, 'x', body, used);
	ts_add_raw_member(a, "fake2", '2', 0777, NULL, 0, "fake-target");
	tar = ts_archive_finish(a, 1, &len);
	run_bytes(&run, tar, len, SRC_MEMFD, true);
	assert_int_equal(run.st, WSNAP_OK);
	assert_int_equal(run.rec.n, 2);
	assert_string_equal(run.rec.m[0].name, "real/name");
	assert_int_equal(run.rec.m[0].data_offset, 3 * WSNAP_TAR_BLOCK);
	assert_data_at(run.res.data_fd, 3 * WSNAP_TAR_BLOCK, "xyz", 3);
	assert_string_equal(run.rec.m[1].name, "link");
	assert_string_equal(run.rec.m[1].link, "../target");
	assert_int_equal(run.rec.m[1].type, WSNAP_RAW_SYMLINK);
	run_release(&run);
	free(tar);
}

static void test_reader_gnu_long_names(void **state)
{
	struct ts_archive *a = ts_archive_new();
	char name[400], target[300];
	struct run run;
	unsigned char *tar;
	size_t len;
	int s;

	memset(name, 'L', sizeof(name) - 1);
	name[sizeof(name) - 1] = '\0';
	memset(target, 'K', sizeof(target) - 1);
	target[sizeof(target) - 1] = '\0';
	ts_add_raw_member(a, "././@LongLink", 'L', 0644, name, strlen(name) + 1,
			  NULL);
	ts_add_raw_member(a, "short", '0', 0600, "gnu", 3, NULL);
	ts_add_raw_member(a, "././@LongLink", 'K', 0644, target,
			  strlen(target) + 1, NULL);
	ts_add_raw_member(a, "././@LongLink", 'L', 0644, "lnk", 4, NULL);
	ts_add_raw_member(a, "x", '2', 0777, NULL, 0, "short-target");
	ts_add_raw_member(a, "././@LongLink", 'K', 0644, target,
			  strlen(target) + 1, NULL);
	ts_add_raw_member(a, "hl", '1', 0644, NULL, 0, "t");
	tar = ts_archive_finish(a, 1, &len);
	for (s = SRC_MEMFD; s <= SRC_PIPE; s++) {
		run_bytes(&run, tar, len, (enum src)s, true);
		assert_int_equal(run.st, WSNAP_OK);
		assert_int_equal(run.rec.n, 3);
		assert_string_equal(run.rec.m[0].name, name);
		assert_int_equal(run.rec.m[0].typeflag, '0');
		assert_data_at(run.res.data_fd, run.rec.m[0].data_offset, "gnu",
			       3);
		assert_string_equal(run.rec.m[1].name, "lnk");
		assert_int_equal(run.rec.m[1].typeflag, '2');
		assert_string_equal(run.rec.m[1].link, target);
		assert_int_equal(run.rec.m[2].type, WSNAP_RAW_HARDLINK);
		assert_string_equal(run.rec.m[2].link, target);
		run_release(&run);
	}
	free(tar);
}

/* An empty name is a member like any other (the builder's root rules). */
static void test_reader_empty_names(void **state)
{
	struct ts_archive *a = ts_archive_new();
	struct run run;
	unsigned char *tar;
	size_t len;

	ts_add_raw_member(a, "", '5', 0755, NULL, 0, NULL);
	/* a long name of just its NUL (one of size 0 has no NUL: refused) */
	ts_add_raw_member(a, "././@LongLink", 'L', 0644, "", 1, NULL);
	ts_add_raw_member(a, "named", '0', 0644, "x", 1, NULL);
	tar = ts_archive_finish(a, 1, &len);
	run_bytes(&run, tar, len, SRC_MEMFD, false);
	assert_int_equal(run.st, WSNAP_OK);
	assert_int_equal(run.rec.n, 2);
	assert_string_equal(run.rec.m[0].name, "");
	assert_int_equal(run.rec.m[0].type, WSNAP_RAW_DIR);
	assert_string_equal(run.rec.m[1].name, "");
	assert_int_equal(run.rec.m[1].type, WSNAP_RAW_FILE);
	run_release(&run);
	free(tar);
}

/* Names come through as their raw bytes, whatever the process locale. */
static void test_reader_names_are_raw_bytes(void **state)
{
	static const char *const names[] = {
		"caf\xc3\xa9",	   /* valid UTF-8 */
		"cafe\xcc\x81",	   /* decomposed: must not be normalized */
		"\xff\xfe",	   /* not UTF-8 */
		"a\xe9\x80/b\x80", /* broken sequences */
	};
	const char *locales[] = {"C", "C.UTF-8"};
	size_t i, l;

	for (l = 0; l < 2; l++) {
		struct ts_archive *a = ts_archive_new();
		char *old = setlocale(LC_ALL, NULL);
		unsigned char *tar;
		struct run run;
		size_t len;

		old = dup_bytes(old, strlen(old));
		for (i = 0; i < 4; i++) {
			/* pax path without hdrcharset (UTF-8 by the
			 * standard), linkpath too; ustar fields; the
			 * writer's hdrcharset=BINARY */
			add_pax_member(a, "path", names[i], strlen(names[i]),
				       "p", '2', NULL, 0, "t");
			ts_add_raw_member(a, names[i], '2', 0777, NULL, 0,
					  names[i]);
			ts_add_file(a, names[i], 0644, "w", 1);
			add_pax_member(a, "linkpath", names[i],
				       strlen(names[i]), "l", '2', NULL, 0,
				       "x");
		}
		tar = ts_archive_finish(a, 1, &len);
		setlocale(LC_ALL, locales[l]);
		run_bytes(&run, tar, len, SRC_MEMFD, false);
		setlocale(LC_ALL, old);
		assert_int_equal(run.st, WSNAP_OK);
		assert_int_equal(run.rec.n, 16);
		for (i = 0; i < 4; i++) {
			const struct rmember *m = &run.rec.m[4 * i];

			assert_string_equal(m[0].name, names[i]);
			assert_string_equal(m[1].name, names[i]);
			assert_string_equal(m[1].link, names[i]);
			assert_string_equal(m[2].name, names[i]);
			assert_string_equal(m[3].link, names[i]);
		}
		run_release(&run);
		free(tar);
		free(old);
	}
}

/* every run with data but the last fills whole blocks, and the map ends
 * at the size: as GNU tar writes them (test_reader_sparse_gnu_tar) */
static const uint64_t sparse_runs[][2] = {
	{0, 512},     {4096, 512},  {10000, 1024}, {20000, 1536},
	{30000, 512}, {40000, 512}, {50000, 1000}, {60000, 0},
};
#define SPARSE_N    (ARRAY_SIZE(sparse_runs))
#define SPARSE_SIZE 60000u

static void test_reader_gnu_sparse(void **state)
{
	struct ts_archive *a = ts_archive_new();
	struct run run;
	unsigned char *tar;
	size_t len;
	int s;

	ts_add_raw_member(a, "before", '0', 0644, "b", 1, NULL);
	add_gnu_sparse(a, "sparse", SPARSE_SIZE, sparse_runs, SPARSE_N, 0);
	ts_add_raw_member(a, "after", '0', 0644, "after", 5, NULL);
	tar = ts_archive_finish(a, 1, &len);
	for (s = SRC_MEMFD; s <= SRC_PIPE; s++) {
		run_bytes(&run, tar, len, (enum src)s, true);
		assert_int_equal(run.st, WSNAP_OK);
		assert_int_equal(run.rec.n, 3);
		assert_int_equal(run.rec.m[1].typeflag, 'S');
		/* after "before" (header, data): header + 1 extension block */
		assert_int_equal(run.rec.m[1].data_offset,
				 2 * WSNAP_TAR_BLOCK + 2 * WSNAP_TAR_BLOCK);
		assert_sparse(&run.rec.m[1], run.res.data_fd, SPARSE_SIZE,
			      sparse_runs, SPARSE_N);
		assert_string_equal(run.rec.m[2].name, "after");
		assert_data_at(run.res.data_fd, run.rec.m[2].data_offset,
			       "after", 5);
		run_release(&run);
	}
	free(tar);
}

/* A sparse file of holes only is still marked sparse: one empty run. */
static void test_reader_sparse_all_holes(void **state)
{
	static const uint64_t holes[][2] = {{1u << 20, 0}};
	struct ts_archive *a = ts_archive_new();
	struct run run;
	unsigned char *tar;
	size_t len;

	add_gnu_sparse(a, "holes", 1u << 20, holes, 1, 0);
	tar = ts_archive_finish(a, 1, &len);
	run_bytes(&run, tar, len, SRC_MEMFD, false);
	assert_int_equal(run.st, WSNAP_OK);
	assert_int_equal(run.rec.n, 1);
	assert_int_equal(run.rec.m[0].size, 1u << 20);
	assert_int_equal(run.rec.m[0].nsparse, 1);
	assert_int_equal(run.rec.m[0].runs[0].offset, 1u << 20);
	assert_int_equal(run.rec.m[0].runs[0].length, 0);
	run_release(&run);
	free(tar);
}

/* pax sparse: version 0.0 (offset/numbytes records), 0.1 (map), 1.0 (map
 * in the data area). */
static unsigned char *pax_sparse_archive(int version, size_t *len,
					 const uint64_t (*runs)[2], size_t n,
					 uint64_t realsize)
{
	struct ts_archive *a = ts_archive_new();
	char body[8192], num[64], map[4096];
	size_t used = 0, i, mlen = 0;
	uint64_t stored = 0;

	for (i = 0; i < n; i++)
		stored += runs[i][1];
	snprintf(num, sizeof(num), "%llu", (unsigned long long)realsize);
	if (version == 10) {
		pax_str(body, sizeof(body), &used, "GNU.sparse.major", "1");
		pax_str(body, sizeof(body), &used, "GNU.sparse.minor", "0");
		pax_str(body, sizeof(body), &used, "GNU.sparse.name", "sp");
		pax_str(body, sizeof(body), &used, "GNU.sparse.realsize", num);
		mlen = (size_t)snprintf(map, sizeof(map), "%zu\n", n);
		for (i = 0; i < n; i++)
			mlen += (size_t)snprintf(
				map + mlen, sizeof(map) - mlen, "%llu\n%llu\n",
				(unsigned long long)runs[i][0],
				(unsigned long long)runs[i][1]);
		mlen = (mlen + WSNAP_TAR_BLOCK - 1) &
		       ~(size_t)(WSNAP_TAR_BLOCK - 1);
	} else {
		pax_str(body, sizeof(body), &used, "GNU.sparse.size", num);
		snprintf(num, sizeof(num), "%zu", n);
		pax_str(body, sizeof(body), &used, "GNU.sparse.numblocks", num);
		pax_str(body, sizeof(body), &used, "GNU.sparse.name", "sp");
	}
	if (version == 0) {
		for (i = 0; i < n; i++) {
			snprintf(num, sizeof(num), "%llu",
				 (unsigned long long)runs[i][0]);
			pax_str(body, sizeof(body), &used, "GNU.sparse.offset",
				num);
			snprintf(num, sizeof(num), "%llu",
				 (unsigned long long)runs[i][1]);
			pax_str(body, sizeof(body), &used,
				"GNU.sparse.numbytes", num);
		}
	} else if (version == 1) {
		size_t ml = 0;

		for (i = 0; i < n; i++)
			ml += (size_t)snprintf(map + ml, sizeof(map) - ml,
					       "%s%llu,%llu", i ? "," : "",
					       (unsigned long long)runs[i][0],
					       (unsigned long long)runs[i][1]);
		pax_record(body, sizeof(body), &used, "GNU.sparse.map", map,
			   ml);
	}
	add_ext(a, 'x', body, used);
	{
		unsigned char h[WSNAP_TAR_BLOCK];

		ts_raw_header(h, "GNUSparseFile.0/sp", '0', 0644, stored + mlen,
			      NULL);
		ts_add_raw(a, h, sizeof(h));
		if (version == 10) {
			size_t raw = strlen(map);

			add_padded(a, map, raw);
		}
	}
	add_run_data(a, runs, n);
	ts_add_raw_member(a, "after", '0', 0644, "after", 5, NULL);
	return ts_archive_finish(a, 1, len);
}

static void test_reader_pax_sparse(void **state)
{
	const int versions[] = {0, 1, 10};
	size_t v;
	int s;

	for (v = 0; v < 3; v++) {
		size_t len;
		unsigned char *tar = pax_sparse_archive(
			versions[v], &len, sparse_runs, SPARSE_N, SPARSE_SIZE);

		for (s = SRC_MEMFD; s <= SRC_PIPE; s++) {
			struct run run;

			run_bytes(&run, tar, len, (enum src)s, true);
			assert_int_equal(run.st, WSNAP_OK);
			assert_int_equal(run.rec.n, 2);
			assert_string_equal(run.rec.m[0].name, "sp");
			/* 1.0: the map precedes the first run's bytes */
			assert_int_equal(run.rec.m[0].data_offset,
					 (versions[v] == 10 ? 4 : 3) *
						 WSNAP_TAR_BLOCK);
			assert_sparse(&run.rec.m[0], run.res.data_fd,
				      SPARSE_SIZE, sparse_runs, SPARSE_N);
			assert_data_at(run.res.data_fd,
				       run.rec.m[1].data_offset, "after", 5);
			run_release(&run);
		}
		free(tar);
	}
}

static void test_reader_sparse_bad_maps(void **state)
{
	static const uint64_t unordered[][2] = {{4096, 512}, {0, 512}};
	static const uint64_t overlapping[][2] = {{0, 1024}, {512, 512}};
	static const uint64_t beyond[][2] = {{0, 512}, {1000, 100}};
	const struct {
		const uint64_t (*runs)[2];
		size_t n;
		uint64_t size;
	} bad[] = {
		{unordered, 2, 10000},
		{overlapping, 2, 10000},
		{beyond, 2, 1050},
	};
	const int versions[] = {0, 1, 10};
	size_t i, v, len;
	unsigned char *tar;
	struct ts_archive *a;

	for (i = 0; i < ARRAY_SIZE(bad); i++) {
		a = ts_archive_new();
		add_gnu_sparse(a, "s", bad[i].size, bad[i].runs, bad[i].n, 0);
		tar = ts_archive_finish(a, 1, &len);
		expect_invalid(tar, len);
		free(tar);
		for (v = 0; v < 3; v++) {
			tar = pax_sparse_archive(versions[v], &len, bad[i].runs,
						 bad[i].n, bad[i].size);
			expect_invalid(tar, len);
			free(tar);
		}
	}
	/* run lengths that do not add up to the stored data */
	a = ts_archive_new();
	add_gnu_sparse(a, "s", SPARSE_SIZE, sparse_runs, SPARSE_N,
		       WSNAP_TAR_BLOCK);
	tar = ts_archive_finish(a, 1, &len);
	expect_invalid(tar, len);
	free(tar);
	/* old GNU sparse typeflag under a POSIX ustar magic */
	a = ts_archive_new();
	add_gnu_sparse(a, "s", SPARSE_SIZE, sparse_runs, 2, 0);
	tar = ts_archive_finish(a, 1, &len);
	memcpy(tar + WSNAP_TAR_OFF(magic), WSNAP_TAR_POSIX_MAGIC,
	       WSNAP_TAR_MAGIC_LEN);
	ts_raw_checksum(tar);
	expect_invalid(tar, len);
	free(tar);
}

/* ---- compression, pipes, spill ------------------------------------------ */

static const char *const filters[] = {"gzip", "bzip2", "xz", "zstd", "lz4"};
#define NFILTERS (ARRAY_SIZE(filters))

/* Two files, one bigger than any buffer, and a pax header between. */
static unsigned char *sample_archive(size_t *len, unsigned char **big,
				     size_t *big_len)
{
	struct ts_archive *a = ts_archive_new();
	size_t i;

	*big_len = (3u << 20) + 123;
	*big = malloc(*big_len);
	assert_non_null(*big);
	for (i = 0; i < *big_len; i++)
		(*big)[i] = (unsigned char)(i * 31 + i / 4096);
	ts_add_file(a, "small", 0644, "hello", 5);
	ts_add_file(a, "big", 0644, *big, *big_len);
	ts_set_mtime(a, 1, 5);
	ts_add_file(a, "last", 0644, "bye", 3);
	return ts_archive_finish(a, 1, len);
}

static void check_sample(const struct run *run, const unsigned char *big,
			 size_t big_len)
{
	const struct rmember *m = run->rec.m;
	unsigned char *got;

	assert_int_equal(run->st, WSNAP_OK);
	assert_int_equal(run->rec.n, 3);
	assert_string_equal(m[0].name, "small");
	assert_data_at(run->res.data_fd, m[0].data_offset, "hello", 5);
	assert_int_equal(m[1].size, big_len);
	got = read_at(run->res.data_fd, m[1].data_offset, big_len);
	assert_memory_equal(got, big, big_len);
	free(got);
	assert_int_equal(m[2].mtime_nsec, 5);
	assert_data_at(run->res.data_fd, m[2].data_offset, "bye", 3);
}

static void test_reader_compressed_memfd_and_pipe(void **state)
{
	unsigned char *tar, *big;
	size_t len, big_len, f;
	int s;

	tar = sample_archive(&len, &big, &big_len);
	for (f = 0; f < NFILTERS; f++) {
		size_t clen;
		unsigned char *c = ts_compress(tar, len, filters[f], &clen);

		for (s = SRC_MEMFD; s <= SRC_PIPE; s++) {
			struct run run;
			struct stat st;
			unsigned char *spill;

			/* a gzip file is read in place (test below) */
			run_no_seek = true;
			run_bytes(&run, c, clen, (enum src)s, true);
			run_no_seek = false;
			assert_null(run.res.seek);
			check_sample(&run, big, big_len);
			assert_string_equal(run.res.compression, filters[f]);
			assert_true(run.res.spilled);
			assert_int_equal(run.res.stream_bytes, len);
			assert_int_equal(run.res.input_bytes, clen);
			/* the spill is the decompressed stream */
			assert_int_equal(fstat(run.res.data_fd, &st), 0);
			assert_true((size_t)st.st_size <= len);
			assert_true((uint64_t)st.st_size >=
				    run.rec.m[2].data_offset + 3);
			spill = read_at(run.res.data_fd, 0, (size_t)st.st_size);
			assert_memory_equal(spill, tar, (size_t)st.st_size);
			free(spill);
			run_release(&run);
		}
		free(c);
	}
	free(tar);
	free(big);
}

/* The stream over src through run's seek table (taken) is tar (len bytes)
 * byte for byte, and ends there; run is released. */
static void assert_seek_stream(struct run *run, struct wsnap_source *src,
			       const unsigned char *tar, size_t len)
{
	struct wsnap_stream *st;
	unsigned char *got = malloc(len);

	assert_non_null(got);
	assert_int_equal(wsnap_stream_seekable(src, run->res.seek, 0, &st), 0);
	run->res.seek = NULL;
	assert_int_equal(wsnap_stream_read(st, got, len, 0), 0);
	assert_memory_equal(got, tar, len);
	assert_int_equal(wsnap_stream_read(st, got, 1, len), -EIO);
	wsnap_stream_free(st);
	free(got);
	run_release(run);
}

/*
 * gzip in a regular file: no spill, a seek table, and the data descriptor
 * is the archive itself; the stream over it through the table is the tar
 * stream byte for byte. From a pipe it is spilled (above).
 */
static void test_reader_gzip_file_in_place(void **state)
{
	unsigned char *tar, *big;
	size_t len, big_len, clen;
	struct wsnap_source *src;
	struct run run;
	unsigned char *c;
	char *dir = ts_tempdir();

	tar = sample_archive(&len, &big, &big_len);
	c = ts_compress(tar, len, "gzip", &clen);
	run_bytes(&run, c, clen, SRC_MEMFD, true);
	assert_int_equal(run.st, WSNAP_OK);
	assert_false(run.res.spilled);
	assert_non_null(run.res.seek);
	assert_int_equal(run.res.seek->kind, WSNAP_SEEK_GZIP);
	assert_int_equal(run.res.seek->stream_size, len);
	assert_int_equal(run.res.seek->in_size, clen);
	assert_true(run.res.data_fd >= 0);
	assert_int_equal(wsnap_source_file(dup(run.res.data_fd), "x", &src), 0);
	assert_seek_stream(&run, src, tar, len);
	/* without keep_data the table is recorded all the same */
	run_bytes(&run, c, clen, SRC_MEMFD, false);
	assert_int_equal(run.st, WSNAP_OK);
	assert_non_null(run.res.seek);
	assert_int_equal(run.res.data_fd, -1);
	run_release(&run);
	/* a pipe has none */
	run_bytes(&run, c, clen, SRC_PIPE, false);
	assert_null(run.res.seek);
	run_release(&run);
	/* unless asked (a remote object's copy), and then only without
	 * keep_data: the same table as the file's, for the object's source */
	run_seek_stream = true;
	run_bytes(&run, c, clen, SRC_PIPE, false);
	assert_int_equal(run.st, WSNAP_OK);
	assert_non_null(run.res.seek);
	assert_int_equal(run.res.seek->stream_size, len);
	assert_int_equal(run.res.seek->in_size, clen);
	assert_int_equal(wsnap_source_memory(c, clen, &src), 0);
	assert_seek_stream(&run, src, tar, len);
	run_bytes(&run, c, clen, SRC_PIPE, true);
	assert_int_equal(run.st, WSNAP_OK);
	assert_null(run.res.seek);
	assert_true(run.res.spilled);
	run_release(&run);
	run_seek_stream = false;
	assert_int_equal(rmdir(dir), 0);
	free(dir);
	free(c);
	free(tar);
	free(big);
}

static void test_reader_plain_pipe_spills(void **state)
{
	unsigned char *tar, *big;
	size_t len, big_len;
	struct run run;

	tar = sample_archive(&len, &big, &big_len);
	run_bytes(&run, tar, len, SRC_PIPE, true);
	check_sample(&run, big, big_len);
	assert_true(run.res.spilled);
	assert_string_equal(run.res.compression, "none");
	assert_int_equal(run.res.stream_bytes, len);
	run_release(&run);

	/* without keep_data there is no descriptor */
	run_bytes(&run, tar, len, SRC_PIPE, false);
	assert_int_equal(run.st, WSNAP_OK);
	assert_int_equal(run.res.data_fd, -1);
	assert_false(run.res.spilled);
	run_release(&run);
	free(tar);
	free(big);
}

static void test_reader_spill_in_tmpdir(void **state)
{
	unsigned char *tar, *c, *big;
	size_t len, clen, big_len;
	struct wsnap_reader_opts opts = {.keep_data = true};
	struct rec rec = {0};
	struct wsnap_reader_result res;
	struct wsnap_error err;
	char *dir = ts_tempdir();
	int fd;

	tar = sample_archive(&len, &big, &big_len);
	c = ts_compress(tar, len, "gzip", &clen);
	opts.tmpdir = dir;
	opts.no_seek = true; /* else a gzip file is read in place */
	fd = ts_memfd(c, clen);
	assert_int_equal(
		wsnap_reader_run(fd, &opts, record_cb, &rec, &res, &err),
		WSNAP_OK);
	assert_true(res.spilled);
	/* unlinked: nothing is left in the directory */
	assert_int_equal(rmdir(dir), 0);
	assert_int_equal(fcntl(res.data_fd, F_GETFD) & FD_CLOEXEC, FD_CLOEXEC);
	close(res.data_fd);
	close(fd);
	rec_release(&rec);
	free(dir);
	free(c);
	free(tar);
	free(big);
}

/* ---- headers only: the plain seekable path does not read file data ------ */

static int big_member_memfd(uint64_t size, uint64_t *data_off)
{
	const uint64_t blk = WSNAP_TAR_BLOCK;
	unsigned char h[WSNAP_TAR_BLOCK];
	int fd = memfd_create("big", MFD_CLOEXEC);
	uint64_t end;

	assert_true(fd >= 0);
	ts_raw_header(h, "big", '0', 0644, size, NULL);
	assert_int_equal(pwrite(fd, h, sizeof(h), 0), sizeof(h));
	assert_int_equal(pwrite(fd, "start", 5, (off_t)blk), 5);
	end = blk + ((size + blk - 1) & ~(blk - 1));
	ts_raw_header(h, "tail", '0', 0644, 4, NULL);
	assert_int_equal(pwrite(fd, h, sizeof(h), (off_t)end), sizeof(h));
	assert_int_equal(pwrite(fd, "tail", 4, (off_t)(end + blk)), 4);
	/* hole (the tail's data block), then the end marker */
	assert_int_equal(ftruncate(fd, (off_t)(end + 2 * blk + 2 * blk)), 0);
	*data_off = blk;
	return fd;
}

struct progress {
	unsigned calls;
	uint64_t last_done, total;
};

static void progress_cb(void *ctx, uint64_t done, uint64_t total)
{
	struct progress *p = ctx;

	assert_true(done >= p->last_done);
	p->calls++;
	p->last_done = done;
	p->total = total;
}

static void test_reader_plain_file_data_is_not_read(void **state)
{
	uint64_t size = 256ull << 20, off;
	struct progress prog = {0};
	struct wsnap_reader_opts opts = {.keep_data = true,
					 .progress = progress_cb,
					 .progress_ctx = &prog};
	struct rec rec = {0};
	struct wsnap_reader_result res;
	struct wsnap_error err;
	struct stat st;
	int fd = big_member_memfd(size, &off);

	/* the position of a seekable input does not matter */
	assert_true(lseek(fd, 12345, SEEK_SET) == 12345);
	assert_int_equal(
		wsnap_reader_run(fd, &opts, record_cb, &rec, &res, &err),
		WSNAP_OK);
	assert_int_equal(rec.n, 2);
	assert_int_equal(rec.m[0].size, size);
	assert_int_equal(rec.m[0].data_offset, off);
	assert_false(res.spilled);
	assert_string_equal(res.compression, "none");
	/* far less than the member was read */
	assert_true(res.input_bytes < (8u << 20));
	assert_int_equal(fstat(fd, &st), 0);
	assert_int_equal(res.stream_bytes, (uint64_t)st.st_size);
	/* the data descriptor is a duplicate of the input */
	assert_true(res.data_fd >= 0 && res.data_fd != fd);
	assert_data_at(res.data_fd, off, "start", 5);
	assert_data_at(res.data_fd, rec.m[1].data_offset, "tail", 4);
	assert_true(prog.calls >= 1);
	assert_int_equal(prog.total, (uint64_t)st.st_size);
	assert_int_equal(prog.last_done, (uint64_t)st.st_size);
	close(res.data_fd);
	close(fd);
	rec_release(&rec);
}

/* A pax header that straddles the reader's 1 MiB reads and is long itself:
 * the header region must be kept across reads. */
static void test_reader_header_across_reads(void **state)
{
	size_t pads[] = {(1u << 20) - 2 * WSNAP_TAR_BLOCK,
			 (1u << 20) - 3 * WSNAP_TAR_BLOCK, 100};
	size_t i, len, used;
	char *body = malloc(800000);
	char *value = malloc(700000);
	int s;

	assert_non_null(body);
	assert_non_null(value);
	memset(value, 'v', 700000);
	for (i = 0; i < 3; i++) {
		struct ts_archive *a = ts_archive_new();
		unsigned char *pad = calloc(1, pads[i]), *tar;

		assert_non_null(pad);
		ts_add_raw_member(a, "pad", '0', 0644, pad, pads[i], NULL);
		used = 0;
		pax_record(body, 800000, &used, "comment", value, 700000);
		pax_str(body, 800000, &used, "path", "after/pax");
		add_ext(a, 'x', body, used);
		ts_add_raw_member(a, "x", 'Z', 0644, "zz", 2, NULL);
		tar = ts_archive_finish(a, 1, &len);
		for (s = SRC_MEMFD; s <= SRC_PIPE; s++) {
			struct run run;

			run_bytes(&run, tar, len, (enum src)s, true);
			assert_int_equal(run.st, WSNAP_OK);
			assert_int_equal(run.rec.n, 2);
			assert_string_equal(run.rec.m[1].name, "after/pax");
			assert_int_equal(run.rec.m[1].typeflag, 'Z');
			run_release(&run);
		}
		free(tar);
		free(pad);
	}
	free(body);
	free(value);
}

/* ---- stream rules (policy.md section 5) --------------------------------- */

/* Where the second member's header starts in two_members(): after the
 * first member's header and its one data block. */
#define SECOND_HEADER (2 * WSNAP_TAR_BLOCK)

static unsigned char *two_members(size_t *len, int end_marker)
{
	struct ts_archive *a = ts_archive_new();

	ts_add_raw_member(a, "one", '0', 0644, "first", 5, NULL);
	ts_add_raw_member(a, "two", '0', 0644, "second", 6, NULL);
	return ts_archive_finish(a, end_marker, len);
}

static void expect_members(const void *data, size_t len, size_t n)
{
	struct run run;
	int s;

	for (s = SRC_MEMFD; s <= SRC_PIPE; s++) {
		run_bytes(&run, data, len, (enum src)s, true);
		assert_int_equal(run.st, WSNAP_OK);
		assert_int_equal(run.rec.n, n);
		run_release(&run);
	}
}

static void test_reader_zero_bytes_is_invalid(void **state)
{
	size_t clen;
	unsigned char *c = ts_compress("", 0, "gzip", &clen);

	expect_invalid("", 0);
	/* a compressed stream of zero bytes too */
	expect_invalid(c, clen);
	free(c);
}

static void test_reader_end_of_archive_forms(void **state)
{
	unsigned char buf[4096];
	unsigned char *tar;
	size_t len;

	/* only zero blocks: an empty archive */
	memset(buf, 0, sizeof(buf));
	expect_members(buf, 2 * WSNAP_TAR_BLOCK, 0);
	expect_members(buf, WSNAP_TAR_BLOCK, 0);
	expect_members(buf, sizeof(buf), 0);
	/* a lone zero block, and end of input at a header boundary */
	tar = two_members(&len, 0);
	expect_members(tar, len, 2);
	memcpy(buf, tar, len);
	memset(buf + len, 0, WSNAP_TAR_BLOCK);
	expect_members(buf, len + WSNAP_TAR_BLOCK, 2);
	/* data after the end marker is ignored */
	memset(buf + len, 0, 2 * WSNAP_TAR_BLOCK);
	memset(buf + len + 2 * WSNAP_TAR_BLOCK, 'G', 700);
	expect_members(buf, len + 2 * WSNAP_TAR_BLOCK + 700, 2);
	/* so is a member after a lone zero block: tarfile, GNU tar and
	 * libarchive all end there (GNU tar warns) */
	memset(buf + len, 0, WSNAP_TAR_BLOCK);
	memcpy(buf + len + WSNAP_TAR_BLOCK, tar, 2 * WSNAP_TAR_BLOCK);
	expect_members(buf, len + 3 * WSNAP_TAR_BLOCK, 2);
	free(tar);
}

static void test_reader_garbage_mid_archive(void **state)
{
	const size_t first = 2 * WSNAP_TAR_BLOCK; /* header and data */
	unsigned char *tar, *buf;
	size_t len;

	tar = two_members(&len, 1);
	buf = malloc(len + WSNAP_TAR_BLOCK);
	assert_non_null(buf);
	memcpy(buf, tar, first);
	memset(buf + first, 'G', WSNAP_TAR_BLOCK);
	memcpy(buf + first + WSNAP_TAR_BLOCK, tar + first, len - first);
	expect_invalid(buf, len + WSNAP_TAR_BLOCK);
	/* garbage shorter than a block at the end */
	memcpy(buf, tar, first);
	memset(buf + first, 'G', 100);
	expect_invalid(buf, first + 100);
	free(buf);
	free(tar);
}

static void test_reader_truncation(void **state)
{
	const size_t first = 2 * WSNAP_TAR_BLOCK; /* header and data */
	unsigned char *tar;
	size_t len;

	tar = two_members(&len, 1);
	/* inside the second header, inside and before the second data */
	expect_invalid(tar, first + 300);
	expect_invalid(tar, first + WSNAP_TAR_BLOCK + 3);
	expect_invalid(tar, first + WSNAP_TAR_BLOCK);
	expect_invalid(tar, 100); /* inside the first header */
	free(tar);
}

static void test_reader_truncated_compressed(void **state)
{
	unsigned char *tar, *big;
	size_t len, big_len, f;

	tar = sample_archive(&len, &big, &big_len);
	for (f = 0; f < NFILTERS; f++) {
		size_t clen;
		unsigned char *c = ts_compress(tar, len, filters[f], &clen);

		/* the tar part complete, the trailer cut */
		expect_invalid(c, clen - 4);
		expect_invalid(c, clen / 2);
		free(c);
	}
	free(tar);
	free(big);
}

static void test_reader_corrupt_compressed_trailer(void **state)
{
	unsigned char *tar, *c;
	size_t len, clen, f;

	tar = two_members(&len, 1);
	/* gzip: CRC32 then ISIZE end the stream */
	c = ts_compress(tar, len, "gzip", &clen);
	c[clen - 8] ^= 0xff;
	expect_invalid(c, clen);
	c[clen - 8] ^= 0xff;
	c[clen - 1] ^= 0x01;
	expect_invalid(c, clen);
	free(c);
	/* several gzip members: accepted, every trailer checked (a bad CRC
	 * or length in the first or the second member is invalid) */
	{
		size_t l1, l2, k;
		const size_t first = 2 * WSNAP_TAR_BLOCK; /* one member */
		unsigned char *g1 = ts_compress(tar, first, "gzip", &l1);
		unsigned char *g2 =
			ts_compress(tar + first, len - first, "gzip", &l2);
		unsigned char *both = malloc(l1 + l2);
		const size_t flip[] = {l1 - 8, l1 - 1, l1 + l2 - 8,
				       l1 + l2 - 1};
		struct run run;
		int s;

		assert_non_null(both);
		memcpy(both, g1, l1);
		memcpy(both + l1, g2, l2);
		for (s = SRC_MEMFD; s <= SRC_PIPE; s++) {
			run_bytes(&run, both, l1 + l2, (enum src)s, true);
			assert_int_equal(run.st, WSNAP_OK);
			assert_int_equal(run.rec.n, 2);
			assert_int_equal(run.res.stream_bytes, len);
			run_release(&run);
		}
		for (k = 0; k < ARRAY_SIZE(flip); k++) {
			both[flip[k]] ^= 0x01;
			expect_invalid(both, l1 + l2);
			both[flip[k]] ^= 0x01;
		}
		free(both);
		free(g1);
		free(g2);
	}
	/* xz: the stream footer magic */
	c = ts_compress(tar, len, "xz", &clen);
	c[clen - 1] ^= 0xff;
	expect_invalid(c, clen);
	free(c);
	/* every filter: a byte of the trailer or checksum (bzip2's last
	 * byte may be padding bits, so not the very last) */
	for (f = 0; f < NFILTERS; f++) {
		c = ts_compress(tar, len, filters[f], &clen);
		c[clen - 5] ^= 0x55;
		expect_invalid(c, clen);
		free(c);
	}
	free(tar);
}

static void test_reader_after_compressed_stream(void **state)
{
	unsigned char *tar, *c, *buf;
	size_t len, clen;

	tar = two_members(&len, 1);
	c = ts_compress(tar, len, "gzip", &clen);
	buf = malloc(clen + 4096);
	assert_non_null(buf);
	memcpy(buf, c, clen);
	/* zero padding after the stream is fine */
	memset(buf + clen, 0, 4096);
	expect_members(buf, clen + 4096, 2);
	/* anything else is not */
	buf[clen + 4000] = 'G';
	expect_invalid(buf, clen + 4096);
	/* a tar stream with garbage after its end marker, compressed */
	free(c);
	memcpy(buf, tar, len);
	memset(buf + len, 'G', 1000);
	c = ts_compress(buf, len + 1000, "xz", &clen);
	expect_members(c, clen, 2);
	free(c);
	free(buf);
	free(tar);
}

static void test_reader_double_compression_is_invalid(void **state)
{
	unsigned char *tar, *c1, *c2;
	size_t len, l1, l2;

	tar = two_members(&len, 1);
	c1 = ts_compress(tar, len, "gzip", &l1);
	c2 = ts_compress(c1, l1, "xz", &l2);
	expect_invalid(c2, l2);
	free(c2);
	free(c1);
	free(tar);
}

static void test_reader_bad_checksum(void **state)
{
	unsigned char *tar;
	size_t len;

	/* first member */
	tar = two_members(&len, 1);
	tar[WSNAP_TAR_OFF(chksum) + 2] ^= 1;
	expect_invalid(tar, len);
	free(tar);
	/* a later member: libarchive would resync and drop it */
	tar = two_members(&len, 1);
	tar[SECOND_HEADER + WSNAP_TAR_OFF(name)] = 'X';
	expect_invalid(tar, len);
	free(tar);
	/* a bad checksum on an extension header */
	{
		struct ts_archive *a = ts_archive_new();

		ts_add_raw_member(a, "one", '0', 0644, "first", 5, NULL);
		add_pax_member(a, "path", "p", 1, "n", '0', "x", 1, NULL);
		tar = ts_archive_finish(a, 1, &len);
		/* the 'x' header follows "one" (header, data) */
		tar[2 * WSNAP_TAR_BLOCK + WSNAP_TAR_OFF(mtime)] = '7';
		expect_invalid(tar, len);
		free(tar);
	}
}

static void test_reader_bad_sizes(void **state)
{
	unsigned char *tar;
	size_t len;

	/* negative base-256 size */
	tar = two_members(&len, 1);
	memset(tar + SECOND_HEADER + WSNAP_TAR_OFF(size), 0xff,
	       WSNAP_TAR_LEN(size));
	ts_raw_checksum(tar + SECOND_HEADER);
	expect_invalid(tar, len);
	/* overflowing base-256 size (above INT64_MAX) */
	memset(tar + SECOND_HEADER + WSNAP_TAR_OFF(size), 0xff,
	       WSNAP_TAR_LEN(size));
	tar[SECOND_HEADER + WSNAP_TAR_OFF(size)] = 0x80;
	ts_raw_checksum(tar + SECOND_HEADER);
	expect_invalid(tar, len);
	/* a size larger than the rest of the input */
	memset(tar + SECOND_HEADER + WSNAP_TAR_OFF(size), 0,
	       WSNAP_TAR_LEN(size));
	memcpy(tar + SECOND_HEADER + WSNAP_TAR_OFF(size), "77777777777", 11);
	ts_raw_checksum(tar + SECOND_HEADER);
	expect_invalid(tar, len);
	free(tar);
}

static void test_reader_bad_pax(void **state)
{
	static const char *const bad[][2] = {
		{"size", "-1"},
		{"size", "99999999999999999999"},
		{"size", "12x"},
		{"uid", "-3"},
		{"GNU.sparse.numblocks", "18446744073709551616"},
		{"mtime", "12abc"},
		{"path", "a\0b"},
	};
	struct ts_archive *a;
	unsigned char *tar;
	size_t i, len;

	for (i = 0; i < ARRAY_SIZE(bad); i++) {
		size_t vlen =
			strcmp(bad[i][0], "path") == 0 ? 3 : strlen(bad[i][1]);

		a = ts_archive_new();
		add_pax_member(a, bad[i][0], bad[i][1], vlen, "f", '0', "x", 1,
			       NULL);
		tar = ts_archive_finish(a, 1, &len);
		expect_invalid(tar, len);
		free(tar);
	}
	/* malformed records: wrong length, no '=', no newline, padding */
	{
		static const char *const bodies[] = {
			"12 path=x\n",	  "7 path\n",	"9 path=xy",
			"9 path=x\n\0\0", "0 path=x\n", " 9 path=x\n",
			"9 =path\n",
		};

		for (i = 0; i < ARRAY_SIZE(bodies); i++) {
			size_t blen = strlen(bodies[i]);

			if (i == 3)
				blen = 11; /* a good record, then NULs */
			a = ts_archive_new();
			add_ext(a, 'x', bodies[i], blen);
			ts_add_raw_member(a, "f", '0', 0644, "x", 1, NULL);
			tar = ts_archive_finish(a, 1, &len);
			expect_invalid(tar, len);
			free(tar);
		}
	}
	/* a huge size field on the pax header itself */
	a = ts_archive_new();
	add_pax_member(a, "path", "p", 1, "f", '0', "x", 1, NULL);
	tar = ts_archive_finish(a, 1, &len);
	memcpy(tar + WSNAP_TAR_OFF(size), "77777777777", 11);
	ts_raw_checksum(tar);
	expect_invalid(tar, len);
	free(tar);
	/* a global header may not set sizes, sparse maps or names: libarchive
	 * ignores global headers, tarfile applies them */
	{
		static const char *const globals[] = {
			"11 size=10\n",
			"12 path=abc\n",
			"16 linkpath=abc\n",
			"26 GNU.sparse.numblocks=1\n",
		};

		for (i = 0; i < ARRAY_SIZE(globals); i++) {
			a = ts_archive_new();
			add_ext(a, 'g', globals[i], strlen(globals[i]));
			ts_add_raw_member(a, "f", '0', 0644, "x", 1, NULL);
			tar = ts_archive_finish(a, 1, &len);
			expect_invalid(tar, len);
			free(tar);
		}
	}
}

static void test_reader_good_pax_numbers(void **state)
{
	static const char *const good[][2] = {
		{"mtime", "-100.25"},
		{"mtime", "100."},
		{"size", "1"},
		{"uid", "0"},
		{"SCHILY.nlink", "9223372036854775807"},
	};
	size_t i, len;

	for (i = 0; i < ARRAY_SIZE(good); i++) {
		struct ts_archive *a = ts_archive_new();
		unsigned char *tar;

		add_pax_member(a, good[i][0], good[i][1], strlen(good[i][1]),
			       "f", '0', "x", 1, NULL);
		tar = ts_archive_finish(a, 1, &len);
		expect_members(tar, len, 1);
		free(tar);
	}
}

/* Headers libarchive treats in ways other readers do not. */
static void test_reader_ambiguous_headers(void **state)
{
	const struct {
		char tf;
		const char *data;
		size_t len;
	} bad[] = {
		{'V', NULL, 0},	     /* GNU volume label: swallowed */
		{'V', "hidden", 6},  /* and its data taken as a header */
		{'A', "1000001", 8}, /* Solaris ACL */
		/* a directory's data: no reader skips it, all of them read
		 * it as a (bad) header */
		{'5', "data", 4},
		{'2', "data", 4}, /* symlink with data */
		/* hardlink with data: libarchive skips it (the block after
		 * is no header), tarfile does not */
		{'1', "data", 4},
		{'6', "data", 4}, /* FIFO with data */
		/* a '0' file named like a directory, with data: libarchive
		 * does not skip the data, tarfile does */
		{'0', "data", 4},
	};
	size_t i, len;

	for (i = 0; i < ARRAY_SIZE(bad); i++) {
		struct ts_archive *a = ts_archive_new();
		unsigned char *tar;

		ts_add_raw_member(a, bad[i].tf == '0' ? "m/" : "m", bad[i].tf,
				  0644, bad[i].data, bad[i].len,
				  bad[i].tf == '1' ? "t" : NULL);
		ts_add_raw_member(a, "after", '0', 0644, "x", 1, NULL);
		tar = ts_archive_finish(a, 1, &len);
		expect_invalid(tar, len);
		free(tar);
	}
	/* a pax size on a hardlink: libarchive would skip it as data */
	{
		struct ts_archive *a = ts_archive_new();
		unsigned char *tar;

		add_pax_member(a, "size", "512", 3, "h", '1', NULL, 0, "t");
		ts_add_raw_member(a, "hidden", '0', 0644, NULL, 0, NULL);
		tar = ts_archive_finish(a, 1, &len);
		expect_invalid(tar, len);
		free(tar);
	}
}

struct size_case {
	const char *name;
	char tf;
	const char *link, *pax_key, *pax_val;
	bool pax_before;
	enum wsnap_raw_type type;
};

/*
 * A member c->name whose size field says 5 but whose "data" is the header
 * of a member "evil", then a file "after". c->pax_key (NULL for none) puts
 * an 'x' header with pax_key=pax_val before it; c->pax_before puts an 'x'
 * header (mtime) before an earlier file "first", which makes libarchive
 * take the archive for pax.
 */
static unsigned char *size_without_data(const struct size_case *c, size_t *len)
{
	struct ts_archive *a = ts_archive_new();
	unsigned char h[WSNAP_TAR_BLOCK];

	if (c->pax_before)
		add_pax_member(a, "mtime", "1", 1, "first", '0', "1", 1, NULL);
	if (c->pax_key) {
		char body[512];
		size_t used = 0;

		pax_str(body, sizeof(body), &used, c->pax_key, c->pax_val);
		add_ext(a, 'x', body, used);
	}
	ts_raw_header(h, c->name, c->tf, 0755, 5, c->link);
	ts_add_raw(a, h, sizeof(h));
	ts_add_raw_member(a, "evil", '0', 0644, NULL, 0, NULL);
	ts_add_raw_member(a, "after", '0', 0644, "x", 1, NULL);
	return ts_archive_finish(a, 1, len);
}

/*
 * Bug: a ustar directory with a size field and no data
 * (CPython's testtar.tar, 'ustar/dirtype-with-size') was an invalid
 * stream, though tarfile, GNU tar and bsdtar all read it and the members
 * after it alike: none of them skips a directory's data. The same holds
 * for a hardlink in an archive without pax headers (libarchive skips its
 * size only when the block after it is no header). Refused where one
 * reader would skip what another reads as a header: a pax size on a
 * directory or hardlink (libarchive and GNU tar's listing skip it), a
 * hardlink's size in a pax archive (libarchive skips it), any size on a
 * symlink, device, FIFO or typeflag NUL directory (GNU tar's listing
 * skips it).
 */
static void test_reader_size_without_data(void **state)
{
	static const struct size_case good[] = {
		{"d", '5', NULL, NULL, NULL, false, WSNAP_RAW_DIR},
		{"d", '5', NULL, NULL, NULL, true, WSNAP_RAW_DIR},
		{"d", '5', NULL, "size", "0", false, WSNAP_RAW_DIR},
		{"h", '1', "after", NULL, NULL, false, WSNAP_RAW_HARDLINK},
		{"h", '1', "after", "size", "0", false, WSNAP_RAW_HARDLINK},
	};
	static const struct size_case bad[] = {
		{"d", '5', NULL, "size", "5", false, WSNAP_RAW_DIR},
		{"h", '1', "after", "size", "5", false, WSNAP_RAW_HARDLINK},
		{"h", '1', "after", "mtime", "1", false, WSNAP_RAW_HARDLINK},
		{"h", '1', "after", NULL, NULL, true, WSNAP_RAW_HARDLINK},
		/* libarchive reports size 0 and skips the size field: only
		 * where it stands after the skip tells */
		{"h", '1', "after", "SCHILY.realsize", "0", false,
		 WSNAP_RAW_HARDLINK},
		{"l", '2', "after", NULL, NULL, false, WSNAP_RAW_SYMLINK},
		{"c", '3', NULL, NULL, NULL, false, WSNAP_RAW_OTHER},
		{"b", '4', NULL, NULL, NULL, false, WSNAP_RAW_OTHER},
		{"p", '6', NULL, NULL, NULL, false, WSNAP_RAW_OTHER},
		{"d/", '\0', NULL, NULL, NULL, false, WSNAP_RAW_DIR},
	};
	unsigned char *tar;
	size_t i, len, first;
	struct run run;
	int s;

	for (i = 0; i < ARRAY_SIZE(good); i++) {
		tar = size_without_data(&good[i], &len);
		first = good[i].pax_before;
		for (s = SRC_MEMFD; s <= SRC_PIPE; s++) {
			run_bytes(&run, tar, len, (enum src)s, true);
			assert_int_equal(run.st, WSNAP_OK);
			assert_int_equal(run.rec.n, first + 3);
			assert_string_equal(run.rec.m[first].name,
					    good[i].name);
			assert_int_equal(run.rec.m[first].type, good[i].type);
			assert_int_equal(run.rec.m[first].size, 0);
			assert_string_equal(run.rec.m[first + 1].name, "evil");
			assert_string_equal(run.rec.m[first + 2].name, "after");
			assert_data_at(run.res.data_fd,
				       run.rec.m[first + 2].data_offset, "x",
				       1);
			run_release(&run);
		}
		free(tar);
	}
	for (i = 0; i < ARRAY_SIZE(bad); i++) {
		tar = size_without_data(&bad[i], &len);
		expect_invalid(tar, len);
		free(tar);
	}
}

/* A base-256 number: the low 64 bits of v, sign-filled above them
 * (neg: 0xff, else 0x00), marker bit set. */
static void put_b256(unsigned char *f, size_t n, uint64_t v, bool neg)
{
	size_t i;

	memset(f, neg ? 0xff : 0x00, n);
	for (i = 0; i < 8 && i < n; i++)
		f[n - 1 - i] = (unsigned char)(v >> (8 * i));
	f[0] |= 0x80;
}

/* A GNU long name ('L') or long link name ('K') record. */
static void add_gnu_long(struct ts_archive *a, char tf, const char *name)
{
	ts_add_raw_member(a, "././@LongLink", tf, 0644, name, strlen(name) + 1,
			  NULL);
}

/*
 * Extension headers before one member: 'L' / 'K' records (val is the
 * name), or an 'x' / 'X' header with one or two records.
 */
struct ext_spec {
	char tf; /* 0 ends a list */
	const char *key, *val, *key2, *val2;
};

#define EXT_MAX 3
#define EXT_GNU(t, v)                                                          \
	{                                                                      \
		.tf = (t), .val = (v)                                          \
	}
#define EXT_PAX(k, v)                                                          \
	{                                                                      \
		.tf = 'x', .key = (k), .val = (v)                              \
	}

static void add_exts(struct ts_archive *a, const struct ext_spec *e)
{
	for (; e->tf; e++) {
		char body[512];
		size_t used = 0;

		if (e->tf == 'L' || e->tf == 'K') {
			add_gnu_long(a, e->tf, e->val);
			continue;
		}
		pax_str(body, sizeof(body), &used, e->key, e->val);
		if (e->key2)
			pax_str(body, sizeof(body), &used, e->key2, e->val2);
		ts_add_raw_member(a, "PaxHeader/x", e->tf, 0644, body, used,
				  NULL);
	}
}

/* Each list of extension headers before a symlink is an invalid stream. */
static void expect_invalid_exts(const struct ext_spec (*cases)[EXT_MAX + 1],
				size_t n)
{
	size_t i, len;

	for (i = 0; i < n; i++) {
		struct ts_archive *a = ts_archive_new();
		unsigned char *tar;

		add_exts(a, cases[i]);
		ts_add_raw_member(a, "l", '2', 0777, NULL, 0, "t");
		tar = ts_archive_finish(a, 1, &len);
		expect_invalid(tar, len);
		free(tar);
	}
}

/* The extension headers before a symlink "l" -> "t" (or, link NULL, an
 * empty file "f") give it these names. */
static void expect_exts_names(const struct ext_spec *e, const char *name,
			      const char *link)
{
	struct ts_archive *a = ts_archive_new();
	unsigned char *tar;
	struct run run;
	size_t len;

	add_exts(a, e);
	if (link)
		ts_add_raw_member(a, "l", '2', 0777, NULL, 0, "t");
	else
		ts_add_raw_member(a, "f", '0', 0644, NULL, 0, NULL);
	tar = ts_archive_finish(a, 1, &len);
	run_bytes(&run, tar, len, SRC_PIPE, false);
	assert_int_equal(run.st, WSNAP_OK);
	assert_int_equal(run.rec.n, 1);
	assert_string_equal(run.rec.m[0].name, name);
	if (link)
		assert_string_equal(run.rec.m[0].link, link);
	run_release(&run);
	free(tar);
}

/*
 * Bug: two GNU long names for one member were accepted, and libarchive
 * reported the last ('safe...') where tarfile reads the first
 * ('../evil...'): libarchive keeps one buffer per kind and applies it
 * after the headers that follow. The same for 'K', for 'L' 'K' 'L', and
 * for two pax headers (libarchive keeps only the last body, tarfile
 * merges both; 'X', Solaris, is a pax header to both). Any repeated
 * extension header of one kind is refused.
 */
static void test_reader_repeated_extension_headers(void **state)
{
	static const struct ext_spec cases[][EXT_MAX + 1] = {
		{EXT_GNU('L', "../evil"), EXT_GNU('L', "safe")},
		{EXT_GNU('K', "/etc/passwd"), EXT_GNU('K', "ok")},
		{EXT_GNU('L', "../evil"), EXT_GNU('K', "ok"),
		 EXT_GNU('L', "safe")},
		{EXT_PAX("path", "../evil"), EXT_PAX("path", "safe")},
		{EXT_PAX("path", "../evil"), EXT_PAX("mtime", "5")},
		{{.tf = 'X', .key = "path", .val = "safe"},
		 EXT_PAX("path", "../evil")},
	};
	static const struct ext_spec one_each[] = {
		EXT_GNU('L', "long-name"),
		EXT_GNU('K', "long-target"),
		EXT_PAX("mtime", "7"),
		{0},
	};

	expect_invalid_exts(cases, ARRAY_SIZE(cases));
	/* one of each kind is fine */
	expect_exts_names(one_each, "long-name", "long-target");
}

/*
 * Bug: a member named by both an 'L' record and a pax path was accepted
 * ('longname-and-pax-path.tar'): libarchive and tarfile take the outer
 * one, GNU tar the pax path. Refused in both orders, and so are 'K' with
 * a pax linkpath, and a pax path after GNU.sparse.name (libarchive always
 * takes the sparse name, tarfile the later record: GNU tar's sparse 0.1
 * with a long name reads as '.../GNUSparseFile.N/...' in tarfile). A path
 * before the sparse name (bsdtar) reads alike.
 */
static void test_reader_two_name_sources(void **state)
{
	static const struct ext_spec cases[][EXT_MAX + 1] = {
		{EXT_GNU('L', "safe"), EXT_PAX("path", "../evil")},
		{EXT_PAX("path", "../evil"), EXT_GNU('L', "safe")},
		{EXT_GNU('K', "ok"), EXT_PAX("linkpath", "/etc/passwd")},
		{EXT_PAX("linkpath", "/etc/passwd"), EXT_GNU('K', "ok")},
		{{'x', "GNU.sparse.name", "safe", "path", "../evil"}},
		{EXT_GNU('L', "safe"), EXT_PAX("GNU.sparse.name", "../evil")},
	};
	static const struct ext_spec path_first[] = {
		{'x', "path", "GNUSparseFile.1/n", "GNU.sparse.name", "n"},
		{0},
	};

	expect_invalid_exts(cases, ARRAY_SIZE(cases));
	expect_exts_names(path_first, "n", NULL);
}

/* A raw ustar member "passwd" with the given magic and prefix. */
static unsigned char *prefixed_member(const char *magic, const char *prefix,
				      const char *longname, size_t *len)
{
	struct ts_archive *a = ts_archive_new();
	unsigned char h[WSNAP_TAR_BLOCK];

	if (longname)
		add_gnu_long(a, 'L', longname);
	ts_raw_header(h, "passwd", '0', 0644, 1, NULL);
	memcpy(h + WSNAP_TAR_OFF(magic), magic, WSNAP_TAR_MAGIC_LEN);
	memcpy(h + WSNAP_TAR_OFF(prefix), prefix, strlen(prefix));
	ts_raw_checksum(h);
	ts_add_raw(a, h, sizeof(h));
	add_padded(a, "1", 1);
	return ts_archive_finish(a, 1, len);
}

/*
 * Bug: a header without the POSIX ustar magic but with bytes in the prefix
 * field was accepted as 'passwd' (libarchive ignores the prefix there)
 * while tarfile reads '../../etc/passwd' ('v7-prefix.tar'). The same for
 * a GNU header, whose atime field sits there (GNU tar --incremental):
 * tarfile takes it as a directory. Refused unless a long name replaces
 * the header's name for both readers.
 */
static void test_reader_prefix_without_ustar_magic(void **state)
{
	static const char v7[WSNAP_TAR_MAGIC_LEN] = {0},
			  gnu[WSNAP_TAR_MAGIC_LEN] = WSNAP_TAR_GNU_MAGIC;
	struct run run;
	unsigned char *tar;
	size_t len;

	tar = prefixed_member(v7, "../../etc", NULL, &len);
	expect_invalid(tar, len);
	free(tar);
	tar = prefixed_member(gnu, "15112542040", NULL, &len);
	expect_invalid(tar, len);
	free(tar);
	/* libarchive joins the prefix under "ustar" and any byte but GNU's,
	 * GNU tar only under "ustar\0" */
	tar = prefixed_member("ustarX00", "etc", NULL, &len);
	expect_invalid(tar, len);
	free(tar);
	tar = prefixed_member("ustar 00", "etc", NULL, &len);
	expect_invalid(tar, len);
	free(tar);
	/* a long name replaces name and prefix for both readers */
	tar = prefixed_member(gnu, "15112542040", "long/passwd", &len);
	expect_members(tar, len, 1);
	run_bytes(&run, tar, len, SRC_MEMFD, false);
	assert_string_equal(run.rec.m[0].name, "long/passwd");
	run_release(&run);
	free(tar);
	/* POSIX ustar: both join the prefix; no prefix: nothing to join */
	tar = prefixed_member(WSNAP_TAR_POSIX_MAGIC, "etc", NULL, &len);
	run_bytes(&run, tar, len, SRC_MEMFD, false);
	assert_int_equal(run.st, WSNAP_OK);
	assert_string_equal(run.rec.m[0].name, "etc/passwd");
	run_release(&run);
	free(tar);
	tar = prefixed_member(v7, "", NULL, &len);
	run_bytes(&run, tar, len, SRC_MEMFD, false);
	assert_int_equal(run.st, WSNAP_OK);
	assert_string_equal(run.rec.m[0].name, "passwd");
	run_release(&run);
	free(tar);
	/* old GNU sparse headers hold GNU fields there for both readers */
	{
		static const uint64_t runs[][2] = {{0, 5}, {100, 0}};
		struct ts_archive *a = ts_archive_new();

		add_gnu_sparse(a, "sp", 100, runs, 2, 0);
		tar = ts_archive_finish(a, 1, &len);
		memcpy(tar + WSNAP_TAR_OFF(gnu.atime), "15112542040", 11);
		ts_raw_checksum(tar);
		expect_members(tar, len, 1);
		free(tar);
	}
}

/*
 * Bug: an old GNU sparse real size of 2^63 (base-256) was saturated by
 * libarchive to 2^63 - 1 and reported as a size over the limit
 * ('sparse-gnu-realsize-2p63.tar'); a number that overflows is an invalid
 * stream (policy.md 5), read from the raw header: the real size, the run
 * offsets and lengths in the header and in extension blocks, and the
 * mtime of any header.
 */
static void test_reader_raw_numbers_overflow(void **state)
{
	static const uint64_t runs[][2] = {
		{0, 512},    {1000, 512}, {2000, 512}, {3000, 512},
		{4000, 512}, {5000, 512}, {6000, 1},   {10000, 0},
	};
	const uint64_t realsize = 10000;
	struct ts_archive *a;
	unsigned char *tar;
	size_t len, i;
	struct run run;

	/* the fields: real size, a run offset in the header, a run length
	 * in the extension block */
	const size_t fields[] = {
		WSNAP_TAR_OFF(gnu.realsize),
		WSNAP_TAR_OFF(gnu.sparse[1].offset),
		WSNAP_TAR_BLOCK + WSNAP_TAR_EXT_OFF(sparse[1].numbytes),
	};

	for (i = 0; i < 3; i++) {
		a = ts_archive_new();
		add_gnu_sparse(a, "sp", realsize, runs, 8, 0);
		tar = ts_archive_finish(a, 1, &len);
		put_b256(tar + fields[i], WSNAP_TAR_LEN(gnu.realsize),
			 (uint64_t)1 << 63, false);
		ts_raw_checksum(tar);
		expect_invalid(tar, len);
		free(tar);
	}
	/* base-256 that fits is read: a real size of 2^62, where the map
	 * ends */
	a = ts_archive_new();
	add_gnu_sparse(a, "sp", realsize, runs, 8, 0);
	tar = ts_archive_finish(a, 1, &len);
	put_b256(tar + WSNAP_TAR_OFF(gnu.realsize), WSNAP_TAR_LEN(gnu.realsize),
		 (uint64_t)1 << 62, false);
	put_b256(tar + WSNAP_TAR_BLOCK + WSNAP_TAR_EXT_OFF(sparse[3].offset),
		 WSNAP_TAR_SPARSE_LEN(offset), (uint64_t)1 << 62, false);
	ts_raw_checksum(tar);
	run_bytes(&run, tar, len, SRC_MEMFD, false);
	assert_int_equal(run.st, WSNAP_OK);
	assert_int_equal(run.rec.m[0].size, (uint64_t)1 << 62);
	run_release(&run);
	free(tar);

	/* mtime: 2^63 and -2^63 - 1 overflow, -2^63 and -1000 do not */
	{
		const struct {
			uint64_t v;
			bool neg, ok;
		} t[] = {
			{(uint64_t)1 << 63, false, false},
			{(uint64_t)INT64_MAX, true, false},
			{(uint64_t)INT64_MIN, true, true},
			{(uint64_t)-1000, true, true},
		};

		for (i = 0; i < 4; i++) {
			tar = two_members(&len, 1);
			put_b256(tar + SECOND_HEADER + WSNAP_TAR_OFF(mtime),
				 WSNAP_TAR_LEN(mtime), t[i].v, t[i].neg);
			ts_raw_checksum(tar + SECOND_HEADER);
			if (!t[i].ok) {
				expect_invalid(tar, len);
				free(tar);
				continue;
			}
			run_bytes(&run, tar, len, SRC_PIPE, false);
			assert_int_equal(run.st, WSNAP_OK);
			assert_int_equal(run.rec.m[1].mtime_sec,
					 (int64_t)t[i].v);
			run_release(&run);
			free(tar);
		}
	}
}

/*
 * Bug: a pax 0.1 sparse map with an odd number of values
 * ('sparse-pax01-odd.tar', "0,4,8192") was accepted: both libarchive and
 * tarfile drop the last number, a map that says nothing certain.
 */
static void test_reader_sparse_map_odd(void **state)
{
	static const char *const maps[] = {"0,4", "0,4,8192", "0", "0,4,8,"};
	size_t i, len;

	for (i = 0; i < 4; i++) {
		struct ts_archive *a = ts_archive_new();
		unsigned char *tar;
		char body[512];
		size_t used = 0;

		pax_str(body, sizeof(body), &used, "GNU.sparse.size", "4");
		pax_str(body, sizeof(body), &used, "GNU.sparse.numblocks", "2");
		pax_str(body, sizeof(body), &used, "GNU.sparse.map", maps[i]);
		add_ext(a, 'x', body, used);
		ts_add_raw_member(a, "sp", '0', 0644, "abcd", 4, NULL);
		tar = ts_archive_finish(a, 1, &len);
		if (i == 0)
			expect_members(tar, len, 1);
		else
			expect_invalid(tar, len);
		free(tar);
	}
}

/*
 * Bug: a negative fractional pax mtime (-1.5) was reported as sec -1,
 * nsec 500000000, that is -0.5 s (libarchive applies the sign to the
 * seconds only; "-0.5" even came out as +0.5 s). The instant is floored:
 * sec -2, nsec 500000000. Per-file and global headers alike.
 */
static void test_reader_negative_pax_mtime(void **state)
{
	const struct {
		const char *text;
		int64_t sec;
		uint32_t nsec;
	} t[] = {
		{"-1.5", -2, 500000000},
		{"-0.5", -1, 500000000},
		{"-1.25", -2, 750000000},
		{"-2", -2, 0},
		{"-2.000", -2, 0},
		{"-0.000000001", -1, 999999999},
		{"1.5", 1, 500000000},
		{"-9223372036854775807.5", INT64_MIN, 500000000},
	};
	size_t i, len;

	for (i = 0; i < ARRAY_SIZE(t); i++) {
		int global;

		for (global = 0; global < 2; global++) {
			struct ts_archive *a = ts_archive_new();
			unsigned char *tar;
			struct run run;
			char body[128];
			size_t used = 0;

			pax_str(body, sizeof(body), &used, "mtime", t[i].text);
			add_ext(a, global ? 'g' : 'x', body, used);
			ts_add_raw_member(a, "f", '0', 0644, "x", 1, NULL);
			tar = ts_archive_finish(a, 1, &len);
			run_bytes(&run, tar, len, SRC_MEMFD, false);
			assert_int_equal(run.st, WSNAP_OK);
			assert_int_equal(run.rec.m[0].mtime_sec, t[i].sec);
			assert_int_equal(run.rec.m[0].mtime_nsec, t[i].nsec);
			run_release(&run);
			free(tar);
		}
	}
}

/* Two raw members; the second's field at off (of width n) is replaced by
 * the given bytes (NUL-padded), its checksum made right. */
static unsigned char *field_archive(size_t off, const void *val, size_t n,
				    size_t vlen, size_t *len)
{
	unsigned char *tar = two_members(len, 1);

	assert_true(vlen <= n);
	memset(tar + SECOND_HEADER + off, 0, n);
	memcpy(tar + SECOND_HEADER + off, val, vlen);
	ts_raw_checksum(tar + SECOND_HEADER);
	return tar;
}

/*
 * Bug: number fields that libarchive and tarfile read differently were
 * accepted. libarchive reads octal up to the first non-digit; tarfile
 * takes the field up to its first NUL and hands it to int(s, 8): "12x"
 * or a base-256 marker other than 0x80 / 0xff make it refuse the header
 * and end the archive there, silently (the members after it are
 * libarchive's alone); "1_0", "0o10", "+10" it reads as numbers
 * libarchive does not see. Every number field of every header block.
 * And GNU tar skips a leading NUL: "\0" "0001000" in
 * a size field is 512 bytes of data to it, none to the others.
 */
static void test_reader_number_fields_as_tarfile(void **state)
{
	static const unsigned short fields[][2] = {
		{WSNAP_TAR_OFF(mode), WSNAP_TAR_LEN(mode)},
		{WSNAP_TAR_OFF(uid), WSNAP_TAR_LEN(uid)},
		{WSNAP_TAR_OFF(gid), WSNAP_TAR_LEN(gid)},
		{WSNAP_TAR_OFF(size), WSNAP_TAR_LEN(size)},
		{WSNAP_TAR_OFF(mtime), WSNAP_TAR_LEN(mtime)},
		{WSNAP_TAR_OFF(devmajor), WSNAP_TAR_LEN(devmajor)},
		{WSNAP_TAR_OFF(devminor), WSNAP_TAR_LEN(devminor)},
	};
	static const struct {
		const char *v;
		size_t len;
		bool ok;
	} vals[] = {
		{"12x", 3, false},
		{"1_0", 3, false},
		{"0o10", 4, false},
		{"+1", 2, false},
		{"\n1", 2, false},
		{"1 2", 3, false},
		{"\x81\0\0\0\0\0\0\1", 8, false},
		/* GNU tar skips a leading NUL and reads 7 */
		{"\0"
		 "7",
		 2, false},
		{"  1 \0jk", 7, true},
		{"\t1\t", 3, true},
		{"\x80\0\0\0\0\0\0\1", 8, true},
		{"", 0, true},
		{"    ", 4, true},
	};
	unsigned char *tar;
	size_t f, v, len;

	for (f = 0; f < ARRAY_SIZE(fields); f++) {
		for (v = 0; v < ARRAY_SIZE(vals); v++) {
			/* sizes other than 1 would misplace the data */
			if (fields[f][0] == WSNAP_TAR_OFF(size) &&
			    (vals[v].ok || vals[v].v[0] == '\x81'))
				continue;
			tar = field_archive(fields[f][0], vals[v].v,
					    fields[f][1], vals[v].len, &len);
			if (vals[v].ok)
				expect_members(tar, len, 2);
			else
				expect_invalid(tar, len);
			free(tar);
		}
	}
	/* the checksum field: "001234 7" passes libarchive's check as
	 * 001234, tarfile refuses it */
	{
		char ck[9];

		tar = two_members(&len, 1);
		memcpy(ck, tar + SECOND_HEADER + WSNAP_TAR_OFF(chksum),
		       WSNAP_TAR_LEN(chksum));
		ck[6] = ' ';
		ck[7] = '7';
		memcpy(tar + SECOND_HEADER + WSNAP_TAR_OFF(chksum), ck,
		       WSNAP_TAR_LEN(chksum));
		expect_invalid(tar, len);
		free(tar);
	}
	/* an extension header's fields count too */
	{
		struct ts_archive *a = ts_archive_new();

		add_gnu_long(a, 'L', "name");
		ts_add_raw_member(a, "f", '0', 0644, "x", 1, NULL);
		tar = ts_archive_finish(a, 1, &len);
		memcpy(tar + WSNAP_TAR_OFF(uid), "1_0\0", 4);
		ts_raw_checksum(tar);
		expect_invalid(tar, len);
		free(tar);
	}
}

/*
 * Bug: old GNU sparse headers that tarfile reads differently were
 * accepted: an empty real size (tarfile: 0, libarchive: the size field),
 * entries after the first with a NUL offset (libarchive stops there,
 * tarfile reads on), an extension-block entry at offset 0 with data
 * (tarfile drops it), an entry tarfile cannot parse.
 */
static void test_reader_old_gnu_sparse_fields(void **state)
{
	static const uint64_t runs[][2] = {
		{0, 512},    {1000, 512}, {2000, 512}, {3000, 512},
		{4000, 512}, {5000, 512}, {6000, 1},
	};
	/* every field here is as wide as a sparse offset */
	const size_t n = WSNAP_TAR_SPARSE_LEN(offset);
	static const struct {
		size_t off;
		const char *v;
	} bad[] = {
		{WSNAP_TAR_OFF(gnu.realsize), ""}, /* no real size */
		/* NUL offset, then bytes */
		{WSNAP_TAR_OFF(gnu.sparse[1].offset), "\0"
						      "1"},
		/* ext block: (0, 1) */
		{WSNAP_TAR_BLOCK + WSNAP_TAR_EXT_OFF(sparse[1].offset), "0"},
		/* unparsable length */
		{WSNAP_TAR_OFF(gnu.sparse[0].numbytes), "5x"},
	};
	size_t i, len;

	for (i = 0; i < ARRAY_SIZE(bad); i++) {
		struct ts_archive *a = ts_archive_new();
		unsigned char *tar;

		add_gnu_sparse(a, "sp", 6001, runs, 7, 0);
		tar = ts_archive_finish(a, 1, &len);
		memset(tar + bad[i].off, 0, n);
		memcpy(tar + bad[i].off, bad[i].v,
		       i == 1 ? 2 : strlen(bad[i].v));
		ts_raw_checksum(tar);
		expect_invalid(tar, len);
		free(tar);
	}
}

/* A pax header with the given records (key, value, ..., NULL; raw padding
 * after them), a "GNUSparseFile.0/sp" member of 4 data bytes, and the end
 * marker. */
static unsigned char *pax_sparse_records(const char *const *kv,
					 const char *padding, size_t *len)
{
	struct ts_archive *a = ts_archive_new();
	char body[1024];
	unsigned char h[WSNAP_TAR_BLOCK];
	size_t used = 0, i, pad;

	for (i = 0; kv[i]; i += 2)
		pax_str(body, sizeof(body), &used, kv[i], kv[i + 1]);
	ts_raw_header(h, "PaxHeader/sp", 'x', 0644, used, NULL);
	ts_add_raw(a, h, sizeof(h));
	ts_add_raw(a, body, used);
	pad = (WSNAP_TAR_BLOCK - used % WSNAP_TAR_BLOCK) % WSNAP_TAR_BLOCK;
	memset(body, 0, sizeof(body));
	if (padding)
		memcpy(body, padding, strlen(padding));
	assert_true(strlen(padding ? padding : "") <= pad);
	ts_add_raw(a, body, pad);
	ts_add_raw_member(a, "GNUSparseFile.0/sp", '0', 0644, "abcd", 4, NULL);
	return ts_archive_finish(a, 1, len);
}

/*
 * Bug: pax sparse headers that libarchive and tarfile map differently
 * were accepted: 0.0 pairs out of order (offset, offset, numbytes: the
 * runs differ), without or after GNU.sparse.numblocks, more or fewer than
 * numblocks, without GNU.sparse.size (tarfile: not sparse); offset text
 * in another value or in the padding (tarfile finds pairs by a regular
 * expression over the raw block); two maps (libarchive adds both,
 * tarfile keeps the last); formats mixed; major "01" (tarfile compares
 * the text); GNU.sparse.size alone (tarfile: all holes); SUN.holesdata.
 */
static void test_reader_pax_sparse_formats(void **state)
{
#define S "GNU.sparse."
	/* clang-format off */
	static const char *const good00[] = {
		S "size", "8196", S "numblocks", "1",
		S "offset", "8192", S "numbytes", "4", NULL,
	};
	/* clang-format on */
	static const char *const bad[][13] = {
		{S "size", "9000", S "numblocks", "1", S "offset", "0",
		 S "offset", "8192", S "numbytes", "4"},
		{S "size", "9000", S "numblocks", "1", S "numbytes", "4",
		 S "offset", "8192"},
		{S "size", "9000", S "offset", "8192", S "numbytes", "4"},
		{S "size", "9000", S "offset", "8192", S "numblocks", "1",
		 S "numbytes", "4"},
		{S "size", "9000", S "numblocks", "2", S "offset", "8192",
		 S "numbytes", "4"},
		{S "numblocks", "1", S "offset", "0", S "numbytes", "4"},
		{S "size", "9000", S "numblocks", "1", "comment",
		 "x\n1 GNU.sparse.offset=0\n", S "offset", "8192", S "numbytes",
		 "4"},
		{S "size", "9000", S "map", "0,2", S "map", "100,2"},
		{S "size", "9000", S "map", "0,4", S "numblocks", "1",
		 S "offset", "100", S "numbytes", "0"},
		{S "major", "1", S "minor", "0", S "map", "0,4"},
		{S "major", "01", S "minor", "0"},
		{S "size", "4"},
		{"SUN.holesdata", " 0 4 8192 9000"},
	};
#undef S
	unsigned char *tar;
	size_t i, len;
	struct run run;

	tar = pax_sparse_records(good00, NULL, &len);
	run_bytes(&run, tar, len, SRC_MEMFD, false);
	assert_int_equal(run.st, WSNAP_OK);
	assert_int_equal(run.rec.m[0].nsparse, 1);
	assert_int_equal(run.rec.m[0].runs[0].offset, 8192);
	run_release(&run);
	free(tar);
	for (i = 0; i < ARRAY_SIZE(bad); i++) {
		tar = pax_sparse_records(bad[i], NULL, &len);
		expect_invalid(tar, len);
		free(tar);
	}
	/* the good header with a pair in its padding */
	tar = pax_sparse_records(good00, "9 GNU.sparse.numbytes=4\n", &len);
	expect_invalid(tar, len);
	free(tar);
}

/* An old GNU sparse archive of runs, with the width bytes at off (from
 * the start of the archive) emptied. */
static unsigned char *gnu_sparse_cleared(const uint64_t (*runs)[2], size_t n,
					 uint64_t realsize, size_t off,
					 size_t width, size_t *len)
{
	struct ts_archive *a = ts_archive_new();
	unsigned char *tar;

	add_gnu_sparse(a, "s", realsize, runs, n, 0);
	tar = ts_archive_finish(a, 1, len);
	memset(tar + off, 0, width);
	ts_raw_checksum(tar);
	return tar;
}

/*
 * Bug (found by GNU tar in fuzz/tarfile_diff.py): GNU
 * tar extracts sparse files otherwise than libarchive and tarfile read
 * them. It reads each run's data from blocks of its own, so a run with
 * data that ends inside a block shifts the runs after it (and a header
 * after the member can become a run's data); it writes a file up to the
 * end of its map's last run only (a trailing hole needs a run of length 0
 * at the size); it ends an old GNU map at the first entry with an empty
 * length, reads extension blocks only after a block whose entries are all
 * used, extracts an 'S' map without entries as an empty file, and refuses
 * a 0.1 map with more runs than GNU.sparse.numblocks given before it. And
 * libarchive skips '#' lines in a 1.0 map, which tarfile and GNU tar fail
 * on. What GNU tar writes passes (test_reader_gnu_sparse and
 * test_reader_pax_sparse take such maps through every format).
 */
static void test_reader_sparse_gnu_tar(void **state)
{
	static const uint64_t unaligned[][2] = {{0, 5}, {1000, 512}, {1512, 0}};
	static const uint64_t short_map[][2] = {{0, 512}, {8192, 4}};
	static const uint64_t whole[][2] = {{0, 4}};
	static const uint64_t hole3[][2] = {
		{0, 512}, {1000, 512}, {2000, 512}, {3000, 0}, {4000, 0}};
	static const uint64_t empty_len[][2] = {
		{0, 512}, {1000, 0}, {2000, 512}, {3000, 0}};
	static const int versions[] = {-1, 0, 1, 10}; /* -1: old GNU */
	const size_t entry = sizeof(struct wsnap_tar_sparse);
	uint64_t ext[26][2];
	struct ts_archive *a;
	unsigned char *tar;
	size_t v, i, len;

	for (v = 0; v < 4; v++) {
		const struct {
			const uint64_t (*runs)[2];
			size_t n;
			uint64_t size;
			bool ok;
		} maps[] = {
			{unaligned, 3, 1512, false},
			{short_map, 2, 9000, false},
			{whole, 1, 4, true},
		};

		for (i = 0; i < ARRAY_SIZE(maps); i++) {
			if (versions[v] < 0) {
				a = ts_archive_new();
				add_gnu_sparse(a, "s", maps[i].size,
					       maps[i].runs, maps[i].n, 0);
				tar = ts_archive_finish(a, 1, &len);
			} else {
				tar = pax_sparse_archive(
					versions[v], &len, maps[i].runs,
					maps[i].n, maps[i].size);
			}
			if (maps[i].ok)
				expect_members(tar, len,
					       versions[v] < 0 ? 1 : 2);
			else
				expect_invalid(tar, len);
			free(tar);
		}
	}
	/* an old GNU map: no entries; an entry with an empty length; free
	 * entries in the header, or in an extension block, before one */
	tar = gnu_sparse_cleared(whole, 1, 4, WSNAP_TAR_OFF(gnu.sparse[0]),
				 entry, &len);
	expect_invalid(tar, len);
	free(tar);
	tar = gnu_sparse_cleared(empty_len, 4, 3000,
				 WSNAP_TAR_OFF(gnu.sparse[1].numbytes),
				 WSNAP_TAR_SPARSE_LEN(numbytes), &len);
	expect_invalid(tar, len);
	free(tar);
	tar = gnu_sparse_cleared(hole3, 5, 4000, WSNAP_TAR_OFF(gnu.sparse[3]),
				 entry, &len);
	expect_invalid(tar, len);
	free(tar);
	for (i = 0; i < 24; i++) {
		ext[i][0] = i * 1000;
		ext[i][1] = 512;
	}
	ext[24][0] = 24000; /* the last entry of the first extension block */
	ext[24][1] = 0;
	ext[25][0] = 30000;
	ext[25][1] = 0;
	tar = gnu_sparse_cleared(
		ext, 26, 30000, WSNAP_TAR_BLOCK + WSNAP_TAR_EXT_OFF(sparse[20]),
		entry, &len);
	expect_invalid(tar, len);
	free(tar);
	/* the same maps whole are fine */
	a = ts_archive_new();
	add_gnu_sparse(a, "s", 30000, ext, 26, 0);
	add_gnu_sparse(a, "t", 4000, hole3, 5, 0);
	tar = ts_archive_finish(a, 1, &len);
	expect_members(tar, len, 2);
	free(tar);
}

/*
 * Bug: typeflag NUL with a name ending in '/' from a long name, a pax path
 * or the prefix was reported as a directory (as libarchive has it) while
 * tarfile, which looks at the name field only, reads a regular file.
 */
static void test_reader_nul_typeflag_slash(void **state)
{
	static const struct ext_spec pax_path[] = {EXT_PAX("path", "x/"), {0}};
	unsigned char h[WSNAP_TAR_BLOCK], *tar;
	struct ts_archive *a;
	struct run run;
	size_t len, i;

	for (i = 0; i < 3; i++) {
		a = ts_archive_new();
		if (i == 0)
			add_gnu_long(a, 'L', "x/");
		else if (i == 1)
			add_exts(a, pax_path);
		ts_raw_header(h, i == 2 ? "" : "y", '\0', 0755, 0, NULL);
		if (i == 2)
			memcpy(h + WSNAP_TAR_OFF(prefix), "a", 1);
		ts_raw_checksum(h);
		ts_add_raw(a, h, sizeof(h));
		tar = ts_archive_finish(a, 1, &len);
		expect_invalid(tar, len);
		free(tar);
	}
	/* the name field decides for both: "y/" is a directory named "x" */
	a = ts_archive_new();
	add_gnu_long(a, 'L', "x");
	ts_add_raw_member(a, "y/", '\0', 0755, NULL, 0, NULL);
	tar = ts_archive_finish(a, 1, &len);
	run_bytes(&run, tar, len, SRC_MEMFD, false);
	assert_int_equal(run.st, WSNAP_OK);
	assert_string_equal(run.rec.m[0].name, "x");
	assert_int_equal(run.rec.m[0].type, WSNAP_RAW_DIR);
	run_release(&run);
	free(tar);
}

/*
 * An extension header of typeflag tf with the given body, its padding
 * filled with pad (NULL: zeros), then a file "f" holding "hello".
 */
static unsigned char *ext_archive(char tf, const void *body, size_t n,
				  const char *pad, size_t *len)
{
	struct ts_archive *a = ts_archive_new();
	unsigned char h[WSNAP_TAR_BLOCK], tail[WSNAP_TAR_BLOCK];
	size_t rest = -n & (WSNAP_TAR_BLOCK - 1);

	ts_raw_header(h, tf == 'L' || tf == 'K' ? "././@LongLink" : "PaxHeader",
		      tf, 0644, n, NULL);
	ts_add_raw(a, h, sizeof(h));
	ts_add_raw(a, body, n);
	memset(tail, 0, sizeof(tail));
	if (pad)
		memcpy(tail, pad, strlen(pad) < rest ? strlen(pad) : rest);
	ts_add_raw(a, tail, rest);
	ts_add_raw_member(a, "f", '0', 0644, "hello", 5, NULL);
	return ts_archive_finish(a, 1, len);
}

/* ext_archive is one member named name. */
static void expect_ext_name(char tf, const void *body, size_t n,
			    const char *name)
{
	unsigned char *tar;
	struct run run;
	size_t len;
	int s;

	tar = ext_archive(tf, body, n, NULL, &len);
	for (s = SRC_MEMFD; s <= SRC_PIPE; s++) {
		run_bytes(&run, tar, len, (enum src)s, true);
		assert_int_equal(run.st, WSNAP_OK);
		assert_int_equal(run.rec.n, 1);
		assert_string_equal(run.rec.m[0].name, name);
		assert_int_equal(run.rec.m[0].size, 5);
		run_release(&run);
	}
	free(tar);
}

/*
 * Bug: libarchive, and so wsnap, reads exactly the
 * size's bytes of a pax or GNU long name body; tarfile parses the whole
 * padded blocks and GNU tar reads a long name up to its first NUL. A
 * record in the padding ("path=../x", "size=0") or a long name without
 * its NUL gave tarfile or GNU tar other names, sizes and hidden members
 * while wsnap accepted the archive. Padding must be zero, a long name end
 * in NUL within its size with only NULs after it, and a pax key must not
 * start with a blank (GNU tar skips blanks after the length, the others
 * keep them in the key). A regular file named with a trailing '/' is a
 * directory to libarchive and GNU tar, a file to tarfile: refused too.
 * What all read alike is accepted: a body filling its blocks, NULs after
 * a long name, a key given twice (all keep the last value).
 */
static void test_reader_extension_bytes(void **state)
{
	static const char rec[] = "12 path=abc\n";
	static const struct {
		char tf;
		const char *body;
		size_t n;
		const char *pad;
	} bad[] = {
		/* records and names in the padding */
		{'x', rec, sizeof(rec) - 1, "13 path=../x\n"},
		{'g', "13 comment=c\n", 13, "11 mtime=1\n"},
		{'L', "safe", 4, "/../x"},
		{'L', "safe\0", 5, "x"},
		/* long names without their NUL, or with more after it */
		{'L', "safe", 4, NULL},
		{'L', "", 0, NULL},
		{'K', "t", 1, NULL},
		{'L', "safe\0../x", 9, NULL},
		/* blanks before a key */
		{'x', "13  path=abc\n", 13, NULL},
		{'x', "13 \tpath=abc\n", 13, NULL},
	};
	char big[WSNAP_TAR_BLOCK], cval[486];
	size_t i, used, len;
	unsigned char *tar;
	struct ts_archive *a;

	for (i = 0; i < ARRAY_SIZE(bad); i++) {
		tar = ext_archive(bad[i].tf, bad[i].body, bad[i].n, bad[i].pad,
				  &len);
		expect_invalid(tar, len);
		free(tar);
	}
	memset(big, 'n', sizeof(big));
	tar = ext_archive('L', big, sizeof(big), NULL, &len);
	expect_invalid(tar, len);
	free(tar);
	/* read alike */
	expect_ext_name('x', rec, sizeof(rec) - 1, "abc");
	expect_ext_name('L', "name\0\0\0", 7, "name");
	used = 0;
	pax_str(big, sizeof(big), &used, "path", "one");
	pax_str(big, sizeof(big), &used, "comment", "");
	pax_str(big, sizeof(big), &used, "path", "two");
	expect_ext_name('x', big, used, "two");
	/* a body that fills its block exactly: no padding at all (a
	 * 499-byte comment record, then "13 path=full\n") */
	used = 0;
	memset(cval, 'c', sizeof(cval));
	pax_record(big, sizeof(big), &used, "comment", cval, sizeof(cval));
	pax_str(big, sizeof(big), &used, "path", "full");
	assert_int_equal(used, sizeof(big));
	expect_ext_name('x', big, used, "full");
	/* regular files named like directories */
	for (i = 0; i < 2; i++) {
		a = ts_archive_new();
		ts_add_raw_member(a, "d/", "07"[i], 0644, NULL, 0, NULL);
		tar = ts_archive_finish(a, 1, &len);
		expect_invalid(tar, len);
		free(tar);
	}
}

/*
 * Bug (fuzz_export crash-e040e7ac): a symlink with an empty target was
 * accepted, listed and mounted as 'l -> ', and export then failed with
 * ENOENT, since no filesystem holds an empty symlink. Refused as an
 * unreadable member. And an empty pax linkpath (or path) was taken as
 * absent, as libarchive does ('l -> ignored'), while tarfile reads the
 * empty value (for a path: a file at the archive root).
 */
static void test_reader_symlink_empty_target(void **state)
{
	static const struct ext_spec pax_empty[][2] = {
		{EXT_PAX("linkpath", "")},
		{EXT_PAX("path", "")},
	};
	size_t i, len;

	for (i = 0; i < 3; i++) {
		struct ts_archive *a = ts_archive_new();
		unsigned char *tar;

		if (i > 0)
			add_exts(a, pax_empty[i - 1]);
		ts_add_raw_member(a, "l", '2', 0777, NULL, 0,
				  i > 0 ? "ignored" : "");
		ts_add_raw_member(a, "a", '0', 0644, "x", 1, NULL);
		tar = ts_archive_finish(a, 1, &len);
		expect_invalid(tar, len);
		free(tar);
	}
}

static void test_reader_header_region_is_bounded(void **state)
{
	/* five 900 KiB pax headers for one member exceed the bound */
	struct ts_archive *a = ts_archive_new();
	size_t body_len = 900u << 10, used, len, i;
	char *body = malloc(body_len + 100), *value = malloc(body_len);
	unsigned char *tar;

	assert_non_null(body);
	assert_non_null(value);
	memset(value, 'c', body_len);
	/* (global headers: a member may have only one 'x') */
	for (i = 0; i < 5; i++) {
		used = 0;
		pax_record(body, body_len + 100, &used, "comment", value,
			   body_len - 20);
		add_ext(a, i < 4 ? 'g' : 'x', body, used);
	}
	ts_add_raw_member(a, "f", '0', 0644, "x", 1, NULL);
	tar = ts_archive_finish(a, 1, &len);
	expect_invalid(tar, len);
	free(tar);
	free(body);
	free(value);
}

/* ---- resource bounds (policy.md section 5) ----------------------------- */

/*
 * Each member reports the bytes of its extension headers (ext_bytes), which
 * the policy counts against --max-total-size: 1000 members with 500 KB pax
 * comments spilled 500 MB under --max-total-size 0.
 */
static void test_reader_ext_bytes(void **state)
{
	/* GNU tar's shape: every run but the last fills whole blocks, the
	 * last ends at the size */
	static const uint64_t runs[][2] = {{0, 512},	{1024, 512},
					   {2048, 512}, {3072, 512},
					   {4096, 512}, {5120, 10}};
	struct ts_archive *a = ts_archive_new();
	char body[2048], comment[1500];
	size_t used = 0, len;
	unsigned char *tar, *sp;
	struct run run;

	memset(comment, 'c', sizeof(comment));
	ts_add_raw_member(a, "plain", '0', 0644, "x", 1, NULL);
	pax_record(body, sizeof(body), &used, "comment", comment,
		   sizeof(comment));
	add_ext(a, 'g', body, used); /* a global header counts too */
	add_pax_member(a, "path", "p", 1, "x", '0', "y", 1, NULL);
	add_gnu_long(a, 'L', "long-name");
	add_gnu_long(a, 'K', "long-target");
	ts_add_raw_member(a, "x", '2', 0777, NULL, 0, "t");
	add_gnu_sparse(a, "gs", 5130, runs, 6, 0);
	tar = ts_archive_finish(a, 1, &len);
	run_bytes(&run, tar, len, SRC_PIPE, false);
	assert_int_equal(run.st, WSNAP_OK);
	assert_int_equal(run.rec.n, 4);
	assert_int_equal(run.rec.m[0].ext_bytes, 0);
	/* 'g' header, its body in 3 blocks, 'x' header and body */
	assert_int_equal(run.rec.m[1].ext_bytes, 6 * WSNAP_TAR_BLOCK);
	/* 'L' and 'K', one block of name each */
	assert_int_equal(run.rec.m[2].ext_bytes, 4 * WSNAP_TAR_BLOCK);
	/* one GNU sparse extension block (runs 5 and 6) */
	assert_int_equal(run.rec.m[3].ext_bytes, WSNAP_TAR_BLOCK);
	run_release(&run);
	free(tar);
	/* a pax 1.0 sparse map leads the data area: it counts */
	sp = pax_sparse_archive(10, &len, runs, 6, 5130);
	run_bytes(&run, sp, len, SRC_MEMFD, false);
	assert_int_equal(run.st, WSNAP_OK);
	assert_int_equal(run.rec.m[0].ext_bytes, 3 * WSNAP_TAR_BLOCK);
	assert_int_equal(run.rec.m[1].ext_bytes, 0);
	run_release(&run);
	free(sp);
}

/* two_members, its end marker, then n bytes of fill. */
static unsigned char *trailing_archive(size_t n, int fill, size_t *len)
{
	size_t tlen;
	unsigned char *tar = two_members(&tlen, 1), *buf = malloc(tlen + n);

	assert_non_null(buf);
	memcpy(buf, tar, tlen);
	memset(buf + tlen, fill, n);
	free(tar);
	*len = tlen + n;
	return buf;
}

/*
 * Work after the end marker is bounded: 3 KB of bzip2 decode to gigabytes
 * of zeros. At most WSNAP_READER_MAX_TRAILING_BYTES may follow
 * the marker, plain or compressed, from a file or a pipe; one more byte and
 * the stream is invalid (its trailer is never reached).
 */
static void test_reader_after_end_is_bounded(void **state)
{
	const size_t max = WSNAP_READER_MAX_TRAILING_BYTES;
	const size_t end = 4 * WSNAP_TAR_BLOCK + 2 * WSNAP_TAR_BLOCK;
	unsigned char *buf, *c;
	size_t len, clen, f;
	struct run run;
	struct stat st;

	/* at the bound: ignored, whatever it holds */
	buf = trailing_archive(max, 'G', &len);
	expect_members(buf, len, 2);
	free(buf);
	buf = trailing_archive(max, 0, &len);
	expect_members(buf, len, 2);
	for (f = 0; f < NFILTERS; f++) {
		c = ts_compress(buf, len, filters[f], &clen);
		expect_members(c, clen, 2);
		free(c);
	}
	/* only what the tar reader pulled is spilled (one 256 KiB chunk) */
	run_bytes(&run, buf, len, SRC_PIPE, true);
	assert_int_equal(run.st, WSNAP_OK);
	assert_int_equal(run.res.stream_bytes, len);
	assert_int_equal(fstat(run.res.data_fd, &st), 0);
	assert_true((size_t)st.st_size <= end + (256u << 10));
	run_release(&run);
	free(buf);
	/* one byte more */
	buf = trailing_archive(max + 1, 0, &len);
	expect_invalid(buf, len);
	for (f = 0; f < NFILTERS; f++) {
		c = ts_compress(buf, len, filters[f], &clen);
		expect_invalid(c, clen);
		free(c);
	}
	free(buf);
	/* an input of zero blocks only is an empty archive, up to the bound */
	buf = calloc(1, 2 * WSNAP_TAR_BLOCK + max + 1);
	assert_non_null(buf);
	expect_members(buf, 2 * WSNAP_TAR_BLOCK + max, 0);
	expect_invalid(buf, 2 * WSNAP_TAR_BLOCK + max + 1);
	free(buf);
}

/*
 * Sets the LZMA2 dictionary size byte in the first block header of an xz
 * stream (as ts_compress writes it: one filter) and the header's CRC32.
 */
static void xz_set_dict(unsigned char *c, size_t clen, unsigned char props)
{
	const size_t at = 12; /* after the stream header */
	size_t hsize = ((size_t)c[at] + 1) * 4, i = at + 2;
	unsigned char flags = c[at + 1];
	uint32_t crc;

	assert_true(clen > at + hsize);
	assert_int_equal(flags & 0x03, 0); /* one filter */
	/* skip the compressed and uncompressed sizes where present */
	if (flags & 0x40)
		while (c[i++] & 0x80)
			;
	if (flags & 0x80)
		while (c[i++] & 0x80)
			;
	assert_int_equal(c[i], 0x21); /* LZMA2 */
	assert_int_equal(c[i + 1], 1);
	c[i + 2] = props;
	crc = lzma_crc32(c + at, hsize - 4, 0);
	c[at + hsize - 4] = (unsigned char)crc;
	c[at + hsize - 3] = (unsigned char)(crc >> 8);
	c[at + hsize - 2] = (unsigned char)(crc >> 16);
	c[at + hsize - 1] = (unsigned char)(crc >> 24);
}

/*
 * xz runs with a memory limit: a block header may declare a 4 GiB
 * dictionary (libarchive gives liblzma none: 470 KB of input took 3 GB). A 128
 * MiB dictionary (props 30) is within WSNAP_READER_XZ_MEMLIMIT, the next size
 * (192 MiB, props 31) is not.
 */
static void test_reader_xz_memory_limit(void **state)
{
	static const unsigned char props[] = {30, 31, 39, 40};
	unsigned char *tar, *c;
	size_t len, clen, i;

	assert_true((128u << 20) < WSNAP_READER_XZ_MEMLIMIT &&
		    WSNAP_READER_XZ_MEMLIMIT < (192u << 20));
	tar = two_members(&len, 1);
	for (i = 0; i < sizeof(props); i++) {
		c = ts_compress(tar, len, "xz", &clen);
		xz_set_dict(c, clen, props[i]);
		if (i == 0)
			expect_members(c, clen, 2);
		else
			expect_invalid(c, clen);
		free(c);
	}
	free(tar);
}

/* Two xz streams, mid zero bytes between them and end after them. */
static unsigned char *xz_two_streams(const unsigned char *x1, size_t l1,
				     const unsigned char *x2, size_t l2,
				     size_t mid, size_t end, size_t *len)
{
	unsigned char *buf = calloc(1, l1 + mid + l2 + end);

	assert_non_null(buf);
	memcpy(buf, x1, l1);
	memcpy(buf + l1 + mid, x2, l2);
	*len = l1 + mid + l2 + end;
	return buf;
}

/*
 * xz streams: concatenated ones are one stream (xz, libarchive and
 * tarfile's lzma read them all), and stream padding (whole 4-byte words of
 * zeros) may end the file. Padding before another stream is refused: the
 * bug was that wsnap (liblzma's LZMA_CONCATENATED) read both streams where
 * Python's lzma stopped at the padding and tarfile saw the first member
 * only. Also from a pipe, where no index is read.
 */
static void test_reader_xz_streams(void **state)
{
	static const size_t pads[] = {0, 1, 3, 4, 8};
	const size_t first = 2 * WSNAP_TAR_BLOCK; /* one member */
	unsigned char *tar, *x1, *x2, *buf;
	size_t len, l1, l2, blen, mid, end;
	struct run run;
	int s;

	(void)state;
	tar = two_members(&len, 1);
	x1 = ts_compress(tar, first, "xz", &l1);
	x2 = ts_compress(tar + first, len - first, "xz", &l2);
	for (mid = 0; mid < ARRAY_SIZE(pads); mid++) {
		for (end = 0; end < ARRAY_SIZE(pads); end++) {
			buf = xz_two_streams(x1, l1, x2, l2, pads[mid],
					     pads[end], &blen);
			if (pads[mid] || pads[end] % 4) {
				expect_invalid(buf, blen);
				free(buf);
				continue;
			}
			run_bytes(&run, buf, blen, SRC_PIPE, false);
			assert_int_equal(run.st, WSNAP_OK);
			assert_int_equal(run.rec.n, 2);
			assert_string_equal(run.res.compression, "xz");
			assert_int_equal(run.res.stream_bytes, len);
			assert_int_equal(run.res.input_bytes, blen);
			run_release(&run);
			expect_members(buf, blen, 2);
			free(buf);
		}
	}
	/* the detail names the shape and where the next stream starts */
	buf = xz_two_streams(x1, l1, x2, l2, 4, 0, &blen);
	for (s = SRC_MEMFD; s <= SRC_PIPE; s++) {
		char want[128];

		run_bytes(&run, buf, blen, (enum src)s, true);
		assert_invalid_stream(&run);
		snprintf(want, sizeof(want),
			 "tar readers would read the xz stream differently: "
			 "stream padding before another stream at byte %zu",
			 l1 + 4);
		assert_string_equal(run.err.detail, want);
		run_release(&run);
	}
	free(buf);
	free(x1);
	free(x2);
	free(tar);
}

/* A zstd frame of raw blocks holding data[0..len), whose header asks for
 * a window of (8 + mantissa) << (exp + 7) bytes (no checksum, no size). */
static unsigned char *zstd_raw_frame(const void *data, size_t len, unsigned exp,
				     unsigned mantissa, size_t *out_len)
{
	const size_t block = 128u << 10;
	unsigned char *out = malloc(6 + len + 3 * (len / block + 1)), *p;
	size_t done = 0;

	assert_non_null(out);
	memcpy(out, "\x28\xb5\x2f\xfd", 4);
	out[4] = 0x00; /* no content size, no checksum, a window byte */
	out[5] = (unsigned char)(exp << 3 | mantissa);
	p = out + 6;
	do {
		size_t n = len - done < block ? len - done : block;
		uint32_t h = (uint32_t)(n << 3) | (done + n == len); /* raw */

		p[0] = (unsigned char)h;
		p[1] = (unsigned char)(h >> 8);
		p[2] = (unsigned char)(h >> 16);
		memcpy(p + 3, (const unsigned char *)data + done, n);
		p += 3 + n;
		done += n;
	} while (done < len);
	*out_len = (size_t)(p - out);
	return out;
}

/*
 * zstd's window is bounded by libzstd's default limit, which libarchive
 * keeps (WSNAP_READER_ZSTD_WINDOW_MAX, 128 MiB): a frame asking for that
 * window is read, one asking for the next size (144 MiB) is invalid. (If
 * a library update raised the limit, this test says so.)
 */
static void test_reader_zstd_window_limit(void **state)
{
	unsigned char *tar, *z;
	size_t len, zlen;

	assert_int_equal(WSNAP_READER_ZSTD_WINDOW_MAX, 1u << (17 + 10));
	tar = two_members(&len, 1);
	z = zstd_raw_frame(tar, len, 17, 0, &zlen);
	expect_members(z, zlen, 2);
	free(z);
	z = zstd_raw_frame(tar, len, 17, 1, &zlen);
	expect_invalid(z, zlen);
	free(z);
	z = zstd_raw_frame(tar, len, 31, 7, &zlen);
	expect_invalid(z, zlen);
	free(z);
	free(tar);
}

static void test_reader_callback_error_is_returned(void **state)
{
	unsigned char *tar;
	size_t len;
	struct run run;
	int fd;

	tar = two_members(&len, 1);
	fd = ts_memfd(tar, len);
	memset(&run, 0, sizeof(run));
	run.rec.stop_at = 1;
	run.st = wsnap_reader_run(fd, NULL, record_cb, &run.rec, &run.res,
				  &run.err);
	assert_int_equal(run.st, WSNAP_REJECTED);
	assert_string_equal(run.err.member, "one");
	assert_string_equal(run.err.reason, "stopped by test");
	assert_int_equal(run.rec.n, 1);
	assert_int_equal(run.res.data_fd, -1);
	rec_release(&run.rec);
	close(fd);
	free(tar);
}

static void test_reader_unreadable_input_is_io(void **state)
{
	struct run run;
	int fd = open("/", O_RDONLY | O_DIRECTORY);

	assert_true(fd >= 0);
	run_fd(&run, fd, true);
	assert_int_equal(run.st, WSNAP_IO);
	assert_int_equal(run.err.errnum, EISDIR);
	close(fd);
	run_release(&run);
}

/*
 * The walker (core/tar/walker.c) reads plain members and hands the rest
 * over to libarchive at the first one that is not: members on both sides
 * of a hand-over, from a file, a pipe and a compressed stream, with the
 * mode bits above 0777 kept. (This test also runs as
 * test_reader_libarchive, every header through libarchive.)
 */
static void test_reader_walker_hand_over(void **state)
{
	struct ts_archive *a = ts_archive_new();
	size_t len, zlen;
	unsigned char *tar, *z;
	struct run run;
	int s, k;

	(void)state;
	ts_add_raw_member(a, "one", '0', 04755, "first", 5, NULL);
	add_pax_member(a, "path", "p/long", 6, "fake", '0', "xyz", 3, NULL);
	ts_add_raw_member(a, "two", '0', 01644, "second!", 7, NULL);
	ts_add_raw_member(a, "three", '2', 0777, NULL, 0, "one");
	tar = ts_archive_finish(a, 1, &len);
	z = ts_compress(tar, len, "gzip", &zlen);
	/* the data as a descriptor: spilled, not read from seek points */
	run_no_seek = true;
	for (k = 0; k < 2; k++) {
		for (s = SRC_MEMFD; s <= SRC_PIPE; s++) {
			run_bytes(&run, k ? z : tar, k ? zlen : len,
				  (enum src)s, true);
			assert_int_equal(run.st, WSNAP_OK);
			assert_int_equal(run.rec.n, 4);
			assert_string_equal(run.rec.m[0].name, "one");
			assert_int_equal(run.rec.m[0].mode, 04755);
			assert_int_equal(run.rec.m[0].size, 5);
			assert_int_equal(run.rec.m[0].data_offset,
					 WSNAP_TAR_BLOCK);
			assert_data_at(run.res.data_fd, WSNAP_TAR_BLOCK,
				       "first", 5);
			assert_string_equal(run.rec.m[1].name, "p/long");
			assert_int_equal(run.rec.m[1].data_offset,
					 5 * WSNAP_TAR_BLOCK);
			assert_int_equal(run.rec.m[1].ext_bytes,
					 2 * WSNAP_TAR_BLOCK);
			assert_string_equal(run.rec.m[2].name, "two");
			assert_int_equal(run.rec.m[2].mode, 01644);
			assert_int_equal(run.rec.m[2].data_offset,
					 7 * WSNAP_TAR_BLOCK);
			assert_data_at(run.res.data_fd, 7 * WSNAP_TAR_BLOCK,
				       "second!", 7);
			assert_string_equal(run.rec.m[3].name, "three");
			assert_int_equal(run.rec.m[3].type, WSNAP_RAW_SYMLINK);
			assert_string_equal(run.rec.m[3].link, "one");
			assert_int_equal(run.res.stream_bytes, len);
			run_release(&run);
		}
	}
	run_no_seek = false;
	free(z);
	free(tar);
}

/*
 * libarchive bids on the first block of a stream with stricter rules than
 * its header reader has for the blocks after it: a typeflag that is no
 * digit or letter, or a number field with a tab in it, is no tar stream
 * at the start, but a member further on. The walker bids the same way
 * at the start; after a member it hands such a header to libarchive,
 * behind a dummy header, so that the bid never sees it.
 */
static void test_reader_walker_first_block_bid(void **state)
{
	static const struct {
		char tf;
		const char *mode; /* NULL: the writer's */
	} cases[] = {{'!', NULL}, {'0', "0000644\t"}};
	size_t i;

	(void)state;
	for (i = 0; i < ARRAY_SIZE(cases); i++) {
		unsigned char h[WSNAP_TAR_BLOCK];
		struct ts_archive *a = ts_archive_new();
		unsigned char *tar;
		struct run run;
		size_t len;

		ts_raw_header(h, "odd", cases[i].tf, 0644, 0, NULL);
		if (cases[i].mode)
			memcpy(h + WSNAP_TAR_OFF(mode), cases[i].mode,
			       WSNAP_TAR_LEN(mode));
		ts_raw_checksum(h);
		ts_add_raw(a, h, sizeof(h));
		tar = ts_archive_finish(a, 1, &len);
		expect_invalid(tar, len);
		free(tar);

		a = ts_archive_new();
		ts_add_raw_member(a, "first", '0', 0644, "1", 1, NULL);
		ts_add_raw(a, h, sizeof(h));
		tar = ts_archive_finish(a, 1, &len);
		run_bytes(&run, tar, len, SRC_MEMFD, false);
		assert_int_equal(run.st, WSNAP_OK);
		assert_int_equal(run.rec.n, 2);
		assert_string_equal(run.rec.m[1].name, "odd");
		assert_int_equal(run.rec.m[1].typeflag, cases[i].tf);
		assert_int_equal(run.rec.m[1].mode, 0644);
		run_release(&run);
		free(tar);
	}
}

/*
 * libarchive's guess whether a ustar hardlink's size field counts depends
 * on whether it has seen a pax header anywhere before (then it does, and
 * tarfile, which skips no data for hardlinks, reads on elsewhere: refused)
 * and otherwise on the block itself (then it does not). The walker hands
 * such a hardlink to libarchive, and when libarchive has read pax members
 * earlier and handed the stream back to the walker, the next hand-over
 * must leave libarchive in the same state (the dummy's empty 'g' header).
 */
static void test_reader_walker_keeps_pax_state(void **state)
{
	int pax;

	(void)state;
	for (pax = 0; pax < 2; pax++) {
		unsigned char h[WSNAP_TAR_BLOCK];
		struct ts_archive *a = ts_archive_new();
		unsigned char *tar;
		struct run run;
		size_t len;

		if (pax)
			add_pax_member(a, "path", "p", 1, "fake", '0', "x", 1,
				       NULL);
		ts_add_raw_member(a, "plain", '0', 0644, "y", 1, NULL);
		ts_raw_header(h, "hl", '1', 0644, 5, "plain");
		ts_add_raw(a, h, sizeof(h));
		ts_add_raw_member(a, "after", '0', 0644, "z", 1, NULL);
		tar = ts_archive_finish(a, 1, &len);
		if (pax) {
			expect_invalid(tar, len);
		} else {
			run_bytes(&run, tar, len, SRC_MEMFD, false);
			assert_int_equal(run.st, WSNAP_OK);
			assert_int_equal(run.rec.n, 3);
			assert_int_equal(run.rec.m[1].type, WSNAP_RAW_HARDLINK);
			assert_string_equal(run.rec.m[2].name, "after");
			run_release(&run);
		}
		free(tar);
	}
}

/*
 * Regression: a GNU header that is not 'S' but has sparse entries (and a
 * realsize) was a sparse file to libarchive, so to wsnap, and the plain
 * file of the size field to tarfile and GNU tar: now an invalid stream.
 * The same member without the entries stays a plain file.
 */
static void test_reader_gnu_sparse_fields_on_plain_file(void **state)
{
	int stray;

	(void)state;
	for (stray = 0; stray < 2; stray++) {
		unsigned char h[WSNAP_TAR_BLOCK];
		const uint64_t run[2] = {2, 3};
		struct ts_archive *a = ts_archive_new();
		unsigned char *tar;
		struct run r;
		size_t len;

		ts_raw_header(h, "a.txt", '0', 0644, 3, NULL);
		memcpy(h + WSNAP_TAR_OFF(magic), WSNAP_TAR_GNU_MAGIC,
		       WSNAP_TAR_MAGIC_LEN);
		if (stray) {
			put_sparse_entry(h + WSNAP_TAR_OFF(gnu.sparse), run);
			put_octal(h + WSNAP_TAR_OFF(gnu.realsize),
				  WSNAP_TAR_LEN(gnu.realsize), 5);
		}
		ts_raw_checksum(h);
		ts_add_raw(a, h, sizeof(h));
		add_padded(a, "abc", 3);
		tar = ts_archive_finish(a, 1, &len);
		if (stray) {
			expect_invalid(tar, len);
		} else {
			run_bytes(&r, tar, len, SRC_MEMFD, false);
			assert_int_equal(r.st, WSNAP_OK);
			assert_int_equal(r.rec.n, 1);
			assert_int_equal(r.rec.m[0].size, 3);
			assert_int_equal(r.rec.m[0].nsparse, 0);
			run_release(&r);
		}
		free(tar);
	}
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_reader_ustar_typeflags),
		cmocka_unit_test(test_reader_writer_members),
		cmocka_unit_test(test_reader_pax_global_header),
		cmocka_unit_test(test_reader_pax_path_and_linkpath),
		cmocka_unit_test(test_reader_gnu_long_names),
		cmocka_unit_test(test_reader_empty_names),
		cmocka_unit_test(test_reader_names_are_raw_bytes),
		cmocka_unit_test(test_reader_gnu_sparse),
		cmocka_unit_test(test_reader_sparse_all_holes),
		cmocka_unit_test(test_reader_pax_sparse),
		cmocka_unit_test(test_reader_sparse_bad_maps),
		cmocka_unit_test(test_reader_sparse_gnu_tar),
		cmocka_unit_test(test_reader_compressed_memfd_and_pipe),
		cmocka_unit_test(test_reader_plain_pipe_spills),
		cmocka_unit_test(test_reader_spill_in_tmpdir),
		cmocka_unit_test(test_reader_plain_file_data_is_not_read),
		cmocka_unit_test(test_reader_header_across_reads),
		cmocka_unit_test(test_reader_zero_bytes_is_invalid),
		cmocka_unit_test(test_reader_end_of_archive_forms),
		cmocka_unit_test(test_reader_garbage_mid_archive),
		cmocka_unit_test(test_reader_truncation),
		cmocka_unit_test(test_reader_truncated_compressed),
		cmocka_unit_test(test_reader_corrupt_compressed_trailer),
		cmocka_unit_test(test_reader_gzip_file_in_place),
		cmocka_unit_test(test_reader_after_compressed_stream),
		cmocka_unit_test(test_reader_double_compression_is_invalid),
		cmocka_unit_test(test_reader_bad_checksum),
		cmocka_unit_test(test_reader_bad_sizes),
		cmocka_unit_test(test_reader_bad_pax),
		cmocka_unit_test(test_reader_good_pax_numbers),
		cmocka_unit_test(test_reader_ambiguous_headers),
		cmocka_unit_test(test_reader_size_without_data),
		cmocka_unit_test(test_reader_repeated_extension_headers),
		cmocka_unit_test(test_reader_two_name_sources),
		cmocka_unit_test(test_reader_prefix_without_ustar_magic),
		cmocka_unit_test(test_reader_raw_numbers_overflow),
		cmocka_unit_test(test_reader_sparse_map_odd),
		cmocka_unit_test(test_reader_negative_pax_mtime),
		cmocka_unit_test(test_reader_number_fields_as_tarfile),
		cmocka_unit_test(test_reader_old_gnu_sparse_fields),
		cmocka_unit_test(test_reader_pax_sparse_formats),
		cmocka_unit_test(test_reader_nul_typeflag_slash),
		cmocka_unit_test(test_reader_extension_bytes),
		cmocka_unit_test(test_reader_symlink_empty_target),
		cmocka_unit_test(test_reader_header_region_is_bounded),
		cmocka_unit_test(test_reader_ext_bytes),
		cmocka_unit_test(test_reader_after_end_is_bounded),
		cmocka_unit_test(test_reader_xz_memory_limit),
		cmocka_unit_test(test_reader_xz_streams),
		cmocka_unit_test(test_reader_zstd_window_limit),
		cmocka_unit_test(test_reader_callback_error_is_returned),
		cmocka_unit_test(test_reader_unreadable_input_is_io),
		cmocka_unit_test(test_reader_walker_hand_over),
		cmocka_unit_test(test_reader_walker_first_block_bid),
		cmocka_unit_test(test_reader_walker_keeps_pax_state),
		cmocka_unit_test(test_reader_gnu_sparse_fields_on_plain_file),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
