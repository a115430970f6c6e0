/* SPDX-License-Identifier: MIT */
/* Unit tests of core/policy/options.c: options, normalization, within, file
 * modes, copies. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>
#include <cmocka.h>

#include "hydrate.h"
#include "policy.h"

static void test_policy_init_defaults(void **state)
{
	struct wsnap_policy p;

	memset(&p, 0xa5, sizeof(p));
	wsnap_policy_init(&p);
	assert_false(p.allow_external_symlinks);
	assert_false(p.no_symlinks);
	assert_int_equal(p.skip.count, 0);
	assert_int_equal(p.reject_path.count, 0);
	assert_int_equal(p.reject_symlink.count, 0);
	assert_null(p.root_name);
	assert_null(p.strip_prefix);
	assert_int_equal(p.max_members, 2000000);
	assert_int_equal(p.max_total_size, 64ULL << 30);
	assert_int_equal(p.max_file_size, UINT64_MAX);
	assert_int_equal(p.max_path_length, 4096);
	assert_int_equal(p.max_depth, 256);
	assert_int_equal(p.max_index_size, 1ULL << 30);
	wsnap_policy_release(&p);
	/* release twice is harmless: everything was reset */
	wsnap_policy_release(&p);
}

static void check_norm(const char *in, const char *want)
{
	char out[256];
	long n = wsnap_policy_normalize(in, out, sizeof(out));

	assert_int_equal(n, (long)strlen(want));
	assert_string_equal(out, want);
}

static void test_policy_normalize_cases(void **state)
{
	check_norm("/a/b", "a/b");
	check_norm("./a/", "a");
	check_norm("a//b/./c/", "a/b/c");
	check_norm("//a", "a");
	check_norm("", "");
	check_norm(".", "");
	check_norm("/", "");
	check_norm("./.", "");
	check_norm(".//", "");
	check_norm("..", "..");
	check_norm("a/../b", "a/../b");
	check_norm("./..a/.b", "..a/.b");
	check_norm("a\\b", "a\\b");
	check_norm("workspace/", "workspace");
}

static void test_policy_normalize_capacity(void **state)
{
	char out[4];

	assert_int_equal(wsnap_policy_normalize("abc", out, 4), 3);
	assert_string_equal(out, "abc");
	assert_int_equal(wsnap_policy_normalize("abcd", out, 4), -1);
	assert_int_equal(wsnap_policy_normalize("a/bc", out, 4), -1);
	assert_int_equal(wsnap_policy_normalize("./a/./b/", out, 4), 3);
	assert_string_equal(out, "a/b");
	assert_int_equal(wsnap_policy_normalize("x", out, 0), -1);
}

static bool within(const char *p, const char *q)
{
	return wsnap_path_within(p, strlen(p), q, strlen(q));
}

static void test_policy_within_component_wise(void **state)
{
	assert_true(within("workspace", "workspace"));
	assert_true(within("workspace/x", "workspace"));
	assert_true(within("workspace/x/y", "workspace/x"));
	assert_false(within("workspace2/x", "workspace"));
	assert_false(within("workspace2", "workspace"));
	assert_false(within("works", "workspace"));
	assert_false(within("workspace", "workspace/x"));
	assert_true(within("anything", ""));
	assert_true(within("", ""));
	assert_false(within("", "a"));
	assert_false(within("a/bc", "a/b"));
}

static void test_policy_file_mode_table(void **state)
{
	/* the table of policy.md 7.6 */
	assert_int_equal(wsnap_policy_file_mode(0755), 0755);
	assert_int_equal(wsnap_policy_file_mode(0644), 0644);
	assert_int_equal(wsnap_policy_file_mode(0444), 0644);
	assert_int_equal(wsnap_policy_file_mode(0000), 0600);
	assert_int_equal(wsnap_policy_file_mode(0777), 0755);
	assert_int_equal(wsnap_policy_file_mode(0655), 0644);
	assert_int_equal(wsnap_policy_file_mode(04755), 0755);
	assert_int_equal(wsnap_policy_file_mode(02755), 0755);
	assert_int_equal(wsnap_policy_file_mode(01755), 0755);
	assert_int_equal(wsnap_policy_file_mode(0711), 0711);
	assert_int_equal(wsnap_policy_file_mode(0100), 0700);
	assert_int_equal(wsnap_policy_file_mode(0011), 0600);
	assert_int_equal(wsnap_policy_file_mode(0170644), 0644);
}

static void test_policy_add_paths_normalized(void **state)
{
	struct wsnap_policy p;
	struct wsnap_error err;

	wsnap_policy_init(&p);
	assert_int_equal(wsnap_policy_add_skip(&p, "/a/b", &err), WSNAP_OK);
	assert_int_equal(wsnap_policy_add_skip(&p, "./a/", &err), WSNAP_OK);
	assert_int_equal(wsnap_policy_add_skip(&p, ".", &err), WSNAP_OK);
	assert_int_equal(
		wsnap_policy_add_reject_path(&p, "remote//nested/", &err),
		WSNAP_OK);
	assert_int_equal(wsnap_policy_add_reject_symlink(&p, "./x/./y", &err),
			 WSNAP_OK);
	assert_int_equal(p.skip.count, 3);
	assert_string_equal(p.skip.items[0], "a/b");
	assert_string_equal(p.skip.items[1], "a");
	assert_string_equal(p.skip.items[2], "");
	assert_int_equal(p.reject_path.count, 1);
	assert_string_equal(p.reject_path.items[0], "remote/nested");
	assert_int_equal(p.reject_symlink.count, 1);
	assert_string_equal(p.reject_symlink.items[0], "x/y");
	wsnap_policy_release(&p);
	assert_int_equal(p.skip.count, 0);
	assert_null(p.skip.items);
}

static void test_policy_too_many_paths_is_usage(void **state)
{
	struct wsnap_policy p;
	struct wsnap_error err;
	int i;

	wsnap_policy_init(&p);
	for (i = 0; i < WSNAP_POLICY_MAX_PATHS; i++)
		assert_int_equal(wsnap_policy_add_reject_path(&p, "x", &err),
				 WSNAP_OK);
	assert_int_equal(wsnap_policy_add_reject_path(&p, "x", &err),
			 WSNAP_USAGE);
	assert_int_equal(err.status, WSNAP_USAGE);
	assert_int_equal(p.reject_path.count, WSNAP_POLICY_MAX_PATHS);
	wsnap_policy_release(&p);
}

static void test_policy_root_name_one_component(void **state)
{
	struct wsnap_policy p;
	struct wsnap_error err;

	wsnap_policy_init(&p);
	assert_int_equal(wsnap_policy_set_root_name(&p, "./workspace/", &err),
			 WSNAP_OK);
	assert_string_equal(p.root_name, "workspace");
	assert_int_equal(wsnap_policy_set_root_name(&p, "/ws", &err), WSNAP_OK);
	assert_string_equal(p.root_name, "ws");
	assert_int_equal(wsnap_policy_set_root_name(&p, "a/b", &err),
			 WSNAP_USAGE);
	assert_int_equal(wsnap_policy_set_root_name(&p, ".", &err),
			 WSNAP_USAGE);
	assert_int_equal(wsnap_policy_set_root_name(&p, "", &err), WSNAP_USAGE);
	/* a failed set keeps the previous value */
	assert_string_equal(p.root_name, "ws");
	wsnap_policy_release(&p);
	assert_null(p.root_name);
}

static void test_policy_strip_prefix(void **state)
{
	struct wsnap_policy p;
	struct wsnap_error err;

	wsnap_policy_init(&p);
	assert_int_equal(wsnap_policy_set_strip_prefix(&p, "/", &err),
			 WSNAP_USAGE);
	assert_int_equal(wsnap_policy_set_strip_prefix(&p, "./", &err),
			 WSNAP_USAGE);
	assert_null(p.strip_prefix);
	assert_int_equal(
		wsnap_policy_set_strip_prefix(&p, "./workspace/sub/", &err),
		WSNAP_OK);
	assert_string_equal(p.strip_prefix, "workspace/sub");
	wsnap_policy_release(&p);
	assert_null(p.strip_prefix);
}

/* A copy owns everything it holds: the source can be released first, and
 * every option comes across. */
static void test_policy_copy_is_deep(void **state)
{
	struct wsnap_policy src, dst;
	struct wsnap_error err;

	wsnap_policy_init(&src);
	wsnap_policy_init(&dst);
	src.allow_external_symlinks = true;
	src.no_symlinks = true;
	src.max_members = 7;
	src.max_total_size = 8;
	src.max_file_size = 9;
	src.max_path_length = 10;
	src.max_depth = 11;
	src.max_index_size = 12;
	assert_int_equal(wsnap_policy_add_skip(&src, "s", &err), WSNAP_OK);
	assert_int_equal(wsnap_policy_add_skip(&src, ".", &err), WSNAP_OK);
	assert_int_equal(wsnap_policy_add_reject_path(&src, "r/p", &err),
			 WSNAP_OK);
	assert_int_equal(wsnap_policy_add_reject_symlink(&src, "l", &err),
			 WSNAP_OK);
	assert_int_equal(wsnap_policy_set_root_name(&src, "root", &err),
			 WSNAP_OK);
	assert_int_equal(wsnap_policy_set_strip_prefix(&src, "a/b", &err),
			 WSNAP_OK);
	assert_int_equal(wsnap_policy_copy(&dst, &src, &err), WSNAP_OK);
	wsnap_policy_release(&src);
	assert_true(dst.allow_external_symlinks);
	assert_true(dst.no_symlinks);
	assert_int_equal(dst.max_members, 7);
	assert_int_equal(dst.max_total_size, 8);
	assert_int_equal(dst.max_file_size, 9);
	assert_int_equal(dst.max_path_length, 10);
	assert_int_equal(dst.max_depth, 11);
	assert_int_equal(dst.max_index_size, 12);
	assert_int_equal(dst.skip.count, 2);
	assert_string_equal(dst.skip.items[0], "s");
	assert_string_equal(dst.skip.items[1], "");
	assert_int_equal(dst.reject_path.count, 1);
	assert_string_equal(dst.reject_path.items[0], "r/p");
	assert_int_equal(dst.reject_symlink.count, 1);
	assert_string_equal(dst.reject_symlink.items[0], "l");
	assert_string_equal(dst.root_name, "root");
	assert_string_equal(dst.strip_prefix, "a/b");
	wsnap_policy_release(&dst);
}

/*
 * The fingerprint a hydrated workspace records (workspace/hydrate.c):
 * --max-index-size changes it, but at its default it is left out, so the
 * fingerprint of the default policy is the one states written before the
 * option record.
 */
static void test_policy_fingerprint_index_size(void **state)
{
	char a[WSNAP_HYDRATE_POLICY_ID_LEN + 1], b[sizeof(a)];
	struct wsnap_policy p;

	wsnap_policy_init(&p);
	wsnap_hydrate_policy_id(&p, a);
	assert_string_equal(a, "96004976a79ed456f7d2b4ff3be450e0");
	p.max_index_size = 64u << 20;
	wsnap_hydrate_policy_id(&p, b);
	assert_string_not_equal(a, b);
	wsnap_policy_release(&p);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_policy_init_defaults),
		cmocka_unit_test(test_policy_normalize_cases),
		cmocka_unit_test(test_policy_normalize_capacity),
		cmocka_unit_test(test_policy_within_component_wise),
		cmocka_unit_test(test_policy_file_mode_table),
		cmocka_unit_test(test_policy_add_paths_normalized),
		cmocka_unit_test(test_policy_too_many_paths_is_usage),
		cmocka_unit_test(test_policy_root_name_one_component),
		cmocka_unit_test(test_policy_strip_prefix),
		cmocka_unit_test(test_policy_copy_is_deep),
		cmocka_unit_test(test_policy_fingerprint_index_size),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
