/* SPDX-License-Identifier: MIT */
/*
 * Unit tests of the detail of an invalid tar stream (core/tar/diagnose.c,
 * cli.md "Diagnostics"): the rejection stays '<tar>' "invalid tar stream",
 * and err.detail says what the input is or where it went wrong, from a
 * memfd and from a pipe.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <cmocka.h>

#include "reader.h"
#include "support.h"

enum src { SRC_MEMFD, SRC_PIPE };

static enum wsnap_status count_cb(void *ctx, const struct wsnap_raw_member *m,
				  struct wsnap_error *err)
{
	(*(size_t *)ctx)++;
	return WSNAP_OK;
}

static enum wsnap_status reject_cb(void *ctx, const struct wsnap_raw_member *m,
				   struct wsnap_error *err)
{
	return wsnap_error_reject(err, m->name, "parent traversal");
}

/* Runs the reader over the bytes from src; returns the status, err set. */
static enum wsnap_status run(const void *data, size_t len, enum src src,
			     wsnap_reader_fn fn, struct wsnap_error *err)
{
	int fd = src == SRC_MEMFD ? ts_memfd(data, len) : ts_pipefd(data, len);
	size_t n = 0;
	enum wsnap_status st;

	st = wsnap_reader_run(fd, NULL, fn, &n, NULL, err);
	close(fd);
	return st;
}

/* The bytes are an invalid stream with this detail from src. */
static void expect_detail_from(const void *data, size_t len, enum src src,
			       const char *detail)
{
	struct wsnap_error err;

	assert_int_equal(run(data, len, src, count_cb, &err), WSNAP_REJECTED);
	assert_string_equal(err.member, "<tar>");
	assert_string_equal(err.reason, "invalid tar stream");
	assert_string_equal(err.detail, detail);
}

/* The same detail from a memfd and from a pipe. */
static void expect_detail(const void *data, size_t len, const char *detail)
{
	expect_detail_from(data, len, SRC_MEMFD, detail);
	expect_detail_from(data, len, SRC_PIPE, detail);
}

/* Two members "one" (5 bytes) and "two" (6 bytes), each a header and one
 * data block: the second header is at byte 1024. */
static unsigned char *two_members(size_t *len)
{
	struct ts_archive *a = ts_archive_new();

	ts_add_raw_member(a, "one", '0', 0644, "first", 5, NULL);
	ts_add_raw_member(a, "two", '0', 0644, "second", 6, NULL);
	return ts_archive_finish(a, 1, len);
}

static void test_detail_not_an_archive(void **state)
{
	static const unsigned char zip[] = "PK\x03\x04\x14\x00\x00\x00\x08"
					   "\x00 a zip member";
	static const char text[] = "just some text\nover two lines\n";

	expect_detail_from("", 0, SRC_MEMFD, "not an archive: empty file");
	expect_detail_from("", 0, SRC_PIPE, "not an archive: empty input");
	expect_detail(zip, sizeof(zip) - 1, "not an archive: zip file");
	expect_detail(text, sizeof(text) - 1, "not an archive: plain text");
}

static void test_detail_unsupported_compression(void **state)
{
	static const unsigned char z[] = "\x1f\x9d\x90\x2e\x00\x00\x01\x02";
	static const unsigned char lz[] = "LZIP\x01\x0c\x00\x33\x1b\xec\x15";
	static const unsigned char lzma[] = "\x5d\x00\x00\x80\x00\xff\xff\xff"
					    "\xff\xff\xff\xff\xff\x00\x33\x1b";

	expect_detail(z, sizeof(z) - 1,
		      "unsupported compression: compress (.Z)");
	expect_detail(lz, sizeof(lz) - 1, "unsupported compression: lzip");
	expect_detail(lzma, sizeof(lzma) - 1, "unsupported compression: lzma");
}

static void test_detail_truncated(void **state)
{
	size_t len;
	unsigned char *tar = two_members(&len);

	/* inside the second header, and inside the second member's data */
	expect_detail(tar, 1024 + 300,
		      "truncated tar stream at byte 1324: a header is due at "
		      "byte 1024");
	expect_detail(tar, 1024 + 512 + 3,
		      "truncated tar stream at byte 1539: the data of member "
		      "'two' ends at byte 2048");
	free(tar);
}

static void test_detail_checksum(void **state)
{
	size_t len;
	unsigned char *tar = two_members(&len);

	tar[1024 + WSNAP_TAR_OFF(name)] = 'X';
	expect_detail(tar, len,
		      "header checksum mismatch in the header at byte 1024");
	tar[1024 + WSNAP_TAR_OFF(name)] = 't';
	tar[WSNAP_TAR_OFF(chksum) + 2] ^= 1;
	expect_detail(tar, len,
		      "header checksum mismatch in the header at byte 0");
	free(tar);
}

static void test_detail_compressed(void **state)
{
	static const char text[] = "just some text\nover two lines\n";
	size_t len, clen;
	unsigned char *tar = two_members(&len);
	unsigned char *c = ts_compress(text, sizeof(text) - 1, "gzip", &clen);

	expect_detail(c, clen,
		      "gzip-compressed data that is not a tar archive (plain "
		      "text)");
	free(c);
	c = ts_compress(tar, len, "gzip", &clen);
	expect_detail_from(c, 40, SRC_MEMFD,
			   "truncated gzip stream at byte 40");
	free(c);
	free(tar);
}

static void test_detail_differential(void **state)
{
	struct ts_archive *a = ts_archive_new();
	unsigned char *tar;
	size_t len;

	ts_add_raw_member(a, "d/", '0', 0644, NULL, 0, NULL);
	tar = ts_archive_finish(a, 1, &len);
	expect_detail(tar, len,
		      "tar readers would read member 'd/' differently: a "
		      "regular file whose name ends in '/'");
	free(tar);
}

static void test_detail_pax_record(void **state)
{
	struct ts_archive *a = ts_archive_new();
	unsigned char *tar;
	size_t len;

	ts_add_raw_member(a, "PaxHeaders/x", 'x', 0644, "12 mtime=ab\n", 12,
			  NULL);
	ts_add_raw_member(a, "x", '0', 0644, "data", 4, NULL);
	tar = ts_archive_finish(a, 1, &len);
	expect_detail(tar, len,
		      "pax record 'mtime' of member 'x' is not a number");
	free(tar);
}

/* No detail where the stream was fine: a good archive, a policy
 * rejection of one of its members. */
static void test_detail_only_for_invalid_streams(void **state)
{
	struct wsnap_error err;
	size_t len;
	unsigned char *tar = two_members(&len);

	assert_int_equal(run(tar, len, SRC_MEMFD, count_cb, &err), WSNAP_OK);
	assert_string_equal(err.detail, "");
	assert_int_equal(run(tar, len, SRC_PIPE, reject_cb, &err),
			 WSNAP_REJECTED);
	assert_string_equal(err.member, "one");
	assert_string_equal(err.detail, "");
	free(tar);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_detail_not_an_archive),
		cmocka_unit_test(test_detail_unsupported_compression),
		cmocka_unit_test(test_detail_truncated),
		cmocka_unit_test(test_detail_checksum),
		cmocka_unit_test(test_detail_compressed),
		cmocka_unit_test(test_detail_differential),
		cmocka_unit_test(test_detail_pax_record),
		cmocka_unit_test(test_detail_only_for_invalid_streams),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
