/* SPDX-License-Identifier: MIT */
/*
 * Unit tests of caseless keys (core/base/casefold.c) and the folded view of
 * an index (core/index/fold.c): which names are one name on a case-folding,
 * normalization-insensitive filesystem (policy.md 4, 7.7). The tables were
 * checked against Python's unicodedata for every code point when they were
 * generated (scripts/gen_casefold.py); these cases pin the rules the policy
 * states.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>

#include "casefold.h"
#include "fold.h"
#include "index.h"
#include "members.h"
#include "policy.h"

static bool same(const char *a, const char *b)
{
	size_t la = strlen(a), lb = strlen(b);
	uint32_t *ka = calloc(WSNAP_CASEFOLD_CAP(la), sizeof(uint32_t));
	uint32_t *kb = calloc(WSNAP_CASEFOLD_CAP(lb), sizeof(uint32_t));
	uint32_t *t = calloc(WSNAP_CASEFOLD_CAP(la + lb), sizeof(uint32_t));
	size_t na, nb;
	bool eq;

	assert_non_null(ka);
	assert_non_null(kb);
	assert_non_null(t);
	na = wsnap_casefold_key(ka, t, a, la);
	nb = wsnap_casefold_key(kb, t, b, lb);
	assert_true(na <= WSNAP_CASEFOLD_CAP(la));
	assert_true(nb <= WSNAP_CASEFOLD_CAP(lb));
	eq = na == nb && memcmp(ka, kb, na * sizeof(uint32_t)) == 0;
	free(ka);
	free(kb);
	free(t);
	return eq;
}

static void test_casefold_ascii(void **state)
{
	assert_true(same("README.md", "readme.MD"));
	assert_true(same("S", "s"));
	assert_false(same("a", "b"));
	assert_false(same("ab", "a"));
	assert_false(same("a_", "a-"));
	assert_true(same("", ""));
}

static void test_casefold_unicode_case(void **state)
{
	assert_true(same("\xc3\x89t\xc3\xa9", "\xc3\xa9T\xc3\x89")); /* Été */
	assert_true(same("stra\303\237e", "STRASSE")); /* ß = ss */
	assert_true(same("\xe1\xba\x9e", "ss"));       /* capital sharp s */
	assert_true(same("\xe2\x84\xaa", "k"));	       /* Kelvin sign */
	assert_true(same("\xe2\x84\xab", "\xc3\xa5")); /* Angstrom, å */
	assert_true(same("\xcf\x82", "\xce\xa3"));     /* final sigma */
	assert_true(same("\xc4\xb1", "I"));	       /* dotless i */
	assert_true(same("\xc4\xb1", "i"));	       /* through I */
	assert_true(same("\xc4\xb0", "i\xcc\x87"));    /* dotted I */
	assert_false(same("\xc4\xb0", "i"));
	assert_true(same("\xef\xac\x80", "ff"));	    /* ligature folds */
	assert_false(same("\xef\xac\x81", "\xef\xac\x80")); /* fi, ff */
	assert_false(same("\xe2\x91\xa0", "1")); /* no compatibility */
}

static void test_casefold_unicode_normalization(void **state)
{
	/* NFC and NFD, and the order of marks of different classes */
	assert_true(same("\xc3\xa9", "e\xcc\x81"));
	assert_true(same("\xc3\x89", "e\xcc\x81"));
	assert_true(same("a\xcc\x81\xcc\xa3", "a\xcc\xa3\xcc\x81"));
	assert_false(same("a\xcc\x81\xcc\x80", "a\xcc\x80\xcc\x81"));
	/* a Hangul syllable and its jamo */
	assert_true(
		same("\xea\xb0\x81", "\xe1\x84\x80\xe1\x85\xa1\xe1\x86\xa8"));
	assert_false(same("\xea\xb0\x80", "\xea\xb0\x81"));
	/* U+0345 ypogegrammeni folds to iota, a starter */
	assert_true(same("\xe1\xbe\xb3", "\xce\xb1\xce\xb9"));
	assert_true(same("\xe1\xbe\x88", "\xe1\xbc\x80\xce\xb9"));
}

static void test_casefold_long_mark_runs(void **state)
{
	/* 3000 marks in two orders: counting sort, the same key */
	size_t n = 3000, i;
	char *a = malloc(2 * n + 2), *b = malloc(2 * n + 2);

	assert_non_null(a);
	assert_non_null(b);
	a[0] = b[0] = 'a';
	for (i = 0; i < n; i++) {
		/* U+0301 (230) and U+0323 (220), alternating; b has them
		 * sorted */
		const char *ma = i % 2 ? "\xcc\x81" : "\xcc\xa3";
		const char *mb = i < n / 2 ? "\xcc\xa3" : "\xcc\x81";

		memcpy(a + 1 + 2 * i, ma, 2);
		memcpy(b + 1 + 2 * i, mb, 2);
	}
	a[2 * n + 1] = b[2 * n + 1] = '\0';
	assert_true(same(a, b));
	b[2] = '\x80'; /* U+0300 (230) for the first U+0323 (220) */
	assert_false(same(a, b));
	free(a);
	free(b);
}

static void test_casefold_invalid_utf8(void **state)
{
	assert_true(same("\xff", "\xff"));
	assert_false(same("\xff", "\xfe"));
	assert_true(same("A\xc3", "a\xc3"));	/* the valid part folds */
	assert_false(same("\xc3", "\xc3\xa9")); /* truncated sequence */
	assert_false(same("\xed\xa0\x80", "\xed\xa0\x81")); /* surrogates */
	assert_string_equal(wsnap_casefold_unicode(), "14.0.0");
}

static struct wsnap_index *build(const struct tm_member *ms, size_t n)
{
	struct wsnap_policy pol;
	struct wsnap_index *idx;
	struct wsnap_error err;

	wsnap_policy_init(&pol);
	pol.allow_external_symlinks = true;
	if (tm_build(&pol, ms, n, &idx, &err) != WSNAP_OK)
		fail_msg("rejected '%s': %s", err.member, err.reason);
	wsnap_policy_release(&pol);
	return idx;
}

static uint32_t ino_of(const struct wsnap_index *idx, const char *path)
{
	uint32_t ino = wsnap_index_lookup(idx, path, strlen(path));

	assert_int_not_equal(ino, 0);
	return ino;
}

static void test_casefold_fold_lookup(void **state)
{
	const struct tm_member ms[] = {
		TM_F("d/Makefile"), TM_F("d/makefile"), TM_F("d/MAKEFILE"),
		TM_D("d/Src"),	    TM_F("d/Src/x"),	TM_L("d/lnk", "x"),
		TM_D("d/empty"),    TM_D("d/EMPTY"),	TM_F("e/\xc3\xa9"),
	};
	struct wsnap_index *idx = build(ms, TM_N(ms));
	struct wsnap_fold *f;
	struct wsnap_fold_match m;
	struct wsnap_error err;
	uint32_t d = ino_of(idx, "d");

	assert_int_equal(wsnap_fold_new(&f, idx, &err), WSNAP_OK);
	wsnap_fold_lookup(f, d, "makeFILE", 8, &m);
	assert_int_equal(m.count, 3);
	assert_int_equal(m.first, ino_of(idx, "d/MAKEFILE")); /* lowest ino */
	assert_true(m.inert);
	wsnap_fold_lookup(f, d, "SRC", 3, &m);
	assert_int_equal(m.count, 1);
	assert_int_equal(m.first, ino_of(idx, "d/Src"));
	assert_false(m.inert); /* a directory with entries */
	wsnap_fold_lookup(f, d, "LNK", 3, &m);
	assert_int_equal(m.first, ino_of(idx, "d/lnk"));
	assert_false(m.inert);
	wsnap_fold_lookup(f, d, "Empty", 5, &m);
	assert_int_equal(m.count, 2);
	assert_true(m.inert);
	wsnap_fold_lookup(f, d, "nothing", 7, &m);
	assert_int_equal(m.count, 0);
	assert_int_equal(m.first, 0);
	wsnap_fold_lookup(f, ino_of(idx, "e"), "E\xcc\x81", 3, &m);
	assert_int_equal(m.first, ino_of(idx, "e/\xc3\xa9"));
	/* not a directory, or too long to match anything */
	wsnap_fold_lookup(f, ino_of(idx, "d/lnk"), "x", 1, &m);
	assert_int_equal(m.count, 0);
	wsnap_fold_free(f);
	wsnap_index_free(idx);
}

static void test_casefold_fold_collisions(void **state)
{
	const struct tm_member ms[] = {
		TM_F("a/readme"),    TM_F("a/README"), TM_F("a/x"),
		TM_F("b/one"),	     TM_F("b/two"),    TM_D("c/\xc3\xa9"),
		TM_D("c/e\xcc\x81"),
	};
	struct wsnap_index *idx = build(ms, TM_N(ms));
	struct wsnap_fold *f;
	struct wsnap_error err;
	uint32_t other;

	assert_int_equal(wsnap_fold_new(&f, idx, &err), WSNAP_OK);
	/* ino order is byte order: README before readme */
	assert_int_equal(wsnap_fold_collision(f, ino_of(idx, "a"), &other),
			 ino_of(idx, "a/readme"));
	assert_int_equal(other, ino_of(idx, "a/README"));
	assert_int_equal(wsnap_fold_collision(f, ino_of(idx, "b"), &other), 0);
	assert_int_equal(other, 0);
	assert_int_equal(wsnap_fold_collision(f, ino_of(idx, "c"), &other),
			 ino_of(idx, "c/\xc3\xa9"));
	assert_int_equal(other, ino_of(idx, "c/e\xcc\x81"));
	assert_int_equal(wsnap_fold_collision(f, ino_of(idx, "a/x"), &other),
			 0);
	/* the root: a, b, c differ */
	assert_int_equal(wsnap_fold_collision(f, WSNAP_ROOT_INO, &other), 0);
	wsnap_fold_free(f);
	wsnap_index_free(idx);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_casefold_ascii),
		cmocka_unit_test(test_casefold_unicode_case),
		cmocka_unit_test(test_casefold_unicode_normalization),
		cmocka_unit_test(test_casefold_long_mark_runs),
		cmocka_unit_test(test_casefold_invalid_utf8),
		cmocka_unit_test(test_casefold_fold_lookup),
		cmocka_unit_test(test_casefold_fold_collisions),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
