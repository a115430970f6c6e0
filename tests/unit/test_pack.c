/* SPDX-License-Identifier: MIT */
/*
 * Unit tests of ops/pack.c and the walker of ops/tree.c.
 *
 * Over 800 lines: one test program per unit (the style guide); pack's and
 * the walker's cases share the tree builders here.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <archive.h>
#include <archive_entry.h>
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <sys/un.h>
#include <time.h>
#include <unistd.h>

#include "diff.h"
#include "index.h"
#include "pack.h"
#include "policy.h"
#include "fstree.h"
#include "support.h"
#include "tree.h"
#include "array.h"

/* ---- helpers ---- */

/* A small tree with one of each kind of entry pack stores. */
static char *sample_tree(void)
{
	char *d = ts_tempdir();

	ft_mkdir(d, "src");
	ft_mkdir(d, "src/deep");
	ft_put_mode(d, "src/main.c", "int main(void) { return 0; }\n", 0644);
	ft_put_mode(d, "src/deep/run.sh", "#!/bin/sh\necho hi\n", 0755);
	ft_put_mode(d, "a-b", "dash\n", 0600);
	ft_put_mode(d, "a0", "zero\n", 0444);
	ft_put_mode(d, "empty", "", 0644);
	ft_symlink(d, "link", "src/main.c");
	ft_symlink(d, "src/up", "../a0");
	ft_mtime(d, "src/main.c", 1700000000, 123456789);
	ft_mtime(d, "a0", 1600000000, 0);
	ft_mtime(d, "link", 1650000000, 500000000);
	ft_mtime(d, "src/deep", 1700000001, 1);
	return d;
}

static int memfd(void)
{
	int fd = memfd_create("pack-test", MFD_CLOEXEC);

	assert_true(fd >= 0);
	return fd;
}

static enum wsnap_status pack_dir(const char *dir,
				  const struct wsnap_policy *policy,
				  enum wsnap_pack_compress c, int out,
				  struct wsnap_error *err)
{
	struct wsnap_pack_opts o = {.policy = policy, .compress = c};
	enum wsnap_status s;
	int root = wsnap_tree_open(dir, err);

	assert_true(root >= 0);
	s = wsnap_pack_fd(root, dir, out, &o, NULL, err);
	close(root);
	return s;
}

static unsigned char *fd_bytes(int fd, size_t *len)
{
	struct stat st;
	unsigned char *b;

	assert_int_equal(fstat(fd, &st), 0);
	*len = (size_t)st.st_size;
	b = malloc(*len + 1);
	assert_non_null(b);
	assert_int_equal(pread(fd, b, *len, 0), (ssize_t)*len);
	return b;
}

static off_t fd_size(int fd)
{
	struct stat st;

	assert_int_equal(fstat(fd, &st), 0);
	return st.st_size;
}

/* ---- members and headers ---- */

struct seen {
	char name[256];
	unsigned type;
	unsigned perm;
	int64_t size;
	time_t mtime;
	long mtime_ns;
	char target[256];
	char data[256];
};

static size_t read_members(int fd, struct seen *out, size_t max)
{
	struct archive *a = archive_read_new();
	struct archive_entry *e;
	size_t n = 0;

	archive_read_support_format_tar(a);
	archive_read_support_filter_all(a);
	assert_int_equal(lseek(fd, 0, SEEK_SET), 0);
	assert_int_equal(archive_read_open_fd(a, fd, 10240), ARCHIVE_OK);
	while (archive_read_next_header(a, &e) == ARCHIVE_OK) {
		struct seen *s = &out[n++];

		assert_true(n <= max);
		memset(s, 0, sizeof(*s));
		snprintf(s->name, sizeof(s->name), "%s",
			 archive_entry_pathname(e));
		s->type = archive_entry_filetype(e);
		s->perm = archive_entry_perm(e);
		s->size = archive_entry_size(e);
		s->mtime = archive_entry_mtime(e);
		s->mtime_ns = archive_entry_mtime_nsec(e);
		if (archive_entry_symlink(e))
			snprintf(s->target, sizeof(s->target), "%s",
				 archive_entry_symlink(e));
		/* ownership zeroed and anonymous; no atime, ctime */
		assert_int_equal(archive_entry_uid(e), 0);
		assert_int_equal(archive_entry_gid(e), 0);
		assert_true(!archive_entry_uname(e) ||
			    !*archive_entry_uname(e));
		assert_true(!archive_entry_gname(e) ||
			    !*archive_entry_gname(e));
		assert_false(archive_entry_atime_is_set(e));
		assert_false(archive_entry_ctime_is_set(e));
		assert_null(archive_entry_hardlink(e));
		if (s->type == AE_IFREG)
			archive_read_data(a, s->data, sizeof(s->data) - 1);
	}
	archive_read_free(a);
	return n;
}

static void test_pack_members_sorted_with_metadata(void **state)
{
	char *d = sample_tree();
	struct wsnap_policy p;
	struct wsnap_error err;
	struct seen m[32];
	static const char *const want[] = {
		"./",		"./a-b",    "./a0",	   "./empty",
		"./link",	"./src/",   "./src/deep/", "./src/deep/run.sh",
		"./src/main.c", "./src/up",
	};
	size_t n, i;
	int fd = memfd();

	wsnap_policy_init(&p);
	assert_int_equal(pack_dir(d, &p, WSNAP_PACK_NONE, fd, &err), WSNAP_OK);
	n = read_members(fd, m, 32);
	assert_int_equal(n, ARRAY_SIZE(want));
	for (i = 0; i < n; i++)
		assert_string_equal(m[i].name, want[i]);
	/* the root is a directory, listed first */
	assert_int_equal(m[0].type, AE_IFDIR);
	/* modes as on disk, data as on disk */
	assert_int_equal(m[1].perm, 0600);
	assert_string_equal(m[1].data, "dash\n");
	assert_int_equal(m[2].perm, 0444);
	assert_int_equal(m[2].mtime, 1600000000);
	assert_int_equal(m[3].size, 0);
	assert_int_equal(m[7].perm, 0755);
	assert_string_equal(m[7].data, "#!/bin/sh\necho hi\n");
	/* sub-second mtimes kept, on files, symlinks and directories */
	assert_int_equal(m[8].mtime, 1700000000);
	assert_int_equal(m[8].mtime_ns, 123456789);
	assert_int_equal(m[4].mtime_ns, 500000000);
	assert_int_equal(m[6].mtime, 1700000001);
	assert_int_equal(m[6].mtime_ns, 1);
	/* symlinks stored as symlinks, never followed */
	assert_int_equal(m[4].type, AE_IFLNK);
	assert_string_equal(m[4].target, "src/main.c");
	assert_int_equal(m[9].type, AE_IFLNK);
	assert_string_equal(m[9].target, "../a0");
	close(fd);
	wsnap_policy_release(&p);
	ts_rmtree(d);
	free(d);
}

static void test_pack_hardlink_stored_as_file(void **state)
{
	char *d = ts_tempdir();
	char *a, *b;
	struct wsnap_policy p;
	struct wsnap_error err;
	struct seen m[8];
	int fd = memfd();

	ft_put_mode(d, "one", "shared bytes\n", 0644);
	a = ft_path(d, "one");
	b = ft_path(d, "two");
	assert_int_equal(link(a, b), 0);
	wsnap_policy_init(&p);
	assert_int_equal(pack_dir(d, &p, WSNAP_PACK_NONE, fd, &err), WSNAP_OK);
	assert_int_equal(read_members(fd, m, 8), 3);
	assert_string_equal(m[2].name, "./two");
	assert_int_equal(m[2].type, AE_IFREG);
	assert_int_equal(m[2].size, 13);
	assert_string_equal(m[2].data, "shared bytes\n");
	close(fd);
	free(a);
	free(b);
	wsnap_policy_release(&p);
	ts_rmtree(d);
	free(d);
}

static void test_pack_socket_left_out(void **state)
{
	char *d = ts_tempdir();
	char *sp = ft_path(d, "sock");
	struct sockaddr_un sa = {.sun_family = AF_UNIX};
	struct wsnap_policy p;
	struct wsnap_error err;
	struct seen m[8];
	int s = socket(AF_UNIX, SOCK_STREAM, 0), fd = memfd();

	assert_true(strlen(sp) < sizeof(sa.sun_path));
	memcpy(sa.sun_path, sp, strlen(sp) + 1);
	assert_int_equal(bind(s, (struct sockaddr *)&sa, sizeof(sa)), 0);
	ft_put_mode(d, "file", "x", 0644);
	wsnap_policy_init(&p);
	assert_int_equal(pack_dir(d, &p, WSNAP_PACK_NONE, fd, &err), WSNAP_OK);
	assert_int_equal(read_members(fd, m, 8), 2);
	assert_string_equal(m[1].name, "./file");
	close(s);
	close(fd);
	free(sp);
	wsnap_policy_release(&p);
	ts_rmtree(d);
	free(d);
}

/* ---- refusals: nothing written ---- */

static void expect_refused(const char *d, const struct wsnap_policy *p,
			   const char *member, const char *reason)
{
	struct wsnap_error err;
	int fd = memfd();

	assert_int_equal(pack_dir(d, p, WSNAP_PACK_NONE, fd, &err),
			 WSNAP_REJECTED);
	assert_string_equal(err.member, member);
	assert_string_equal(err.reason, reason);
	/* refused before anything is written */
	assert_int_equal(fd_size(fd), 0);
	close(fd);
}

static void test_pack_fifo_refused(void **state)
{
	char *d = ts_tempdir();
	char *f = ft_path(d, "sub/fifo");
	struct wsnap_policy p;

	ft_mkdir(d, "sub");
	ft_put_mode(d, "a", "a", 0644);
	assert_int_equal(mkfifo(f, 0644), 0);
	wsnap_policy_init(&p);
	expect_refused(d, &p, "./sub/fifo", "unsupported member type");
	wsnap_policy_release(&p);
	free(f);
	ts_rmtree(d);
	free(d);
}

static void test_pack_device_refused(void **state)
{
	char *d = ts_tempdir();
	char *f = ft_path(d, "null");
	struct wsnap_policy p;

	if (mknod(f, S_IFCHR | 0600, makedev(1, 3)) != 0) {
		/* not root: mknod of a device is not allowed here */
		free(f);
		ts_rmtree(d);
		free(d);
		skip();
	}
	wsnap_policy_init(&p);
	expect_refused(d, &p, "./null", "unsupported member type");
	wsnap_policy_release(&p);
	free(f);
	ts_rmtree(d);
	free(d);
}

static void test_pack_external_symlink_refused(void **state)
{
	char *d = ts_tempdir();
	struct wsnap_policy p;
	struct wsnap_error err;
	struct seen m[8];
	int fd;

	ft_mkdir(d, "bin");
	ft_symlink(d, "bin/up", "../../outside");
	wsnap_policy_init(&p);
	expect_refused(d, &p, "./bin/up",
		       "symlink target escapes archive root: ../../outside");
	/* the venv case is accepted when asked */
	p.allow_external_symlinks = true;
	fd = memfd();
	assert_int_equal(pack_dir(d, &p, WSNAP_PACK_NONE, fd, &err), WSNAP_OK);
	assert_int_equal(read_members(fd, m, 8), 3);
	assert_string_equal(m[2].target, "../../outside");
	close(fd);
	wsnap_policy_release(&p);
	ts_rmtree(d);
	free(d);
}

static void test_pack_absolute_symlink_refused(void **state)
{
	char *d = ts_tempdir();
	struct wsnap_policy p;

	ft_symlink(d, "python3", "/usr/bin/python3");
	wsnap_policy_init(&p);
	expect_refused(d, &p, "./python3",
		       "absolute symlink target not allowed: /usr/bin/python3");
	wsnap_policy_release(&p);
	ts_rmtree(d);
	free(d);
}

static void test_pack_member_limit(void **state)
{
	char *d = ts_tempdir();
	struct wsnap_policy p;
	int i;

	ft_mkdir(d, "many");
	for (i = 0; i < 40; i++) {
		char name[32];

		snprintf(name, sizeof(name), "many/f%02d", i);
		ft_put_str(d, name, "x");
	}
	wsnap_policy_init(&p);
	/* a directory listing larger than the limit is refused, naming it */
	p.max_members = 10;
	expect_refused(d, &p, "./many", "archive member count exceeds limit");
	wsnap_policy_release(&p);
	ts_rmtree(d);
	free(d);
}

/* ---- --skip ---- */

static void test_pack_skip_prunes(void **state)
{
	char *d = ts_tempdir();
	char *f = ft_path(d, "node_modules/fifo");
	struct wsnap_policy p;
	struct wsnap_error err;
	struct seen m[16];
	size_t n, i;
	int fd = memfd();

	ft_mkdir(d, "node_modules");
	ft_mkdir(d, "node_modules2");
	ft_put_mode(d, "node_modules/x.js", "x", 0644);
	ft_put_mode(d, "node_modules2/y.js", "y", 0644);
	ft_put_mode(d, "secret", "s", 0600);
	/* a FIFO below a skipped path is never looked at */
	assert_int_equal(mkfifo(f, 0644), 0);
	wsnap_policy_init(&p);
	assert_int_equal(wsnap_policy_add_skip(&p, "./node_modules/", &err),
			 WSNAP_OK);
	assert_int_equal(wsnap_policy_add_skip(&p, "/secret", &err), WSNAP_OK);
	assert_int_equal(pack_dir(d, &p, WSNAP_PACK_NONE, fd, &err), WSNAP_OK);
	n = read_members(fd, m, 16);
	assert_int_equal(n, 3);
	for (i = 0; i < n; i++) {
		assert_null(strstr(m[i].name, "node_modules/"));
		assert_null(strstr(m[i].name, "secret"));
	}
	/* component-wise: node_modules2 is not within node_modules */
	assert_string_equal(m[1].name, "./node_modules2/");
	assert_string_equal(m[2].name, "./node_modules2/y.js");
	close(fd);
	wsnap_policy_release(&p);
	free(f);
	ts_rmtree(d);
	free(d);
}

/* ---- determinism ---- */

static void check_deterministic(enum wsnap_pack_compress c)
{
	char *d = sample_tree();
	char *f = ft_path(d, "src/main.c");
	struct wsnap_policy p;
	struct wsnap_error err;
	unsigned char *b1, *b2;
	size_t l1, l2;
	int fd1 = memfd(), fd2 = memfd();

	wsnap_policy_init(&p);
	assert_int_equal(pack_dir(d, &p, c, fd1, &err), WSNAP_OK);
	/* atime and ctime change, a second passes: nothing of it shows */
	assert_int_equal(chmod(f, 0644), 0);
	{
		struct timespec ts[2] = {{1, 0}, {0, UTIME_OMIT}};

		assert_int_equal(utimensat(AT_FDCWD, f, ts, 0), 0);
	}
	sleep(1);
	assert_int_equal(pack_dir(d, &p, c, fd2, &err), WSNAP_OK);
	b1 = fd_bytes(fd1, &l1);
	b2 = fd_bytes(fd2, &l2);
	assert_true(l1 > 0);
	assert_int_equal(l1, l2);
	assert_memory_equal(b1, b2, l1);
	if (c == WSNAP_PACK_NONE) {
		/* no attribute beyond what the tree defines */
		assert_null(memmem(b1, l1, "atime=", 6));
		assert_null(memmem(b1, l1, "ctime=", 6));
		assert_null(memmem(b1, l1, "SCHILY", 6));
		assert_null(memmem(b1, l1, "LIBARCHIVE", 10));
	}
	if (c == WSNAP_PACK_GZIP) {
		/* gzip header: magic, no MTIME field */
		assert_int_equal(b1[0], 0x1f);
		assert_int_equal(b1[1], 0x8b);
		assert_memory_equal(b1 + 4, "\0\0\0\0", 4);
	}
	if (c == WSNAP_PACK_ZSTD)
		assert_memory_equal(b1, "\x28\xb5\x2f\xfd", 4);
	if (c == WSNAP_PACK_XZ)
		assert_memory_equal(b1,
				    "\xfd"
				    "7zXZ",
				    5);
	if (c == WSNAP_PACK_BZIP2)
		assert_memory_equal(b1, "BZh", 3);
	if (c == WSNAP_PACK_LZ4)
		assert_memory_equal(b1, "\x04\x22\x4d\x18", 4);
	free(b1);
	free(b2);
	close(fd1);
	close(fd2);
	free(f);
	wsnap_policy_release(&p);
	ts_rmtree(d);
	free(d);
}

static void test_pack_deterministic_none(void **state)
{
	check_deterministic(WSNAP_PACK_NONE);
}

static void test_pack_deterministic_gzip(void **state)
{
	check_deterministic(WSNAP_PACK_GZIP);
}

static void test_pack_deterministic_zstd(void **state)
{
	check_deterministic(WSNAP_PACK_ZSTD);
}

static void test_pack_deterministic_xz(void **state)
{
	check_deterministic(WSNAP_PACK_XZ);
}

static void test_pack_deterministic_bzip2(void **state)
{
	check_deterministic(WSNAP_PACK_BZIP2);
}

static void test_pack_deterministic_lz4(void **state)
{
	check_deterministic(WSNAP_PACK_LZ4);
}

/* ---- a file that changes while packed ---- */

struct change {
	char *path;
	const char *data;
};

static void rewrite(void *ctx)
{
	struct change *c = ctx;
	int fd;

	if (!c->data) {
		/* replaced by a FIFO: reading it must not block */
		assert_int_equal(unlink(c->path), 0);
		assert_int_equal(mkfifo(c->path, 0644), 0);
		return;
	}
	fd = open(c->path, O_WRONLY | O_TRUNC);

	assert_true(fd >= 0);
	assert_int_equal(write(fd, c->data, strlen(c->data)),
			 (ssize_t)strlen(c->data));
	close(fd);
}

static void check_changed(const char *now)
{
	char *d = ts_tempdir();
	struct change c;
	struct wsnap_policy p;
	struct wsnap_pack_opts o = {.policy = &p};
	struct wsnap_error err;
	char want[4096];
	int fd = memfd(), root;

	ft_put_mode(d, "a", "first", 0644);
	ft_put_mode(d, "grows", "12345", 0644);
	c.path = ft_path(d, "grows");
	c.data = now;
	o.after_plan = rewrite;
	o.after_plan_ctx = &c;
	wsnap_policy_init(&p);
	root = wsnap_tree_open(d, &err);
	assert_true(root >= 0);
	assert_int_equal(wsnap_pack_fd(root, d, fd, &o, NULL, &err), WSNAP_IO);
	assert_string_equal(err.reason, "file changed while being read");
	snprintf(want, sizeof(want), "%s/grows", d);
	assert_string_equal(err.member, want);
	close(root);
	close(fd);
	free(c.path);
	wsnap_policy_release(&p);
	ts_rmtree(d);
	free(d);
}

static void test_pack_file_grown_is_error(void **state)
{
	check_changed("123456");
}

static void test_pack_file_shrunk_is_error(void **state)
{
	check_changed("1234");
}

static void test_pack_file_emptied_is_error(void **state)
{
	check_changed("");
}

static void test_pack_file_replaced_by_fifo_is_error(void **state)
{
	check_changed(NULL);
}

/* ---- the bytes: through the read-ahead ring, wraps and large files ---- */

static enum wsnap_status count_change(void *ctx,
				      const struct wsnap_diff_change *c,
				      struct wsnap_error *err)
{
	(*(int *)ctx)++;
	return WSNAP_OK;
}

static void test_pack_bytes_exact(void **state)
{
	char *d = ts_tempdir();
	size_t big = (20u << 20) + 12345, i;
	unsigned char *buf = malloc(big);
	struct wsnap_policy p;
	struct wsnap_reader_opts ro = {.keep_data = true};
	struct wsnap_index *ia = NULL, *id = NULL;
	struct wsnap_tree_cursor *cur = NULL;
	struct wsnap_diff_archive arc;
	struct wsnap_diff_side sa, sd;
	struct wsnap_error err;
	int fd = memfd(), root, changes = 0;

	assert_non_null(buf);
	for (i = 0; i < big; i++)
		buf[i] = (unsigned char)(i ^ (i >> 9) ^ (i >> 17));
	ft_mkdir(d, "a");
	ft_put(d, "a/big", buf, big, 0644);
	ft_mkdir(d, "b");
	for (i = 0; i < 3000; i++) {
		char name[32];

		snprintf(name, sizeof(name), "b/%04zu", i);
		ft_put(d, name, buf + i * 37, (i * 7919) % 5000, 0644);
	}
	ft_put(d, "c", buf + 99, 3u << 20, 0644);
	free(buf);
	wsnap_policy_init(&p);
	assert_int_equal(pack_dir(d, &p, WSNAP_PACK_NONE, fd, &err), WSNAP_OK);
	/* the archive holds the directory's bytes, every one of them */
	assert_int_equal(lseek(fd, 0, SEEK_SET), 0);
	assert_int_equal(wsnap_index_build(&ia, fd, &p, &ro, &err), WSNAP_OK);
	root = wsnap_tree_open(d, &err);
	assert_int_equal(wsnap_tree_index(root, d, &p, &id, &err), WSNAP_OK);
	assert_int_equal(wsnap_tree_cursor_new(&cur, root, d, &err), WSNAP_OK);
	wsnap_diff_side_archive(&sa, &arc, ia, "packed");
	wsnap_diff_side_tree(&sd, id, cur);
	assert_int_equal(wsnap_diff_run(&sa, &sd, NULL, count_change, &changes,
					NULL, &err),
			 WSNAP_OK);
	assert_int_equal(changes, 0);
	wsnap_diff_archive_release(&arc);
	wsnap_tree_cursor_free(cur);
	wsnap_index_free(ia);
	wsnap_index_free(id);
	close(root);
	close(fd);
	wsnap_policy_release(&p);
	ts_rmtree(d);
	free(d);
}

/* ---- the command: atomic OUT ---- */

static size_t count_entries(const char *dir)
{
	DIR *d = opendir(dir);
	struct dirent *de;
	size_t n = 0;

	assert_non_null(d);
	while ((de = readdir(d)))
		if (strcmp(de->d_name, ".") && strcmp(de->d_name, ".."))
			n++;
	closedir(d);
	return n;
}

static void test_pack_run_atomic_out(void **state)
{
	char *d = sample_tree();
	char *o = ts_tempdir();
	char *out = ft_path(o, "snap.tar.gz");
	struct wsnap_policy p;
	struct wsnap_pack_opts po = {.policy = &p};
	struct wsnap_pack_stats st;
	struct wsnap_error err;
	struct stat sb;
	off_t size1;
	mode_t um = umask(022);

	wsnap_policy_init(&p);
	assert_int_equal(wsnap_pack_compress_for(out, &po.compress), 0);
	assert_int_equal(po.compress, WSNAP_PACK_GZIP);
	assert_int_equal(wsnap_pack_run(d, out, &po, &st, &err), WSNAP_OK);
	assert_int_equal(stat(out, &sb), 0);
	assert_int_equal(sb.st_mode & 07777, 0644);
	assert_int_equal((uint64_t)sb.st_size, st.out_bytes);
	assert_int_equal(st.members, 9);
	assert_int_equal(st.dirs, 2);
	assert_int_equal(st.symlinks, 2);
	assert_int_equal(st.files, 5);
	assert_int_equal(count_entries(o), 1);
	size1 = sb.st_size;
	/* a refused tree leaves the old OUT as it was, and no temp file */
	ft_symlink(d, "bad", "/etc/passwd");
	assert_int_equal(wsnap_pack_run(d, out, &po, &st, &err),
			 WSNAP_REJECTED);
	assert_string_equal(err.member, "./bad");
	assert_int_equal(stat(out, &sb), 0);
	assert_int_equal(sb.st_size, size1);
	assert_int_equal(count_entries(o), 1);
	/* a directory that does not exist: I/O error, nothing created */
	{
		char *none = ft_path(o, "none");
		char *out2 = ft_path(o, "x.tar");

		assert_int_equal(wsnap_pack_run(none, out2, &po, &st, &err),
				 WSNAP_IO);
		assert_int_equal(count_entries(o), 1);
		free(none);
		free(out2);
	}
	umask(um);
	free(out);
	wsnap_policy_release(&p);
	ts_rmtree(d);
	ts_rmtree(o);
	free(d);
	free(o);
}

static void test_pack_compress_names(void **state)
{
	static const struct {
		const char *out;
		int want; /* -1: no compression is named */
	} names[] = {
		/* every extension of cli.md 'wsnap pack' */
		{"a.tar", WSNAP_PACK_NONE},
		{"a.tar.gz", WSNAP_PACK_GZIP},
		{"a.tgz", WSNAP_PACK_GZIP},
		{"a.tar.bz2", WSNAP_PACK_BZIP2},
		{"a.tbz2", WSNAP_PACK_BZIP2},
		{"a.tar.xz", WSNAP_PACK_XZ},
		{"a.txz", WSNAP_PACK_XZ},
		{"a.tar.zst", WSNAP_PACK_ZSTD},
		{"a.tzst", WSNAP_PACK_ZSTD},
		{"a.tar.lz4", WSNAP_PACK_LZ4},
		/* standard output: plain */
		{"-", WSNAP_PACK_NONE},
		/* ASCII case does not matter */
		{"X.TAR.GZ", WSNAP_PACK_GZIP},
		{"x.Tar.Bz2", WSNAP_PACK_BZIP2},
		{"X.TAR", WSNAP_PACK_NONE},
		{"x.TZST", WSNAP_PACK_ZSTD},
		/* the last extension decides; directories do not count */
		{"a.gz.tar", WSNAP_PACK_NONE},
		{"d.tar.gz/a.tar.xz", WSNAP_PACK_XZ},
		{".tar", WSNAP_PACK_NONE},
		/* anything else asks for --compress */
		{"p.zip", -1},
		{"p", -1},
		{"", -1},
		{"p.gz", -1},
		{"p.bz2", -1},
		{"p.tar.gz.part", -1},
		{"p.tar.Z", -1},
		{"p.tar.lzma", -1},
		{"p.tar.", -1},
		{"p.tar.gz/", -1},
		{"ptar", -1},
		{"--", -1},
	};
	enum wsnap_pack_compress c;
	size_t i;

	for (i = 0; i < ARRAY_SIZE(names); i++) {
		int rc = wsnap_pack_compress_for(names[i].out, &c);

		if (names[i].want < 0) {
			assert_int_equal(rc, -1);
		} else {
			assert_int_equal(rc, 0);
			assert_int_equal(c, names[i].want);
		}
	}
	/* every name --compress shows in its usage line parses, in order */
	{
		static const enum wsnap_pack_compress order[] = {
			WSNAP_PACK_NONE, WSNAP_PACK_GZIP, WSNAP_PACK_BZIP2,
			WSNAP_PACK_XZ,	 WSNAP_PACK_ZSTD, WSNAP_PACK_LZ4,
		};
		char all[] = WSNAP_PACK_COMPRESS_NAMES "|";
		char *w = all, *bar;

		for (i = 0; i < ARRAY_SIZE(order); i++) {
			bar = strchr(w, '|');
			assert_non_null(bar);
			*bar = '\0';
			assert_int_equal(wsnap_pack_compress_parse(w, &c), 0);
			assert_int_equal(c, order[i]);
			w = bar + 1;
		}
		assert_string_equal(w, "");
	}
	assert_int_equal(wsnap_pack_compress_parse("GZIP", &c), -1);
	assert_int_equal(wsnap_pack_compress_parse("bz2", &c), -1);
	assert_int_equal(wsnap_pack_compress_parse("", &c), -1);
}

/*
 * 'p.tar.bz2' and 'p.tar.lz4' were written as plain
 * tars. Packed by name, each is its compression (magic bytes) and reads
 * back through the index builder, which names the compression.
 */
static void check_packed_by_name(const char *name, const char *magic,
				 size_t mlen, const char *compression)
{
	char *d = sample_tree();
	char *o = ts_tempdir();
	char *out = ft_path(o, name);
	struct wsnap_policy p;
	struct wsnap_pack_opts po = {.policy = &p};
	struct wsnap_reader_opts ro = {0};
	struct wsnap_index_stats is;
	struct wsnap_index *idx = NULL;
	struct wsnap_error err;
	unsigned char head[8];
	int fd;

	wsnap_policy_init(&p);
	assert_int_equal(wsnap_pack_compress_for(out, &po.compress), 0);
	assert_int_equal(wsnap_pack_run(d, out, &po, NULL, &err), WSNAP_OK);
	fd = open(out, O_RDONLY | O_CLOEXEC);
	assert_true(fd >= 0);
	assert_int_equal(pread(fd, head, mlen, 0), (ssize_t)mlen);
	assert_memory_equal(head, magic, mlen);
	assert_int_equal(wsnap_index_build(&idx, fd, &p, &ro, &err), WSNAP_OK);
	wsnap_index_stats(idx, &is);
	assert_string_equal(is.compression, compression);
	assert_int_equal(wsnap_index_count(idx), 10);
	wsnap_index_free(idx);
	close(fd);
	free(out);
	wsnap_policy_release(&p);
	ts_rmtree(d);
	ts_rmtree(o);
	free(d);
	free(o);
}

static void test_pack_run_compression_by_name(void **state)
{
	check_packed_by_name("p.tar.bz2", "BZh", 3, "bzip2");
	check_packed_by_name("P.TBZ2", "BZh", 3, "bzip2");
	check_packed_by_name("p.tar.lz4", "\x04\x22\x4d\x18", 4, "lz4");
	check_packed_by_name("p.tgz", "\x1f\x8b", 2, "gzip");
	check_packed_by_name("p.txz", "\xfd\x37zXZ", 5, "xz");
	check_packed_by_name("p.tzst", "\x28\xb5\x2f\xfd", 4, "zstd");
}

/* ---- the result passes the core's check, names as bytes ---- */

static void test_pack_result_indexes_with_odd_names(void **state)
{
	char *d = ts_tempdir();
	struct wsnap_policy p;
	struct wsnap_reader_opts ro = {0};
	struct wsnap_index *idx = NULL;
	struct wsnap_error err;
	const struct wsnap_node *n;
	int fd = memfd();

	ft_put_mode(d, "caf\xc3\xa9", "utf-8 name", 0644);
	ft_put_mode(d, "bad\xff", "not utf-8", 0644);
	ft_put_mode(d, "tab\tname", "t", 0644);
	ft_symlink(d, "l\xfe", "bad\xff");
	wsnap_policy_init(&p);
	assert_int_equal(pack_dir(d, &p, WSNAP_PACK_NONE, fd, &err), WSNAP_OK);
	assert_int_equal(lseek(fd, 0, SEEK_SET), 0);
	assert_int_equal(wsnap_index_build(&idx, fd, &p, &ro, &err), WSNAP_OK);
	assert_int_equal(wsnap_index_count(idx), 5);
	n = wsnap_index_node(idx, 2);
	assert_string_equal(n->path, "bad\xff");
	assert_int_equal(n->size, 9);
	n = wsnap_index_node(idx, 3);
	assert_string_equal(n->path, "caf\xc3\xa9");
	n = wsnap_index_node(idx, 4);
	assert_string_equal(n->path, "l\xfe");
	assert_string_equal(n->target, "bad\xff");
	n = wsnap_index_node(idx, 5);
	assert_string_equal(n->path, "tab\tname");
	wsnap_index_free(idx);
	close(fd);
	wsnap_policy_release(&p);
	ts_rmtree(d);
	free(d);
}

/* ---- the walker on its own ---- */

struct collected {
	char names[32][64];
	size_t n;
};

static enum wsnap_status collect(void *ctx, const struct wsnap_raw_member *m,
				 struct wsnap_error *err)
{
	struct collected *c = ctx;

	assert_true(c->n < 32);
	snprintf(c->names[c->n++], 64, "%c %s", m->typeflag, m->name);
	return WSNAP_OK;
}

static void test_tree_walk_order_and_no_follow(void **state)
{
	char *d = ts_tempdir();
	char *o = ts_tempdir();
	struct wsnap_policy p;
	struct wsnap_error err;
	struct collected c = {0};
	int root;

	ft_mkdir(d, "b");
	ft_put_mode(d, "b/x", "x", 0644);
	ft_put_mode(d, "a", "a", 0644);
	ft_put_mode(o, "outside", "o", 0644);
	/* a symlink to a directory outside: reported, never entered */
	ft_symlink(d, "c", o);
	wsnap_policy_init(&p);
	root = wsnap_tree_open(d, &err);
	assert_true(root >= 0);
	assert_int_equal(wsnap_tree_walk(root, d, &p, collect, &c, &err),
			 WSNAP_OK);
	assert_int_equal(c.n, 5);
	assert_string_equal(c.names[0], "5 .");
	assert_string_equal(c.names[1], "0 ./a");
	assert_string_equal(c.names[2], "5 ./b");
	assert_string_equal(c.names[3], "0 ./b/x");
	assert_string_equal(c.names[4], "2 ./c");
	close(root);
	wsnap_policy_release(&p);
	ts_rmtree(d);
	ts_rmtree(o);
	free(d);
	free(o);
}

static void test_tree_cursor_refuses_swapped_symlink(void **state)
{
	char *d = ts_tempdir();
	char *o = ts_tempdir();
	char *sub = ft_path(d, "sub"), *moved = ft_path(d, "moved");
	struct wsnap_tree_cursor *c = NULL;
	struct wsnap_error err;
	struct stat st;
	int root, fd;

	ft_mkdir(d, "sub");
	ft_put_mode(d, "sub/f", "inside", 0644);
	ft_put_mode(o, "f", "outside", 0644);
	root = wsnap_tree_open(d, &err);
	assert_true(root >= 0);
	assert_int_equal(wsnap_tree_cursor_new(&c, root, d, &err), WSNAP_OK);
	fd = wsnap_tree_cursor_open(c, "sub/f", &st, &err);
	assert_true(fd >= 0);
	assert_int_equal(st.st_size, 6);
	close(fd);
	wsnap_tree_cursor_free(c);
	/* 'sub' becomes a symlink to a directory outside */
	assert_int_equal(rename(sub, moved), 0);
	assert_int_equal(symlink(o, sub), 0);
	assert_int_equal(wsnap_tree_cursor_new(&c, root, d, &err), WSNAP_OK);
	assert_int_equal(wsnap_tree_cursor_open(c, "sub/f", &st, &err), -1);
	assert_int_equal(err.status, WSNAP_IO);
	assert_string_equal(err.reason, "cannot open");
	/* the leaf itself a symlink: refused too */
	assert_int_equal(wsnap_tree_cursor_open(c, "sub", &st, &err), -1);
	/* a FIFO where a file was: refused without blocking */
	{
		char *ff = ft_path(d, "moved/f");

		assert_int_equal(unlink(ff), 0);
		assert_int_equal(mkfifo(ff, 0644), 0);
		assert_int_equal(
			wsnap_tree_cursor_open(c, "moved/f", &st, &err), -1);
		assert_string_equal(err.reason, "not a regular file");
		free(ff);
	}
	wsnap_tree_cursor_free(c);
	close(root);
	free(sub);
	free(moved);
	ts_rmtree(d);
	ts_rmtree(o);
	free(d);
	free(o);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_pack_members_sorted_with_metadata),
		cmocka_unit_test(test_pack_hardlink_stored_as_file),
		cmocka_unit_test(test_pack_socket_left_out),
		cmocka_unit_test(test_pack_fifo_refused),
		cmocka_unit_test(test_pack_device_refused),
		cmocka_unit_test(test_pack_external_symlink_refused),
		cmocka_unit_test(test_pack_absolute_symlink_refused),
		cmocka_unit_test(test_pack_member_limit),
		cmocka_unit_test(test_pack_skip_prunes),
		cmocka_unit_test(test_pack_deterministic_none),
		cmocka_unit_test(test_pack_deterministic_gzip),
		cmocka_unit_test(test_pack_deterministic_zstd),
		cmocka_unit_test(test_pack_deterministic_xz),
		cmocka_unit_test(test_pack_deterministic_bzip2),
		cmocka_unit_test(test_pack_deterministic_lz4),
		cmocka_unit_test(test_pack_file_grown_is_error),
		cmocka_unit_test(test_pack_file_shrunk_is_error),
		cmocka_unit_test(test_pack_file_emptied_is_error),
		cmocka_unit_test(test_pack_file_replaced_by_fifo_is_error),
		cmocka_unit_test(test_pack_bytes_exact),
		cmocka_unit_test(test_pack_run_atomic_out),
		cmocka_unit_test(test_pack_compress_names),
		cmocka_unit_test(test_pack_run_compression_by_name),
		cmocka_unit_test(test_pack_result_indexes_with_odd_names),
		cmocka_unit_test(test_tree_walk_order_and_no_follow),
		cmocka_unit_test(test_tree_cursor_refuses_swapped_symlink),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
