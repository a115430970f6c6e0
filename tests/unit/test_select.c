/* SPDX-License-Identifier: MIT */
/*
 * Unit tests of ops/select.c (the PATH operands of ls and export) and of
 * the export of a selection (ops/export.c with opts->select).
 */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include <cmocka.h>

#include "export.h"
#include "index.h"
#include "policy.h"
#include "select.h"
#include "support.h"
#include "array.h"

/*
 * The archive of these tests: 'a-b' sorts between 'a' and 'a/...'
 * (bytewise '-' < '/'), so a selection must follow parents, not ranges
 * of inos; x/y/z has implicit parents; l is a symlink to a directory.
 */
static struct wsnap_index *index_of(const char *filter, bool keep, int *fdp,
				    struct stat *st)
{
	struct ts_archive *a = ts_archive_new();
	struct wsnap_reader_opts o = {.keep_data = keep};
	struct wsnap_index *idx = NULL;
	struct wsnap_policy p;
	struct wsnap_error err;
	unsigned char *tar, *z = NULL;
	size_t len, zlen;
	int fd;

	ts_set_mtime(a, 1600000000, 0);
	ts_add_file(a, "first", 0644, "first", 5);
	ts_add_dir(a, "a", 0755);
	ts_add_file(a, "a/f", 0644, "af", 2);
	ts_add_file(a, "a-b", 0644, "ab", 2);
	ts_add_dir(a, "a/sub", 0700);
	ts_add_file(a, "a/sub/g", 0600, "g", 1);
	ts_add_symlink(a, "l", "a");
	ts_add_file(a, "x/y/z", 0644, "xyz", 3);
	ts_add_file(a, "last", 0644, "last", 4);
	tar = ts_archive_finish(a, 1, &len);
	if (filter) {
		z = ts_compress(tar, len, filter, &zlen);
		fd = ts_memfd(z, zlen);
	} else {
		fd = ts_memfd(tar, len);
	}
	free(tar);
	free(z);
	wsnap_policy_init(&p);
	if (wsnap_index_build(&idx, fd, &p, &o, &err) != WSNAP_OK)
		fail_msg("index build: '%s': %s", err.member, err.reason);
	wsnap_policy_release(&p);
	if (st)
		assert_int_equal(fstat(fd, st), 0);
	if (fdp)
		*fdp = fd;
	else
		close(fd);
	return idx;
}

/* The mark of rel path in sel. */
static int mark_of(const struct wsnap_index *idx, const unsigned char *sel,
		   const char *path)
{
	uint32_t ino = wsnap_index_lookup(idx, path, strlen(path));

	assert_true(ino != 0);
	return sel[ino];
}

static void test_select_normalize(void **state)
{
	static const struct {
		const char *in, *out;
	} ok[] = {
		{"a", "a"},
		{"./a//b/", "a/b"},
		{"/a/b", "a/b"},
		{"", ""},
		{".", ""},
		{"./", ""},
		{"..a/b..", "..a/b.."},
		{"a/...", "a/..."},
	};
	static const char *const bad[] = {"..",	    "../x", "a/..",
					  "a/../b", "/..",  "./a/../"};
	struct wsnap_error err;
	char *out;
	size_t i;

	for (i = 0; i < ARRAY_SIZE(ok); i++) {
		assert_int_equal(wsnap_select_normalize(ok[i].in, &out, &err),
				 WSNAP_OK);
		assert_string_equal(out, ok[i].out);
		free(out);
	}
	for (i = 0; i < ARRAY_SIZE(bad); i++) {
		assert_int_equal(wsnap_select_normalize(bad[i], &out, &err),
				 WSNAP_USAGE);
		assert_null(out);
		assert_non_null(strstr(err.reason, "has a '..' component"));
	}
	assert_int_equal(wsnap_select_normalize("a/../b", &out, &err),
			 WSNAP_USAGE);
	assert_string_equal(err.reason, "PATH 'a/../b' has a '..' component");
}

static void test_select_marks(void **state)
{
	char *p1[] = {"a", "x/y/z"};
	char *p2[] = {""};
	struct wsnap_index *idx = index_of(NULL, false, NULL, NULL);
	unsigned char *sel;
	struct wsnap_error err;
	uint32_t ino, count = wsnap_index_count(idx);

	assert_int_equal(wsnap_select_build(idx, p1, 2, &sel, &err), WSNAP_OK);
	assert_int_equal(mark_of(idx, sel, "a"), WSNAP_SELECT_YES);
	assert_int_equal(mark_of(idx, sel, "a/f"), WSNAP_SELECT_YES);
	assert_int_equal(mark_of(idx, sel, "a/sub"), WSNAP_SELECT_YES);
	assert_int_equal(mark_of(idx, sel, "a/sub/g"), WSNAP_SELECT_YES);
	assert_int_equal(mark_of(idx, sel, "x/y/z"), WSNAP_SELECT_YES);
	assert_int_equal(mark_of(idx, sel, "x"), WSNAP_SELECT_PARENT);
	assert_int_equal(mark_of(idx, sel, "x/y"), WSNAP_SELECT_PARENT);
	assert_int_equal(mark_of(idx, sel, ""), WSNAP_SELECT_PARENT);
	/* component-wise: 'a-b' is not within 'a' */
	assert_int_equal(mark_of(idx, sel, "a-b"), WSNAP_SELECT_NO);
	assert_int_equal(mark_of(idx, sel, "l"), WSNAP_SELECT_NO);
	assert_int_equal(mark_of(idx, sel, "first"), WSNAP_SELECT_NO);
	free(sel);

	/* "" is the root: everything */
	assert_int_equal(wsnap_select_build(idx, p2, 1, &sel, &err), WSNAP_OK);
	for (ino = WSNAP_ROOT_INO; ino <= count; ino++)
		assert_int_equal(sel[ino], WSNAP_SELECT_YES);
	free(sel);
	wsnap_index_free(idx);
}

/* A path that names nothing, also one through a symlink (never resolved):
 * the first such path in order, as the member of a usage error. */
static void test_select_missing(void **state)
{
	char *p1[] = {"a", "l/f", "nope"};
	char *p2[] = {"a/sub/g/h"};
	char *p3[] = {"l"};
	struct wsnap_index *idx = index_of(NULL, false, NULL, NULL);
	unsigned char *sel = (unsigned char *)"";
	struct wsnap_error err;

	assert_int_equal(wsnap_select_build(idx, p1, 3, &sel, &err),
			 WSNAP_USAGE);
	assert_null(sel);
	assert_string_equal(err.reason, WSNAP_REASON_NO_SUCH_PATH);
	assert_string_equal(err.member, "l/f");
	assert_int_equal(wsnap_select_build(idx, p2, 1, &sel, &err),
			 WSNAP_USAGE);
	assert_string_equal(err.member, "a/sub/g/h");
	/* the symlink itself can be selected: it, not its target */
	assert_int_equal(wsnap_select_build(idx, p3, 1, &sel, &err), WSNAP_OK);
	assert_int_equal(mark_of(idx, sel, "l"), WSNAP_SELECT_YES);
	assert_int_equal(mark_of(idx, sel, "a"), WSNAP_SELECT_NO);
	free(sel);
	wsnap_index_free(idx);
}

/* dir/rel in buf (PATH_MAX bytes). */
static const char *join(char *buf, const char *dir, const char *rel)
{
	int n = snprintf(buf, PATH_MAX, "%s/%s", dir, rel);

	assert_true(n > 0 && n < PATH_MAX);
	return buf;
}

/* lstat of dir/rel; false when missing. */
static bool stat_rel(const char *dir, const char *rel, struct stat *st)
{
	char buf[PATH_MAX];

	return lstat(join(buf, dir, rel), st) == 0;
}

static void assert_content(const char *dir, const char *rel, const char *want)
{
	char buf[PATH_MAX];
	ssize_t r;
	int fd = open(join(buf, dir, rel), O_RDONLY | O_NOFOLLOW);

	assert_true(fd >= 0);
	r = read(fd, buf, sizeof(buf));
	close(fd);
	assert_int_equal(r, (ssize_t)strlen(want));
	assert_memory_equal(buf, want, (size_t)r);
}

/*
 * Exports the selection of paths to a fresh dest, the data read again from
 * the (filter-compressed) archive like 'wsnap export' of a file does, and
 * checks what was written.
 */
static void check_export(const char *filter)
{
	char *paths[] = {"a", "x/y/z", "l"};
	struct wsnap_export_opts o = {.flags = WSNAP_EXPORT_INPUT};
	struct wsnap_export_stats es;
	struct wsnap_index *idx;
	struct wsnap_error err;
	struct stat ist, st;
	unsigned char *sel;
	char *root = ts_tempdir(), dest[PATH_MAX];
	int fd;

	join(dest, root, "dest");
	idx = index_of(filter, false, &fd, &ist);
	assert_int_equal(wsnap_select_build(idx, paths, 3, &sel, &err),
			 WSNAP_OK);
	o.input_fd = fd;
	o.input_stat = &ist;
	o.select = sel;
	if (wsnap_export_run(idx, dest, &o, &es, &err) != WSNAP_OK)
		fail_msg("export: '%s': %s", err.member, err.reason);
	/* a, a/f, a/sub, a/sub/g, x/y/z, l; not x, x/y (parents) */
	assert_int_equal(es.members, 6);
	assert_int_equal(es.files, 3);
	assert_int_equal(es.symlinks, 1);
	assert_int_equal(es.bytes, 2 + 1 + 3);
	assert_content(dest, "a/f", "af");
	assert_content(dest, "a/sub/g", "g");
	assert_content(dest, "x/y/z", "xyz");
	assert_true(stat_rel(dest, "l", &st) && S_ISLNK(st.st_mode));
	assert_false(stat_rel(dest, "a-b", &st));
	assert_false(stat_rel(dest, "first", &st));
	assert_false(stat_rel(dest, "last", &st));
	/* members keep their metadata; parents get the implicit defaults */
	assert_true(stat_rel(dest, "a/sub", &st));
	assert_int_equal(st.st_mode & 07777, 0755);
	assert_int_equal(st.st_mtime, 1600000000);
	assert_true(stat_rel(dest, "a", &st));
	assert_int_equal(st.st_mtime, 1600000000);
	assert_true(stat_rel(dest, "x/y", &st) && S_ISDIR(st.st_mode));
	assert_int_equal(st.st_mode & 07777, 0755);
	assert_int_equal(st.st_mtime, 0);
	assert_true(stat_rel(dest, "x", &st));
	assert_int_equal(st.st_mtime, 0);
	assert_true(stat_rel(root, "dest", &st));
	assert_int_equal(st.st_mtime, 0);
	free(sel);
	close(fd);
	wsnap_index_free(idx);
	ts_rmtree(root);
	free(root);
}

static void test_select_export_plain(void **state)
{
	check_export(NULL);
}

static void test_select_export_compressed(void **state)
{
	check_export("gzip");
}

/* Into an existing destination, existing parents are left alone: their
 * mode, and no time of ours. */
static void test_select_export_merge(void **state)
{
	char *paths[] = {"x/y/z"};
	struct wsnap_export_opts o = {0};
	struct wsnap_index *idx = index_of(NULL, true, NULL, NULL);
	struct wsnap_error err;
	struct timespec ts[2] = {{0, UTIME_OMIT}, {1234567890, 0}};
	struct stat st;
	unsigned char *sel;
	char *root = ts_tempdir(), x[PATH_MAX];

	assert_int_equal(mkdir(join(x, root, "x"), 0711), 0);
	assert_int_equal(utimensat(AT_FDCWD, x, ts, 0), 0);
	assert_int_equal(wsnap_select_build(idx, paths, 1, &sel, &err),
			 WSNAP_OK);
	o.select = sel;
	if (wsnap_export_run(idx, root, &o, NULL, &err) != WSNAP_OK)
		fail_msg("export: '%s': %s", err.member, err.reason);
	assert_content(root, "x/y/z", "xyz");
	assert_true(stat_rel(root, "x", &st));
	assert_int_equal(st.st_mode & 07777, 0711);
	/* not given a time (making x/y in it moved it to now) */
	assert_true(st.st_mtime > 1234567890);
	assert_true(stat_rel(root, "x/y", &st));
	assert_int_equal(st.st_mtime, 0);
	assert_false(stat_rel(root, "a", &st));
	free(sel);
	wsnap_index_free(idx);
	ts_rmtree(root);
	free(root);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_select_normalize),
		cmocka_unit_test(test_select_marks),
		cmocka_unit_test(test_select_missing),
		cmocka_unit_test(test_select_export_plain),
		cmocka_unit_test(test_select_export_compressed),
		cmocka_unit_test(test_select_export_merge),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
