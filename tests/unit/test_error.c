/* SPDX-License-Identifier: MIT */
/* Unit tests of core/base/error.c: the one error type. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>
#include <cmocka.h>

#include "error.h"

static void test_error_reject_sets_member_and_reason(void **state)
{
	struct wsnap_error err;

	assert_int_equal(wsnap_error_reject(&err, "a/b", "path too %s", "long"),
			 WSNAP_REJECTED);
	assert_int_equal(err.status, WSNAP_REJECTED);
	assert_string_equal(err.member, "a/b");
	assert_string_equal(err.reason, "path too long");
	assert_int_equal(err.truncated, 0);
}

static void test_error_stream_is_tar_member(void **state)
{
	struct wsnap_error err;

	assert_int_equal(wsnap_error_stream(&err), WSNAP_REJECTED);
	assert_string_equal(err.member, "<tar>");
	assert_string_equal(err.reason, "invalid tar stream");
}

static void test_error_long_member_is_truncated(void **state)
{
	static char name[WSNAP_ERROR_TEXT_MAX + 100];
	struct wsnap_error err;

	memset(name, 'a', sizeof(name) - 1);
	name[sizeof(name) - 1] = '\0';
	wsnap_error_reject(&err, name, "x");
	assert_int_equal(strlen(err.member), WSNAP_ERROR_TEXT_MAX - 1);
	assert_int_equal(err.truncated, 1);
}

static void test_error_io_keeps_errno(void **state)
{
	struct wsnap_error err;

	assert_int_equal(wsnap_error_io(&err, 28, "/d/f", "cannot write"),
			 WSNAP_IO);
	assert_int_equal(err.errnum, 28);
	assert_string_equal(err.member, "/d/f");
	assert_string_equal(err.reason, "cannot write");
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_error_reject_sets_member_and_reason),
		cmocka_unit_test(test_error_stream_is_tar_member),
		cmocka_unit_test(test_error_long_member_is_truncated),
		cmocka_unit_test(test_error_io_keeps_errno),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
