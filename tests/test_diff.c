/* Unit tests of core/diff.c: the comparison of two sides. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "diff.h"
#include "index.h"
#include "pack.h"
#include "policy.h"
#include "support.h"
#include "tree.h"

/* ---- trees ---- */

static char *path_of(const char *dir, const char *rel)
{
	size_t n = strlen(dir) + strlen(rel) + 2;
	char *p = malloc(n);

	assert_non_null(p);
	snprintf(p, n, "%s/%s", dir, rel);
	return p;
}

static void put(const char *dir, const char *rel, const void *data, size_t len,
		unsigned mode)
{
	char *p = path_of(dir, rel);
	int fd = open(p, O_WRONLY | O_CREAT | O_TRUNC, 0600);

	assert_true(fd >= 0);
	assert_int_equal(write(fd, data, len), (ssize_t)len);
	assert_int_equal(fchmod(fd, mode), 0);
	close(fd);
	free(p);
}

static void put_str(const char *dir, const char *rel, const char *s)
{
	put(dir, rel, s, strlen(s), 0644);
}

static void mk_dir(const char *dir, const char *rel)
{
	char *p = path_of(dir, rel);

	assert_int_equal(mkdir(p, 0755), 0);
	free(p);
}

static void mk_link(const char *dir, const char *rel, const char *target)
{
	char *p = path_of(dir, rel);

	assert_int_equal(symlink(target, p), 0);
	free(p);
}

static void rm(const char *dir, const char *rel)
{
	char *p = path_of(dir, rel);

	ts_rmtree(p);
	free(p);
}

static void run(const char *cmd)
{
	assert_int_equal(system(cmd), 0);
}

/* The base tree of the comparisons. */
static char *base_tree(void)
{
	char *d = ts_tempdir();

	mk_dir(d, "src");
	mk_dir(d, "src/lib");
	put_str(d, "src/main.c", "int main(void) { return 0; }\n");
	put_str(d, "src/lib/util.c", "int util;\n");
	put_str(d, "README", "hello\n");
	put(d, "run.sh", "#!/bin/sh\n", 10, 0755);
	mk_link(d, "link", "README");
	mk_dir(d, "olddir");
	put_str(d, "olddir/a", "a\n");
	put_str(d, "olddir/b", "b\n");
	put_str(d, "a-b", "x\n");
	put_str(d, "a0", "y\n");
	mk_dir(d, "a");
	put_str(d, "a/x", "z\n");
	return d;
}

static char *copy_tree(const char *src)
{
	char *d = ts_tempdir();
	char cmd[8192];

	snprintf(cmd, sizeof(cmd), "cp -a '%s'/. '%s'/", src, d);
	run(cmd);
	return d;
}

/* ---- sides ---- */

struct side {
	int root;
	int data;
	struct wsnap_index *idx;
	struct wsnap_tree_cursor *cursor;
	struct wsnap_diff_archive arc;
	struct wsnap_diff_side s;
};

static void side_dir(struct side *sd, const char *dir,
		     const struct wsnap_policy *p)
{
	struct wsnap_error err;

	memset(sd, 0, sizeof(*sd));
	sd->data = -1;
	sd->root = wsnap_tree_open(dir, &err);
	assert_true(sd->root >= 0);
	assert_int_equal(wsnap_tree_index(sd->root, dir, p, &sd->idx, &err),
			 WSNAP_OK);
	assert_int_equal(
		wsnap_tree_cursor_new(&sd->cursor, sd->root, dir, &err),
		WSNAP_OK);
	wsnap_diff_side_tree(&sd->s, sd->idx, sd->cursor);
}

/* Packs dir into a memfd and reads it back as an archive side. */
static void side_archive(struct side *sd, const char *dir,
			 const struct wsnap_policy *p,
			 enum wsnap_pack_compress c)
{
	struct wsnap_pack_opts po = {.policy = p, .compress = c};
	struct wsnap_reader_opts ro = {.keep_data = true};
	struct wsnap_error err;
	int root = wsnap_tree_open(dir, &err);

	memset(sd, 0, sizeof(*sd));
	sd->root = -1;
	sd->data = memfd_create("diff-test", MFD_CLOEXEC);
	assert_true(sd->data >= 0 && root >= 0);
	assert_int_equal(wsnap_pack_fd(root, dir, sd->data, &po, NULL, &err),
			 WSNAP_OK);
	close(root);
	assert_int_equal(lseek(sd->data, 0, SEEK_SET), 0);
	assert_int_equal(wsnap_index_build(&sd->idx, sd->data, p, &ro, &err),
			 WSNAP_OK);
	wsnap_diff_side_archive(&sd->s, &sd->arc, sd->idx, "archive");
}

static void side_release(struct side *sd)
{
	wsnap_diff_archive_release(&sd->arc);
	wsnap_tree_cursor_free(sd->cursor);
	wsnap_index_free(sd->idx);
	if (sd->root >= 0)
		close(sd->root);
	if (sd->data >= 0)
		close(sd->data);
}

/* ---- collecting changes ---- */

struct changes {
	char text[4096];
	size_t len;
};

static enum wsnap_status collect(void *ctx, const struct wsnap_diff_change *c,
				 struct wsnap_error *err)
{
	struct changes *ch = ctx;
	int n = snprintf(ch->text + ch->len, sizeof(ch->text) - ch->len,
			 "%c %s\n", (char)c->kind, c->path);

	assert_true(n > 0 && (size_t)n < sizeof(ch->text) - ch->len);
	ch->len += (size_t)n;
	/* the nodes given match the kind */
	assert_true((c->kind == WSNAP_DIFF_ADDED) == (c->a == NULL));
	assert_true((c->kind == WSNAP_DIFF_REMOVED) == (c->b == NULL));
	return WSNAP_OK;
}

static const char *diff(struct side *a, struct side *b,
			const struct wsnap_diff_opts *o,
			struct wsnap_diff_stats *st, struct changes *ch)
{
	struct wsnap_error err;

	memset(ch, 0, sizeof(*ch));
	assert_int_equal(wsnap_diff_run(&a->s, &b->s, o, collect, ch, st, &err),
			 WSNAP_OK);
	return ch->text;
}

enum kind { DIR_SIDE, ARCHIVE_SIDE };

static void make_side(struct side *sd, enum kind k, const char *dir,
		      const struct wsnap_policy *p)
{
	if (k == DIR_SIDE)
		side_dir(sd, dir, p);
	else
		side_archive(sd, dir, p, WSNAP_PACK_NONE);
}

/* Every change kind, for a pair of side kinds. */
static void check_changes(enum kind ka, enum kind kb)
{
	char *a = base_tree();
	char *b = copy_tree(a);
	struct wsnap_policy p;
	struct wsnap_diff_stats st;
	struct changes ch;
	struct side sa, sb;

	/* content, same size and other size */
	put_str(b, "README", "hellO\n");
	put_str(b, "src/main.c", "int main(void) { return 1; }\n\n");
	/* mode as presented: 0644 -> 0755 shows, 0644 -> 0664 does not */
	put(b, "src/lib/util.c", "int util;\n", 10, 0755);
	put(b, "a0", "y\n", 2, 0664);
	/* symlink target */
	rm(b, "link");
	mk_link(b, "link", "run.sh");
	/* type: file -> directory, with a child */
	rm(b, "a-b");
	mk_dir(b, "a-b");
	put_str(b, "a-b/inner", "i\n");
	/* removed directory with everything under it; added file */
	rm(b, "olddir");
	put_str(b, "src/new.c", "new\n");
	wsnap_policy_init(&p);
	make_side(&sa, ka, a, &p);
	make_side(&sb, kb, b, &p);
	assert_string_equal(diff(&sa, &sb, NULL, &st, &ch), "M README\n"
							    "T a-b\n"
							    "A a-b/inner\n"
							    "M link\n"
							    "D olddir\n"
							    "D olddir/a\n"
							    "D olddir/b\n"
							    "M src/lib/util.c\n"
							    "M src/main.c\n"
							    "A src/new.c\n");
	assert_int_equal(st.added, 2);
	assert_int_equal(st.removed, 3);
	assert_int_equal(st.modified, 4);
	assert_int_equal(st.type_changed, 1);
	/* and the other way round */
	assert_string_equal(diff(&sb, &sa, NULL, &st, &ch), "M README\n"
							    "T a-b\n"
							    "D a-b/inner\n"
							    "M link\n"
							    "A olddir\n"
							    "A olddir/a\n"
							    "A olddir/b\n"
							    "M src/lib/util.c\n"
							    "M src/main.c\n"
							    "D src/new.c\n");
	/* a side against itself, and against an identical copy */
	assert_string_equal(diff(&sa, &sa, NULL, &st, &ch), "");
	side_release(&sb);
	rm(b, "");
	free(b);
	b = copy_tree(a);
	make_side(&sb, kb, b, &p);
	assert_string_equal(diff(&sa, &sb, NULL, &st, &ch), "");
	assert_int_equal(wsnap_diff_total(&st), 0);
	side_release(&sa);
	side_release(&sb);
	wsnap_policy_release(&p);
	ts_rmtree(a);
	ts_rmtree(b);
	free(a);
	free(b);
}

static void test_diff_archive_vs_archive(void **state)
{
	check_changes(ARCHIVE_SIDE, ARCHIVE_SIDE);
}

static void test_diff_archive_vs_directory(void **state)
{
	check_changes(ARCHIVE_SIDE, DIR_SIDE);
}

static void test_diff_directory_vs_archive(void **state)
{
	check_changes(DIR_SIDE, ARCHIVE_SIDE);
}

static void test_diff_directory_vs_directory(void **state)
{
	check_changes(DIR_SIDE, DIR_SIDE);
}

static void test_diff_type_changes_all_ways(void **state)
{
	char *a = ts_tempdir(), *b = ts_tempdir();
	struct wsnap_policy p;
	struct changes ch;
	struct side sa, sb;

	put_str(a, "f2d", "x");
	mk_dir(b, "f2d");
	put_str(a, "f2l", "x");
	mk_link(b, "f2l", "f2d");
	mk_dir(a, "d2l");
	mk_link(b, "d2l", "f2d");
	mk_link(a, "l2f", "f2d");
	put_str(b, "l2f", "f2d");
	wsnap_policy_init(&p);
	side_archive(&sa, a, &p, WSNAP_PACK_GZIP);
	side_dir(&sb, b, &p);
	assert_string_equal(diff(&sa, &sb, NULL, NULL, &ch),
			    "T d2l\nT f2d\nT f2l\nT l2f\n");
	side_release(&sa);
	side_release(&sb);
	wsnap_policy_release(&p);
	ts_rmtree(a);
	ts_rmtree(b);
	free(a);
	free(b);
}

static void set_mtime(const char *dir, const char *rel, time_t sec, long ns)
{
	char *p = path_of(dir, rel);
	struct timespec ts[2] = {{sec, ns}, {sec, ns}};

	assert_int_equal(utimensat(AT_FDCWD, p, ts, AT_SYMLINK_NOFOLLOW), 0);
	free(p);
}

static void test_diff_mtime_only_with_option(void **state)
{
	char *a = ts_tempdir(), *b = ts_tempdir();
	struct wsnap_policy p;
	struct wsnap_diff_opts o = {.mtime = true};
	struct changes ch;
	struct side sa, sb;

	put_str(a, "f", "same");
	put_str(b, "f", "same");
	put_str(a, "g", "same");
	put_str(b, "g", "same");
	set_mtime(a, "f", 1700000000, 0);
	set_mtime(b, "f", 1700000000, 1);
	set_mtime(a, "g", 1700000000, 5);
	set_mtime(b, "g", 1700000000, 5);
	wsnap_policy_init(&p);
	side_archive(&sa, a, &p, WSNAP_PACK_NONE);
	side_dir(&sb, b, &p);
	assert_string_equal(diff(&sa, &sb, NULL, NULL, &ch), "");
	/* one nanosecond apart is a difference with --mtime */
	assert_string_equal(diff(&sa, &sb, &o, NULL, &ch), "M f\n");
	side_release(&sa);
	side_release(&sb);
	wsnap_policy_release(&p);
	ts_rmtree(a);
	ts_rmtree(b);
	free(a);
	free(b);
}

/* Large files: read in chunks, stopping at the first difference. */
static void test_diff_content_stops_at_first_difference(void **state)
{
	char *a = ts_tempdir(), *b = ts_tempdir();
	size_t len = 5 * WSNAP_DIFF_CHUNK + 17;
	unsigned char *buf = malloc(len);
	struct wsnap_policy p;
	struct wsnap_diff_stats st;
	struct changes ch;
	struct side sa, sb;
	size_t i;

	assert_non_null(buf);
	for (i = 0; i < len; i++)
		buf[i] = (unsigned char)(i * 7 + i / 251);
	put(a, "same", buf, len, 0644);
	put(b, "same", buf, len, 0644);
	put(a, "early", buf, len, 0644);
	put(a, "late", buf, len, 0644);
	buf[10] ^= 1;
	put(b, "early", buf, len, 0644);
	buf[10] ^= 1;
	buf[len - 1] ^= 1;
	put(b, "late", buf, len, 0644);
	wsnap_policy_init(&p);
	side_archive(&sa, a, &p, WSNAP_PACK_NONE);
	side_dir(&sb, b, &p);
	assert_string_equal(diff(&sa, &sb, NULL, &st, &ch),
			    "M early\nM late\n");
	assert_int_equal(st.files_read, 3);
	/* early: one chunk; late: all of it; same: all of it */
	assert_int_equal(st.bytes_read, WSNAP_DIFF_CHUNK + 2 * len);
	side_release(&sa);
	side_release(&sb);
	wsnap_policy_release(&p);
	ts_rmtree(a);
	ts_rmtree(b);
	free(a);
	free(b);
	free(buf);
}

/* Equal sizes are the only reason to read content. */
static void test_diff_reads_only_equal_sizes(void **state)
{
	char *a = ts_tempdir(), *b = ts_tempdir();
	struct wsnap_policy p;
	struct wsnap_diff_stats st;
	struct changes ch;
	struct side sa, sb;

	put_str(a, "bigger", "1234");
	put_str(b, "bigger", "12345");
	put(a, "mode", "m", 1, 0644);
	put(b, "mode", "m", 1, 0755);
	put_str(a, "empty", "");
	put_str(b, "empty", "");
	wsnap_policy_init(&p);
	side_dir(&sa, a, &p);
	side_dir(&sb, b, &p);
	assert_string_equal(diff(&sa, &sb, NULL, &st, &ch),
			    "M bigger\nM mode\n");
	assert_int_equal(st.files_read, 0);
	assert_int_equal(st.bytes_read, 0);
	side_release(&sa);
	side_release(&sb);
	wsnap_policy_release(&p);
	ts_rmtree(a);
	ts_rmtree(b);
	free(a);
	free(b);
}

/* The same archive on both sides: equal identities, nothing read. */
static void test_diff_same_archive_not_read(void **state)
{
	char *a = base_tree();
	struct wsnap_policy p;
	struct wsnap_reader_opts ro = {.keep_data = true};
	struct wsnap_index *idx2 = NULL;
	struct wsnap_diff_archive arc2;
	struct wsnap_diff_side s2;
	struct wsnap_diff_stats st;
	struct wsnap_error err;
	struct changes ch;
	struct side sa;

	wsnap_policy_init(&p);
	side_archive(&sa, a, &p, WSNAP_PACK_NONE);
	assert_int_equal(lseek(sa.data, 0, SEEK_SET), 0);
	assert_int_equal(wsnap_index_build(&idx2, sa.data, &p, &ro, &err),
			 WSNAP_OK);
	wsnap_diff_side_archive(&s2, &arc2, idx2, "again");
	memset(&ch, 0, sizeof(ch));
	assert_int_equal(
		wsnap_diff_run(&sa.s, &s2, NULL, collect, &ch, &st, &err),
		WSNAP_OK);
	assert_string_equal(ch.text, "");
	assert_int_equal(st.files_read, 0);
	wsnap_diff_archive_release(&arc2);
	wsnap_index_free(idx2);
	side_release(&sa);
	wsnap_policy_release(&p);
	ts_rmtree(a);
	free(a);
}

static void test_diff_skip_never_appears(void **state)
{
	char *a = base_tree();
	char *b = copy_tree(a);
	struct wsnap_policy p;
	struct wsnap_error err;
	struct changes ch;
	struct side sa, sb;

	mk_dir(b, "node_modules");
	put_str(b, "node_modules/x.js", "x");
	put_str(b, "src/main.c", "changed but skipped\n");
	rm(b, "olddir");
	wsnap_policy_init(&p);
	assert_int_equal(wsnap_policy_add_skip(&p, "node_modules", &err),
			 WSNAP_OK);
	assert_int_equal(wsnap_policy_add_skip(&p, "src/main.c", &err),
			 WSNAP_OK);
	assert_int_equal(wsnap_policy_add_skip(&p, "olddir", &err), WSNAP_OK);
	side_archive(&sa, a, &p, WSNAP_PACK_NONE);
	side_dir(&sb, b, &p);
	assert_string_equal(diff(&sa, &sb, NULL, NULL, &ch), "");
	side_release(&sa);
	side_release(&sb);
	wsnap_policy_release(&p);
	ts_rmtree(a);
	ts_rmtree(b);
	free(a);
	free(b);
}

static void test_diff_directory_side_rejected(void **state)
{
	char *a = ts_tempdir();
	char *f = path_of(a, "fifo");
	struct wsnap_policy p;
	struct wsnap_index *idx = NULL;
	struct wsnap_error err;
	int root;

	put_str(a, "ok", "ok");
	assert_int_equal(mkfifo(f, 0644), 0);
	wsnap_policy_init(&p);
	root = wsnap_tree_open(a, &err);
	assert_int_equal(wsnap_tree_index(root, a, &p, &idx, &err),
			 WSNAP_REJECTED);
	assert_string_equal(err.member, "./fifo");
	assert_string_equal(err.reason, "unsupported member type");
	assert_null(idx);
	close(root);
	wsnap_policy_release(&p);
	free(f);
	ts_rmtree(a);
	free(a);
}

/* A file that changes between the index and the comparison is an error,
 * never a silent answer. */
static void test_diff_directory_file_changed(void **state)
{
	char *a = ts_tempdir(), *b = ts_tempdir();
	char want[4096];
	struct wsnap_policy p;
	struct wsnap_error err;
	struct changes ch;
	struct side sa, sb;

	put_str(a, "f", "1234");
	put_str(b, "f", "1234");
	wsnap_policy_init(&p);
	side_archive(&sa, a, &p, WSNAP_PACK_NONE);
	side_dir(&sb, b, &p);
	put_str(b, "f", "12345");
	memset(&ch, 0, sizeof(ch));
	assert_int_equal(
		wsnap_diff_run(&sa.s, &sb.s, NULL, collect, &ch, NULL, &err),
		WSNAP_IO);
	assert_string_equal(err.reason, "file changed while being read");
	snprintf(want, sizeof(want), "%s/f", b);
	assert_string_equal(err.member, want);
	side_release(&sa);
	side_release(&sb);
	wsnap_policy_release(&p);
	ts_rmtree(a);
	ts_rmtree(b);
	free(a);
	free(b);
}

/* Many small files: consecutive reads go through the window; a change
 * near a window's end, and one across it, are found all the same. */
static void test_diff_many_small_files(void **state)
{
	char *a = ts_tempdir(), *b = ts_tempdir();
	static const int changed[] = {0, 700, 701, 1046, 1047, 2999};
	char name[64], want[256] = "", buf[1600];
	struct wsnap_policy p;
	struct wsnap_diff_stats st;
	struct changes ch;
	struct side sa, sb;
	size_t i, k, len;

	mk_dir(a, "d");
	mk_dir(b, "d");
	for (i = 0; i < 3000; i++) {
		len = (i * 7919) % 1500;
		for (k = 0; k < len; k++)
			buf[k] = (char)('a' + (i + k) % 26);
		snprintf(name, sizeof(name), "d/f%04zu", i);
		put(a, name, buf, len, 0644);
		for (k = 0; k < sizeof(changed) / sizeof(changed[0]); k++)
			if ((size_t)changed[k] == i && len)
				buf[len - 1] ^= 0x20;
		put(b, name, buf, len, 0644);
	}
	for (k = 0; k < sizeof(changed) / sizeof(changed[0]); k++) {
		if ((changed[k] * 7919) % 1500 == 0)
			continue;
		snprintf(name, sizeof(name), "M d/f%04d\n", changed[k]);
		strcat(want, name);
	}
	wsnap_policy_init(&p);
	side_archive(&sa, a, &p, WSNAP_PACK_NONE);
	side_archive(&sb, b, &p, WSNAP_PACK_ZSTD);
	assert_string_equal(diff(&sa, &sb, NULL, &st, &ch), want);
	assert_string_equal(diff(&sb, &sa, NULL, &st, &ch), want);
	side_release(&sb);
	side_dir(&sb, b, &p);
	assert_string_equal(diff(&sa, &sb, NULL, &st, &ch), want);
	side_release(&sa);
	side_release(&sb);
	wsnap_policy_release(&p);
	ts_rmtree(a);
	ts_rmtree(b);
	free(a);
	free(b);
}

/* An archive whose members are not in path order: reads jump around the
 * data and must still find the right bytes. */
static void test_diff_unsorted_archive(void **state)
{
	char *b = ts_tempdir();
	struct ts_archive *ta = ts_archive_new();
	struct wsnap_policy p;
	struct wsnap_reader_opts ro = {.keep_data = true};
	struct wsnap_error err;
	struct changes ch;
	struct side sa, sb;
	unsigned char *bytes;
	size_t len;
	int i;

	for (i = 9; i >= 0; i--) {
		char name[16], data[32];

		snprintf(name, sizeof(name), "f%d", i);
		snprintf(data, sizeof(data), "content of file %d\n", i);
		ts_add_file(ta, name, 0644, data, strlen(data));
		if (i == 4)
			data[0] = 'C';
		put_str(b, name, data);
	}
	bytes = ts_archive_finish(ta, 1, &len);
	memset(&sa, 0, sizeof(sa));
	sa.root = -1;
	sa.data = ts_memfd(bytes, len);
	free(bytes);
	wsnap_policy_init(&p);
	assert_int_equal(wsnap_index_build(&sa.idx, sa.data, &p, &ro, &err),
			 WSNAP_OK);
	wsnap_diff_side_archive(&sa.s, &sa.arc, sa.idx, "unsorted");
	side_dir(&sb, b, &p);
	assert_string_equal(diff(&sa, &sb, NULL, NULL, &ch), "M f4\n");
	side_release(&sa);
	side_release(&sb);
	wsnap_policy_release(&p);
	ts_rmtree(b);
	free(b);
}

/* The callback can stop the comparison; its status comes back as is. */
static enum wsnap_status stop_at_first(void *ctx,
				       const struct wsnap_diff_change *c,
				       struct wsnap_error *err)
{
	(*(int *)ctx)++;
	return wsnap_error_io(err, 32, "-", "cannot write");
}

static void test_diff_callback_stops(void **state)
{
	char *a = ts_tempdir(), *b = ts_tempdir();
	struct wsnap_policy p;
	struct wsnap_error err;
	struct side sa, sb;
	int calls = 0;

	put_str(a, "x", "1");
	put_str(a, "y", "1");
	wsnap_policy_init(&p);
	side_dir(&sa, a, &p);
	side_dir(&sb, b, &p);
	assert_int_equal(wsnap_diff_run(&sa.s, &sb.s, NULL, stop_at_first,
					&calls, NULL, &err),
			 WSNAP_IO);
	assert_int_equal(calls, 1);
	assert_int_equal(err.errnum, 32);
	side_release(&sa);
	side_release(&sb);
	wsnap_policy_release(&p);
	ts_rmtree(a);
	ts_rmtree(b);
	free(a);
	free(b);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_diff_archive_vs_archive),
		cmocka_unit_test(test_diff_archive_vs_directory),
		cmocka_unit_test(test_diff_directory_vs_archive),
		cmocka_unit_test(test_diff_directory_vs_directory),
		cmocka_unit_test(test_diff_type_changes_all_ways),
		cmocka_unit_test(test_diff_mtime_only_with_option),
		cmocka_unit_test(test_diff_content_stops_at_first_difference),
		cmocka_unit_test(test_diff_reads_only_equal_sizes),
		cmocka_unit_test(test_diff_same_archive_not_read),
		cmocka_unit_test(test_diff_skip_never_appears),
		cmocka_unit_test(test_diff_directory_side_rejected),
		cmocka_unit_test(test_diff_directory_file_changed),
		cmocka_unit_test(test_diff_many_small_files),
		cmocka_unit_test(test_diff_unsorted_archive),
		cmocka_unit_test(test_diff_callback_stops),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
