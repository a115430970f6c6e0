/* SPDX-License-Identifier: MIT */
/*
 * Unit tests of the FUSE layer's answers (fs/fs.c): the wsnap_fs_do_*()
 * functions against an index built from an archive made in memory. No
 * mount is needed; tests/e2e/e2e_mount*.sh mount for real.
 *
 * Over 800 lines: one test program per unit (the style guide); the cases
 * share the index and reply fixtures here.
 */
#include <errno.h>
#include <fcntl.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <cmocka.h>

#include "fs.h"
#include "index.h"
#include "support.h"
#include "array.h"

#define BIG_LEN (3u << 20) /* spans several reads of 128 KiB */
#define UID	1234
#define GID	5678

struct fixture {
	struct wsnap_index *idx;
	struct wsnap_fs fs;
	int fd; /* the archive (memfd) */
	unsigned char *big;
};

/* Deterministic content: byte i of a file seeded s. */
static unsigned char pattern(size_t i, unsigned s)
{
	return (unsigned char)((i * 131u + (i >> 9) * 7u + s) & 0xff);
}

static unsigned char *make_big(void)
{
	unsigned char *b = malloc(BIG_LEN);
	size_t i;

	assert_non_null(b);
	for (i = 0; i < BIG_LEN; i++)
		b[i] = pattern(i, 3);
	return b;
}

/*
 * The archive of most tests: explicit and implicit directories, files of
 * the modes of policy.md 7.6, an empty file, a big file, symlinks, a
 * sub-second mtime.
 */
static unsigned char *make_archive(const unsigned char *big, size_t *len)
{
	struct ts_archive *a = ts_archive_new();

	ts_set_mtime(a, 1700000000, 123456789);
	ts_add_dir(a, "./", 0700);
	ts_add_dir(a, "./src/", 0700);
	ts_add_dir(a, "./src/pkg", 0777);
	ts_add_file(a, "./src/pkg/main.py", 0644, "print(1)\n", 9);
	ts_add_file(a, "./src/run.sh", 0777, "#!/bin/sh\n", 10);
	ts_add_file(a, "ro.txt", 0444, "ro", 2);
	ts_add_file(a, "none", 0000, "n", 1);
	ts_add_file(a, "setuid", 04755, "s", 1);
	ts_add_file(a, "odd", 0655, "o", 1);
	ts_add_file(a, "empty", 0644, "", 0);
	ts_set_mtime(a, 1600000000, 0);
	ts_add_file(a, "implicit/deep/f.txt", 0600, "deep", 4);
	ts_add_file(a, "big.bin", 0644, big, BIG_LEN);
	ts_add_symlink(a, "link", "src/pkg/main.py");
	ts_add_symlink(a, "src/up", "../ro.txt");
	return ts_archive_finish(a, 1, len);
}

static struct fixture *fixture_from(const unsigned char *data, size_t len,
				    unsigned char *big)
{
	struct fixture *f = calloc(1, sizeof(*f));
	struct wsnap_reader_opts opts = {.keep_data = true};
	static struct wsnap_error err;
	struct wsnap_policy policy;

	assert_non_null(f);
	f->big = big;
	f->fd = ts_memfd(data, len);
	wsnap_policy_init(&policy);
	if (wsnap_index_build(&f->idx, f->fd, &policy, &opts, &err) != WSNAP_OK)
		fail_msg("index build: '%s': %s", err.member, err.reason);
	wsnap_policy_release(&policy);
	wsnap_fs_init(&f->fs, f->idx, UID, GID);
	return f;
}

static int setup_with(void **state, const char *filter)
{
	unsigned char *big = make_big();
	size_t len, zlen;
	unsigned char *data = make_archive(big, &len);

	if (filter) {
		unsigned char *z = ts_compress(data, len, filter, &zlen);

		free(data);
		data = z;
		len = zlen;
	}
	*state = fixture_from(data, len, big);
	free(data);
	return 0;
}

static int setup_plain(void **state)
{
	return setup_with(state, NULL);
}

static int setup_gzip(void **state)
{
	return setup_with(state, "gzip");
}

static int setup_bzip2(void **state)
{
	return setup_with(state, "bzip2");
}

static int teardown(void **state)
{
	struct fixture *f = *state;

	wsnap_index_free(f->idx);
	close(f->fd);
	free(f->big);
	free(f);
	return 0;
}

/* Looks a path up component by component, as the kernel does. */
static fuse_ino_t walk(struct fixture *f, const char *path)
{
	char buf[256], *p, *slash;
	fuse_ino_t ino = 1;

	snprintf(buf, sizeof(buf), "%s", path);
	for (p = buf; p && *p; p = slash) {
		struct fuse_entry_param e;

		slash = strchr(p, '/');
		if (slash)
			*slash++ = '\0';
		assert_int_equal(wsnap_fs_do_lookup(&f->fs, ino, p, &e), 0);
		ino = e.ino;
	}
	return ino;
}

static struct stat attr_of(struct fixture *f, const char *path)
{
	struct stat st;

	assert_int_equal(wsnap_fs_do_getattr(&f->fs, walk(f, path), &st), 0);
	return st;
}

static void test_fs_lookup_finds_entries_with_attributes(void **state)
{
	struct fixture *f = *state;
	struct fuse_entry_param e;

	assert_int_equal(wsnap_fs_do_lookup(&f->fs, 1, "src", &e), 0);
	assert_true(e.ino > 1);
	assert_true(S_ISDIR(e.attr.st_mode));
	assert_int_equal(e.attr.st_ino, e.ino);
	assert_true(e.entry_timeout >= 3600);
	assert_true(e.attr_timeout >= 3600);
	assert_int_equal(e.generation, 0);
	assert_int_equal(wsnap_fs_do_lookup(&f->fs, e.ino, "pkg", &e), 0);
	assert_int_equal(wsnap_fs_do_lookup(&f->fs, e.ino, "main.py", &e), 0);
	assert_true(S_ISREG(e.attr.st_mode));
	assert_int_equal(e.attr.st_size, 9);
}

static void test_fs_lookup_miss_is_cached_negative_entry(void **state)
{
	struct fixture *f = *state;
	struct fuse_entry_param e;

	assert_int_equal(wsnap_fs_do_lookup(&f->fs, 1, "nope", &e), ENOENT);
	assert_int_equal(e.ino, 0);
	assert_true(e.entry_timeout >= 3600);
	/* a prefix of a name is not the name */
	assert_int_equal(wsnap_fs_do_lookup(&f->fs, 1, "sr", &e), ENOENT);
	assert_int_equal(wsnap_fs_do_lookup(&f->fs, walk(f, "src"), "pk", &e),
			 ENOENT);
}

static void test_fs_lookup_in_non_directory_fails(void **state)
{
	struct fixture *f = *state;
	struct fuse_entry_param e;

	assert_int_equal(wsnap_fs_do_lookup(&f->fs, walk(f, "ro.txt"), "x", &e),
			 ENOTDIR);
	assert_int_equal(wsnap_fs_do_lookup(&f->fs, 999999, "x", &e), ENOENT);
}

static void test_fs_lookup_dot_and_dotdot(void **state)
{
	struct fixture *f = *state;
	fuse_ino_t pkg = walk(f, "src/pkg");
	struct fuse_entry_param e;

	assert_int_equal(wsnap_fs_do_lookup(&f->fs, pkg, ".", &e), 0);
	assert_int_equal(e.ino, pkg);
	assert_int_equal(wsnap_fs_do_lookup(&f->fs, pkg, "..", &e), 0);
	assert_int_equal(e.ino, walk(f, "src"));
	assert_int_equal(wsnap_fs_do_lookup(&f->fs, 1, "..", &e), 0);
	assert_int_equal(e.ino, 1);
}

/* policy.md 7.6 and section 9: the presented, sanitized modes. */
static void test_fs_getattr_presents_sanitized_modes(void **state)
{
	struct fixture *f = *state;

	assert_int_equal(attr_of(f, "src/pkg/main.py").st_mode, S_IFREG | 0644);
	assert_int_equal(attr_of(f, "src/run.sh").st_mode, S_IFREG | 0755);
	assert_int_equal(attr_of(f, "ro.txt").st_mode, S_IFREG | 0644);
	assert_int_equal(attr_of(f, "none").st_mode, S_IFREG | 0600);
	assert_int_equal(attr_of(f, "setuid").st_mode, S_IFREG | 0755);
	assert_int_equal(attr_of(f, "odd").st_mode, S_IFREG | 0644);
	assert_int_equal(attr_of(f, "src").st_mode, S_IFDIR | 0755);
	assert_int_equal(attr_of(f, "src/pkg").st_mode, S_IFDIR | 0755);
	assert_int_equal(attr_of(f, "implicit").st_mode, S_IFDIR | 0755);
	assert_int_equal(attr_of(f, "link").st_mode, S_IFLNK | 0777);
}

static void test_fs_getattr_owner_size_blocks_times(void **state)
{
	struct fixture *f = *state;
	struct stat st = attr_of(f, "src/pkg/main.py");

	assert_int_equal(st.st_uid, UID);
	assert_int_equal(st.st_gid, GID);
	assert_int_equal(st.st_nlink, 1);
	assert_int_equal(st.st_size, 9);
	assert_int_equal(st.st_blocks, 1);
	assert_int_equal(st.st_mtim.tv_sec, 1700000000);
	assert_int_equal(st.st_mtim.tv_nsec, 123456789);
	st = attr_of(f, "big.bin");
	assert_int_equal(st.st_size, BIG_LEN);
	assert_int_equal(st.st_blocks, BIG_LEN / 512);
	assert_int_equal(st.st_mtim.tv_sec, 1600000000);
	assert_int_equal(st.st_mtim.tv_nsec, 0);
	st = attr_of(f, "empty");
	assert_int_equal(st.st_size, 0);
	assert_int_equal(st.st_blocks, 0);
	st = attr_of(f, "link");
	assert_int_equal(st.st_size, strlen("src/pkg/main.py"));
	/* implicit directories: default metadata */
	st = attr_of(f, "implicit/deep");
	assert_int_equal(st.st_mtim.tv_sec, 0);
	assert_int_equal(st.st_size, WSNAP_DIR_SIZE);
	assert_int_equal(wsnap_fs_do_getattr(&f->fs, 999999, &st), ENOENT);
	assert_int_equal(wsnap_fs_do_getattr(&f->fs, 0, &st), ENOENT);
}

/* st_nlink of a directory is 2 + its subdirectories. */
static void test_fs_getattr_directory_nlink(void **state)
{
	struct fixture *f = *state;
	struct stat st;

	assert_int_equal(wsnap_fs_do_getattr(&f->fs, 1, &st), 0);
	assert_int_equal(st.st_nlink, 2 + 2); /* src, implicit */
	assert_int_equal(attr_of(f, "src").st_nlink, 2 + 1);
	assert_int_equal(attr_of(f, "src/pkg").st_nlink, 2);
	assert_int_equal(attr_of(f, "implicit").st_nlink, 3);
}

static void test_fs_readlink(void **state)
{
	struct fixture *f = *state;
	const char *target;

	assert_int_equal(wsnap_fs_do_readlink(&f->fs, walk(f, "link"), &target),
			 0);
	assert_string_equal(target, "src/pkg/main.py");
	assert_int_equal(
		wsnap_fs_do_readlink(&f->fs, walk(f, "src/up"), &target), 0);
	assert_string_equal(target, "../ro.txt");
	assert_int_equal(
		wsnap_fs_do_readlink(&f->fs, walk(f, "ro.txt"), &target),
		EINVAL);
	assert_int_equal(wsnap_fs_do_readlink(&f->fs, 1, &target), EINVAL);
}

struct listing {
	char names[32][64];
	fuse_ino_t inos[32];
	mode_t modes[32];
	off_t next[32];
	int count;
	int stop_after; /* report "full" after this many entries (0: never) */
};

static int collect(void *ctx, const char *name,
		   const struct fuse_entry_param *e, off_t next)
{
	struct listing *l = ctx;

	if (l->stop_after && l->count == l->stop_after)
		return 1;
	assert_true(l->count < 32);
	snprintf(l->names[l->count], sizeof(l->names[0]), "%s", name);
	l->inos[l->count] = e->ino;
	l->modes[l->count] = e->attr.st_mode;
	l->next[l->count] = next;
	l->count++;
	return 0;
}

static void test_fs_readdir_lists_dots_then_sorted_children(void **state)
{
	struct fixture *f = *state;
	static const char *const want[] = {
		".",	"..",  "big.bin", "empty",  "implicit", "link",
		"none", "odd", "ro.txt",  "setuid", "src",
	};
	struct listing l = {0};
	size_t i;

	assert_int_equal(wsnap_fs_do_opendir(&f->fs, 1), 0);
	assert_int_equal(wsnap_fs_do_readdir(&f->fs, 1, 0, false, collect, &l),
			 0);
	assert_int_equal(l.count, ARRAY_SIZE(want));
	for (i = 0; i < ARRAY_SIZE(want); i++) {
		assert_string_equal(l.names[i], want[i]);
		assert_int_equal(l.next[i], (off_t)i + 1);
		assert_int_equal(l.inos[i], 0); /* plain readdir: no lookups */
	}
	assert_true(S_ISDIR(l.modes[0]));
	assert_true(S_ISREG(l.modes[2]));
	assert_true(S_ISLNK(l.modes[5]));
}

static void test_fs_readdir_resumes_at_offset_and_stops_when_full(void **state)
{
	struct fixture *f = *state;
	struct listing l = {.stop_after = 3};
	struct listing rest = {0};

	assert_int_equal(wsnap_fs_do_readdir(&f->fs, 1, 0, false, collect, &l),
			 0);
	assert_int_equal(l.count, 3);
	assert_string_equal(l.names[2], "big.bin");
	/* the refused entry was not consumed: resume after the last taken */
	assert_int_equal(wsnap_fs_do_readdir(&f->fs, 1, l.next[2], false,
					     collect, &rest),
			 0);
	assert_string_equal(rest.names[0], "empty");
	assert_string_equal(rest.names[rest.count - 1], "src");
	/* past the end: nothing */
	memset(&rest, 0, sizeof(rest));
	assert_int_equal(
		wsnap_fs_do_readdir(&f->fs, 1, 1000, false, collect, &rest), 0);
	assert_int_equal(rest.count, 0);
	assert_int_equal(
		wsnap_fs_do_readdir(&f->fs, 1, -1, false, collect, &rest),
		EINVAL);
}

static void test_fs_readdirplus_gives_inos_except_dots(void **state)
{
	struct fixture *f = *state;
	fuse_ino_t src = walk(f, "src"), pkg = walk(f, "src/pkg");
	struct listing l = {0};
	fuse_ino_t run;

	/* before any file was looked up: directories only (fs.h) */
	assert_int_equal(wsnap_fs_do_readdir(&f->fs, src, 0, true, collect, &l),
			 0);
	assert_int_equal(l.count, 5); /* . .. pkg run.sh up */
	assert_int_equal(l.inos[0], 0);
	assert_int_equal(l.inos[1], 0);
	assert_string_equal(l.names[2], "pkg");
	assert_int_equal(l.inos[2], pkg);
	assert_string_equal(l.names[3], "run.sh");
	assert_int_equal(l.inos[3], 0);
	assert_true(S_ISREG(l.modes[3])); /* the type is there all the same */
	assert_string_equal(l.names[4], "up");
	assert_int_equal(l.inos[4], 0);
	assert_true(S_ISLNK(l.modes[4]));

	/* a file looked up: from then on, every entry but the dots */
	run = walk(f, "src/run.sh");
	memset(&l, 0, sizeof(l));
	assert_int_equal(wsnap_fs_do_readdir(&f->fs, src, 0, true, collect, &l),
			 0);
	assert_int_equal(l.count, 5);
	assert_int_equal(l.inos[0], 0);
	assert_int_equal(l.inos[1], 0);
	assert_int_equal(l.inos[2], pkg);
	assert_int_equal(l.inos[3], run);
	assert_int_equal(l.inos[4], walk(f, "src/up"));
}

/* Counts the entries of a listing that carry an ino. */
static int count_inos(void *ctx, const char *name,
		      const struct fuse_entry_param *e, off_t next)
{
	size_t *n = ctx;

	*n += e->ino != 0;
	return 0;
}

/* A directory larger than WSNAP_FS_PLUS_ENTRIES lists its files with
 * entries even before any file was looked up; one at the limit does not. */
static void test_fs_readdirplus_of_large_directory_gives_file_inos(void **state)
{
	struct ts_archive *a = ts_archive_new();
	struct fixture *f;
	unsigned char *data;
	fuse_ino_t big, small;
	size_t len, i, n = 0;
	char name[64];

	for (i = 0; i < WSNAP_FS_PLUS_ENTRIES + 1; i++) {
		snprintf(name, sizeof(name), "big/f%05zu", i);
		ts_add_file(a, name, 0644, "x", 1);
	}
	for (i = 0; i < WSNAP_FS_PLUS_ENTRIES; i++) {
		snprintf(name, sizeof(name), "small/f%05zu", i);
		ts_add_file(a, name, 0644, "x", 1);
	}
	data = ts_archive_finish(a, 1, &len);
	f = fixture_from(data, len, NULL);
	free(data);
	big = walk(f, "big");
	small = walk(f, "small");
	assert_int_equal(
		wsnap_fs_do_readdir(&f->fs, small, 0, true, count_inos, &n), 0);
	assert_int_equal(n, 0);
	assert_int_equal(
		wsnap_fs_do_readdir(&f->fs, big, 0, true, count_inos, &n), 0);
	assert_int_equal(n, WSNAP_FS_PLUS_ENTRIES + 1);
	*state = f;
}

static void test_fs_readdir_of_non_directory_fails(void **state)
{
	struct fixture *f = *state;
	struct listing l = {0};

	assert_int_equal(wsnap_fs_do_opendir(&f->fs, walk(f, "ro.txt")),
			 ENOTDIR);
	assert_int_equal(wsnap_fs_do_readdir(&f->fs, walk(f, "ro.txt"), 0,
					     false, collect, &l),
			 ENOTDIR);
	assert_int_equal(wsnap_fs_do_opendir(&f->fs, 999999), ENOENT);
}

static void test_fs_open_refuses_writes(void **state)
{
	struct fixture *f = *state;
	fuse_ino_t ino = walk(f, "ro.txt");

	assert_int_equal(wsnap_fs_do_open(&f->fs, ino, O_RDONLY), 0);
	assert_int_equal(wsnap_fs_do_open(&f->fs, ino, O_WRONLY), EROFS);
	assert_int_equal(wsnap_fs_do_open(&f->fs, ino, O_RDWR), EROFS);
	assert_int_equal(wsnap_fs_do_open(&f->fs, ino, O_RDONLY | O_TRUNC),
			 EROFS);
	assert_int_equal(wsnap_fs_do_open(&f->fs, 1, O_RDONLY), EISDIR);
	assert_int_equal(wsnap_fs_do_open(&f->fs, 999999, O_RDONLY), ENOENT);
}

/* Reads through the plan as the kernel would receive it. */
static size_t read_via(struct fixture *f, fuse_ino_t ino, size_t size,
		       off_t off, unsigned char *out, int *fd_plan)
{
	struct wsnap_fs_read r;
	struct fuse_bufvec dst = FUSE_BUFVEC_INIT(size);
	ssize_t n;

	assert_int_equal(wsnap_fs_do_read(&f->fs, ino, size, off, &r), 0);
	*fd_plan = (r.vec.buf[0].flags & FUSE_BUF_IS_FD) != 0;
	if (*fd_plan) {
		assert_int_equal(r.vec.buf[0].flags,
				 FUSE_BUF_IS_FD | FUSE_BUF_FD_SEEK);
		assert_int_equal(r.vec.buf[0].fd, wsnap_index_data_fd(f->idx));
	}
	dst.buf[0].mem = out;
	n = fuse_buf_copy(&dst, &r.vec, 0);
	assert_true(n >= 0);
	assert_int_equal((size_t)n, fuse_buf_size(&r.vec));
	wsnap_fs_read_release(&r);
	return (size_t)n;
}

/* Reads of the fixture's files; spliced says whether long reads of one
 * stored run may name the data descriptor (a spill file) or must come from
 * memory (the archive itself). */
static void check_reads(struct fixture *f, bool spliced)
{
	fuse_ino_t big = walk(f, "big.bin");
	static unsigned char buf[1 << 20];
	static const size_t offs[] = {0, 1, 4095, 131072, BIG_LEN - 200000};
	size_t i, n;
	int fd_plan;

	/* short: copied (libfuse would not splice it anyway) */
	n = read_via(f, walk(f, "src/pkg/main.py"), 4096, 0, buf, &fd_plan);
	assert_int_equal(n, 9);
	assert_memory_equal(buf, "print(1)\n", 9);
	assert_false(fd_plan);
	n = read_via(f, big, WSNAP_FS_SPLICE_MIN - 1, 5, buf, &fd_plan);
	assert_int_equal(n, WSNAP_FS_SPLICE_MIN - 1);
	assert_memory_equal(buf, f->big + 5, n);
	assert_false(fd_plan);
	/* long: spliced from a spill file, else from memory */
	for (i = 0; i < ARRAY_SIZE(offs); i++) {
		n = read_via(f, big, 131072, (off_t)offs[i], buf, &fd_plan);
		assert_int_equal(n, 131072);
		assert_memory_equal(buf, f->big + offs[i], n);
		assert_int_equal(fd_plan, spliced);
	}
	/* clipped at the end, empty at and past it */
	n = read_via(f, big, sizeof(buf), BIG_LEN - 1000, buf, &fd_plan);
	assert_int_equal(n, 1000);
	assert_memory_equal(buf, f->big + BIG_LEN - 1000, 1000);
	assert_int_equal(read_via(f, big, 4096, BIG_LEN, buf, &fd_plan), 0);
	assert_int_equal(read_via(f, big, 4096, BIG_LEN + 9, buf, &fd_plan), 0);
	assert_int_equal(read_via(f, walk(f, "empty"), 4096, 0, buf, &fd_plan),
			 0);
}

/*
 * A reply spliced from the archive hands the kernel
 * references to the archive's pages, which whoever may write the archive
 * can change after the check and before the reader gets them. The archive
 * itself is read into memory and checked after the read.
 */
static void test_fs_read_plain_archive_from_memory(void **state)
{
	struct fixture *f = *state;

	assert_false(wsnap_index_data_spilled(f->idx));
	check_reads(f, false);
}

/* gzip in a file is read in place through its seek points: from memory,
 * no spill. */
static void test_fs_read_gzip_archive_in_place(void **state)
{
	struct fixture *f = *state;
	struct wsnap_index_stats st;

	wsnap_index_stats(f->idx, &st);
	assert_string_equal(st.compression, "gzip");
	assert_false(wsnap_index_data_spilled(f->idx));
	assert_int_equal(wsnap_index_data_fd(f->idx), -1);
	assert_true(wsnap_index_has_data(f->idx));
	check_reads(f, false);
}

static void test_fs_read_compressed_archive_from_spill(void **state)
{
	struct fixture *f = *state;
	struct wsnap_index_stats st;

	wsnap_index_stats(f->idx, &st);
	/* bzip2 has no restart points: the data descriptor is not the
	 * archive, it is the spill file */
	assert_string_equal(st.compression, "bzip2");
	assert_int_not_equal(wsnap_index_data_fd(f->idx), f->fd);
	assert_true(wsnap_index_data_spilled(f->idx));
	check_reads(f, true);
}

static void test_fs_read_of_non_file_fails(void **state)
{
	struct fixture *f = *state;
	struct wsnap_fs_read r;

	assert_int_equal(wsnap_fs_do_read(&f->fs, 1, 10, 0, &r), EISDIR);
	wsnap_fs_read_release(&r);
	assert_int_equal(wsnap_fs_do_read(&f->fs, walk(f, "link"), 10, 0, &r),
			 EINVAL);
	wsnap_fs_read_release(&r);
	assert_int_equal(
		wsnap_fs_do_read(&f->fs, walk(f, "ro.txt"), 10, -1, &r),
		EINVAL);
	wsnap_fs_read_release(&r);
}

/* The archive truncated under a mounted index reads as EIO, not as wrong
 * bytes; everything that needs no data keeps working. */
static void test_fs_read_of_truncated_archive_is_eio(void **state)
{
	struct fixture *f = *state;
	fuse_ino_t big = walk(f, "big.bin");
	struct wsnap_fs_read r;
	struct stat st;

	assert_int_equal(ftruncate(f->fd, 4096), 0);
	assert_int_equal(wsnap_fs_do_read(&f->fs, big, 4096, 0, &r), EIO);
	wsnap_fs_read_release(&r);
	assert_int_equal(wsnap_fs_do_read(&f->fs, walk(f, "ro.txt"), 2, 0, &r),
			 EIO);
	wsnap_fs_read_release(&r);
	assert_int_equal(wsnap_fs_do_getattr(&f->fs, big, &st), 0);
	assert_int_equal(st.st_size, BIG_LEN);
}

/* Rewritten in place with the same size: the check still notices. */
static void test_fs_read_of_rewritten_archive_is_eio(void **state)
{
	struct fixture *f = *state;
	fuse_ino_t big = walk(f, "big.bin");
	struct wsnap_fs_read r;
	unsigned char junk[512];

	memset(junk, 'x', sizeof(junk));
	usleep(20000); /* let the clock move past the build's mtime */
	assert_int_equal(pwrite(f->fd, junk, sizeof(junk), 1024),
			 (ssize_t)sizeof(junk));
	assert_int_equal(wsnap_fs_do_read(&f->fs, big, 4096, 0, &r), EIO);
	wsnap_fs_read_release(&r);
}

/*
 * Rewritten in place with the same size and the mtime put
 * back (rsync --inplace -t), the archive kept its size, inode and mtime, and
 * the check served the new bytes. Only its ctime tells: every read, long or
 * short, is EIO.
 */
static void
test_fs_read_of_rewritten_archive_mtime_put_back_is_eio(void **state)
{
	struct fixture *f = *state;
	fuse_ino_t big = walk(f, "big.bin");
	static unsigned char buf[131072];
	struct timespec times[2];
	struct wsnap_fs_read r;
	struct stat before, after;
	unsigned char junk[512];
	int fd_plan;

	assert_int_equal(read_via(f, big, sizeof(buf), 0, buf, &fd_plan),
			 sizeof(buf));
	assert_int_equal(fstat(f->fd, &before), 0);
	memset(junk, 'x', sizeof(junk));
	assert_int_equal(pwrite(f->fd, junk, sizeof(junk), 1024),
			 (ssize_t)sizeof(junk));
	times[0] = before.st_atim;
	times[1] = before.st_mtim;
	assert_int_equal(futimens(f->fd, times), 0);
	assert_int_equal(fstat(f->fd, &after), 0);
	assert_int_equal(after.st_size, before.st_size);
	assert_int_equal(after.st_mtim.tv_sec, before.st_mtim.tv_sec);
	assert_int_equal(after.st_mtim.tv_nsec, before.st_mtim.tv_nsec);

	assert_int_equal(wsnap_fs_do_read(&f->fs, big, sizeof(buf), 0, &r),
			 EIO);
	wsnap_fs_read_release(&r);
	assert_int_equal(wsnap_fs_do_read(&f->fs, big, 100, 0, &r), EIO);
	wsnap_fs_read_release(&r);
	assert_int_equal(wsnap_fs_do_read(&f->fs, walk(f, "ro.txt"), 2, 0, &r),
			 EIO);
	wsnap_fs_read_release(&r);
}

static void test_fs_statfs_reports_snapshot_totals(void **state)
{
	struct fixture *f = *state;
	struct statvfs st;
	struct wsnap_index_stats s;

	wsnap_index_stats(f->idx, &s);
	assert_int_equal(wsnap_fs_do_statfs(&f->fs, &st), 0);
	assert_int_equal(st.f_files, wsnap_index_count(f->idx));
	assert_int_equal(st.f_bsize, 4096);
	assert_int_equal(st.f_blocks, (s.total_bytes + 4095) / 4096);
	assert_true(st.f_blocks >= BIG_LEN / 4096);
	assert_int_equal(st.f_bfree, 0);
	assert_int_equal(st.f_bavail, 0);
	assert_int_equal(st.f_ffree, 0);
	assert_true(st.f_flag & ST_RDONLY);
}

static void test_fs_xattrs_are_absent(void **state)
{
	struct fixture *f = *state;
	size_t len = 99;

	/* ENOSYS: the kernel answers every later getxattr by itself */
	assert_int_equal(wsnap_fs_do_getxattr(&f->fs, 1, "user.x"), ENOSYS);
	assert_int_equal(wsnap_fs_do_getxattr(&f->fs, walk(f, "ro.txt"),
					      "security.capability"),
			 ENOSYS);
	assert_int_equal(wsnap_fs_do_listxattr(&f->fs, 1, &len), 0);
	assert_int_equal(len, 0);
	assert_int_equal(wsnap_fs_do_getxattr(&f->fs, 999999, "user.x"),
			 ENOENT);
	assert_int_equal(wsnap_fs_do_listxattr(&f->fs, 999999, &len), ENOENT);
}

static void test_fs_access_follows_presented_modes(void **state)
{
	struct fixture *f = *state;
	fuse_ino_t none = walk(f, "none");	/* 0600 */
	fuse_ino_t ro = walk(f, "ro.txt");	/* 0644 */
	fuse_ino_t run = walk(f, "src/run.sh"); /* 0755 */
	gid_t other_groups[] = {1, GID};

	assert_int_equal(
		wsnap_fs_do_access(&f->fs, ro, W_OK, UID, GID, NULL, 0), EROFS);
	assert_int_equal(
		wsnap_fs_do_access(&f->fs, none, F_OK, 42, 42, NULL, 0), 0);
	assert_int_equal(
		wsnap_fs_do_access(&f->fs, none, R_OK, UID, 42, NULL, 0), 0);
	assert_int_equal(
		wsnap_fs_do_access(&f->fs, none, R_OK, 42, 42, NULL, 0),
		EACCES);
	assert_int_equal(wsnap_fs_do_access(&f->fs, ro, R_OK, 42, 42, NULL, 0),
			 0);
	assert_int_equal(
		wsnap_fs_do_access(&f->fs, ro, X_OK, UID, GID, NULL, 0),
		EACCES);
	assert_int_equal(
		wsnap_fs_do_access(&f->fs, run, R_OK | X_OK, 42, 42, NULL, 0),
		0);
	/* group by supplementary membership */
	assert_int_equal(
		wsnap_fs_do_access(&f->fs, ro, R_OK, 42, 42, other_groups, 2),
		0);
	/* root reads anything, executes only what has an x bit */
	assert_int_equal(wsnap_fs_do_access(&f->fs, none, R_OK, 0, 0, NULL, 0),
			 0);
	assert_int_equal(wsnap_fs_do_access(&f->fs, ro, X_OK, 0, 0, NULL, 0),
			 EACCES);
	assert_int_equal(wsnap_fs_do_access(&f->fs, 1, X_OK, 0, 0, NULL, 0), 0);
	assert_int_equal(
		wsnap_fs_do_access(&f->fs, 999999, F_OK, 0, 0, NULL, 0),
		ENOENT);
}

/* A GNU sparse member: holes read as zeros, data from its runs; filter
 * NULL for a plain archive, else the compression. */
static void sparse_reads(const char *filter)
{
	enum { RUN1 = 8192, LEN1 = 16384, RUN2 = 40960, LEN2 = 8192 };
	enum { REAL = 65536, STORED = LEN1 + LEN2 };
	struct ts_archive *a = ts_archive_new();
	static unsigned char data[STORED], buf[REAL];
	unsigned char block[WSNAP_TAR_BLOCK];
	struct fixture *f;
	size_t len, i;
	unsigned char *tar;
	int fd_plan;

	/* old GNU sparse: 'S', map and real size in the header */
	ts_raw_header(block, "sparse.bin", WSNAP_TAR_GNU_SPARSE, 0644, STORED,
		      NULL);
	memcpy(block + WSNAP_TAR_OFF(magic), WSNAP_TAR_GNU_MAGIC,
	       WSNAP_TAR_MAGIC_LEN);
	snprintf((char *)block + WSNAP_TAR_OFF(gnu.sparse[0].offset),
		 WSNAP_TAR_LEN(gnu.sparse[0].offset), "%011o", RUN1);
	snprintf((char *)block + WSNAP_TAR_OFF(gnu.sparse[0].numbytes),
		 WSNAP_TAR_LEN(gnu.sparse[0].numbytes), "%011o", LEN1);
	snprintf((char *)block + WSNAP_TAR_OFF(gnu.sparse[1].offset),
		 WSNAP_TAR_LEN(gnu.sparse[1].offset), "%011o", RUN2);
	snprintf((char *)block + WSNAP_TAR_OFF(gnu.sparse[1].numbytes),
		 WSNAP_TAR_LEN(gnu.sparse[1].numbytes), "%011o", LEN2);
	/* the trailing hole: a run of length 0 at the real size */
	snprintf((char *)block + WSNAP_TAR_OFF(gnu.sparse[2].offset),
		 WSNAP_TAR_LEN(gnu.sparse[2].offset), "%011o", REAL);
	snprintf((char *)block + WSNAP_TAR_OFF(gnu.sparse[2].numbytes),
		 WSNAP_TAR_LEN(gnu.sparse[2].numbytes), "%011o", 0);
	snprintf((char *)block + WSNAP_TAR_OFF(gnu.realsize),
		 WSNAP_TAR_LEN(gnu.realsize), "%011o", REAL);
	ts_raw_checksum(block);
	for (i = 0; i < sizeof(data); i++)
		data[i] = (unsigned char)(1 + i % 251);
	ts_add_raw(a, block, sizeof(block));
	ts_add_raw(a, data, sizeof(data));
	tar = ts_archive_finish(a, 1, &len);
	if (filter) {
		unsigned char *z = ts_compress(tar, len, filter, &len);

		free(tar);
		tar = z;
	}
	f = fixture_from(tar, len, NULL);
	free(tar);

	assert_int_equal(attr_of(f, "sparse.bin").st_size, REAL);
	assert_int_equal(read_via(f, walk(f, "sparse.bin"), sizeof(buf), 0, buf,
				  &fd_plan),
			 REAL);
	assert_false(fd_plan); /* holes: assembled in memory */
	for (i = 0; i < REAL; i++) {
		unsigned char want = 0;

		if (i >= RUN1 && i < RUN1 + LEN1)
			want = data[i - RUN1];
		else if (i >= RUN2 && i < RUN2 + LEN2)
			want = data[LEN1 + i - RUN2];
		if (buf[i] != want)
			fail_msg("byte %zu: %u, want %u", i, buf[i], want);
	}
	/* a long read inside one stored run of a spill file is spliced */
	assert_int_equal(read_via(f, walk(f, "sparse.bin"), 10000, RUN1 + 100,
				  buf, &fd_plan),
			 10000);
	assert_memory_equal(buf, data + 100, 10000);
	assert_int_equal(fd_plan, wsnap_index_data_spilled(f->idx));
	/* one ending in a hole is not */
	assert_int_equal(read_via(f, walk(f, "sparse.bin"), 10000,
				  RUN2 + LEN2 - 100, buf, &fd_plan),
			 10000);
	assert_memory_equal(buf, data + STORED - 100, 100);
	assert_false(fd_plan);
	for (i = 100; i < 10000; i++)
		assert_int_equal(buf[i], 0);
	teardown((void **)&f);
}

static void test_fs_read_sparse_holes_as_zeros(void **state)
{
	sparse_reads(NULL);
	sparse_reads("gzip");  /* in place */
	sparse_reads("bzip2"); /* spilled */
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(
			test_fs_lookup_finds_entries_with_attributes,
			setup_plain, teardown),
		cmocka_unit_test_setup_teardown(
			test_fs_lookup_miss_is_cached_negative_entry,
			setup_plain, teardown),
		cmocka_unit_test_setup_teardown(
			test_fs_lookup_in_non_directory_fails, setup_plain,
			teardown),
		cmocka_unit_test_setup_teardown(test_fs_lookup_dot_and_dotdot,
						setup_plain, teardown),
		cmocka_unit_test_setup_teardown(
			test_fs_getattr_presents_sanitized_modes, setup_plain,
			teardown),
		cmocka_unit_test_setup_teardown(
			test_fs_getattr_owner_size_blocks_times, setup_plain,
			teardown),
		cmocka_unit_test_setup_teardown(test_fs_getattr_directory_nlink,
						setup_plain, teardown),
		cmocka_unit_test_setup_teardown(test_fs_readlink, setup_plain,
						teardown),
		cmocka_unit_test_setup_teardown(
			test_fs_readdir_lists_dots_then_sorted_children,
			setup_plain, teardown),
		cmocka_unit_test_setup_teardown(
			test_fs_readdir_resumes_at_offset_and_stops_when_full,
			setup_plain, teardown),
		cmocka_unit_test_setup_teardown(
			test_fs_readdirplus_gives_inos_except_dots, setup_plain,
			teardown),
		cmocka_unit_test_setup_teardown(
			test_fs_readdir_of_non_directory_fails, setup_plain,
			teardown),
		cmocka_unit_test_setup_teardown(test_fs_open_refuses_writes,
						setup_plain, teardown),
		cmocka_unit_test_setup_teardown(
			test_fs_read_plain_archive_from_memory, setup_plain,
			teardown),
		cmocka_unit_test_setup_teardown(
			test_fs_read_compressed_archive_from_spill, setup_bzip2,
			teardown),
		cmocka_unit_test_setup_teardown(
			test_fs_read_gzip_archive_in_place, setup_gzip,
			teardown),
		cmocka_unit_test_setup_teardown(test_fs_read_of_non_file_fails,
						setup_plain, teardown),
		cmocka_unit_test_setup_teardown(
			test_fs_read_of_truncated_archive_is_eio, setup_plain,
			teardown),
		cmocka_unit_test_setup_teardown(
			test_fs_read_of_rewritten_archive_is_eio, setup_plain,
			teardown),
		cmocka_unit_test_setup_teardown(
			test_fs_read_of_rewritten_archive_mtime_put_back_is_eio,
			setup_plain, teardown),
		cmocka_unit_test_setup_teardown(
			test_fs_statfs_reports_snapshot_totals, setup_plain,
			teardown),
		cmocka_unit_test_teardown(
			test_fs_readdirplus_of_large_directory_gives_file_inos,
			teardown),
		cmocka_unit_test_setup_teardown(test_fs_xattrs_are_absent,
						setup_plain, teardown),
		cmocka_unit_test_setup_teardown(
			test_fs_access_follows_presented_modes, setup_plain,
			teardown),
		cmocka_unit_test(test_fs_read_sparse_holes_as_zeros),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
