/* SPDX-License-Identifier: MIT */
/*
 * Unit tests of ops/patch.c and ops/patch_stat.c: git's path quoting, the
 * lines wsnap writes around libgit2's diffs, files over max_size, and the
 * --stat layout. Expected texts are what git 2.39 prints for the same
 * trees (git diff --cached of a repository holding A, its index made from
 * B).
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "diff.h"
#include "fstree.h"
#include "patch.h"
#include "patch_private.h"
#include "policy.h"
#include "sides.h"
#include "support.h"

/* ---- quoting ---- */

static void quoted(const char *prefix, const char *path, const char *want)
{
	char buf[256];
	size_t n = wsnap_patch_quote(buf, sizeof(buf), prefix, path);

	assert_int_equal(n, strlen(want));
	assert_string_equal(buf, want);
	assert_int_equal(wsnap_patch_quote(NULL, 0, prefix, path), n);
}

static void test_patch_quote_plain(void **state)
{
	quoted("a/", "src/main.c", "a/src/main.c");
	quoted("b/", "with space.txt", "b/with space.txt");
	quoted("", "~!#$%&'()*+,-.:;<=>?@[]^_`{|}",
	       "~!#$%&'()*+,-.:;<=>?@[]^_`{|}");
	quoted("", "", "");
}

static void test_patch_quote_escapes(void **state)
{
	quoted("a/", "q\"t", "\"a/q\\\"t\"");
	quoted("a/", "back\\slash", "\"a/back\\\\slash\"");
	quoted("a/", "tab\tnl\ncr\r", "\"a/tab\\tnl\\ncr\\r\"");
	quoted("", "\a\b\v\f", "\"\\a\\b\\v\\f\"");
	/* other control bytes, DEL and every byte from 0x80: octal */
	quoted("", "\x01\x1b\x1f\x7f", "\"\\001\\033\\037\\177\"");
	quoted("a/", "caf\xc3\xa9", "\"a/caf\\303\\251\"");
	quoted("a/", "bad\xff\xfe", "\"a/bad\\377\\376\"");
	/* one byte to quote quotes the whole name, prefix included */
	quoted("a/", "dir/x y\tz", "\"a/dir/x y\\tz\"");
}

static void test_patch_quote_cut(void **state)
{
	char buf[6];

	memset(buf, 'x', sizeof(buf));
	assert_int_equal(wsnap_patch_quote(buf, sizeof(buf), "a/", "\tbc"),
			 8); /* "a/\tbc" */
	assert_string_equal(buf, "\"a/\\t");
	assert_int_equal(wsnap_patch_quote(buf, 1, "a/", "b"), 3);
	assert_string_equal(buf, "");
}

/* ---- the writer over two directory sides ---- */

struct pair {
	struct ts_pair d; /* the trees and their sides */
	struct wsnap_patch_opts opts;
	struct wsnap_patch_buf out;
	struct wsnap_patch_counts counts;
	int fail_after; /* writes that succeed before one fails; <0: all */
};

static int pair_setup(void **state)
{
	struct pair *t = calloc(1, sizeof(*t));

	assert_non_null(t);
	ts_pair_init(&t->d);
	t->opts.context = WSNAP_PATCH_CONTEXT;
	t->opts.max_size = WSNAP_PATCH_MAX_SIZE;
	t->opts.stat = true;
	t->fail_after = -1;
	*state = t;
	return 0;
}

static int pair_teardown(void **state)
{
	struct pair *t = *state;

	ts_pair_release(&t->d);
	wsnap_patch_buf_release(&t->out);
	free(t);
	return 0;
}

static enum wsnap_status collect(void *ctx, const void *buf, size_t len,
				 struct wsnap_error *err)
{
	struct pair *t = ctx;

	if (t->fail_after == 0)
		return wsnap_error_io(err, EPIPE, "standard output",
				      "cannot write");
	if (t->fail_after > 0)
		t->fail_after--;
	return wsnap_patch_buf_put(&t->out, buf, len, err);
}

/*
 * The patch of t->d.a to t->d.b (an archive side for A when archive_a), then
 * with stat its --stat after a line "--\n"; returns the text (t->out).
 */
static const char *run(struct pair *t, bool archive_a, bool stat,
		       enum wsnap_status want)
{
	struct wsnap_patch *p;
	struct wsnap_diff_stats ds;
	struct wsnap_error err;
	enum wsnap_status s;

	if (archive_a)
		ts_side_archive(&t->d.sa, t->d.a, &t->d.p, WSNAP_PACK_NONE);
	else
		ts_side_dir(&t->d.sa, t->d.a, &t->d.p);
	ts_side_dir(&t->d.sb, t->d.b, &t->d.p);
	t->out.len = 0;
	assert_int_equal(wsnap_patch_buf_str(&t->out, "", &err), WSNAP_OK);
	assert_int_equal(wsnap_patch_new(&p, &t->d.sa.s, &t->d.sb.s, &t->opts,
					 collect, t, &err),
			 WSNAP_OK);
	s = wsnap_diff_run(&t->d.sa.s, &t->d.sb.s, NULL, wsnap_patch_change, p,
			   &ds, &err);
	assert_int_equal(s, want);
	if (s == WSNAP_OK && stat) {
		assert_int_equal(wsnap_patch_buf_str(&t->out, "--\n", &err),
				 WSNAP_OK);
		assert_int_equal(wsnap_patch_stat(p, collect, t, &err),
				 WSNAP_OK);
	}
	wsnap_patch_get_counts(p, &t->counts);
	wsnap_patch_free(p);
	return t->out.p;
}

static void test_patch_text_edits(void **state)
{
	struct pair *t = *state;

	ft_put_str(t->d.a, "f", "1\n2\n3\n4\n5\n6\n7\n8\n9\n");
	ft_put_str(t->d.b, "f", "one\n2\n3\n4\n5\n6\n7\n8\n9");
	assert_string_equal(
		run(t, false, true, WSNAP_OK),
		"diff --git a/f b/f\n"
		"index 0719398..03bc51d 100644\n"
		"--- a/f\n"
		"+++ b/f\n"
		"@@ -1,4 +1,4 @@\n"
		"-1\n"
		"+one\n"
		" 2\n"
		" 3\n"
		" 4\n"
		"@@ -6,4 +6,4 @@\n"
		" 6\n"
		" 7\n"
		" 8\n"
		"-9\n"
		"+9\n"
		"\\ No newline at end of file\n"
		"--\n"
		" f | 4 ++--\n"
		" 1 file changed, 2 insertions(+), 2 deletions(-)\n");
	assert_int_equal(t->counts.files, 1);
	/* the same from an archive side, and with one line of context */
	t->opts.context = 1;
	assert_string_equal(run(t, true, false, WSNAP_OK),
			    "diff --git a/f b/f\n"
			    "index 0719398..03bc51d 100644\n"
			    "--- a/f\n"
			    "+++ b/f\n"
			    "@@ -1,2 +1,2 @@\n"
			    "-1\n"
			    "+one\n"
			    " 2\n"
			    "@@ -8,2 +8,2 @@\n"
			    " 8\n"
			    "-9\n"
			    "+9\n"
			    "\\ No newline at end of file\n");
}

static void test_patch_modes(void **state)
{
	struct pair *t = *state;

	ft_put_mode(t->d.a, "x", "same\n", 0644);
	ft_put_mode(t->d.b, "x", "same\n", 0755);
	ft_put_mode(t->d.a, "y", "a\n", 0755);
	ft_put_mode(t->d.b, "y", "b\n", 0644);
	/* bits git does not keep: nothing to write */
	ft_put_mode(t->d.a, "z", "z\n", 0644);
	ft_put_mode(t->d.b, "z", "z\n", 0600);
	/* an empty directory: git has no directories */
	ft_mkdir(t->d.b, "d");
	assert_string_equal(
		run(t, false, true, WSNAP_OK),
		"diff --git a/x b/x\n"
		"old mode 100644\n"
		"new mode 100755\n"
		"diff --git a/y b/y\n"
		"old mode 100755\n"
		"new mode 100644\n"
		"index 7898192..6178079\n"
		"--- a/y\n"
		"+++ b/y\n"
		"@@ -1 +1 @@\n"
		"-a\n"
		"+b\n"
		"--\n"
		" x | 0\n"
		" y | 2 +-\n"
		" 2 files changed, 1 insertion(+), 1 deletion(-)\n");
	assert_int_equal(t->counts.files, 2);
	assert_int_equal(t->counts.unexpressed, 2);
}

static void test_patch_new_deleted(void **state)
{
	struct pair *t = *state;

	ft_put_mode(t->d.b, "empty", "", 0755);
	ft_put_str(t->d.a, "gone", "bye\n");
	ft_symlink(t->d.a, "link", "gone");
	ft_mkdir(t->d.b, "new dir");
	ft_put_str(t->d.b, "new dir/x y", "hi\n");
	assert_string_equal(
		run(t, false, true, WSNAP_OK),
		"diff --git a/empty b/empty\n"
		"new file mode 100755\n"
		"index 0000000..e69de29\n"
		"diff --git a/gone b/gone\n"
		"deleted file mode 100644\n"
		"index b023018..0000000\n"
		"--- a/gone\n"
		"+++ /dev/null\n"
		"@@ -1 +0,0 @@\n"
		"-bye\n"
		"diff --git a/link b/link\n"
		"deleted file mode 120000\n"
		"index bc99ab0..0000000\n"
		"--- a/link\n"
		"+++ /dev/null\n"
		"@@ -1 +0,0 @@\n"
		"-gone\n"
		"\\ No newline at end of file\n"
		"diff --git a/new dir/x y b/new dir/x y\n"
		"new file mode 100644\n"
		"index 0000000..45b983b\n"
		"--- /dev/null\n"
		"+++ b/new dir/x y\t\n"
		"@@ -0,0 +1 @@\n"
		"+hi\n"
		"--\n"
		" empty       | 0\n"
		" gone        | 1 -\n"
		" link        | 1 -\n"
		" new dir/x y | 1 +\n"
		" 4 files changed, 1 insertion(+), 2 deletions(-)\n");
}

/* A change of type: a deletion, then an addition, one line in --stat. */
static void test_patch_type_change(void **state)
{
	struct pair *t = *state;

	ft_put_str(t->d.a, "s", "text\n");
	ft_symlink(t->d.b, "s", "target");
	ft_symlink(t->d.a, "t", "dir");
	ft_mkdir(t->d.b, "t");
	ft_put_str(t->d.b, "t/f", "f\n");
	assert_string_equal(
		run(t, false, true, WSNAP_OK),
		"diff --git a/s b/s\n"
		"deleted file mode 100644\n"
		"index 8e27be7..0000000\n"
		"--- a/s\n"
		"+++ /dev/null\n"
		"@@ -1 +0,0 @@\n"
		"-text\n"
		"diff --git a/s b/s\n"
		"new file mode 120000\n"
		"index 0000000..1de5659\n"
		"--- /dev/null\n"
		"+++ b/s\n"
		"@@ -0,0 +1 @@\n"
		"+target\n"
		"\\ No newline at end of file\n"
		"diff --git a/t b/t\n"
		"deleted file mode 120000\n"
		"index 8724519..0000000\n"
		"--- a/t\n"
		"+++ /dev/null\n"
		"@@ -1 +0,0 @@\n"
		"-dir\n"
		"\\ No newline at end of file\n"
		"diff --git a/t/f b/t/f\n"
		"new file mode 100644\n"
		"index 0000000..6a69f92\n"
		"--- /dev/null\n"
		"+++ b/t/f\n"
		"@@ -0,0 +1 @@\n"
		"+f\n"
		"--\n"
		" s   | 2 +-\n"
		" t   | 1 -\n"
		" t/f | 1 +\n"
		" 3 files changed, 2 insertions(+), 2 deletions(-)\n");
}

static void test_patch_quoted_names(void **state)
{
	struct pair *t = *state;

	ft_put_str(t->d.b, "q\"t b", "1\n");
	ft_put_str(t->d.b, "tab\tnl\n\xff", "2\n");
	assert_string_equal(run(t, false, true, WSNAP_OK),
			    "diff --git \"a/q\\\"t b\" \"b/q\\\"t b\"\n"
			    "new file mode 100644\n"
			    "index 0000000..d00491f\n"
			    "--- /dev/null\n"
			    "+++ \"b/q\\\"t b\"\t\n"
			    "@@ -0,0 +1 @@\n"
			    "+1\n"
			    "diff --git \"a/tab\\tnl\\n\\377\" "
			    "\"b/tab\\tnl\\n\\377\"\n"
			    "new file mode 100644\n"
			    "index 0000000..0cfbf08\n"
			    "--- /dev/null\n"
			    "+++ \"b/tab\\tnl\\n\\377\"\n"
			    "@@ -0,0 +1 @@\n"
			    "+2\n"
			    "--\n"
			    " \"q\\\"t b\"        | 1 +\n"
			    " \"tab\\tnl\\n\\377\" | 1 +\n"
			    " 2 files changed, 2 insertions(+)\n");
}

static void test_patch_binary(void **state)
{
	struct pair *t = *state;

	ft_put(t->d.a, "bin", "a\0b", 3, 0644);
	ft_put(t->d.b, "bin", "a\0c", 3, 0644);
	assert_string_equal(
		run(t, false, true, WSNAP_OK),
		"diff --git a/bin b/bin\n"
		"index 20b5be9..88f3700 100644\n"
		"Binary files a/bin and b/bin differ\n"
		"--\n"
		" bin | Bin 3 -> 3 bytes\n"
		" 1 file changed, 0 insertions(+), 0 deletions(-)\n");
	assert_int_equal(t->counts.binary, 1);
	/* --binary: the full index line git apply needs, then the data
	 * (deflated by libgit2: its bytes need not be git's) */
	t->opts.binary = true;
	run(t, false, false, WSNAP_OK);
	assert_memory_equal(t->out.p,
			    "diff --git a/bin b/bin\n"
			    "index 20b5be91886d0b6f26dc98a225c0dac05fe2c86e.."
			    "88f37001cec36655decf891d4244853aaa51a00a 100644\n"
			    "GIT binary patch\n"
			    "literal 3\n",
			    131);
}

/*
 * Over max_size: not read, shown as binary without an index line (git
 * would read it and write one: here git apply must refuse the file rather
 * than take an abbreviated id for the whole). Equal sizes are compared in
 * pieces, so a mode change alone stays a mode change.
 */
static void test_patch_sized_out(void **state)
{
	struct pair *t = *state;

	t->opts.max_size = 4;
	ft_put_str(t->d.a, "big", "0123456789\n");
	ft_put_str(t->d.b, "big", "0123456789+\n");
	ft_put_mode(t->d.a, "same", "0123456789\n", 0644);
	ft_put_mode(t->d.b, "same", "0123456789\n", 0755);
	ft_put_str(t->d.b, "new", "0123456789\n");
	ft_put_str(t->d.a, "ok", "1\n");
	ft_put_str(t->d.b, "ok", "2\n");
	assert_string_equal(
		run(t, false, true, WSNAP_OK),
		"diff --git a/big b/big\n"
		"Binary files a/big and b/big differ\n"
		"diff --git a/new b/new\n"
		"new file mode 100644\n"
		"Binary files /dev/null and b/new differ\n"
		"diff --git a/ok b/ok\n"
		"index d00491f..0cfbf08 100644\n"
		"--- a/ok\n"
		"+++ b/ok\n"
		"@@ -1 +1 @@\n"
		"-1\n"
		"+2\n"
		"diff --git a/same b/same\n"
		"old mode 100644\n"
		"new mode 100755\n"
		"--\n"
		" big  | Bin 11 -> 12 bytes\n"
		" new  | Bin 0 -> 11 bytes\n"
		" ok   |   2 +-\n"
		" same |   0\n"
		" 4 files changed, 1 insertion(+), 1 deletion(-)\n");
	assert_int_equal(t->counts.sized_out, 2);
	assert_int_equal(t->counts.files, 4);
}

/* The write callback's error stops the diff and comes back as is. */
static void test_patch_write_error(void **state)
{
	struct pair *t = *state;

	ft_put_str(t->d.a, "f", "1\n");
	ft_put_str(t->d.b, "f", "2\n");
	t->fail_after = 2; /* the header, then the first line fails */
	run(t, false, false, WSNAP_IO);
}

/* ---- the --stat layout ---- */

static const char *stat_text(struct wsnap_patch_buf *b,
			     struct wsnap_patch_file *f, size_t n, int width)
{
	struct wsnap_error err;
	struct pair t = {.fail_after = -1};
	size_t i;

	for (i = 0; i < n; i++)
		f[i].name_len = strlen(f[i].name);
	assert_int_equal(wsnap_patch_buf_str(&t.out, "", &err), WSNAP_OK);
	assert_int_equal(wsnap_patch_stat_write(f, n, width, collect, &t, &err),
			 WSNAP_OK);
	*b = t.out;
	return b->p;
}

/* Bars scaled, a long name cut at a '/', 'Bin', as git lays them out. */
static void test_patch_stat_layout(void **state)
{
	struct wsnap_patch_file f[] = {
		{.name = "big", .added = 200, .deleted = 100},
		{.name = "bin",
		 .binary = true,
		 .old_size = 3,
		 .new_size = 1000},
		{.name = "small", .added = 1},
		{.name = "this/is/a/rather/long/directory/path/that/goes/on/"
			 "and/on/for/ever/and/ever/file.txt",
		 .added = 1},
	};
	struct wsnap_patch_buf b;

	assert_string_equal(
		stat_text(&b, f, 4, 80),
		" big                                                | 300 "
		"++++++++++++++-------\n"
		" bin                                                | Bin 3 "
		"-> 1000 bytes\n"
		" small                                              |   1 +\n"
		" .../that/goes/on/and/on/for/ever/and/ever/file.txt |   1 +\n"
		" 4 files changed, 202 insertions(+), 100 deletions(-)\n");
	wsnap_patch_buf_release(&b);
	assert_memory_equal(stat_text(&b, f, 4, 60),
			    " big                                    | 300 "
			    "++++++++-----\n",
			    58);
	wsnap_patch_buf_release(&b);
}

static void test_patch_stat_counts(void **state)
{
	struct wsnap_patch_file one[] = {{.name = "a", .deleted = 1}};
	struct wsnap_patch_file none[] = {{.name = "a"}};
	struct wsnap_patch_buf b;

	assert_string_equal(stat_text(&b, one, 1, 80),
			    " a | 1 -\n 1 file changed, 1 deletion(-)\n");
	wsnap_patch_buf_release(&b);
	assert_string_equal(
		stat_text(&b, none, 1, 80),
		" a | 0\n 1 file changed, 0 insertions(+), 0 deletions(-)\n");
	wsnap_patch_buf_release(&b);
	assert_string_equal(stat_text(&b, none, 0, 80), "");
	wsnap_patch_buf_release(&b);
}

#define PAIR_TEST(f)                                                           \
	cmocka_unit_test_setup_teardown(f, pair_setup, pair_teardown)

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_patch_quote_plain),
		cmocka_unit_test(test_patch_quote_escapes),
		cmocka_unit_test(test_patch_quote_cut),
		PAIR_TEST(test_patch_text_edits),
		PAIR_TEST(test_patch_modes),
		PAIR_TEST(test_patch_new_deleted),
		PAIR_TEST(test_patch_type_change),
		PAIR_TEST(test_patch_quoted_names),
		PAIR_TEST(test_patch_binary),
		PAIR_TEST(test_patch_sized_out),
		PAIR_TEST(test_patch_write_error),
		cmocka_unit_test(test_patch_stat_layout),
		cmocka_unit_test(test_patch_stat_counts),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
