/* SPDX-License-Identifier: MIT */
/*
 * Unit tests of core/base/dynlib.c and the libcurl and libgit2 wrappers:
 * a library that is missing or lacks a function leaves the table as it was
 * and says why; the wrappers fill every pointer of their table.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>
#include <cmocka.h>

#include "curl_dl.h"
#include "dynlib.h"
#include "git_dl.h"

struct two {
	size_t (*len)(const char *);
	int (*cmp)(const char *, const char *);
};

static const struct wsnap_dynsym libc_syms[] = {
	{"strlen", offsetof(struct two, len)},
	{"strcmp", offsetof(struct two, cmp)},
};

static void test_dynlib_loads_each_function(void **state)
{
	struct two t = {0};
	char why[WSNAP_DYNLIB_WHY] = "";

	(void)state;
	assert_int_equal(wsnap_dynlib_load("libc.so.6", libc_syms, 2, &t, why),
			 0);
	assert_non_null(t.len);
	assert_int_equal(t.len("four"), 4);
	assert_int_equal(t.cmp("a", "a"), 0);
}

static void test_dynlib_missing_library_says_which(void **state)
{
	struct two t = {0};
	char why[WSNAP_DYNLIB_WHY] = "";

	(void)state;
	assert_int_equal(
		wsnap_dynlib_load("libwsnap-none.so.0", libc_syms, 2, &t, why),
		-1);
	assert_non_null(strstr(why, "libwsnap-none.so.0"));
	assert_null(t.len);
}

static void test_dynlib_missing_function_leaves_table(void **state)
{
	static const struct wsnap_dynsym syms[] = {
		{"strlen", offsetof(struct two, len)},
		{"wsnap_no_such_function", offsetof(struct two, cmp)},
	};
	struct two t = {0};
	char why[WSNAP_DYNLIB_WHY] = "";

	(void)state;
	assert_int_equal(wsnap_dynlib_load("libc.so.6", syms, 2, &t, why), -1);
	assert_string_equal(why, "libc.so.6 has no wsnap_no_such_function");
	/* nothing stored, not even the function that was found */
	assert_null(t.len);
	assert_null(t.cmp);
}

/* every pointer of each table is set once loaded */
static void assert_all_set(const void *table, size_t size)
{
	const unsigned char *p = table;
	size_t i;

	for (i = 0; i < size; i += sizeof(void *)) {
		void *f;

		memcpy(&f, p + i, sizeof(f));
		assert_non_null(f);
	}
}

static void test_dynlib_curl_and_git_tables_filled(void **state)
{
	const char *why = NULL;

	(void)state;
	assert_int_equal(wsnap_curl_load(&why), 0);
	assert_all_set(&wsnap_curl, sizeof(wsnap_curl));
	assert_int_equal(wsnap_git_load(&why), 0);
	assert_all_set(&wsnap_git, sizeof(wsnap_git));
	/* (and loading again is a no-op) */
	assert_int_equal(wsnap_curl_load(NULL), 0);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_dynlib_loads_each_function),
		cmocka_unit_test(test_dynlib_missing_library_says_which),
		cmocka_unit_test(test_dynlib_missing_function_leaves_table),
		cmocka_unit_test(test_dynlib_curl_and_git_tables_filled),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
