/* SPDX-License-Identifier: MIT */
/* Unit tests of ops/diff.c: the comparison of two sides. */
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
#include <unistd.h>

#include "diff.h"
#include "fstree.h"
#include "index.h"
#include "pack.h"
#include "policy.h"
#include "sides.h"
#include "support.h"
#include "tree.h"
#include "array.h"

enum kind { DIR_SIDE, ARCHIVE_SIDE };

static void make_side(struct ts_side *sd, enum kind k, const char *dir,
		      const struct wsnap_policy *p)
{
	if (k == DIR_SIDE)
		ts_side_dir(sd, dir, p);
	else
		ts_side_archive(sd, dir, p, WSNAP_PACK_NONE);
}

/* ---- the fixture: two trees, a policy, two sides ---- */

static int pair_setup(void **state)
{
	struct ts_pair *t = calloc(1, sizeof(*t));

	assert_non_null(t);
	ts_pair_init(t);
	*state = t;
	return 0;
}

static int pair_teardown(void **state)
{
	ts_pair_release(*state);
	free(*state);
	return 0;
}

/* The base tree of the comparisons, in dir. */
static void base_tree(const char *d)
{
	ft_mkdir(d, "src");
	ft_mkdir(d, "src/lib");
	ft_put_str(d, "src/main.c", "int main(void) { return 0; }\n");
	ft_put_str(d, "src/lib/util.c", "int util;\n");
	ft_put_str(d, "README", "hello\n");
	ft_put_mode(d, "run.sh", "#!/bin/sh\n", 0755);
	ft_symlink(d, "link", "README");
	ft_mkdir(d, "olddir");
	ft_put_str(d, "olddir/a", "a\n");
	ft_put_str(d, "olddir/b", "b\n");
	ft_put_str(d, "a-b", "x\n");
	ft_put_str(d, "a0", "y\n");
	ft_mkdir(d, "a");
	ft_put_str(d, "a/x", "z\n");
}

/* Makes dst (an empty directory) a copy of src. */
static void copy_tree(const char *src, const char *dst)
{
	char cmd[8192];

	snprintf(cmd, sizeof(cmd), "cp -a '%s'/. '%s'/", src, dst);
	assert_int_equal(system(cmd), 0);
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

/* The changes from a to b, one "K path" line each. */
static const char *diff(const struct ts_side *a, const struct ts_side *b,
			const struct wsnap_diff_opts *o,
			struct wsnap_diff_stats *st, struct changes *ch)
{
	struct wsnap_error err;

	memset(ch, 0, sizeof(*ch));
	assert_int_equal(wsnap_diff_run(&a->s, &b->s, o, collect, ch, st, &err),
			 WSNAP_OK);
	return ch->text;
}

/* ---- every kind of change, for each pair of side kinds ---- */

static void check_changes(struct ts_pair *t, enum kind ka, enum kind kb)
{
	char *c = ts_tempdir();
	struct wsnap_diff_stats st;
	struct changes ch;

	base_tree(t->a);
	copy_tree(t->a, t->b);
	copy_tree(t->a, c);
	/* content, same size and other size */
	ft_put_str(t->b, "README", "hellO\n");
	ft_put_str(t->b, "src/main.c", "int main(void) { return 1; }\n\n");
	/* mode as presented: 0644 -> 0755 shows, 0644 -> 0664 does not */
	ft_put_mode(t->b, "src/lib/util.c", "int util;\n", 0755);
	ft_put_mode(t->b, "a0", "y\n", 0664);
	/* symlink target */
	ft_rm(t->b, "link");
	ft_symlink(t->b, "link", "run.sh");
	/* type: file -> directory, with a child */
	ft_rm(t->b, "a-b");
	ft_mkdir(t->b, "a-b");
	ft_put_str(t->b, "a-b/inner", "i\n");
	/* removed directory with everything under it; added file */
	ft_rm(t->b, "olddir");
	ft_put_str(t->b, "src/new.c", "new\n");
	make_side(&t->sa, ka, t->a, &t->p);
	make_side(&t->sb, kb, t->b, &t->p);
	assert_string_equal(diff(&t->sa, &t->sb, NULL, &st, &ch),
			    "M README\n"
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
	assert_string_equal(diff(&t->sb, &t->sa, NULL, &st, &ch),
			    "M README\n"
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
	assert_string_equal(diff(&t->sa, &t->sa, NULL, &st, &ch), "");
	make_side(&t->sb, kb, c, &t->p);
	assert_string_equal(diff(&t->sa, &t->sb, NULL, &st, &ch), "");
	assert_int_equal(wsnap_diff_total(&st), 0);
	ts_rmtree(c);
	free(c);
}

static void test_diff_archive_vs_archive(void **state)
{
	check_changes(*state, ARCHIVE_SIDE, ARCHIVE_SIDE);
}

static void test_diff_archive_vs_directory(void **state)
{
	check_changes(*state, ARCHIVE_SIDE, DIR_SIDE);
}

static void test_diff_directory_vs_archive(void **state)
{
	check_changes(*state, DIR_SIDE, ARCHIVE_SIDE);
}

static void test_diff_directory_vs_directory(void **state)
{
	check_changes(*state, DIR_SIDE, DIR_SIDE);
}

static void test_diff_type_changes_all_ways(void **state)
{
	struct ts_pair *t = *state;
	struct changes ch;

	ft_put_str(t->a, "f2d", "x");
	ft_mkdir(t->b, "f2d");
	ft_put_str(t->a, "f2l", "x");
	ft_symlink(t->b, "f2l", "f2d");
	ft_mkdir(t->a, "d2l");
	ft_symlink(t->b, "d2l", "f2d");
	ft_symlink(t->a, "l2f", "f2d");
	ft_put_str(t->b, "l2f", "f2d");
	ts_side_archive(&t->sa, t->a, &t->p, WSNAP_PACK_GZIP);
	ts_side_dir(&t->sb, t->b, &t->p);
	assert_string_equal(diff(&t->sa, &t->sb, NULL, NULL, &ch),
			    "T d2l\nT f2d\nT f2l\nT l2f\n");
}

static void test_diff_mtime_only_with_option(void **state)
{
	struct ts_pair *t = *state;
	struct wsnap_diff_opts o = {.mtime = true};
	struct changes ch;

	ft_put_str(t->a, "f", "same");
	ft_put_str(t->b, "f", "same");
	ft_put_str(t->a, "g", "same");
	ft_put_str(t->b, "g", "same");
	ft_mtime(t->a, "f", 1700000000, 0);
	ft_mtime(t->b, "f", 1700000000, 1);
	ft_mtime(t->a, "g", 1700000000, 5);
	ft_mtime(t->b, "g", 1700000000, 5);
	ts_side_archive(&t->sa, t->a, &t->p, WSNAP_PACK_NONE);
	ts_side_dir(&t->sb, t->b, &t->p);
	assert_string_equal(diff(&t->sa, &t->sb, NULL, NULL, &ch), "");
	/* one nanosecond apart is a difference with --mtime */
	assert_string_equal(diff(&t->sa, &t->sb, &o, NULL, &ch), "M f\n");
}

/* Large files: read in chunks, stopping at the first difference. */
static void test_diff_content_stops_at_first_difference(void **state)
{
	struct ts_pair *t = *state;
	size_t len = 5 * WSNAP_DIFF_CHUNK + 17, i;
	unsigned char *buf = malloc(len);
	struct wsnap_diff_stats st;
	struct changes ch;

	assert_non_null(buf);
	for (i = 0; i < len; i++)
		buf[i] = (unsigned char)(i * 7 + i / 251);
	ft_put(t->a, "same", buf, len, 0644);
	ft_put(t->b, "same", buf, len, 0644);
	ft_put(t->a, "early", buf, len, 0644);
	ft_put(t->a, "late", buf, len, 0644);
	buf[10] ^= 1;
	ft_put(t->b, "early", buf, len, 0644);
	buf[10] ^= 1;
	buf[len - 1] ^= 1;
	ft_put(t->b, "late", buf, len, 0644);
	free(buf);
	ts_side_archive(&t->sa, t->a, &t->p, WSNAP_PACK_NONE);
	ts_side_dir(&t->sb, t->b, &t->p);
	assert_string_equal(diff(&t->sa, &t->sb, NULL, &st, &ch),
			    "M early\nM late\n");
	assert_int_equal(st.files_read, 3);
	/* early: one chunk; late: all of it; same: all of it */
	assert_int_equal(st.bytes_read, WSNAP_DIFF_CHUNK + 2 * len);
}

/* Equal sizes are the only reason to read content. */
static void test_diff_reads_only_equal_sizes(void **state)
{
	struct ts_pair *t = *state;
	struct wsnap_diff_stats st;
	struct changes ch;

	ft_put_str(t->a, "bigger", "1234");
	ft_put_str(t->b, "bigger", "12345");
	ft_put_mode(t->a, "mode", "m", 0644);
	ft_put_mode(t->b, "mode", "m", 0755);
	ft_put_str(t->a, "empty", "");
	ft_put_str(t->b, "empty", "");
	ts_side_dir(&t->sa, t->a, &t->p);
	ts_side_dir(&t->sb, t->b, &t->p);
	assert_string_equal(diff(&t->sa, &t->sb, NULL, &st, &ch),
			    "M bigger\nM mode\n");
	assert_int_equal(st.files_read, 0);
	assert_int_equal(st.bytes_read, 0);
}

/* The same archive on both sides: equal identities, nothing read. */
static void test_diff_same_archive_not_read(void **state)
{
	struct ts_pair *t = *state;
	struct wsnap_diff_stats st;
	struct changes ch;

	base_tree(t->a);
	ts_side_archive(&t->sa, t->a, &t->p, WSNAP_PACK_NONE);
	ts_side_fd(&t->sb, dup(t->sa.data), &t->p);
	assert_string_equal(diff(&t->sa, &t->sb, NULL, &st, &ch), "");
	assert_int_equal(st.files_read, 0);
}

static void test_diff_skip_never_appears(void **state)
{
	struct ts_pair *t = *state;
	struct wsnap_error err;
	struct changes ch;

	base_tree(t->a);
	copy_tree(t->a, t->b);
	ft_mkdir(t->b, "node_modules");
	ft_put_str(t->b, "node_modules/x.js", "x");
	ft_put_str(t->b, "src/main.c", "changed but skipped\n");
	ft_rm(t->b, "olddir");
	assert_int_equal(wsnap_policy_add_skip(&t->p, "node_modules", &err),
			 WSNAP_OK);
	assert_int_equal(wsnap_policy_add_skip(&t->p, "src/main.c", &err),
			 WSNAP_OK);
	assert_int_equal(wsnap_policy_add_skip(&t->p, "olddir", &err),
			 WSNAP_OK);
	ts_side_archive(&t->sa, t->a, &t->p, WSNAP_PACK_NONE);
	ts_side_dir(&t->sb, t->b, &t->p);
	assert_string_equal(diff(&t->sa, &t->sb, NULL, NULL, &ch), "");
}

static void test_diff_directory_side_rejected(void **state)
{
	struct ts_pair *t = *state;
	char *f = ft_path(t->a, "fifo");
	struct wsnap_index *idx = NULL;
	struct wsnap_error err;
	int root;

	ft_put_str(t->a, "ok", "ok");
	assert_int_equal(mkfifo(f, 0644), 0);
	free(f);
	root = wsnap_tree_open(t->a, &err);
	assert_int_equal(wsnap_tree_index(root, t->a, &t->p, &idx, &err),
			 WSNAP_REJECTED);
	assert_string_equal(err.member, "./fifo");
	assert_string_equal(err.reason, "unsupported member type");
	assert_null(idx);
	close(root);
}

/* A file that changes between the index and the comparison is an error,
 * never a silent answer. */
static void test_diff_directory_file_changed(void **state)
{
	struct ts_pair *t = *state;
	char want[4096];
	struct wsnap_error err;
	struct changes ch;

	ft_put_str(t->a, "f", "1234");
	ft_put_str(t->b, "f", "1234");
	ts_side_archive(&t->sa, t->a, &t->p, WSNAP_PACK_NONE);
	ts_side_dir(&t->sb, t->b, &t->p);
	ft_put_str(t->b, "f", "12345");
	memset(&ch, 0, sizeof(ch));
	assert_int_equal(wsnap_diff_run(&t->sa.s, &t->sb.s, NULL, collect, &ch,
					NULL, &err),
			 WSNAP_IO);
	assert_string_equal(err.reason, "file changed while being read");
	snprintf(want, sizeof(want), "%s/f", t->b);
	assert_string_equal(err.member, want);
}

/*
 * The archive rewritten in place with the same size and its mtime put back
 * (rsync --inplace -t) after its index was built. Its bytes are not the
 * judged ones: an error, never an answer from the new bytes (which said
 * 'M f' here) or from the old ones.
 */
static void test_diff_archive_rewritten_mtime_put_back(void **state)
{
	struct ts_pair *t = *state;
	const struct wsnap_node *n;
	struct timespec times[2];
	struct wsnap_error err;
	struct changes ch;
	struct stat st;

	ft_put_str(t->a, "f", "1234");
	ft_put_str(t->b, "f", "1234");
	ts_side_archive(&t->sa, t->a, &t->p, WSNAP_PACK_NONE);
	ts_side_dir(&t->sb, t->b, &t->p);
	n = wsnap_index_node(t->sa.idx, wsnap_index_lookup(t->sa.idx, "f", 1));
	assert_non_null(n);
	assert_int_equal(fstat(t->sa.data, &st), 0);
	assert_int_equal(pwrite(t->sa.data, "9999", 4, (off_t)n->offset), 4);
	times[0] = st.st_atim;
	times[1] = st.st_mtim;
	assert_int_equal(futimens(t->sa.data, times), 0);
	memset(&ch, 0, sizeof(ch));
	assert_int_equal(wsnap_diff_run(&t->sa.s, &t->sb.s, NULL, collect, &ch,
					NULL, &err),
			 WSNAP_IO);
	assert_string_equal(err.reason, "archive changed while being read");
	assert_string_equal(ch.text, "");
}

/* Many small files: consecutive reads go through the window; a change
 * near a window's end, and one across it, are found all the same. */
static void test_diff_many_small_files(void **state)
{
	struct ts_pair *t = *state;
	static const int changed[] = {0, 700, 701, 1046, 1047, 2999};
	char name[64], want[256] = "", buf[1600];
	struct changes ch;
	size_t i, k, len;

	ft_mkdir(t->a, "d");
	ft_mkdir(t->b, "d");
	for (i = 0; i < 3000; i++) {
		len = (i * 7919) % 1500;
		for (k = 0; k < len; k++)
			buf[k] = (char)('a' + (i + k) % 26);
		snprintf(name, sizeof(name), "d/f%04zu", i);
		ft_put(t->a, name, buf, len, 0644);
		for (k = 0; k < ARRAY_SIZE(changed); k++)
			if ((size_t)changed[k] == i && len)
				buf[len - 1] ^= 0x20;
		ft_put(t->b, name, buf, len, 0644);
	}
	for (k = 0; k < ARRAY_SIZE(changed); k++) {
		if ((changed[k] * 7919) % 1500 == 0)
			continue;
		snprintf(name, sizeof(name), "M d/f%04d\n", changed[k]);
		strcat(want, name);
	}
	ts_side_archive(&t->sa, t->a, &t->p, WSNAP_PACK_NONE);
	ts_side_archive(&t->sb, t->b, &t->p, WSNAP_PACK_ZSTD);
	assert_string_equal(diff(&t->sa, &t->sb, NULL, NULL, &ch), want);
	assert_string_equal(diff(&t->sb, &t->sa, NULL, NULL, &ch), want);
	ts_side_dir(&t->sb, t->b, &t->p);
	assert_string_equal(diff(&t->sa, &t->sb, NULL, NULL, &ch), want);
}

/* An archive whose members are not in path order: reads jump around the
 * data and must still find the right bytes. */
static void test_diff_unsorted_archive(void **state)
{
	struct ts_pair *t = *state;
	struct ts_archive *ta = ts_archive_new();
	struct changes ch;
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
		ft_put_str(t->b, name, data);
	}
	bytes = ts_archive_finish(ta, 1, &len);
	ts_side_fd(&t->sa, ts_memfd(bytes, len), &t->p);
	free(bytes);
	ts_side_dir(&t->sb, t->b, &t->p);
	assert_string_equal(diff(&t->sa, &t->sb, NULL, NULL, &ch), "M f4\n");
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
	struct ts_pair *t = *state;
	struct wsnap_error err;
	int calls = 0;

	ft_put_str(t->a, "x", "1");
	ft_put_str(t->a, "y", "1");
	ts_side_dir(&t->sa, t->a, &t->p);
	ts_side_dir(&t->sb, t->b, &t->p);
	assert_int_equal(wsnap_diff_run(&t->sa.s, &t->sb.s, NULL, stop_at_first,
					&calls, NULL, &err),
			 WSNAP_IO);
	assert_int_equal(calls, 1);
	assert_int_equal(err.errnum, 32);
}

#define PAIR_TEST(f)                                                           \
	cmocka_unit_test_setup_teardown(f, pair_setup, pair_teardown)

int main(void)
{
	const struct CMUnitTest tests[] = {
		PAIR_TEST(test_diff_archive_vs_archive),
		PAIR_TEST(test_diff_archive_vs_directory),
		PAIR_TEST(test_diff_directory_vs_archive),
		PAIR_TEST(test_diff_directory_vs_directory),
		PAIR_TEST(test_diff_type_changes_all_ways),
		PAIR_TEST(test_diff_mtime_only_with_option),
		PAIR_TEST(test_diff_content_stops_at_first_difference),
		PAIR_TEST(test_diff_reads_only_equal_sizes),
		PAIR_TEST(test_diff_same_archive_not_read),
		PAIR_TEST(test_diff_skip_never_appears),
		PAIR_TEST(test_diff_directory_side_rejected),
		PAIR_TEST(test_diff_directory_file_changed),
		PAIR_TEST(test_diff_archive_rewritten_mtime_put_back),
		PAIR_TEST(test_diff_many_small_files),
		PAIR_TEST(test_diff_unsorted_archive),
		PAIR_TEST(test_diff_callback_stops),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
