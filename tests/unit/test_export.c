/* SPDX-License-Identifier: MIT */
/*
 * Unit tests of ops/export.c: safe export (policy.md section 7).
 *
 * Every test exports into a fresh temporary tree 'root' holding the
 * destination and a directory 'outside' with one file 'victim': whatever
 * the archive or the destination holds, 'outside' must end up exactly as
 * it started (outside_untouched()).
 *
 * Over 800 lines: one test program per unit (the style guide); export's
 * cases share the destination builders and the racing attackers here.
 */
#include <archive.h>
#include <archive_entry.h>
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <linux/fs.h>
#include <sys/ioctl.h>
#include <sys/mount.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <time.h>
#include <unistd.h>
#include <cmocka.h>

#include "export.h"
#include "fsutil.h"
#include "index.h"
#include "policy.h"
#include "support.h"
#include "array.h"

/* ---- helpers --------------------------------------------------------- */

static char *path_of(const char *dir, const char *rel)
{
	size_t n = strlen(dir) + strlen(rel) + 2;
	char *p = malloc(n);

	assert_non_null(p);
	snprintf(p, n, "%s/%s", dir, rel);
	return p;
}

static struct wsnap_index *index_keep(int fd, const struct wsnap_policy *p,
				      bool keep)
{
	struct wsnap_reader_opts o = {.keep_data = keep};
	struct wsnap_index *idx = NULL;
	struct wsnap_error err;

	if (wsnap_index_build(&idx, fd, p, &o, &err) != WSNAP_OK)
		fail_msg("index build: '%s': %s", err.member, err.reason);
	return idx;
}

static struct wsnap_index *index_from_fd(int fd, const struct wsnap_policy *p)
{
	return index_keep(fd, p, true);
}

/* The index of an archive under the default policy (data kept). */
static struct wsnap_index *index_of(struct ts_archive *a)
{
	struct wsnap_policy p;
	struct wsnap_index *idx;
	unsigned char *tar;
	size_t len;
	int fd;

	tar = ts_archive_finish(a, 1, &len);
	fd = ts_memfd(tar, len);
	free(tar);
	wsnap_policy_init(&p);
	idx = index_from_fd(fd, &p);
	wsnap_policy_release(&p);
	close(fd);
	return idx;
}

static enum wsnap_status export_flags(const struct wsnap_index *idx,
				      const char *dest, unsigned flags,
				      struct wsnap_error *err)
{
	struct wsnap_export_opts o = {.flags = flags};

	wsnap_error_clear(err);
	return wsnap_export_run(idx, dest, &o, NULL, err);
}

static enum wsnap_status export(const struct wsnap_index *idx, const char *dest,
				struct wsnap_error *err) {
	return export_flags(idx, dest, 0, err);
}

static void expect_ok(enum wsnap_status s, const struct wsnap_error *err)
{
	if (s != WSNAP_OK)
		fail_msg("export failed (%d): '%s': %s", (int)s, err->member,
			 err->reason);
}

static void expect_rejected(enum wsnap_status s, const struct wsnap_error *err,
			    const char *member, const char *reason)
{
	assert_int_equal(s, WSNAP_REJECTED);
	assert_string_equal(err->member, member);
	assert_string_equal(err->reason, reason);
}

struct scene {
	char *root;
	char *dest;
	char *outside;
};

/* root/dest (created when make_dest) and root/outside/victim. */
static void scene_init(struct scene *s, bool make_dest)
{
	char *victim;

	s->root = ts_tempdir();
	s->dest = path_of(s->root, "dest");
	s->outside = path_of(s->root, "outside");
	assert_int_equal(mkdir(s->outside, 0755), 0);
	victim = ts_write_file(s->outside, "victim", "victim", 6);
	free(victim);
	if (make_dest)
		assert_int_equal(mkdir(s->dest, 0755), 0);
}

/* 'outside' holds exactly 'victim' with its content. */
static void outside_untouched(const struct scene *s)
{
	DIR *d = opendir(s->outside);
	struct dirent *de;
	char buf[16];
	char *victim;
	int n = 0, fd;
	ssize_t r;

	assert_non_null(d);
	while ((de = readdir(d)) != NULL) {
		if (strcmp(de->d_name, ".") == 0 ||
		    strcmp(de->d_name, "..") == 0)
			continue;
		if (strcmp(de->d_name, "victim") != 0)
			fail_msg("created outside the destination: %s",
				 de->d_name);
		n++;
	}
	closedir(d);
	assert_int_equal(n, 1);
	victim = path_of(s->outside, "victim");
	fd = open(victim, O_RDONLY | O_NOFOLLOW);
	assert_true(fd >= 0);
	r = read(fd, buf, sizeof(buf));
	close(fd);
	assert_int_equal(r, 6);
	assert_memory_equal(buf, "victim", 6);
	free(victim);
}

static void scene_release(struct scene *s)
{
	ts_rmtree(s->root);
	free(s->root);
	free(s->dest);
	free(s->outside);
}

static void lstat_rel(const char *dir, const char *rel, struct stat *st)
{
	char *p = path_of(dir, rel);

	if (lstat(p, st) != 0)
		fail_msg("lstat %s: %s", p, strerror(errno));
	free(p);
}

static bool exists_rel(const char *dir, const char *rel)
{
	struct stat st;
	char *p = path_of(dir, rel);
	bool e = lstat(p, &st) == 0;

	free(p);
	return e;
}

static void assert_file(const char *dir, const char *rel, const char *content,
			unsigned mode)
{
	size_t len = strlen(content);
	char *p = path_of(dir, rel), *buf = malloc(len + 2);
	struct stat st;
	ssize_t r;
	int fd;

	assert_non_null(buf);
	assert_int_equal(lstat(p, &st), 0);
	if (!S_ISREG(st.st_mode))
		fail_msg("%s is not a regular file (mode %o)", rel,
			 (unsigned)st.st_mode);
	assert_int_equal(st.st_mode & 07777, mode);
	fd = open(p, O_RDONLY | O_NOFOLLOW);
	assert_true(fd >= 0);
	r = read(fd, buf, len + 1);
	close(fd);
	assert_int_equal(r, (ssize_t)len);
	assert_memory_equal(buf, content, len);
	free(buf);
	free(p);
}

static void assert_symlink(const char *dir, const char *rel, const char *target)
{
	char *p = path_of(dir, rel);
	char buf[4096];
	ssize_t n = readlink(p, buf, sizeof(buf) - 1);

	if (n < 0)
		fail_msg("%s is not a symlink: %s", rel, strerror(errno));
	buf[n] = '\0';
	assert_string_equal(buf, target);
	free(p);
}

static void assert_dir(const char *dir, const char *rel, unsigned mode)
{
	struct stat st;

	lstat_rel(dir, rel, &st);
	if (!S_ISDIR(st.st_mode))
		fail_msg("%s is not a directory", rel);
	assert_int_equal(st.st_mode & 07777, mode);
}

/* ---- basics ---------------------------------------------------------- */

static void check_basic(unsigned flags)
{
	static char big[300001];
	struct ts_archive *a = ts_archive_new();
	size_t i;
	struct wsnap_index *idx;
	struct wsnap_error err;
	struct scene s;
	struct stat st;

	scene_init(&s, false);
	ts_set_mtime(a, 1700000000, 123456789);
	ts_add_dir(a, "src", 0700);
	ts_add_file(a, "src/main.c", 0644, "int main;", 9);
	ts_add_file(a, "bin/start", 0755, "#!/bin/sh\n", 10);
	ts_add_file(a, "README.md", 0644, "hello", 5);
	ts_add_file(a, "empty", 0600, "", 0);
	ts_add_symlink(a, "latest", "src/main.c");
	ts_add_symlink(a, "deep/er/link", "../../README.md");
	/* larger than a small run: copy_file_range, or pread/pwrite */
	for (i = 0; i < sizeof(big) - 1; i++)
		big[i] = (char)('a' + i % 26);
	big[sizeof(big) - 1] = '\0';
	ts_add_file(a, "big.txt", 0640, big, sizeof(big) - 1);
	idx = index_of(a);

	expect_ok(export_flags(idx, s.dest, flags, &err), &err);
	assert_file(s.dest, "big.txt", big, 0640);
	assert_dir(s.root, "dest", 0755);
	assert_dir(s.dest, "src", 0755); /* directories are 0755 */
	assert_dir(s.dest, "bin", 0755); /* implicit */
	assert_dir(s.dest, "deep/er", 0755);
	assert_file(s.dest, "src/main.c", "int main;", 0644);
	assert_file(s.dest, "bin/start", "#!/bin/sh\n", 0755);
	assert_file(s.dest, "README.md", "hello", 0644);
	assert_file(s.dest, "empty", "", 0600);
	assert_symlink(s.dest, "latest", "src/main.c");
	assert_symlink(s.dest, "deep/er/link", "../../README.md");
	/* mtimes with nanoseconds, symlinks included */
	lstat_rel(s.dest, "src/main.c", &st);
	assert_int_equal(st.st_mtim.tv_sec, 1700000000);
	assert_int_equal(st.st_mtim.tv_nsec, 123456789);
	lstat_rel(s.dest, "latest", &st);
	assert_int_equal(st.st_mtim.tv_sec, 1700000000);
	assert_int_equal(st.st_mtim.tv_nsec, 123456789);
	lstat_rel(s.dest, "src", &st);
	assert_int_equal(st.st_mtim.tv_sec, 1700000000);
	assert_int_equal(st.st_mtim.tv_nsec, 123456789);
	outside_untouched(&s);
	wsnap_index_free(idx);
	scene_release(&s);
}

static void test_export_fresh_destination(void **state)
{
	check_basic(0);
}

static void test_export_without_openat2(void **state)
{
	check_basic(WSNAP_EXPORT_NO_OPENAT2);
}

static void test_export_without_copy_file_range(void **state)
{
	check_basic(WSNAP_EXPORT_NO_COPY_RANGE | WSNAP_EXPORT_NO_OPENAT2);
}

/* Only the destination and its parent's entries: no temporary left. */
static void test_export_fresh_leaves_no_temporary(void **state)
{
	struct ts_archive *a = ts_archive_new();
	struct wsnap_index *idx;
	struct wsnap_error err;
	struct dirent *de;
	struct scene s;
	DIR *d;
	int n = 0;

	scene_init(&s, false);
	ts_add_file(a, "f", 0644, "x", 1);
	idx = index_of(a);
	expect_ok(export(idx, s.dest, &err), &err);
	d = opendir(s.root);
	assert_non_null(d);
	while ((de = readdir(d)) != NULL)
		if (de->d_name[0] != '.' || strlen(de->d_name) > 2)
			n++;
	closedir(d);
	assert_int_equal(n, 2); /* dest and outside */
	wsnap_index_free(idx);
	scene_release(&s);
}

static void test_export_stats_count_what_was_done(void **state)
{
	struct ts_archive *a = ts_archive_new();
	struct wsnap_export_stats st;
	struct wsnap_index *idx;
	struct wsnap_error err;
	struct scene s;

	scene_init(&s, false);
	ts_add_dir(a, "d", 0755);
	ts_add_file(a, "d/f", 0644, "abc", 3);
	ts_add_file(a, "i/g", 0644, "defg", 4);
	ts_add_symlink(a, "l", "d/f");
	idx = index_of(a);
	expect_ok(wsnap_export_run(idx, s.dest, NULL, &st, &err), &err);
	assert_true(st.created);
	assert_int_equal(st.members, 4);
	assert_int_equal(st.dirs, 2);
	assert_int_equal(st.files, 2);
	assert_int_equal(st.symlinks, 1);
	assert_int_equal(st.bytes, 7);
	assert_int_equal(st.replaced, 0);
	/* a second export merges: nothing created, everything replaced */
	expect_ok(wsnap_export_run(idx, s.dest, NULL, &st, &err), &err);
	assert_false(st.created);
	assert_int_equal(st.dirs, 0);
	assert_int_equal(st.dirs_kept, 1);
	assert_int_equal(st.replaced, 3);
	wsnap_index_free(idx);
	scene_release(&s);
}

/* ---- the leaf-replacement table (7.4), every cell --------------------- */

enum existing {
	EX_FILE,
	EX_SYMLINK_OUT,	 /* symlink to the outside directory */
	EX_SYMLINK_IN,	 /* symlink to a file inside */
	EX_SYMLINK_DANG, /* dangling symlink */
	EX_FIFO,
	EX_SOCKET,
	EX_DIR,
	EX_NONE,
	EX_COUNT,
};

static const char *const existing_names[EX_COUNT] = {
	"file",		  "symlink to outside",
	"symlink inside", "dangling symlink",
	"fifo",		  "socket",
	"real directory", "nothing",
};

static void make_existing(const struct scene *s, const char *rel,
			  enum existing kind)
{
	char *p = path_of(s->dest, rel);
	struct sockaddr_un sun;
	int fd;

	switch (kind) {
	case EX_FILE:
		free(ts_write_file(s->dest, rel, "old", 3));
		break;
	case EX_SYMLINK_OUT:
		assert_int_equal(symlink(s->outside, p), 0);
		break;
	case EX_SYMLINK_IN:
		free(ts_write_file(s->dest, "inner", "inner", 5));
		assert_int_equal(symlink("inner", p), 0);
		break;
	case EX_SYMLINK_DANG:
		assert_int_equal(symlink("no/such/target", p), 0);
		break;
	case EX_FIFO:
		assert_int_equal(mkfifo(p, 0644), 0);
		break;
	case EX_SOCKET:
		fd = socket(AF_UNIX, SOCK_STREAM, 0);
		assert_true(fd >= 0);
		memset(&sun, 0, sizeof(sun));
		sun.sun_family = AF_UNIX;
		assert_true(strlen(p) < sizeof(sun.sun_path));
		memcpy(sun.sun_path, p, strlen(p) + 1);
		assert_int_equal(bind(fd, (struct sockaddr *)&sun, sizeof(sun)),
				 0);
		close(fd);
		break;
	case EX_DIR:
		assert_int_equal(mkdir(p, 0700), 0);
		free(ts_write_file(p, "keep", "keep", 4));
		break;
	default:
		break;
	}
	free(p);
}

static void check_cell(enum existing ex, char kind)
{
	struct ts_archive *a = ts_archive_new();
	struct wsnap_index *idx;
	struct wsnap_error err;
	enum wsnap_status st;
	struct scene s;

	print_message("cell: existing %s, new %s\n", existing_names[ex],
		      kind == 'f'   ? "regular file"
		      : kind == 'd' ? "directory"
				    : "symlink");
	scene_init(&s, true);
	make_existing(&s, "x", ex);
	ts_add_file(a, "t", 0644, "t", 1);
	if (kind == 'f') {
		ts_add_file(a, "x", 0755, "new", 3);
	} else if (kind == 'd') {
		ts_add_dir(a, "x", 0755);
		ts_add_file(a, "x/c", 0644, "child", 5);
	} else {
		ts_add_symlink(a, "x", "t");
	}
	idx = index_of(a);
	st = export(idx, s.dest, &err);
	if (ex == EX_DIR && kind != 'd') {
		expect_rejected(st, &err, "x",
				"destination directory already exists: x");
		assert_dir(s.dest, "x", 0700);
		assert_file(s.dest, "x/keep", "keep", 0644);
	} else {
		expect_ok(st, &err);
		if (kind == 'f') {
			assert_file(s.dest, "x", "new", 0755);
		} else if (kind == 'd') {
			/* created 0755; a kept directory keeps its mode */
			assert_dir(s.dest, "x", ex == EX_DIR ? 0700 : 0755);
			assert_file(s.dest, "x/c", "child", 0644);
			if (ex == EX_DIR)
				assert_file(s.dest, "x/keep", "keep", 0644);
		} else {
			assert_symlink(s.dest, "x", "t");
		}
		/* the link was removed, never what it pointed to */
		if (ex == EX_SYMLINK_IN)
			assert_file(s.dest, "inner", "inner", 0644);
	}
	outside_untouched(&s);
	wsnap_index_free(idx);
	scene_release(&s);
}

static void test_export_leaf_table_every_cell(void **state)
{
	int ex;

	for (ex = 0; ex < EX_COUNT; ex++) {
		check_cell((enum existing)ex, 'f');
		check_cell((enum existing)ex, 'd');
		check_cell((enum existing)ex, 'l');
	}
}

/* ---- exporting twice into the same destination ----------------------- */

static void test_export_twice_replaces(void **state)
{
	struct ts_archive *a = ts_archive_new();
	struct wsnap_index *first, *second, *third;
	struct wsnap_error err;
	struct scene s;

	scene_init(&s, false);
	ts_add_file(a, "f", 0644, "one", 3);
	ts_add_file(a, "g", 0644, "g", 1);
	ts_add_file(a, "h", 0644, "h", 1);
	ts_add_dir(a, "d", 0755);
	ts_add_file(a, "d/in", 0644, "in", 2);
	ts_add_symlink(a, "s1", "f");
	ts_add_symlink(a, "s2", "f");
	ts_add_symlink(a, "s3", "f");
	first = index_of(a);
	expect_ok(export(first, s.dest, &err), &err);
	assert_symlink(s.dest, "s1", "f");

	a = ts_archive_new();
	ts_add_file(a, "f", 0755, "two", 3); /* file by file, new mode */
	ts_add_symlink(a, "g", "f");	     /* file by symlink */
	ts_add_dir(a, "h", 0755);	     /* file by directory */
	ts_add_file(a, "s1", 0600, "s1", 2); /* symlink by file */
	ts_add_dir(a, "s2", 0755);	     /* symlink by directory */
	ts_add_symlink(a, "s3", "h");	     /* symlink by symlink */
	second = index_of(a);
	expect_ok(export(second, s.dest, &err), &err);
	assert_file(s.dest, "f", "two", 0755);
	assert_symlink(s.dest, "g", "f");
	assert_dir(s.dest, "h", 0755);
	assert_file(s.dest, "s1", "s1", 0600);
	assert_dir(s.dest, "s2", 0755);
	assert_symlink(s.dest, "s3", "h");
	assert_file(s.dest, "f", "two", 0755); /* not written through g */
	assert_file(s.dest, "d/in", "in", 0644);

	/* a directory where a symlink is wanted is an error */
	a = ts_archive_new();
	ts_add_symlink(a, "d", "f");
	third = index_of(a);
	expect_rejected(export(third, s.dest, &err), &err, "d",
			"destination directory already exists: d");
	assert_dir(s.dest, "d", 0755);
	assert_file(s.dest, "d/in", "in", 0644);
	outside_untouched(&s);
	wsnap_index_free(first);
	wsnap_index_free(second);
	wsnap_index_free(third);
	scene_release(&s);
}

/* ---- pre-existing symlinks among the parents (7.3) -------------------- */

static void check_parent_symlink(bool inside, unsigned flags)
{
	struct ts_archive *a = ts_archive_new();
	struct wsnap_index *idx;
	struct wsnap_error err;
	struct scene s;
	char *link;

	scene_init(&s, true);
	link = path_of(s.dest, "link");
	if (inside) {
		char *real = path_of(s.dest, "real");

		assert_int_equal(mkdir(real, 0755), 0);
		assert_int_equal(symlink("real", link), 0);
		free(real);
	} else {
		assert_int_equal(symlink(s.outside, link), 0);
	}
	ts_add_file(a, "ok", 0644, "ok", 2);
	ts_add_file(a, "link/hello.txt", 0644, "hello from tar", 14);
	idx = index_of(a);
	expect_rejected(export_flags(idx, s.dest, flags, &err), &err,
			"link/hello.txt", "symlink in parent path");
	assert_false(exists_rel(s.dest, "real/hello.txt"));
	assert_symlink(s.dest, "link", inside ? "real" : s.outside);
	outside_untouched(&s);
	free(link);
	wsnap_index_free(idx);
	scene_release(&s);
}

static void test_export_parent_symlink_outside_rejected(void **state)
{
	check_parent_symlink(false, 0);
	check_parent_symlink(false, WSNAP_EXPORT_NO_OPENAT2);
}

static void test_export_parent_symlink_inside_rejected(void **state)
{
	check_parent_symlink(true, 0);
	check_parent_symlink(true, WSNAP_EXPORT_NO_OPENAT2);
}

/* A symlink deeper among the parents, reached through the cache. */
static void test_export_deep_parent_symlink_rejected(void **state)
{
	struct ts_archive *a = ts_archive_new();
	struct wsnap_index *idx;
	struct wsnap_error err;
	struct scene s;
	char *p;

	scene_init(&s, true);
	p = path_of(s.dest, "a");
	assert_int_equal(mkdir(p, 0755), 0);
	free(p);
	p = path_of(s.dest, "a/b");
	assert_int_equal(mkdir(p, 0755), 0);
	free(p);
	p = path_of(s.dest, "a/b/c");
	assert_int_equal(symlink(s.outside, p), 0);
	free(p);
	ts_add_file(a, "a/b/x", 0644, "x", 1);
	ts_add_file(a, "a/b/c/d/e/f", 0644, "f", 1);
	idx = index_of(a);
	expect_rejected(export(idx, s.dest, &err), &err, "a/b/c/d/e/f",
			"symlink in parent path");
	expect_rejected(
		export_flags(idx, s.dest, WSNAP_EXPORT_NO_OPENAT2, &err), &err,
		"a/b/c/d/e/f", "symlink in parent path");
	outside_untouched(&s);
	wsnap_index_free(idx);
	scene_release(&s);
}

/* An archive directory member first replaces the planted symlink, so the
 * file then lands inside. */
static void test_export_dir_member_replaces_symlink_first(void **state)
{
	struct ts_archive *a = ts_archive_new();
	struct wsnap_index *idx;
	struct wsnap_error err;
	struct scene s;
	char *link;

	scene_init(&s, true);
	link = path_of(s.dest, "link");
	assert_int_equal(symlink(s.outside, link), 0);
	ts_add_dir(a, "link", 0755);
	ts_add_file(a, "link/hello.txt", 0644, "hello", 5);
	idx = index_of(a);
	expect_ok(export(idx, s.dest, &err), &err);
	assert_dir(s.dest, "link", 0755);
	assert_file(s.dest, "link/hello.txt", "hello", 0644);
	outside_untouched(&s);
	free(link);
	wsnap_index_free(idx);
	scene_release(&s);
}

static void test_export_parent_not_directory(void **state)
{
	struct ts_archive *a = ts_archive_new();
	struct wsnap_index *idx;
	struct wsnap_error err;
	struct scene s;

	scene_init(&s, true);
	free(ts_write_file(s.dest, "p", "file", 4));
	ts_add_file(a, "p/q/x", 0644, "x", 1);
	idx = index_of(a);
	expect_rejected(export(idx, s.dest, &err), &err, "p/q/x",
			"destination parent is not a directory: p");
	expect_rejected(
		export_flags(idx, s.dest, WSNAP_EXPORT_NO_OPENAT2, &err), &err,
		"p/q/x", "destination parent is not a directory: p");
	assert_file(s.dest, "p", "file", 0644);
	wsnap_index_free(idx);
	scene_release(&s);
}

/* A FIFO among the parents is not opened (it would block): refused. */
static void test_export_parent_fifo_not_opened(void **state)
{
	struct ts_archive *a = ts_archive_new();
	struct wsnap_index *idx;
	struct wsnap_error err;
	struct scene s;
	char *p;

	scene_init(&s, true);
	p = path_of(s.dest, "fifo");
	assert_int_equal(mkfifo(p, 0644), 0);
	free(p);
	ts_add_file(a, "fifo/x", 0644, "x", 1);
	idx = index_of(a);
	expect_rejected(export(idx, s.dest, &err), &err, "fifo/x",
			"destination parent is not a directory: fifo");
	wsnap_index_free(idx);
	scene_release(&s);
}

/* ---- modes under umasks (7.6) ---------------------------------------- */

static const struct {
	unsigned mode, want;
} mode_table[] = {
	{0755, 0755},  {0644, 0644},  {0600, 0600},  {0700, 0700},
	{0444, 0644},  {0000, 0600},  {0777, 0755},  {0655, 0644},
	{04755, 0755}, {02755, 0755}, {01755, 0755},
};

static void check_modes(mode_t mask)
{
	struct ts_archive *a = ts_archive_new();
	struct wsnap_index *idx;
	struct wsnap_error err;
	struct scene s;
	mode_t old;
	size_t i;
	char name[32];
	struct stat st;

	print_message("umask %03o\n", (unsigned)mask);
	scene_init(&s, false);
	for (i = 0; i < ARRAY_SIZE(mode_table); i++) {
		snprintf(name, sizeof(name), "m%05o", mode_table[i].mode);
		ts_add_file(a, name, mode_table[i].mode, "data", 4);
	}
	ts_add_dir(a, "private", 0700);
	ts_add_file(a, "bin/start", 0755, "#!/bin/sh\n", 10);
	ts_add_file(a, "README.md", 0644, "# readme\n", 9);
	idx = index_of(a);
	old = umask(mask);
	expect_ok(export(idx, s.dest, &err), &err);
	umask(old);
	for (i = 0; i < ARRAY_SIZE(mode_table); i++) {
		snprintf(name, sizeof(name), "m%05o", mode_table[i].mode);
		assert_file(s.dest, name, "data", mode_table[i].want);
	}
	lstat_rel(s.dest, "bin/start", &st);
	assert_true(st.st_mode & S_IXUSR);
	assert_true(st.st_mode & S_IXOTH);
	lstat_rel(s.dest, "README.md", &st);
	assert_false(st.st_mode & (S_IXUSR | S_IXGRP | S_IXOTH));
	assert_dir(s.root, "dest", 0755);
	assert_dir(s.dest, "private", 0755);
	assert_dir(s.dest, "bin", 0755);
	wsnap_index_free(idx);
	scene_release(&s);
}

static void test_export_modes_umask_022(void **state)
{
	check_modes(022);
}

static void test_export_modes_umask_077(void **state)
{
	check_modes(077);
}

static void test_export_modes_umask_000(void **state)
{
	check_modes(000);
}

/* ---- directory mtimes (pass 3) --------------------------------------- */

static void test_export_directory_mtimes_after_children(void **state)
{
	struct ts_archive *a = ts_archive_new();
	struct wsnap_index *idx;
	struct wsnap_error err;
	struct scene s;
	struct stat st;
	uint32_t ino;

	scene_init(&s, false);
	ts_set_mtime(a, 1000000000, 111111111);
	ts_add_dir(a, "d", 0755);
	ts_add_dir(a, "d/e", 0755);
	ts_set_mtime(a, 1500000000, 500000000);
	ts_add_file(a, "d/e/f", 0644, "f", 1);
	ts_add_symlink(a, "d/l", "e/f");
	ts_add_file(a, "i/j/k", 0644, "k", 1);
	idx = index_of(a);
	expect_ok(export(idx, s.dest, &err), &err);
	lstat_rel(s.dest, "d", &st);
	assert_int_equal(st.st_mtim.tv_sec, 1000000000);
	assert_int_equal(st.st_mtim.tv_nsec, 111111111);
	lstat_rel(s.dest, "d/e", &st);
	assert_int_equal(st.st_mtim.tv_sec, 1000000000);
	assert_int_equal(st.st_mtim.tv_nsec, 111111111);
	lstat_rel(s.dest, "d/e/f", &st);
	assert_int_equal(st.st_mtim.tv_sec, 1500000000);
	/* implicit directories get the index's presented mtime */
	ino = wsnap_index_lookup(idx, "i/j", 3);
	assert_true(ino != 0);
	lstat_rel(s.dest, "i/j", &st);
	assert_int_equal(st.st_mtim.tv_sec,
			 wsnap_index_node(idx, ino)->mtime_sec);
	lstat_rel(s.dest, "i", &st);
	assert_int_equal(st.st_mtim.tv_sec,
			 wsnap_index_node(idx, ino)->mtime_sec);
	wsnap_index_free(idx);
	scene_release(&s);
}

/* A pre-existing implicit directory is not given the default mtime. */
static void test_export_existing_implicit_dir_left_alone(void **state)
{
	struct ts_archive *a = ts_archive_new();
	struct timespec ts[2] = {{0, UTIME_OMIT}, {123456, 0}};
	struct wsnap_index *idx;
	struct wsnap_error err;
	struct scene s;
	struct stat st;
	char *p;

	scene_init(&s, true);
	p = path_of(s.dest, "i");
	assert_int_equal(mkdir(p, 0711), 0);
	ts_add_file(a, "i/x", 0644, "x", 1);
	idx = index_of(a);
	expect_ok(export(idx, s.dest, &err), &err);
	assert_int_equal(utimensat(AT_FDCWD, p, ts, 0), 0);
	expect_ok(export(idx, s.dest, &err), &err);
	assert_int_equal(lstat(p, &st), 0);
	assert_int_equal(st.st_mode & 07777, 0711);
	/* the file was replaced inside: the kernel's time, not ours */
	assert_true(st.st_mtim.tv_sec != 123456);
	assert_true(st.st_mtim.tv_sec != 0);
	free(p);
	wsnap_index_free(idx);
	scene_release(&s);
}

/* The root: a root entry's mtime applies to DEST, its mode only when export
 * created DEST; without a root entry an existing DEST is left alone. */
static void test_export_root_entry_metadata(void **state)
{
	struct ts_archive *a = ts_archive_new();
	struct wsnap_index *with_root, *without_root;
	struct wsnap_error err;
	struct scene s;
	struct stat st;

	ts_set_mtime(a, 1111111111, 250000000);
	ts_add_dir(a, "./", 0700);
	ts_add_file(a, "f", 0644, "f", 1);
	with_root = index_of(a);
	a = ts_archive_new();
	ts_set_mtime(a, 1111111111, 0);
	ts_add_file(a, "g", 0644, "g", 1);
	without_root = index_of(a);

	scene_init(&s, false);
	expect_ok(export(with_root, s.dest, &err), &err);
	assert_int_equal(lstat(s.dest, &st), 0);
	assert_int_equal(st.st_mode & 07777, 0755);
	assert_int_equal(st.st_mtim.tv_sec, 1111111111);
	assert_int_equal(st.st_mtim.tv_nsec, 250000000);

	assert_int_equal(chmod(s.dest, 0711), 0);
	expect_ok(export(without_root, s.dest, &err), &err);
	assert_int_equal(lstat(s.dest, &st), 0);
	assert_int_equal(st.st_mode & 07777, 0711);
	assert_true(st.st_mtim.tv_sec != 1111111111); /* g was added */

	expect_ok(export(with_root, s.dest, &err), &err);
	assert_int_equal(lstat(s.dest, &st), 0);
	assert_int_equal(st.st_mode & 07777, 0711); /* kept */
	assert_int_equal(st.st_mtim.tv_sec, 1111111111);
	wsnap_index_free(with_root);
	wsnap_index_free(without_root);
	scene_release(&s);
}

/* ---- inputs: pipes, compression, sparse files ----------------------- */

static void check_stream(const char *filter)
{
	struct ts_archive *a = ts_archive_new();
	struct wsnap_policy p;
	struct wsnap_index *idx;
	struct wsnap_error err;
	unsigned char *tar, *z = NULL;
	struct scene s;
	char big[100000];
	size_t len, zlen;
	int fd;

	memset(big, 'z', sizeof(big));
	big[sizeof(big) - 1] = '\n';
	ts_add_file(a, "a/small", 0644, "small", 5);
	ts_add_file(a, "a/big", 0600, big, sizeof(big));
	tar = ts_archive_finish(a, 1, &len);
	if (filter) {
		z = ts_compress(tar, len, filter, &zlen);
		fd = ts_pipefd(z, zlen);
	} else {
		fd = ts_pipefd(tar, len);
	}
	wsnap_policy_init(&p);
	idx = index_from_fd(fd, &p);
	close(fd);
	scene_init(&s, false);
	expect_ok(export(idx, s.dest, &err), &err);
	assert_file(s.dest, "a/small", "small", 0644);
	big[sizeof(big) - 1] = '\0';
	{
		char *path = path_of(s.dest, "a/big");
		struct stat st;

		assert_int_equal(stat(path, &st), 0);
		assert_int_equal(st.st_size, (off_t)sizeof(big));
		free(path);
	}
	wsnap_index_free(idx);
	wsnap_policy_release(&p);
	scene_release(&s);
	free(tar);
	free(z);
}

static void test_export_from_pipe(void **state)
{
	check_stream(NULL);
}

static void test_export_from_gzip_pipe(void **state)
{
	check_stream("gzip");
}

static void test_export_from_zstd_pipe(void **state)
{
	check_stream("zstd");
}

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

/* A pax archive with one sparse file: 8 MiB, data at 0 and at 4 MiB. */
static unsigned char *sparse_archive(size_t *len)
{
	struct membuf m = {0};
	struct archive *w = archive_write_new();
	struct archive_entry *e = archive_entry_new();
	static char block[8u << 20];

	memset(block, 0, sizeof(block));
	memset(block, 'A', 4096);
	memset(block + (4u << 20), 'B', 4096);
	assert_int_equal(archive_write_set_format_pax(w), ARCHIVE_OK);
	assert_int_equal(archive_write_open(w, &m, NULL, membuf_write, NULL),
			 ARCHIVE_OK);
	archive_entry_set_pathname(e, "sparse");
	archive_entry_set_filetype(e, AE_IFREG);
	archive_entry_set_perm(e, 0644);
	archive_entry_set_size(e, sizeof(block));
	archive_entry_sparse_add_entry(e, 0, 4096);
	archive_entry_sparse_add_entry(e, 4u << 20, 4096);
	assert_int_equal(archive_write_header(w, e), ARCHIVE_OK);
	assert_int_equal(archive_write_data(w, block, sizeof(block)),
			 (la_ssize_t)sizeof(block));
	assert_int_equal(archive_write_close(w), ARCHIVE_OK);
	archive_write_free(w);
	archive_entry_free(e);
	*len = m.len;
	return m.data;
}

static void test_export_sparse_holes_stay_holes(void **state)
{
	struct wsnap_policy p;
	struct wsnap_index *idx;
	struct wsnap_error err;
	unsigned char *tar, buf[4096];
	struct scene s;
	struct stat st;
	size_t len;
	char *path;
	int fd;

	tar = sparse_archive(&len);
	fd = ts_memfd(tar, len);
	wsnap_policy_init(&p);
	idx = index_from_fd(fd, &p);
	close(fd);
	scene_init(&s, false);
	expect_ok(export(idx, s.dest, &err), &err);
	path = path_of(s.dest, "sparse");
	assert_int_equal(stat(path, &st), 0);
	assert_int_equal(st.st_size, 8u << 20);
	assert_true((uint64_t)st.st_blocks * 512 < (1u << 20));
	fd = open(path, O_RDONLY);
	assert_true(fd >= 0);
	assert_int_equal(pread(fd, buf, 4096, 0), 4096);
	assert_int_equal(buf[0], 'A');
	assert_int_equal(buf[4095], 'A');
	assert_int_equal(pread(fd, buf, 4096, 4096), 4096);
	assert_int_equal(buf[0], 0);
	assert_int_equal(pread(fd, buf, 4096, 4u << 20), 4096);
	assert_int_equal(buf[0], 'B');
	assert_int_equal(pread(fd, buf, 4096, (8u << 20) - 4096), 4096);
	assert_int_equal(buf[4095], 0);
	close(fd);
	free(path);
	free(tar);
	wsnap_index_free(idx);
	wsnap_policy_release(&p);
	scene_release(&s);
}

/* ---- re-reading the input instead of keeping its data --------------- */

/*
 * WSNAP_EXPORT_INPUT: the index holds no data; the archive file is read
 * in place (uncompressed) or decompressed a second time (compressed).
 */
static void check_reread(const char *filter)
{
	struct ts_archive *a = ts_archive_new();
	static char big[3u << 20];
	struct wsnap_export_opts o = {.flags = WSNAP_EXPORT_INPUT};
	struct wsnap_policy p;
	struct wsnap_index *idx;
	struct wsnap_error err;
	unsigned char *tar, *z = NULL;
	struct scene s;
	struct stat st;
	size_t len, zlen, i;
	char name[32], *path;
	int fd;

	print_message("input %s\n", filter ? filter : "uncompressed");
	for (i = 0; i < sizeof(big) - 1; i++)
		big[i] = (char)('A' + i % 23);
	for (i = 0; i < 300; i++) {
		snprintf(name, sizeof(name), "d%u/f%03zu", (unsigned)(i % 7),
			 i);
		ts_add_file(a, name, 0644, name, strlen(name));
	}
	ts_add_file(a, "big", 0600, big, sizeof(big) - 1);
	ts_add_symlink(a, "l", "big");
	ts_add_file(a, "last", 0755, "last", 4);
	tar = ts_archive_finish(a, 1, &len);
	if (filter) {
		z = ts_compress(tar, len, filter, &zlen);
		fd = ts_memfd(z, zlen);
	} else {
		fd = ts_memfd(tar, len);
	}
	assert_int_equal(fstat(fd, &st), 0);
	wsnap_policy_init(&p);
	idx = index_keep(fd, &p, false);
	assert_int_equal(wsnap_index_data_fd(idx), -1);
	o.input_fd = fd;
	o.input_stat = &st;
	scene_init(&s, false);
	expect_ok(wsnap_export_run(idx, s.dest, &o, NULL, &err), &err);
	assert_file(s.dest, "d3/f003", "d3/f003", 0644);
	assert_file(s.dest, "d5/f299", "d5/f299", 0644);
	big[sizeof(big) - 1] = '\0';
	assert_file(s.dest, "big", big, 0600);
	assert_symlink(s.dest, "l", "big");
	assert_file(s.dest, "last", "last", 0755);

	/* the archive changed since it was validated: refused, nothing left */
	path = path_of(s.root, "again");
	assert_true(lseek(fd, 0, SEEK_END) > 0);
	assert_int_equal(write(fd, "x", 1), 1);
	assert_int_equal(wsnap_export_run(idx, path, &o, NULL, &err), WSNAP_IO);
	assert_int_equal(err.errnum, EIO);
	assert_string_equal(err.reason, "archive changed since it was read");
	assert_false(exists_rel(s.root, "again"));
	free(path);
	close(fd);
	wsnap_index_free(idx);
	wsnap_policy_release(&p);
	scene_release(&s);
	free(tar);
	free(z);
}

static void test_export_reread_uncompressed_file(void **state)
{
	check_reread(NULL);
}

static void test_export_reread_compressed_file(void **state)
{
	check_reread("gzip");
	check_reread("xz");
	check_reread("zstd");
}

/* A sparse file in a compressed archive, decompressed again. */
static void test_export_reread_sparse_gzip(void **state)
{
	struct wsnap_export_opts o = {.flags = WSNAP_EXPORT_INPUT};
	struct wsnap_policy p;
	struct wsnap_index *idx;
	struct wsnap_error err;
	unsigned char *tar, *z, buf[4096];
	struct scene s;
	struct stat st;
	size_t len, zlen;
	char *path;
	int fd;

	tar = sparse_archive(&len);
	z = ts_compress(tar, len, "gzip", &zlen);
	fd = ts_memfd(z, zlen);
	assert_int_equal(fstat(fd, &st), 0);
	wsnap_policy_init(&p);
	idx = index_keep(fd, &p, false);
	o.input_fd = fd;
	o.input_stat = &st;
	scene_init(&s, false);
	expect_ok(wsnap_export_run(idx, s.dest, &o, NULL, &err), &err);
	path = path_of(s.dest, "sparse");
	assert_int_equal(stat(path, &st), 0);
	assert_int_equal(st.st_size, 8u << 20);
	assert_true((uint64_t)st.st_blocks * 512 < (1u << 20));
	close(fd);
	fd = open(path, O_RDONLY);
	assert_true(fd >= 0);
	assert_int_equal(pread(fd, buf, 4096, 4u << 20), 4096);
	assert_int_equal(buf[4095], 'B');
	close(fd);
	free(path);
	free(tar);
	free(z);
	wsnap_index_free(idx);
	wsnap_policy_release(&p);
	scene_release(&s);
}

/* ---- deep trees: the parent cache closes and reopens ----------------- */

static void test_export_deep_tree_past_the_cache(void **state)
{
	struct ts_archive *a = ts_archive_new();
	struct wsnap_index *idx;
	struct wsnap_error err;
	struct scene s;
	char path[400], again[400], file[420];
	size_t n = 0;
	int depth, flags;

	/* d/d/.../d, 150 levels: more than WSNAP_EXPORT_MAX_CACHED_FDS */
	for (depth = 0; depth < 150; depth++) {
		if (depth)
			path[n++] = '/';
		path[n++] = 'd';
		path[n] = '\0';
		if (depth % 10 == 9) {
			snprintf(file, sizeof(file), "%s/f", path);
			ts_add_file(a, file, 0644, "deep", 4);
		}
	}
	/* back near the top after the deep walk, then deep again */
	ts_add_file(a, "d/d/top", 0644, "top", 3);
	snprintf(again, sizeof(again), "%.179s/again", path);
	ts_add_file(a, again, 0644, "again", 5);
	idx = index_of(a);
	for (flags = 0; flags <= 1; flags++) {
		scene_init(&s, false);
		expect_ok(export_flags(idx, s.dest,
				       flags ? WSNAP_EXPORT_NO_OPENAT2 : 0,
				       &err),
			  &err);
		assert_file(s.dest, "d/d/top", "top", 0644);
		assert_file(s.dest, again, "again", 0644);
		assert_file(s.dest, "d/d/d/d/d/d/d/d/d/d/f", "deep", 0644);
		snprintf(file, sizeof(file), "%s/f", path);
		assert_file(s.dest, file, "deep", 0644);
		scene_release(&s);
	}
	wsnap_index_free(idx);
}

/* ---- a full disk (7.5, 7.9) ------------------------------------------ */

static void test_export_full_disk(void **state)
{
	struct ts_archive *a = ts_archive_new();
	static char big[2u << 20];
	struct wsnap_index *idx;
	struct wsnap_error err;
	enum wsnap_status fresh_st, merge_st;
	int fresh_errno, merge_errno, entries = 0;
	struct stat st;
	struct dirent *de;
	char *mnt, *fresh, *merge, *partial;
	DIR *d;
	int have_partial;

	memset(big, 'x', sizeof(big));
	ts_add_file(a, "small", 0644, "small", 5);
	ts_add_file(a, "bin/big", 0755, big, sizeof(big));
	idx = index_of(a);
	mnt = ts_tempdir();
	if (mount("wsnap-test", mnt, "tmpfs", 0, "size=512k") != 0) {
		rmdir(mnt);
		free(mnt);
		wsnap_index_free(idx);
		skip(); /* needs root; the e2e test covers it as root */
		return;
	}
	fresh = path_of(mnt, "fresh");
	merge = path_of(mnt, "merge");
	partial = path_of(merge, "bin/big");

	/* Fresh destination: nothing left at all. */
	fresh_st = export(idx, fresh, &err);
	fresh_errno = err.errnum;
	d = opendir(mnt);
	while (d && (de = readdir(d)) != NULL)
		if (strcmp(de->d_name, ".") && strcmp(de->d_name, ".."))
			entries++;
	if (d)
		closedir(d);

	/* Existing destination: the partial file stays private. */
	mkdir(merge, 0755);
	merge_st = export(idx, merge, &err);
	merge_errno = err.errnum;
	have_partial = lstat(partial, &st) == 0;

	umount2(mnt, MNT_DETACH);
	rmdir(mnt);

	assert_int_equal(fresh_st, WSNAP_IO);
	assert_int_equal(fresh_errno, ENOSPC);
	assert_int_equal(entries, 0);
	assert_int_equal(merge_st, WSNAP_IO);
	assert_int_equal(merge_errno, ENOSPC);
	assert_true(have_partial);
	assert_true(S_ISREG(st.st_mode));
	assert_int_equal(st.st_mode & 07777, 0600);
	assert_true(st.st_size < (off_t)sizeof(big));
	free(fresh);
	free(merge);
	free(partial);
	free(mnt);
	wsnap_index_free(idx);
}

/* ---- interruption ---------------------------------------------------- */

struct cancel_after {
	volatile sig_atomic_t flag;
	int left;
};

static void cancel_node(void *ctx, const struct wsnap_node *n)
{
	struct cancel_after *c = ctx;

	if (--c->left == 0)
		c->flag = 1;
}

/* A signal midway (the flag a handler sets): the fresh destination goes. */
static void test_export_interrupted_leaves_nothing(void **state)
{
	struct ts_archive *a = ts_archive_new();
	struct cancel_after c = {.left = 5};
	struct wsnap_export_opts o = {.node = cancel_node, .ctx = &c};
	struct wsnap_index *idx;
	struct wsnap_error err;
	struct dirent *de;
	struct scene s;
	char name[32];
	int i, n = 0;
	DIR *d;

	o.cancel = &c.flag;
	for (i = 0; i < 20; i++) {
		snprintf(name, sizeof(name), "d/f%02d", i);
		ts_add_file(a, name, 0644, "x", 1);
	}
	idx = index_of(a);
	scene_init(&s, false);
	assert_int_equal(wsnap_export_run(idx, s.dest, &o, NULL, &err),
			 WSNAP_IO);
	assert_int_equal(err.errnum, EINTR);
	assert_string_equal(err.reason, "interrupted");
	d = opendir(s.root);
	assert_non_null(d);
	while ((de = readdir(d)) != NULL)
		if (strcmp(de->d_name, ".") && strcmp(de->d_name, ".."))
			n++;
	closedir(d);
	assert_int_equal(n, 1); /* only 'outside' */
	wsnap_index_free(idx);
	scene_release(&s);
}

/* ---- a concurrent attacker ------------------------------------------- */

/*
 * While exports of a few thousand files run into an existing destination,
 * another thread keeps replacing directories inside it (the one the files
 * go to, and one of its subdirectories) by a symlink to the outside
 * directory, and back. Exports fail or succeed as the race goes; nothing
 * may ever appear outside. Runs WSNAP_RACE_SECONDS (default 3) seconds,
 * alternating openat2 and the per-component walk.
 */
struct attacker {
	const struct scene *s;
	atomic_int stop;
	unsigned long swaps;
};

static void *attack(void *arg)
{
	struct attacker *at = arg;
	const char *targets[] = {"sub", "sub/d03", "sub/d07/e"};
	unsigned i = 0;
	int destfd = open(at->s->dest, O_RDONLY | O_DIRECTORY);

	while (destfd >= 0 && !atomic_load(&at->stop)) {
		const char *t = targets[i++ % 3];
		char away[32];

		/* The real directory is moved aside inside the destination:
		 * the attack is the symlink in its place. A fresh name each
		 * time: one the exporter still writes into cannot be removed,
		 * and would block every later swap. */
		snprintf(away, sizeof(away), ".away%u", i);
		if (renameat(destfd, t, destfd, away) == 0) {
			if (symlinkat(at->s->outside, destfd, t) == 0) {
				at->swaps++;
				usleep(i % 7 * 50);
				unlinkat(destfd, t, 0);
			}
			if (renameat(destfd, away, destfd, t) != 0)
				wsnap_fs_remove_tree(destfd, away, 0, NULL);
		}
		usleep(i % 5 * 20);
	}
	if (destfd >= 0)
		close(destfd);
	return NULL;
}

static void test_export_concurrent_symlink_swaps(void **state)
{
	struct ts_archive *a = ts_archive_new();
	struct wsnap_index *idx;
	struct wsnap_error err;
	struct attacker at;
	struct scene s;
	pthread_t t;
	time_t end;
	const char *env = getenv("WSNAP_RACE_SECONDS");
	int seconds = env ? atoi(env) : 3;
	unsigned long runs = 0, ok = 0, rejected = 0, io = 0;
	int dnum, fnum;
	char name[64];

	for (dnum = 0; dnum < 10; dnum++) {
		snprintf(name, sizeof(name), "sub/d%02d", dnum);
		ts_add_dir(a, name, 0755);
		for (fnum = 0; fnum < 300; fnum++) {
			snprintf(name, sizeof(name), "sub/d%02d/e/f%03d", dnum,
				 fnum);
			ts_add_file(a, name, 0644, "payload", 7);
		}
	}
	idx = index_of(a);
	scene_init(&s, true);
	expect_ok(export(idx, s.dest, &err), &err);
	memset(&at, 0, sizeof(at));
	at.s = &s;
	assert_int_equal(pthread_create(&t, NULL, attack, &at), 0);
	end = time(NULL) + (seconds > 0 ? seconds : 1);
	while (time(NULL) < end) {
		enum wsnap_status st = export_flags(
			idx, s.dest, runs % 2 ? WSNAP_EXPORT_NO_OPENAT2 : 0,
			&err);

		runs++;
		if (st == WSNAP_OK)
			ok++;
		else if (st == WSNAP_REJECTED)
			rejected++;
		else
			io++;
	}
	atomic_store(&at.stop, 1);
	pthread_join(t, NULL);
	print_message("%d s: %lu exports (%lu ok, %lu rejected, %lu io), "
		      "%lu symlink swaps\n",
		      seconds, runs, ok, rejected, io, at.swaps);
	assert_true(at.swaps > 0);
	outside_untouched(&s);
	wsnap_index_free(idx);
	scene_release(&s);
}

/* ---- pass 1 on several threads ------------------------------------- */

static enum wsnap_status export_workers(const struct wsnap_index *idx,
					const char *dest, unsigned workers,
					struct wsnap_export_stats *st,
					struct wsnap_error *err)
{
	struct wsnap_export_opts o = {.workers = workers};

	wsnap_error_clear(err);
	return wsnap_export_run(idx, dest, &o, st, err);
}

/* Trees a and b hold the same entries: type, mode, size, bytes, target,
 * mtime. Returns the number of entries compared. */
static unsigned same_tree(const char *a, const char *b)
{
	DIR *d = opendir(a);
	struct dirent *de;
	unsigned n = 0;

	assert_non_null(d);
	while ((de = readdir(d)) != NULL) {
		char *pa, *pb;
		struct stat sa, sb;

		if (strcmp(de->d_name, ".") == 0 ||
		    strcmp(de->d_name, "..") == 0)
			continue;
		pa = path_of(a, de->d_name);
		pb = path_of(b, de->d_name);
		assert_int_equal(lstat(pa, &sa), 0);
		if (lstat(pb, &sb) != 0)
			fail_msg("%s missing", pb);
		assert_int_equal(sa.st_mode, sb.st_mode);
		assert_int_equal(sa.st_size, sb.st_size);
		assert_int_equal(sa.st_mtim.tv_sec, sb.st_mtim.tv_sec);
		assert_int_equal(sa.st_mtim.tv_nsec, sb.st_mtim.tv_nsec);
		if (S_ISDIR(sa.st_mode)) {
			n += same_tree(pa, pb);
		} else if (S_ISLNK(sa.st_mode)) {
			char ta[256], tb[256];
			ssize_t la = readlink(pa, ta, sizeof(ta));
			ssize_t lb = readlink(pb, tb, sizeof(tb));

			assert_int_equal(la, lb);
			assert_memory_equal(ta, tb, (size_t)la);
		} else {
			char *ca = malloc((size_t)sa.st_size + 1);
			char *cb = malloc((size_t)sa.st_size + 1);
			int fa = open(pa, O_RDONLY), fb = open(pb, O_RDONLY);

			assert_non_null(ca);
			assert_non_null(cb);
			assert_int_equal(read(fa, ca, (size_t)sa.st_size + 1),
					 sa.st_size);
			assert_int_equal(read(fb, cb, (size_t)sa.st_size + 1),
					 sa.st_size);
			assert_memory_equal(ca, cb, (size_t)sa.st_size);
			close(fa);
			close(fb);
			free(ca);
			free(cb);
		}
		n++;
		free(pa);
		free(pb);
	}
	closedir(d);
	return n;
}

/* A tree of many directories, files of every size class and mode, nested
 * implicit directories, symlinks and a big file: written on four threads
 * it is the tree written on one, entry by entry, with the same stats. */
static void test_export_parallel_same_as_sequential(void **state)
{
	static const unsigned modes[] = {0644, 0755, 0600, 0444, 0700};
	struct ts_archive *a = ts_archive_new();
	struct wsnap_export_stats s1, s4;
	struct wsnap_index *idx;
	struct wsnap_error err;
	static char data[200u << 10];
	char name[64], *seq, *par, *root;
	unsigned d, f, i;

	for (i = 0; i < sizeof(data); i++)
		data[i] = (char)(i * 7 + i / 251);
	for (d = 0; d < 12; d++) {
		snprintf(name, sizeof(name), "p%02u", d);
		ts_set_mtime(a, 1600000000 + d, (long)d * 1000);
		ts_add_dir(a, name, 0755);
		for (f = 0; f < 150; f++) {
			snprintf(name, sizeof(name), "p%02u/f%03u", d, f);
			ts_set_mtime(a, 1700000000 + f, (long)f * 7);
			ts_add_file(a, name, modes[f % 5], data + f,
				    (f * 37 + d) % 3000);
		}
		snprintf(name, sizeof(name), "p%02u/deep/x/leaf", d);
		ts_add_file(a, name, 0644, "leaf", 4);
		snprintf(name, sizeof(name), "p%02u/link", d);
		ts_add_symlink(a, name, "f000");
	}
	ts_add_file(a, "big/one", 0644, data, sizeof(data));
	ts_add_dir(a, "empty", 0700);
	idx = index_of(a);
	root = ts_tempdir();
	seq = path_of(root, "seq");
	par = path_of(root, "par");
	expect_ok(export_workers(idx, seq, 1, &s1, &err), &err);
	expect_ok(export_workers(idx, par, 4, &s4, &err), &err);
	assert_int_equal(s4.files, 12 * 151 + 1);
	assert_int_equal(s1.files, s4.files);
	assert_int_equal(s1.bytes, s4.bytes);
	assert_int_equal(s1.members, s4.members);
	assert_int_equal(s1.dirs, s4.dirs);
	assert_int_equal(s1.symlinks, s4.symlinks);
	/* 12 x (dir, 151 files, deep, deep/x, link) + big, big/one, empty */
	assert_int_equal(same_tree(seq, par), 12 * 155 + 3);
	ts_rmtree(root);
	free(root);
	free(seq);
	free(par);
	wsnap_index_free(idx);
}

/* Obstacles (directories where files are wanted) in several directories
 * written by different threads: whatever the interleaving, the error is
 * the earliest file's in archive order. */
static void test_export_parallel_earliest_error(void **state)
{
	/* the thread on q01 fails at once, the one on q00 later */
	static const char *const obstacles[] = {"q01/f000", "q00/f050",
						"q06/f001"};
	struct ts_archive *a = ts_archive_new();
	struct wsnap_index *idx;
	struct wsnap_error err;
	struct scene s;
	char name[64];
	unsigned d, f, i, round;

	for (d = 0; d < 8; d++)
		for (f = 0; f < 100; f++) {
			snprintf(name, sizeof(name), "q%02u/f%03u", d, f);
			ts_add_file(a, name, 0644, "x", 1);
		}
	idx = index_of(a);
	for (round = 0; round < 5; round++) {
		scene_init(&s, true);
		for (i = 0; i < 3; i++) {
			char *p = path_of(s.dest, obstacles[i]), *slash;

			slash = strrchr(p, '/');
			*slash = '\0';
			mkdir(p, 0755);
			*slash = '/';
			assert_int_equal(mkdir(p, 0755), 0);
			free(p);
		}
		expect_rejected(export_workers(idx, s.dest, 4, NULL, &err),
				&err, "q00/f050",
				WSNAP_REASON_DIRECTORY_EXISTS ": q00/f050");
		/* the files before it were all written */
		assert_file(s.dest, "q00/f049", "x", 0644);
		outside_untouched(&s);
		scene_release(&s);
	}
	wsnap_index_free(idx);
}

/* ---- destinations that fold case (7.7) ------------------------------ */

/* A probe for tests: a directory folds when it holds '.folds', or always
 * when fold_all is set; calls counts the probes. */
static bool fold_all;
static int fold_calls;

static int fake_folds(int fd)
{
	fold_calls++;
	return fold_all ||
	       faccessat(fd, ".folds", F_OK, AT_SYMLINK_NOFOLLOW) == 0;
}

static enum wsnap_status export_folding(const struct wsnap_index *idx,
					const char *dest, bool all,
					struct wsnap_export_stats *st,
					struct wsnap_error *err)
{
	struct wsnap_export_opts o = {.dir_folds = fake_folds};

	fold_all = all;
	fold_calls = 0;
	wsnap_error_clear(err);
	return wsnap_export_run(idx, dest, &o, st, err);
}

/* Entries in dir, '.folds' not counted. */
static int entries_of(const char *dir)
{
	DIR *d = opendir(dir);
	struct dirent *de;
	int n = 0;

	assert_non_null(d);
	while ((de = readdir(d)) != NULL)
		n += strcmp(de->d_name, ".") && strcmp(de->d_name, "..") &&
		     strcmp(de->d_name, ".folds");
	closedir(d);
	return n;
}

static void test_export_case_collision_refused(void **state)
{
	struct ts_archive *a = ts_archive_new();
	struct wsnap_export_stats st;
	struct wsnap_index *idx;
	struct wsnap_error err;
	struct scene s;

	ts_add_file(a, "x", 0644, "x", 1);
	ts_add_file(a, "README", 0644, "upper", 5);
	ts_add_file(a, "readme", 0644, "lower", 5);
	idx = index_of(a);
	/* fresh: refused before anything is written, nothing left */
	scene_init(&s, false);
	expect_rejected(export_folding(idx, s.dest, true, &st, &err), &err,
			"readme", "destination folds case: README");
	assert_false(exists_rel(s.root, "dest"));
	assert_int_equal(entries_of(s.root), 1); /* outside */
	assert_false(st.openat2);
	scene_release(&s);
	/* existing, and a byte-comparing destination takes it */
	scene_init(&s, true);
	expect_rejected(export_folding(idx, s.dest, true, NULL, &err), &err,
			"readme", "destination folds case: README");
	assert_int_equal(entries_of(s.dest), 0);
	expect_ok(export_folding(idx, s.dest, false, NULL, &err), &err);
	assert_file(s.dest, "README", "upper", 0644);
	assert_file(s.dest, "readme", "lower", 0644);
	outside_untouched(&s);
	scene_release(&s);
	wsnap_index_free(idx);
}

static void test_export_case_unicode_collisions(void **state)
{
	struct ts_archive *a = ts_archive_new();
	struct wsnap_index *idx;
	struct wsnap_error err;
	struct scene s;

	/* NFC and NFD spellings of one name, implicit directories (no
	 * archive order: the later in byte order is named) */
	ts_add_file(a, "d/\xc3\xa9/f", 0644, "nfc", 3);
	ts_add_file(a, "d/e\xcc\x81/g", 0644, "nfd", 3);
	idx = index_of(a);
	scene_init(&s, true);
	expect_rejected(export_folding(idx, s.dest, true, NULL, &err), &err,
			"d/\xc3\xa9", "destination folds case: d/e\xcc\x81");
	scene_release(&s);
	wsnap_index_free(idx);
}

static void test_export_case_dependent_symlink_refused(void **state)
{
	struct ts_archive *a = ts_archive_new();
	struct wsnap_index *idx;
	struct wsnap_error err;
	struct scene s;

	/* safe both ways, but only a folding filesystem finds Dir */
	ts_add_dir(a, "Dir", 0755);
	ts_add_file(a, "Dir/f", 0644, "f", 1);
	ts_add_symlink(a, "l", "dir/f");
	idx = index_of(a);
	scene_init(&s, true);
	expect_rejected(export_folding(idx, s.dest, true, NULL, &err), &err,
			"l", "destination folds case: Dir");
	assert_int_equal(entries_of(s.dest), 0);
	expect_ok(export_folding(idx, s.dest, false, NULL, &err), &err);
	assert_file(s.dest, "Dir/f", "f", 0644);
	scene_release(&s);
	wsnap_index_free(idx);
}

static void test_export_case_per_directory(void **state)
{
	struct ts_archive *a = ts_archive_new();
	struct wsnap_index *idx;
	struct wsnap_error err;
	struct scene s;
	char *sub, *marker;

	ts_add_file(a, "other/A", 0644, "1", 1);
	ts_add_file(a, "other/a", 0644, "2", 1);
	ts_add_file(a, "sub/f", 0644, "3", 1);
	idx = index_of(a);
	/* a pre-existing subdirectory folds (ext4 casefold is per
	 * directory): only the hazards inside it matter */
	scene_init(&s, true);
	sub = path_of(s.dest, "sub");
	assert_int_equal(mkdir(sub, 0755), 0);
	marker = ts_write_file(sub, ".folds", "", 0);
	expect_ok(export_folding(idx, s.dest, false, NULL, &err), &err);
	assert_file(s.dest, "other/a", "2", 0644);
	assert_file(s.dest, "sub/f", "3", 0644);
	wsnap_index_free(idx);
	a = ts_archive_new();
	ts_add_file(a, "first", 0644, "1", 1);
	ts_add_file(a, "sub/B", 0644, "2", 1);
	ts_add_file(a, "sub/b", 0644, "3", 1);
	idx = index_of(a);
	expect_rejected(export_folding(idx, s.dest, false, NULL, &err), &err,
			"sub/b", "destination folds case: sub/B");
	assert_false(exists_rel(s.dest, "sub/B"));
	assert_true(fold_calls >= 2); /* the root, then sub */
	free(marker);
	free(sub);
	scene_release(&s);
	wsnap_index_free(idx);
}

static void test_export_case_no_hazard_no_probe(void **state)
{
	struct ts_archive *a = ts_archive_new();
	struct wsnap_index *idx;
	struct wsnap_error err;
	struct scene s;

	ts_add_file(a, "a/README", 0644, "r", 1);
	ts_add_file(a, "b/readme", 0644, "r", 1);
	ts_add_symlink(a, "l", "a/README");
	idx = index_of(a);
	scene_init(&s, false);
	expect_ok(export_folding(idx, s.dest, true, NULL, &err), &err);
	assert_int_equal(fold_calls, 0);
	assert_file(s.dest, "b/readme", "r", 0644);
	scene_release(&s);
	wsnap_index_free(idx);
}

/* A casefolded directory on a tmpfs mounted with casefold (Linux 6.13 with
 * CONFIG_UNICODE): 1 when the probe says it folds, -1 when unavailable. */
static int probe_casefold_tmpfs(const char *mnt)
{
	char *sub = path_of(mnt, "cf");
	int fd, flags = 0, r = -1;

	if (mount("wsnap-test", mnt, "tmpfs", 0, "size=64k,casefold") != 0) {
		free(sub);
		return -1;
	}
	if (mkdir(sub, 0755) == 0 &&
	    (fd = open(sub, O_RDONLY | O_DIRECTORY)) >= 0) {
		if (ioctl(fd, FS_IOC_GETFLAGS, &flags) == 0) {
			flags |= FS_CASEFOLD_FL;
			if (ioctl(fd, FS_IOC_SETFLAGS, &flags) == 0)
				r = wsnap_export_dir_folds(fd);
		}
		close(fd);
	}
	umount2(mnt, MNT_DETACH);
	free(sub);
	return r;
}

static void test_export_case_real_probe(void **state)
{
	char *mnt = ts_tempdir();
	int p[2], cf;

	/* tmpfs compares bytes unless a directory is casefolded */
	if (mount("wsnap-test", mnt, "tmpfs", 0, "size=64k") == 0) {
		int m = open(mnt, O_RDONLY | O_DIRECTORY);

		assert_true(m >= 0);
		assert_int_equal(wsnap_export_dir_folds(m), 0);
		close(m);
		umount2(mnt, MNT_DETACH);
	}
	cf = probe_casefold_tmpfs(mnt);
	if (cf >= 0)
		assert_int_equal(cf, 1);
	/* what cannot be told folds: a pipe's filesystem, a bad fd */
	assert_int_equal(pipe(p), 0);
	assert_int_equal(wsnap_export_dir_folds(p[0]), 1);
	close(p[0]);
	close(p[1]);
	assert_int_equal(wsnap_export_dir_folds(-1), 1);
	rmdir(mnt);
	free(mnt);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_export_fresh_destination),
		cmocka_unit_test(test_export_parallel_same_as_sequential),
		cmocka_unit_test(test_export_parallel_earliest_error),
		cmocka_unit_test(test_export_without_openat2),
		cmocka_unit_test(test_export_without_copy_file_range),
		cmocka_unit_test(test_export_fresh_leaves_no_temporary),
		cmocka_unit_test(test_export_stats_count_what_was_done),
		cmocka_unit_test(test_export_leaf_table_every_cell),
		cmocka_unit_test(test_export_twice_replaces),
		cmocka_unit_test(test_export_parent_symlink_outside_rejected),
		cmocka_unit_test(test_export_parent_symlink_inside_rejected),
		cmocka_unit_test(test_export_deep_parent_symlink_rejected),
		cmocka_unit_test(test_export_dir_member_replaces_symlink_first),
		cmocka_unit_test(test_export_parent_not_directory),
		cmocka_unit_test(test_export_parent_fifo_not_opened),
		cmocka_unit_test(test_export_modes_umask_022),
		cmocka_unit_test(test_export_modes_umask_077),
		cmocka_unit_test(test_export_modes_umask_000),
		cmocka_unit_test(test_export_directory_mtimes_after_children),
		cmocka_unit_test(test_export_existing_implicit_dir_left_alone),
		cmocka_unit_test(test_export_root_entry_metadata),
		cmocka_unit_test(test_export_from_pipe),
		cmocka_unit_test(test_export_from_gzip_pipe),
		cmocka_unit_test(test_export_from_zstd_pipe),
		cmocka_unit_test(test_export_sparse_holes_stay_holes),
		cmocka_unit_test(test_export_reread_uncompressed_file),
		cmocka_unit_test(test_export_reread_compressed_file),
		cmocka_unit_test(test_export_reread_sparse_gzip),
		cmocka_unit_test(test_export_deep_tree_past_the_cache),
		cmocka_unit_test(test_export_full_disk),
		cmocka_unit_test(test_export_interrupted_leaves_nothing),
		cmocka_unit_test(test_export_concurrent_symlink_swaps),
		cmocka_unit_test(test_export_case_collision_refused),
		cmocka_unit_test(test_export_case_unicode_collisions),
		cmocka_unit_test(test_export_case_dependent_symlink_refused),
		cmocka_unit_test(test_export_case_per_directory),
		cmocka_unit_test(test_export_case_no_hazard_no_probe),
		cmocka_unit_test(test_export_case_real_probe),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
