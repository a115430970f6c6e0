/* SPDX-License-Identifier: MIT */
/*
 * Unit tests of tools/json.c: escaped names on streams (long ones in
 * pieces), exact time formatting, the JSON line writer, and the summary
 * keys every subcommand's JSON shares (tools/summary.c).
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>

#include "escape.h"
#include "json.h"
#include "opts.h"
#include "array.h"

/* A memory stream and what was written to it. */
struct mem {
	FILE *f;
	char *buf;
	size_t len;
};

static void mem_open(struct mem *m)
{
	m->buf = NULL;
	m->len = 0;
	m->f = open_memstream(&m->buf, &m->len);
	assert_non_null(m->f);
}

static void mem_close(struct mem *m)
{
	assert_int_equal(fclose(m->f), 0);
}

/*
 * Escapes s through the stream (in pieces when long) and in one call into
 * a buffer; both must agree byte for byte.
 */
static void check_pieces(enum wsnap_esc kind, const char *s, size_t len)
{
	char *whole = malloc(WSNAP_ESCAPE_CAP(len));
	struct mem m;
	size_t n;

	assert_non_null(whole);
	if (kind == WSNAP_ESC_REPR)
		n = wsnap_escape_repr(whole, s, len);
	else if (kind == WSNAP_ESC_BARE)
		n = wsnap_escape_bare(whole, s, len);
	else
		n = wsnap_escape_json(whole, s, len);
	mem_open(&m);
	wsnap_put_escaped(m.f, kind, s, len);
	mem_close(&m);
	assert_int_equal(m.len, n);
	assert_memory_equal(m.buf, whole, n);
	free(m.buf);
	free(whole);
}

/* Long names whose multi-byte sequences, invalid bytes and quotes fall on
 * every position around the piece boundaries. */
static void test_json_put_escaped_long_equals_whole(void **state)
{
	static const char *const fillers[] = {
		"\xe2\x82\xac",	    /* 3-byte sequence */
		"\xf0\x9f\x98\x80", /* 4-byte sequence */
		"\xc3\xa9",	    /* 2-byte */
		"\xe2\x82",	    /* truncated */
		"\x80\x80\x80\x80", /* lone continuation bytes */
		"'",
		"\"",
		"'\"",
		"\n\\",
		"\xf0\x9f\x98\x80'\x9f\x80",
		"\xe2\x80\xae\xf4\x8f\xbf\xbf\xc2\xa0", /* escaped by repr */
	};
	enum wsnap_esc kinds[] = {WSNAP_ESC_REPR, WSNAP_ESC_BARE,
				  WSNAP_ESC_JSON};
	size_t len = 3 * 4096 + 17, i, f, k, shift;
	char *s = malloc(len);

	assert_non_null(s);
	for (f = 0; f < ARRAY_SIZE(fillers); f++) {
		size_t fl = strlen(fillers[f]);

		for (shift = 0; shift < 5; shift++) {
			memset(s, 'a', shift);
			for (i = shift; i < len; i++)
				s[i] = fillers[f][(i - shift) % fl];
			for (k = 0; k < 3; k++)
				check_pieces(kinds[k], s, len);
		}
	}
	/* both quotes only far apart: repr must still escape every ' */
	memset(s, 'a', len);
	s[10] = '"';
	s[len - 3] = '\'';
	check_pieces(WSNAP_ESC_REPR, s, len);
	free(s);
}

static void test_json_put_escaped_short(void **state)
{
	check_pieces(WSNAP_ESC_REPR, "it's", 4);
	check_pieces(WSNAP_ESC_BARE, "a\nb", 3);
	check_pieces(WSNAP_ESC_JSON, "\xff", 1);
	check_pieces(WSNAP_ESC_JSON, "", 0);
}

static void test_json_fmt_u64(void **state)
{
	char buf[24];

	assert_int_equal(wsnap_fmt_u64(buf, 0), 1);
	assert_string_equal(buf, "0");
	wsnap_fmt_u64(buf, 4096);
	assert_string_equal(buf, "4096");
	assert_int_equal(wsnap_fmt_u64(buf, UINT64_MAX), 20);
	assert_string_equal(buf, "18446744073709551615");
}

static void test_json_fmt_time_exact(void **state)
{
	char buf[32];

	wsnap_fmt_time(buf, 1700000000, 123456789, true);
	assert_string_equal(buf, "1700000000.123456789");
	wsnap_fmt_time(buf, 1700000000, 123456789, false);
	assert_string_equal(buf, "1700000000");
	wsnap_fmt_time(buf, 1700000000, 500000000, true);
	assert_string_equal(buf, "1700000000.5");
	wsnap_fmt_time(buf, 1700000000, 1, true);
	assert_string_equal(buf, "1700000000.000000001");
	wsnap_fmt_time(buf, 1700000000, 0, true);
	assert_string_equal(buf, "1700000000.0");
	wsnap_fmt_time(buf, 0, 0, false);
	assert_string_equal(buf, "0");
	/* before the epoch: -2 s + 0.5 s is -1.5 s */
	wsnap_fmt_time(buf, -2, 500000000, true);
	assert_string_equal(buf, "-1.5");
	wsnap_fmt_time(buf, -1, 999999999, true);
	assert_string_equal(buf, "-0.000000001");
	wsnap_fmt_time(buf, -5, 0, false);
	assert_string_equal(buf, "-5");
	wsnap_fmt_time(buf, INT64_MIN, 0, false);
	assert_string_equal(buf, "-9223372036854775808");
	wsnap_fmt_time(buf, INT64_MIN, 1, true);
	assert_string_equal(buf, "-9223372036854775807.999999999");
	wsnap_fmt_time(buf, INT64_MAX, 999999999, true);
	assert_string_equal(buf, "9223372036854775807.999999999");
}

static void test_json_writer_line(void **state)
{
	struct wsnap_json j;
	struct mem m;

	mem_open(&m);
	wsnap_json_begin(&j, m.f);
	wsnap_json_bool(&j, "ok", false);
	wsnap_json_cstring(&j, "member", "a\xff\"b");
	wsnap_json_u64(&j, "size", 42);
	wsnap_json_mode(&j, "mode", 0755);
	wsnap_json_mode(&j, "m2", 04644);
	wsnap_json_time(&j, "mtime", 1, 250000000, true);
	wsnap_json_cstring(&j, "target", NULL);
	wsnap_json_end(&j);
	mem_close(&m);
	assert_string_equal(m.buf, "{\"ok\":false,\"member\":\"a\\udcff\\\"b\","
				   "\"size\":42,\"mode\":\"0755\","
				   "\"m2\":\"4644\",\"mtime\":1.25,"
				   "\"target\":null}\n");
	free(m.buf);
}

static void test_json_writer_nested(void **state)
{
	struct wsnap_json j;
	struct mem m;

	mem_open(&m);
	wsnap_json_begin(&j, m.f);
	wsnap_json_cstring(&j, "change", "M");
	wsnap_json_open(&j, "old");
	wsnap_json_cstring(&j, "type", "file");
	wsnap_json_u64(&j, "size", 1);
	wsnap_json_close(&j);
	wsnap_json_open(&j, "new");
	wsnap_json_open(&j, "empty");
	wsnap_json_close(&j);
	wsnap_json_u64(&j, "size", 2);
	/* end closes what is still open */
	wsnap_json_end(&j);
	mem_close(&m);
	assert_string_equal(m.buf, "{\"change\":\"M\",\"old\":{\"type\":"
				   "\"file\",\"size\":1},\"new\":{\"empty\":{},"
				   "\"size\":2}}\n");
	free(m.buf);
}

static void test_json_writer_empty_object(void **state)
{
	struct wsnap_json j;
	struct mem m;

	mem_open(&m);
	wsnap_json_begin(&j, m.f);
	wsnap_json_end(&j);
	wsnap_json_begin(&j, m.f);
	wsnap_json_null(&j, "x");
	wsnap_json_end(&j);
	mem_close(&m);
	assert_string_equal(m.buf, "{}\n{\"x\":null}\n");
	free(m.buf);
}

/* The summary of a snapshot: the one set of names of doc/json.md, in
 * their order, after what the caller put first. */
static void test_json_summary_keys(void **state)
{
	struct wsnap_index_stats st = {
		.members = 7,
		.dirs = 3,
		.implicit = 1,
		.files = 3,
		.symlinks = 1,
		.total_bytes = 1234,
		.compression = "zstd",
	};
	struct wsnap_json j;
	struct mem m;

	mem_open(&m);
	wsnap_json_begin(&j, m.f);
	wsnap_json_bool(&j, "ok", true);
	wsnap_json_summary(&j, &st);
	wsnap_json_end(&j);
	st.compression = NULL;
	wsnap_json_begin(&j, m.f);
	wsnap_json_summary(&j, &st);
	wsnap_json_end(&j);
	mem_close(&m);
	assert_string_equal(m.buf,
			    "{\"ok\":true,\"members\":7,\"directories\":3,"
			    "\"implicit_directories\":1,\"files\":3,"
			    "\"symlinks\":1,\"bytes\":1234,\"compression\":"
			    "\"zstd\"}\n"
			    "{\"members\":7,\"directories\":3,"
			    "\"implicit_directories\":1,\"files\":3,"
			    "\"symlinks\":1,\"bytes\":1234,\"compression\":"
			    "null}\n");
	free(m.buf);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_json_put_escaped_long_equals_whole),
		cmocka_unit_test(test_json_put_escaped_short),
		cmocka_unit_test(test_json_fmt_u64),
		cmocka_unit_test(test_json_fmt_time_exact),
		cmocka_unit_test(test_json_writer_line),
		cmocka_unit_test(test_json_writer_nested),
		cmocka_unit_test(test_json_writer_empty_object),
		cmocka_unit_test(test_json_summary_keys),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
