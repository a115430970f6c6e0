/* SPDX-License-Identifier: MIT */
/*
 * Unit tests of ops/upper.c: the merged view of a hydrated workspace made
 * from the lower index and an upper directory, without an overlay mount.
 *
 * Each scenario builds three trees: the lower one L (packed into an
 * archive, whose index is the lower layer), an upper directory U written
 * the way overlayfs or fuse-overlayfs writes one, and M, a plain directory
 * holding what the overlay would show (a copy of L changed alike). The
 * diff of the archive against the view must be the diff against M, with
 * the same status and message when the policy rejects; untouched files are
 * never read. Kernel markers (character devices, trusted.* xattrs) need
 * root: those tests skip without it.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <sys/xattr.h>
#include <unistd.h>

#include "diff.h"
#include "fstree.h"
#include "index.h"
#include "pack.h"
#include "policy.h"
#include "support.h"
#include "tree.h"
#include "upper.h"

struct scene {
	char *l; /* lower tree */
	char *u; /* upper directory */
	char *m; /* the merged view, by hand */
	enum wsnap_upper_format fmt;
	struct wsnap_policy p;
	int data; /* the archive of l */
	struct wsnap_index *idx;
};

static int scene_setup(void **state)
{
	struct scene *s = calloc(1, sizeof(*s));

	assert_non_null(s);
	s->l = ts_tempdir();
	s->u = ts_tempdir();
	s->m = ts_tempdir();
	s->data = -1;
	wsnap_policy_init(&s->p);
	*state = s;
	return 0;
}

static int scene_teardown(void **state)
{
	struct scene *s = *state;

	wsnap_index_free(s->idx);
	if (s->data >= 0)
		close(s->data);
	wsnap_policy_release(&s->p);
	ts_rmtree(s->l);
	ts_rmtree(s->u);
	ts_rmtree(s->m);
	free(s->l);
	free(s->u);
	free(s->m);
	free(s);
	return 0;
}

/* The lower tree of every scene. */
static void lower_tree(const char *d)
{
	ft_mkdir(d, "src");
	ft_mkdir(d, "src/lib");
	ft_put_str(d, "src/main.c", "int main(void) { return 0; }\n");
	ft_put_str(d, "src/lib/util.c", "int util;\n");
	ft_put_str(d, "src/lib/same.c", "same bytes\n");
	ft_put_str(d, "README", "hello\n");
	ft_put_mode(d, "run.sh", "#!/bin/sh\n", 0755);
	ft_symlink(d, "link", "README");
	ft_mkdir(d, "old");
	ft_put_str(d, "old/a", "a\n");
	ft_mkdir(d, "old/sub");
	ft_put_str(d, "old/sub/b", "b\n");
	ft_mkdir(d, "gone");
	ft_put_str(d, "gone/x", "x\n");
	ft_put_str(d, "file-then-dir", "f\n");
	ft_mkdir(d, "dir-then-file");
	ft_put_str(d, "dir-then-file/y", "y\n");
	ft_put_str(d, "twin1", "twin\n");
	ft_mkdir(d, "pair");
	ft_put_str(d, "pair/t", "one\n");
	ft_mkdir(d, "pair2");
	ft_put_str(d, "pair2/t", "two\n");
}

/* L, its archive and index, and M as its copy. */
static void scene_begin(struct scene *s, enum wsnap_upper_format fmt)
{
	struct wsnap_pack_opts po = {.policy = &s->p,
				     .compress = WSNAP_PACK_NONE};
	struct wsnap_reader_opts ro = {.keep_data = true};
	struct wsnap_error err;
	char cmd[8192];
	int root;

	s->fmt = fmt;
	lower_tree(s->l);
	root = wsnap_tree_open(s->l, &err);
	s->data = memfd_create("upper-test", MFD_CLOEXEC);
	assert_true(root >= 0 && s->data >= 0);
	assert_int_equal(wsnap_pack_fd(root, s->l, s->data, &po, NULL, &err),
			 WSNAP_OK);
	close(root);
	assert_int_equal(lseek(s->data, 0, SEEK_SET), 0);
	assert_int_equal(wsnap_index_build(&s->idx, s->data, &s->p, &ro, &err),
			 WSNAP_OK);
	snprintf(cmd, sizeof(cmd), "cp -a '%s'/. '%s'/", s->l, s->m);
	assert_int_equal(system(cmd), 0);
	/* what the overlay shows of the lower files: their presented modes */
	assert_int_equal(chmod(s->m, 0755), 0);
}

/* ---- writing the upper directory as the overlays do ---- */

static bool kernel_fmt(const struct scene *s)
{
	return s->fmt != WSNAP_UPPER_FUSE_OVERLAYFS;
}

/* Skips the test when the kernel's markers cannot be made here. */
static void need_kernel_markers(const struct scene *s)
{
	char *p = ft_path(s->u, "probe");
	int rc = mknod(p, S_IFCHR | 0600, makedev(0, 0));

	if (rc == 0)
		rc = lsetxattr(p, "trusted.overlay.probe", "y", 1, 0);
	unlink(p);
	free(p);
	if (rc != 0)
		skip();
}

/* A whiteout at rel of the upper directory. */
static void u_whiteout(struct scene *s, const char *rel)
{
	char *p, *slash, wh[4096];

	if (kernel_fmt(s)) {
		p = ft_path(s->u, rel);
		assert_int_equal(mknod(p, S_IFCHR, makedev(0, 0)), 0);
		free(p);
		return;
	}
	slash = strrchr(rel, '/');
	if (slash)
		snprintf(wh, sizeof(wh), "%.*s/.wh.%s", (int)(slash - rel), rel,
			 slash + 1);
	else
		snprintf(wh, sizeof(wh), ".wh.%s", rel);
	ft_put_str(s->u, wh, "");
}

static void u_xattr(struct scene *s, const char *rel, const char *name,
		    const char *value)
{
	char *p = ft_path(s->u, rel);

	assert_int_equal(lsetxattr(p, name, value, strlen(value), 0), 0);
	free(p);
}

/* An opaque directory at rel (made). */
static void u_opaque(struct scene *s, const char *rel, bool marker_file)
{
	char buf[4096];

	ft_mkdir(s->u, rel);
	if (kernel_fmt(s)) {
		u_xattr(s, rel, "trusted.overlay.opaque", "y");
	} else if (marker_file) {
		snprintf(buf, sizeof(buf), "%s/.wh..wh..opq", rel);
		ft_put_str(s->u, buf, "");
	} else {
		u_xattr(s, rel, "user.fuseoverlayfs.opaque", "y");
	}
}

/* ---- comparing the view with M ---- */

struct changes {
	char text[8192];
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
	return WSNAP_OK;
}

/* The archive against side b: status, changes (or error) into out. */
static enum wsnap_status run_diff(struct scene *s,
				  const struct wsnap_diff_side *b,
				  struct changes *out,
				  struct wsnap_diff_stats *st)
{
	struct wsnap_diff_opts o = {0};
	struct wsnap_diff_archive arc;
	struct wsnap_diff_side a;
	struct wsnap_error err;
	enum wsnap_status rc;

	memset(out, 0, sizeof(*out));
	wsnap_diff_side_archive(&a, &arc, s->idx, "archive");
	rc = wsnap_diff_run(&a, b, &o, collect, out, st, &err);
	wsnap_diff_archive_release(&arc);
	return rc;
}

/*
 * The view of the scene answers as M does. Returns the number of file
 * pairs the view's diff read, for tests of what is not read.
 */
static uint64_t check_view(struct scene *s, const char *want)
{
	struct wsnap_error eu, em;
	struct wsnap_tree_cursor *cur = NULL;
	struct wsnap_index *mi = NULL;
	struct wsnap_upper *view = NULL;
	struct wsnap_diff_stats su, sm;
	struct wsnap_diff_side bu, bm;
	struct changes cu, cm;
	enum wsnap_status ru, rm;
	const char *declined;
	int ufd = open(s->u, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	int mfd = wsnap_tree_open(s->m, &em);

	assert_true(ufd >= 0 && mfd >= 0);
	wsnap_error_clear(&eu);
	wsnap_error_clear(&em);
	/* M is also the workspace where fuse-overlayfs' names are looked up */
	ru = wsnap_upper_new(&view, s->idx, ufd, mfd, s->fmt, s->m, "archive",
			     &s->p, &declined, &eu);
	assert_null(declined);
	rm = wsnap_tree_index(mfd, s->m, &s->p, &mi, &em);
	assert_int_equal(ru, rm);
	if (ru != WSNAP_OK) {
		/* rejected alike: same member, same reason */
		assert_string_equal(eu.member, em.member);
		assert_string_equal(eu.reason, em.reason);
		if (want)
			assert_string_equal(eu.reason, want);
		close(ufd);
		close(mfd);
		return 0;
	}
	assert_int_equal(wsnap_index_count(wsnap_upper_index(view)),
			 wsnap_index_count(mi));
	assert_int_equal(wsnap_tree_cursor_new(&cur, mfd, s->m, &em), WSNAP_OK);
	wsnap_upper_diff_side(view, &bu);
	wsnap_diff_side_tree(&bm, mi, cur);
	ru = run_diff(s, &bu, &cu, &su);
	rm = run_diff(s, &bm, &cm, &sm);
	assert_int_equal(ru, WSNAP_OK);
	assert_int_equal(rm, WSNAP_OK);
	assert_string_equal(cu.text, cm.text);
	if (want)
		assert_string_equal(cu.text, want);
	wsnap_tree_cursor_free(cur);
	wsnap_index_free(mi);
	wsnap_upper_free(view);
	close(ufd);
	close(mfd);
	return su.files_read;
}

/*
 * The view declines, saying why, where the layers cannot tell what
 * fuse-overlayfs shows. M is the workspace as it shows it (with_ws), or
 * there is no workspace to look names up in.
 */
static void check_declined(struct scene *s, bool with_ws, const char *why)
{
	struct wsnap_upper *view = NULL;
	struct wsnap_error err;
	const char *declined = NULL;
	int ufd = open(s->u, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	int mfd = open(s->m, O_RDONLY | O_DIRECTORY | O_CLOEXEC);

	assert_true(ufd >= 0 && mfd >= 0);
	assert_int_equal(wsnap_upper_new(&view, s->idx, ufd, with_ws ? mfd : -1,
					 s->fmt, s->m, "archive", &s->p,
					 &declined, &err),
			 WSNAP_OK);
	assert_null(view);
	assert_non_null(declined);
	assert_string_equal(declined, why);
	close(ufd);
	close(mfd);
}

/* ---- the tests ---- */

/* Nothing changed: the view is the snapshot, and no file is read. */
static void test_upper_empty_is_the_snapshot(void **state)
{
	struct scene *s = *state;

	scene_begin(s, WSNAP_UPPER_OVERLAYFS);
	assert_int_equal(check_view(s, ""), 0);
}

/* Files written, copied up alike, chmod'ed; new files and directories;
 * only the changed files are read. */
static void test_upper_files(void **state)
{
	struct scene *s = *state;
	uint64_t read;

	scene_begin(s, WSNAP_UPPER_FUSE_OVERLAYFS);
	ft_mkdir(s->u, "src");
	ft_mkdir(s->u, "src/lib");
	ft_put_str(s->u, "src/main.c", "int main(void) { return 1; }\n");
	ft_put_str(s->m, "src/main.c", "int main(void) { return 1; }\n");
	/* copied up with the very same bytes: no change */
	ft_put_str(s->u, "src/lib/same.c", "same bytes\n");
	ft_put_mode(s->u, "run.sh", "#!/bin/sh\n", 0700);
	ft_put_mode(s->m, "run.sh", "#!/bin/sh\n", 0700);
	ft_mkdir(s->u, "new");
	ft_put_str(s->u, "new/n", "n\n");
	ft_mkdir(s->m, "new");
	ft_put_str(s->m, "new/n", "n\n");
	read = check_view(s, "A new\nA new/n\nM run.sh\nM src/main.c\n");
	/* main.c and same.c (equal sizes); nothing untouched */
	assert_int_equal(read, 2);
}

static void deletions(struct scene *s)
{
	ft_mkdir(s->u, "old");
	u_whiteout(s, "old/a");
	ft_rm(s->m, "old/a");
	u_whiteout(s, "gone");
	ft_rm(s->m, "gone");
	u_whiteout(s, "link");
	ft_rm(s->m, "link");
	/* a file replaced by a directory, a directory by a file */
	u_opaque(s, "file-then-dir", true);
	ft_put_str(s->u, "file-then-dir/in", "in\n");
	ft_rm(s->m, "file-then-dir");
	ft_mkdir(s->m, "file-then-dir");
	ft_put_str(s->m, "file-then-dir/in", "in\n");
	ft_put_str(s->u, "dir-then-file", "now a file\n");
	ft_rm(s->m, "dir-then-file");
	ft_put_str(s->m, "dir-then-file", "now a file\n");
	/* a directory removed and made again: opaque */
	u_opaque(s, "src", false);
	ft_put_str(s->u, "src/only", "only\n");
	ft_rm(s->m, "src");
	ft_mkdir(s->m, "src");
	ft_put_str(s->m, "src/only", "only\n");
	/* a symlink for a file */
	ft_symlink(s->u, "README", "run.sh");
	ft_rm(s->m, "README");
	ft_symlink(s->m, "README", "run.sh");
}

/* what deletions() changes, in the diff's order */
#define DELETIONS_WANT                                                         \
	"T README\nT dir-then-file\nD dir-then-file/y\nT file-then-dir\n"      \
	"A file-then-dir/in\nD gone\nD gone/x\nD link\nD old/a\n"              \
	"D src/lib\nD src/lib/same.c\nD src/lib/util.c\nD src/main.c\n"        \
	"A src/only\n"
static const char deletions_want[] = DELETIONS_WANT;

/* Whiteouts and opaque directories, fuse-overlayfs' way ('.wh.' names,
 * '.wh..wh..opq', user.fuseoverlayfs.opaque). */
static void test_upper_fuse_deletions(void **state)
{
	struct scene *s = *state;

	scene_begin(s, WSNAP_UPPER_FUSE_OVERLAYFS);
	deletions(s);
	check_view(s, deletions_want);
}

/* The same with the kernel's markers (character devices 0/0, trusted.*). */
static void test_upper_kernel_deletions(void **state)
{
	struct scene *s = *state;

	scene_begin(s, WSNAP_UPPER_OVERLAYFS);
	need_kernel_markers(s);
	deletions(s);
	check_view(s, deletions_want);
}

/*
 * Directories renamed with redirect_dir=on: absolute and relative
 * redirects, a child renamed inside a renamed directory, a file of the
 * renamed tree read from the lower layer (pair2/t holds "two", the archive
 * has "one" at pair/t: the bytes differ at the same size).
 */
static void test_upper_kernel_redirects(void **state)
{
	struct scene *s = *state;
	char cmd[8192];

	scene_begin(s, WSNAP_UPPER_OVERLAYFS);
	need_kernel_markers(s);
	/* mv old src/moved: absolute redirect, whiteout at the origin */
	ft_mkdir(s->u, "src");
	ft_mkdir(s->u, "src/moved");
	u_xattr(s, "src/moved", "trusted.overlay.redirect", "/old");
	u_whiteout(s, "old");
	/* ... and inside it, sub renamed to sub2: relative redirect */
	ft_mkdir(s->u, "src/moved/sub2");
	u_xattr(s, "src/moved/sub2", "trusted.overlay.redirect", "sub");
	u_whiteout(s, "src/moved/sub");
	ft_put_str(s->u, "src/moved/added", "added\n");
	snprintf(cmd, sizeof(cmd),
		 "mv '%s/old' '%s/src/moved' && mv '%s/src/moved/sub' "
		 "'%s/src/moved/sub2'",
		 s->m, s->m, s->m, s->m);
	assert_int_equal(system(cmd), 0);
	ft_put_str(s->m, "src/moved/added", "added\n");
	/* pair removed, pair2 renamed to pair: relative redirect at the root */
	ft_mkdir(s->u, "pair");
	u_xattr(s, "pair", "trusted.overlay.redirect", "pair2");
	u_whiteout(s, "pair2");
	snprintf(cmd, sizeof(cmd), "rm -r '%s/pair' && mv '%s/pair2' '%s/pair'",
		 s->m, s->m, s->m);
	assert_int_equal(system(cmd), 0);
	/* a redirect to nowhere merges with nothing */
	ft_mkdir(s->u, "nowhere");
	u_xattr(s, "nowhere", "trusted.overlay.redirect", "/no/such/dir");
	ft_mkdir(s->m, "nowhere");
	check_view(s, "A nowhere\nD old\nD old/a\nD old/sub\nD old/sub/b\n"
		      "M pair/t\nD pair2\nD pair2/t\nA src/moved\n"
		      "A src/moved/a\nA src/moved/added\nA src/moved/sub2\n"
		      "A src/moved/sub2/b\n");
}

/*
 * An archive's own '.wh.' names. fuse-overlayfs takes
 * them for markers ('.wh.foo' hid foo, '.wh.dir' hid dir, a bare '.wh.'
 * emptied the root), and the view hid the names alone: the fast diff said
 * other than the full one. With fuse-overlayfs the view declines (hydrate
 * refuses such an archive for it); the kernel's overlayfs shows them as
 * they are, and so does the view.
 */
static void test_upper_archive_wh_names(void **state)
{
	struct scene *s = *state;
	const struct wsnap_node *n;

	ft_put_str(s->l, ".wh.README", "not a whiteout\n");
	ft_mkdir(s->l, ".wh.dir");
	ft_put_str(s->l, ".wh.dir/x", "x\n");
	ft_put_str(s->l, ".wh..wh..opq", "not opaque\n");
	ft_put_str(s->l, ".wh.", "bare\n");
	ft_put_str(s->l, "x.wh.y", "no prefix\n");
	scene_begin(s, WSNAP_UPPER_FUSE_OVERLAYFS);
	n = wsnap_upper_fuse_hidden(s->idx);
	assert_non_null(n);
	assert_string_equal(n->path, ".wh.");
	check_declined(s, true, "a '.wh.' name in the archive");
	s->fmt = WSNAP_UPPER_OVERLAYFS;
	check_view(s, "");
	/* and changed over them in the workspace */
	ft_put_str(s->u, ".wh.README", "changed\n");
	ft_put_str(s->m, ".wh.README", "changed\n");
	ft_put_str(s->u, ".wh.new", "new\n");
	ft_put_str(s->m, ".wh.new", "new\n");
	check_view(s, "M .wh.README\nA .wh.new\n");
}

/* No such name in the archive: nothing to refuse. */
static void test_upper_fuse_hidden_none(void **state)
{
	struct scene *s = *state;

	scene_begin(s, WSNAP_UPPER_FUSE_OVERLAYFS);
	assert_null(wsnap_upper_fuse_hidden(s->idx));
}

/*
 * '.wh.' names of a fuse-overlayfs upper directory that are not the
 * markers it reads them as: a file the user renamed to '.wh.moved' (the
 * workspace shows it), a whiteout beside the entry it names, a bare
 * '.wh.', a whiteout whose name the workspace still shows, and any of
 * them with no workspace to look in. Each declines.
 */
static void test_upper_fuse_wh_names_in_upper(void **state)
{
	struct scene *s = *state;

	scene_begin(s, WSNAP_UPPER_FUSE_OVERLAYFS);
	ft_put_str(s->u, ".wh.moved", "renamed\n");
	ft_put_str(s->m, ".wh.moved", "renamed\n");
	check_declined(s, true, "a '.wh.' name the workspace shows as it is");
	ft_rm(s->u, ".wh.moved");
	ft_rm(s->m, ".wh.moved");

	u_whiteout(s, "README");
	ft_put_str(s->u, "README", "beside\n");
	check_declined(s, true, "a whiteout beside what it names");
	ft_rm(s->u, "README");
	ft_rm(s->u, ".wh.README");

	ft_put_str(s->u, ".wh.", "");
	check_declined(s, true, "a bare '.wh.' in the upper directory");
	ft_rm(s->u, ".wh.");

	ft_mkdir(s->u, "old");
	u_whiteout(s, "old/a");
	check_declined(s, true, "a '.wh.' name the workspace shows as it is");
	ft_rm(s->m, "old/a");
	check_declined(s, false, "a '.wh.' name the workspace shows as it is");
	check_view(s, "D old/a\n");
}

/* The policy holds on the view as on the walker's tree: an escaping
 * symlink, and --skip. */
static void test_upper_policy(void **state)
{
	struct scene *s = *state;

	scene_begin(s, WSNAP_UPPER_FUSE_OVERLAYFS);
	ft_symlink(s->u, "escape", "../../etc/passwd");
	ft_symlink(s->m, "escape", "../../etc/passwd");
	check_view(s, "symlink target escapes archive root: ../../etc/passwd");
}

static void test_upper_skip(void **state)
{
	struct scene *s = *state;
	struct wsnap_error err;

	assert_int_equal(wsnap_policy_add_skip(&s->p, "old", &err), WSNAP_OK);
	scene_begin(s, WSNAP_UPPER_FUSE_OVERLAYFS);
	ft_mkdir(s->u, "old");
	ft_put_str(s->u, "old/skipped", "s\n");
	ft_put_str(s->m, "old/skipped", "s\n");
	ft_put_str(s->u, "kept", "k\n");
	ft_put_str(s->m, "kept", "k\n");
	check_view(s, "A kept\n");
}

/*
 * A new directory 'big' of 40 files in a scene whose policy allows 30
 * members; with skip, 15 of them are --skip paths.
 */
static void big_dir(struct scene *s, bool skip)
{
	struct wsnap_error err;
	char name[32];
	int i;

	scene_begin(s, WSNAP_UPPER_FUSE_OVERLAYFS);
	s->p.max_members = 30;
	ft_mkdir(s->u, "big");
	ft_mkdir(s->m, "big");
	for (i = 0; i < 40; i++) {
		snprintf(name, sizeof(name), "big/f%02d", i);
		ft_put_str(s->u, name, "x");
		ft_put_str(s->m, name, "x");
		if (skip && i % 8 < 3)
			assert_int_equal(
				wsnap_policy_add_skip(&s->p, name, &err),
				WSNAP_OK);
	}
}

/* A directory with more entries than members allowed is refused naming
 * it, as the walker does. */
static void test_upper_listing_limit(void **state)
{
	big_dir(*state, false);
	check_view(*state, "archive member count exceeds limit");
}

/* Skipped names are not listed: 25 entries stay under the listing bound,
 * and the builder's member count refuses the first member past the
 * limit, naming it, as with the walker. */
static void test_upper_listing_skipped(void **state)
{
	big_dir(*state, true);
	check_view(*state, "archive member count exceeds limit");
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(
			test_upper_empty_is_the_snapshot, scene_setup,
			scene_teardown),
		cmocka_unit_test_setup_teardown(test_upper_files, scene_setup,
						scene_teardown),
		cmocka_unit_test_setup_teardown(test_upper_fuse_deletions,
						scene_setup, scene_teardown),
		cmocka_unit_test_setup_teardown(test_upper_kernel_deletions,
						scene_setup, scene_teardown),
		cmocka_unit_test_setup_teardown(test_upper_archive_wh_names,
						scene_setup, scene_teardown),
		cmocka_unit_test_setup_teardown(test_upper_fuse_hidden_none,
						scene_setup, scene_teardown),
		cmocka_unit_test_setup_teardown(
			test_upper_fuse_wh_names_in_upper, scene_setup,
			scene_teardown),
		cmocka_unit_test_setup_teardown(test_upper_kernel_redirects,
						scene_setup, scene_teardown),
		cmocka_unit_test_setup_teardown(test_upper_policy, scene_setup,
						scene_teardown),
		cmocka_unit_test_setup_teardown(test_upper_skip, scene_setup,
						scene_teardown),
		cmocka_unit_test_setup_teardown(test_upper_listing_limit,
						scene_setup, scene_teardown),
		cmocka_unit_test_setup_teardown(test_upper_listing_skipped,
						scene_setup, scene_teardown),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
