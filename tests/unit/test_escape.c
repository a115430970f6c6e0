/*
 * Unit tests of core/base/escape.c: repr, bare and JSON escaping of names
 * (policy.md section 2, cli.md).
 *
 * The repr table was checked against CPython 3.11: for each name,
 * repr(name.decode('utf-8', 'surrogateescape')) with every '\udcXX' written
 * as '\xXX' (policy.md escapes invalid bytes as \xHH where Python shows the
 * surrogate). Only names on which that rule and Python agree are in it; the
 * characters where wsnap deliberately differs from Python's isprintable()
 * (it escapes only C0, DEL and C1) have their own test.
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

struct case_ {
	const char *in;
	size_t len;
	const char *want;
};

#define C(lit, want)                                                           \
	{                                                                      \
		lit, sizeof(lit) - 1, want                                     \
	}

static const struct case_ python_repr_cases[] = {
	C("plain", "'plain'"),
	C("", "''"),
	C("a b", "'a b'"),
	C("it's", "\"it's\""),
	C("say \"hi\"", "'say \"hi\"'"),
	/* both quotes: single quotes, the single quote escaped */
	C("both ' and \"", "'both \\' and \"'"),
	C("'\"\\\n", "'\\'\"\\\\\\n'"),
	C("back\\slash", "'back\\\\slash'"),
	C("C:\\x", "'C:\\\\x'"),
	C("tab\there", "'tab\\there'"),
	C("nl\nx", "'nl\\nx'"),
	C("cr\rx", "'cr\\rx'"),
	C("\0nul", "'\\x00nul'"),
	C("esc\x1b[31mred", "'esc\\x1b[31mred'"),
	C("del\x7f", "'del\\x7f'"),
	C("bell\a", "'bell\\x07'"),
	C("\x1f", "'\\x1f'"),
	C("\v\f\b", "'\\x0b\\x0c\\x08'"),
	C("caf\xc3\xa9", "'caf\xc3\xa9'"),
	C("\xe6\x97\xa5\xe6\x9c\xac", "'\xe6\x97\xa5\xe6\x9c\xac'"),
	C("\xf0\x9f\x98\x80", "'\xf0\x9f\x98\x80'"),
	/* C1 code points (U+0085 NEL, U+009B CSI) */
	C("c1\xc2\x85x", "'c1\\x85x'"),
	C("c1\xc2\x9b"
	  "31m",
	  "'c1\\x9b31m'"),
	C("\xc2\x80\xc2\x9f", "'\\x80\\x9f'"),
	/* U+00A1 is the first printable after C1 and NBSP */
	C("\xc2\xa1", "'\xc2\xa1'"),
	/* invalid UTF-8 */
	C("bad\xff", "'bad\\xff'"),
	C("\x80", "'\\x80'"),
	C("\xc0\xaf", "'\\xc0\\xaf'"),			 /* overlong '/' */
	C("\xc1\xbf", "'\\xc1\\xbf'"),			 /* overlong */
	C("\xe0\x80\xaf", "'\\xe0\\x80\\xaf'"),		 /* overlong '/' */
	C("\xe0\x9f\xbf", "'\\xe0\\x9f\\xbf'"),		 /* overlong U+07FF */
	C("\xf0\x8f\xbf\xbf", "'\\xf0\\x8f\\xbf\\xbf'"), /* overlong */
	C("\xed\xa0\x80", "'\\xed\\xa0\\x80'"),		 /* surrogate */
	C("\xed\xbf\xbf", "'\\xed\\xbf\\xbf'"),		 /* surrogate */
	C("\xf4\x90\x80\x80", "'\\xf4\\x90\\x80\\x80'"), /* > U+10FFFF */
	C("\xf5\x80\x80\x80", "'\\xf5\\x80\\x80\\x80'"),
	C("\xf8\x88\x80\x80\x80", "'\\xf8\\x88\\x80\\x80\\x80'"),
	C("\xfe\xff", "'\\xfe\\xff'"),
	C("trunc\xe2\x82", "'trunc\\xe2\\x82'"),
	C("trunc\xe2\x82\xe2\x82\xac", "'trunc\\xe2\\x82\xe2\x82\xac'"),
	C("\xf0\x9f\x98", "'\\xf0\\x9f\\x98'"),
	C("\xc3", "'\\xc3'"),
	C("\xc3(", "'\\xc3('"),
	/* an invalid byte next to quotes does not change the quote choice */
	C("\xff'", "\"\\xff'\""),
	/* an invalid byte that looks like a C1 control, and the real one */
	C("\x9b", "'\\x9b'"),
	C("\xc2\x9b", "'\\x9b'"),
};

static void test_escape_repr_matches_python(void **state)
{
	char out[256];
	size_t i, n;

	for (i = 0;
	     i < sizeof(python_repr_cases) / sizeof(python_repr_cases[0]);
	     i++) {
		const struct case_ *c = &python_repr_cases[i];

		assert_true(WSNAP_ESCAPE_CAP(c->len) <= sizeof(out));
		n = wsnap_escape_repr(out, c->in, c->len);
		assert_string_equal(out, c->want);
		assert_int_equal(n, strlen(c->want));
	}
}

/*
 * Where Python's repr escapes more than policy.md asks for (format and
 * unassigned characters, non-breaking space): wsnap shows valid UTF-8 that
 * is not a control character as is.
 */
static void test_escape_repr_printable_unicode_as_is(void **state)
{
	static const char *const names[] = {
		"nbsp\xc2\xa0",	    /* U+00A0 */
		"\xc2\xad",	    /* U+00AD soft hyphen */
		"\xef\xbb\xbf",	    /* U+FEFF */
		"\xef\xbf\xbf",	    /* U+FFFF */
		"\xf4\x8f\xbf\xbf", /* U+10FFFF */
		"\xee\x80\x80",	    /* U+E000 private use */
		"\xed\x9f\xbf",	    /* U+D7FF, last before surrogates */
		"\xe2\x80\xae",	    /* U+202E right-to-left override */
	};
	char out[64], want[64];
	size_t i, len;

	for (i = 0; i < sizeof(names) / sizeof(names[0]); i++) {
		len = strlen(names[i]);
		want[0] = '\'';
		memcpy(want + 1, names[i], len);
		want[len + 1] = '\'';
		want[len + 2] = '\0';
		wsnap_escape_repr(out, names[i], len);
		assert_string_equal(out, want);
	}
}

static void test_escape_repr_embedded_nul_uses_len(void **state)
{
	char out[32];

	assert_int_equal(wsnap_escape_repr(out, "a\0b", 3), 8);
	assert_string_equal(out, "'a\\x00b'");
	/* len shorter than the string: only len bytes are escaped */
	wsnap_escape_repr(out, "abc", 2);
	assert_string_equal(out, "'ab'");
	/* a sequence cut by len is invalid, not read past len */
	wsnap_escape_repr(out, "\xc3\xa9", 1);
	assert_string_equal(out, "'\\xc3'");
}

static void test_escape_bare_no_quotes(void **state)
{
	char out[64];

	assert_int_equal(wsnap_escape_bare(out, "", 0), 0);
	assert_string_equal(out, "");
	wsnap_escape_bare(out, "it's \"x\"", 8);
	assert_string_equal(out, "it's \"x\"");
	wsnap_escape_bare(out, "a\\b\n\t\r\x1b\xff\xc2\x85", 10);
	assert_string_equal(out, "a\\\\b\\n\\t\\r\\x1b\\xff\\x85");
	wsnap_escape_bare(out, "/usr/bin/python3", 16);
	assert_string_equal(out, "/usr/bin/python3");
	wsnap_escape_bare(out, "caf\xc3\xa9/\xe2\x82\xac", 9);
	assert_string_equal(out, "caf\xc3\xa9/\xe2\x82\xac");
}

static void test_escape_json_basic(void **state)
{
	char out[128];

	assert_int_equal(wsnap_escape_json(out, "", 0), 2);
	assert_string_equal(out, "\"\"");
	wsnap_escape_json(out, "a/b c", 5);
	assert_string_equal(out, "\"a/b c\"");
	wsnap_escape_json(out, "q\"b\\'", 5);
	assert_string_equal(out, "\"q\\\"b\\\\'\"");
	wsnap_escape_json(out, "\n\t\r\x01\x1f\x7f", 6);
	assert_string_equal(out,
			    "\"\\u000a\\u0009\\u000d\\u0001\\u001f\\u007f\"");
	wsnap_escape_json(out, "\0", 1);
	assert_string_equal(out, "\"\\u0000\"");
	/* valid UTF-8 as is; C1 as \u00XX (same code point once parsed) */
	wsnap_escape_json(out, "caf\xc3\xa9\xc2\x85\xf0\x9f\x98\x80", 11);
	assert_string_equal(out, "\"caf\xc3\xa9\\u0085\xf0\x9f\x98\x80\"");
	/* invalid bytes as lone surrogates, one per byte */
	wsnap_escape_json(out, "bad\xff\xc0\xaf\xed\xa0\x80", 9);
	assert_string_equal(
		out, "\"bad\\udcff\\udcc0\\udcaf\\udced\\udca0\\udc80\"");
	wsnap_escape_json(out, "t\xe2\x82\xe2\x82\xac", 6);
	assert_string_equal(out, "\"t\\udce2\\udc82\xe2\x82\xac\"");
}

/*
 * A reference UTF-8 validator written differently from escape.c: decode
 * greedily by the lead byte's bit pattern, then reject overlongs,
 * surrogates and values past U+10FFFF by the decoded value.
 */
static size_t ref_utf8(const unsigned char *s, size_t len, uint32_t *cp)
{
	size_t n, i;
	uint32_t v, min;

	if (s[0] < 0x80) {
		*cp = s[0];
		return 1;
	} else if ((s[0] & 0xe0) == 0xc0) {
		n = 2, v = s[0] & 0x1f, min = 0x80;
	} else if ((s[0] & 0xf0) == 0xe0) {
		n = 3, v = s[0] & 0x0f, min = 0x800;
	} else if ((s[0] & 0xf8) == 0xf0) {
		n = 4, v = s[0] & 0x07, min = 0x10000;
	} else {
		return 0;
	}
	if (len < n)
		return 0;
	for (i = 1; i < n; i++) {
		if ((s[i] & 0xc0) != 0x80)
			return 0;
		v = (v << 6) | (s[i] & 0x3f);
	}
	if (v < min || v > 0x10ffff || (v >= 0xd800 && v <= 0xdfff))
		return 0;
	*cp = v;
	return n;
}

/* Expected repr body of one buffer from the reference validator. */
static void ref_bare(char *o, const unsigned char *s, size_t len)
{
	static const char hex[] = "0123456789abcdef";
	size_t i = 0, n;
	uint32_t cp;

	while (i < len) {
		n = ref_utf8(s + i, len - i, &cp);
		if (n == 0 || cp < 0x20 || (cp >= 0x7f && cp < 0xa0) ||
		    cp == '\\') {
			unsigned v = n ? cp : s[i];

			*o++ = '\\';
			if (n && cp == '\\') {
				*o++ = '\\';
			} else if (n && cp == '\n') {
				*o++ = 'n';
			} else if (n && cp == '\t') {
				*o++ = 't';
			} else if (n && cp == '\r') {
				*o++ = 'r';
			} else {
				*o++ = 'x';
				*o++ = hex[v >> 4];
				*o++ = hex[v & 15];
			}
			i += n ? n : 1;
			continue;
		}
		memcpy(o, s + i, n);
		o += n;
		i += n;
	}
	*o = '\0';
}

/* Every 1- and 2-byte input, and every 3-byte input with a lead >= 0xc0
 * (where UTF-8 decisions are made), against the reference. */
static void test_escape_bare_exhaustive_short_inputs(void **state)
{
	unsigned char in[4];
	char out[WSNAP_ESCAPE_CAP(4)], want[WSNAP_ESCAPE_CAP(4)];
	unsigned a, b, c;

	for (a = 0; a < 256; a++) {
		in[0] = (unsigned char)a;
		wsnap_escape_bare(out, (const char *)in, 1);
		ref_bare(want, in, 1);
		assert_string_equal(out, want);
		for (b = 0; b < 256; b++) {
			in[1] = (unsigned char)b;
			wsnap_escape_bare(out, (const char *)in, 2);
			ref_bare(want, in, 2);
			assert_string_equal(out, want);
			if (a < 0xc0)
				continue;
			for (c = 0x70; c < 0xd0; c++) {
				in[2] = (unsigned char)c;
				wsnap_escape_bare(out, (const char *)in, 3);
				ref_bare(want, in, 3);
				assert_string_equal(out, want);
			}
		}
	}
}

/* Every second byte after each F0-F7 lead, with third and fourth bytes at
 * the edges of the continuation range. */
static void test_escape_bare_exhaustive_four_byte(void **state)
{
	static const unsigned char edges3[] = {0x7f, 0x80, 0xa5, 0xbf, 0xc0};
	static const unsigned char edges4[] = {0x7f, 0x80, 0xbf, 0xc0};
	unsigned char in[4];
	char out[WSNAP_ESCAPE_CAP(4)], want[WSNAP_ESCAPE_CAP(4)];
	unsigned a, b;
	size_t c, d;

	for (a = 0xf0; a <= 0xf7; a++) {
		for (b = 0; b < 256; b++) {
			for (c = 0; c < sizeof(edges3); c++) {
				for (d = 0; d < sizeof(edges4); d++) {
					in[0] = (unsigned char)a;
					in[1] = (unsigned char)b;
					in[2] = edges3[c];
					in[3] = edges4[d];
					wsnap_escape_bare(out, (const char *)in,
							  4);
					ref_bare(want, in, 4);
					assert_string_equal(out, want);
				}
			}
		}
	}
}

/* Decodes a JSON string literal (as escape_json writes them) back to the
 * bytes Python's os.fsencode(json.loads(...)) would give. */
static size_t json_to_bytes(const char *j, unsigned char *o)
{
	size_t n = 0;
	unsigned v;

	assert_int_equal(*j++, '"');
	while (*j != '"') {
		assert_true(*j != '\0');
		/* no raw control bytes in the output */
		assert_true((unsigned char)*j >= 0x20 &&
			    (unsigned char)*j != 0x7f);
		if (*j != '\\') {
			o[n++] = (unsigned char)*j++;
			continue;
		}
		j++;
		if (*j == '"' || *j == '\\') {
			o[n++] = (unsigned char)*j++;
			continue;
		}
		assert_int_equal(*j, 'u');
		assert_true(sscanf(j + 1, "%4x", &v) == 1);
		j += 5;
		if (v >= 0xdc80 && v <= 0xdcff) {
			o[n++] = (unsigned char)(v & 0xff);
		} else if (v < 0x80) {
			o[n++] = (unsigned char)v;
		} else {
			assert_true(v < 0x800);
			o[n++] = (unsigned char)(0xc0 | (v >> 6));
			o[n++] = (unsigned char)(0x80 | (v & 0x3f));
		}
	}
	assert_int_equal(j[1], '\0');
	return n;
}

static uint32_t rng_state = 12345;

static unsigned rnd(void)
{
	rng_state = rng_state * 1103515245u + 12345u;
	return (rng_state >> 16) & 0x7fff;
}

/* Random inputs biased towards UTF-8 edge bytes: the outputs stay within
 * WSNAP_ESCAPE_CAP, JSON round-trips to the exact bytes, repr and bare agree
 * with the reference and carry no control or invalid bytes. */
static void test_escape_random_roundtrip_and_bounds(void **state)
{
	static const unsigned char pool[] = {
		'a',  '/',  '\'', '"',	'\\', '\n', '\t', '\r', 0x00, 0x1b,
		0x7f, 0x80, 0x85, 0x9f, 0xa0, 0xbf, 0xc0, 0xc2, 0xc3, 0xdf,
		0xe0, 0xe2, 0xed, 0xef, 0xf0, 0xf4, 0xf5, 0xff, 0x82, 0xac};
	unsigned char in[64], back[64];
	char out[WSNAP_ESCAPE_CAP(64) + 16], want[WSNAP_ESCAPE_CAP(64)];
	size_t len, n, k;
	int iter;

	for (iter = 0; iter < 200000; iter++) {
		len = rnd() % 64;
		for (k = 0; k < len; k++)
			in[k] = (rnd() % 4 == 0) ? (unsigned char)rnd()
						 : pool[rnd() % sizeof(pool)];
		memset(out, 0x55, sizeof(out));
		n = wsnap_escape_json(out, (const char *)in, len);
		assert_true(n + 1 <= WSNAP_ESCAPE_CAP(len));
		assert_int_equal(out[n], '\0');
		assert_int_equal(json_to_bytes(out, back), len);
		assert_memory_equal(back, in, len);

		n = wsnap_escape_repr(out, (const char *)in, len);
		assert_true(n + 1 <= WSNAP_ESCAPE_CAP(len));
		ref_bare(want, in, len);
		n = wsnap_escape_bare(out, (const char *)in, len);
		assert_true(n + 1 <= WSNAP_ESCAPE_CAP(len));
		assert_string_equal(out, want);
		for (k = 0; k < n; k++)
			assert_true((unsigned char)out[k] >= 0x20 &&
				    (unsigned char)out[k] != 0x7f);
	}
}

/* The worst cases reach the advertised capacity but never pass it. */
static void test_escape_capacity_worst_case(void **state)
{
	char in[100], out[WSNAP_ESCAPE_CAP(100)];

	memset(in, 0x01, sizeof(in));
	assert_int_equal(wsnap_escape_json(out, in, sizeof(in)), 6 * 100 + 2);
	memset(in, 0xff, sizeof(in));
	assert_int_equal(wsnap_escape_json(out, in, sizeof(in)), 6 * 100 + 2);
	assert_int_equal(wsnap_escape_repr(out, in, sizeof(in)), 4 * 100 + 2);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_escape_repr_matches_python),
		cmocka_unit_test(test_escape_repr_printable_unicode_as_is),
		cmocka_unit_test(test_escape_repr_embedded_nul_uses_len),
		cmocka_unit_test(test_escape_bare_no_quotes),
		cmocka_unit_test(test_escape_json_basic),
		cmocka_unit_test(test_escape_bare_exhaustive_short_inputs),
		cmocka_unit_test(test_escape_bare_exhaustive_four_byte),
		cmocka_unit_test(test_escape_random_roundtrip_and_bounds),
		cmocka_unit_test(test_escape_capacity_worst_case),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
