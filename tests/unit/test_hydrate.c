/* SPDX-License-Identifier: MIT */
/*
 * Unit tests of the state of hydrated workspaces (workspace/hydrate*.c),
 * without any mount.
 *
 * Regression: 'wsnap unmount WS' trusted the state file
 * in '.WS.wsnap' wholesale and removed the trees its 'work' and 'upper'
 * lines named, so that anyone able to make an entry beside the workspace
 * (a sticky /tmp, a shared directory) made root's unmount delete any tree;
 * a failed hydrate removed a '.DIR.wsnap-work' it had not made. Each test
 * here forges or changes a state so that it names a victim directory, and
 * checks that unmount refuses (WSNAP_IO) with the victim and the state
 * untouched. The uid cases need root and skip without it.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "fstree.h"
#include "hydrate.h"
#include "support.h"
#include "array.h"

#define POLICY_HEX "0123456789abcdef0123456789abcdef"
#define NOBODY	   65534

struct fx {
	char *base; /* resolved temporary directory */
	char ws[PATH_MAX];
	char sd[PATH_MAX];     /* ws's state directory */
	char victim[PATH_MAX]; /* a tree nobody may remove */
};

static struct wsnap_error err;

/* "a/b" into out (PATH_MAX bytes). */
static void pathf(char *out, const char *a, const char *b)
{
	assert_true((size_t)snprintf(out, PATH_MAX, "%s/%s", a, b) < PATH_MAX);
}

static int fx_setup(void **state)
{
	struct fx *f = calloc(1, sizeof(*f));

	assert_non_null(f);
	f->base = ts_tempdir_real();
	pathf(f->ws, f->base, "ws");
	pathf(f->sd, f->base, ".ws.wsnap");
	pathf(f->victim, f->base, "victim");
	ft_mkdir(f->base, "ws");
	ft_mkdir(f->base, "victim");
	ft_mkdir(f->base, "victim/sub");
	ft_put_str(f->base, "victim/keep", "precious\n");
	ft_put_str(f->base, "victim/sub/deep", "precious\n");
	*state = f;
	return 0;
}

static int fx_teardown(void **state)
{
	struct fx *f = *state;

	ts_rmtree(f->base);
	free(f->base);
	free(f);
	return 0;
}

/* A state as hydrate writes it, with the given lower, upper and work. */
static void write_state(const char *dir, const char *ws, const char *lower,
			const char *upper, int own, const char *work,
			const char *extra)
{
	char text[4 * PATH_MAX + 512];
	int n;

	n = snprintf(text, sizeof(text),
		     "wsnap-hydrate 1\nworkspace %s\narchive -\npolicy "
		     "%s\noverlay kernel\nlower %s\nupper %s\nown-upper "
		     "%d\nwork %s\n%s",
		     ws, POLICY_HEX, lower, upper, own, work, extra);
	assert_true(n > 0 && (size_t)n < sizeof(text));
	free(ts_write_file(dir, "state", text, (size_t)n));
}

static bool exists(const char *dir, const char *rel)
{
	char *p = ft_path(dir, rel);
	struct stat sb;
	bool e = lstat(p, &sb) == 0;

	free(p);
	return e;
}

/* unmount of the workspace refuses, and the victim and the state stay. */
static void refused(struct fx *f, const char *state_dir)
{
	enum wsnap_status status = WSNAP_OK;

	wsnap_error_clear(&err);
	assert_int_equal(wsnap_hydrate_unmount(f->ws, 0, &status, &err), 1);
	assert_int_equal(status, WSNAP_IO);
	assert_int_equal(err.status, WSNAP_IO);
	assert_true(exists(f->victim, "keep"));
	assert_true(exists(f->victim, "sub/deep"));
	assert_true(exists(state_dir, "state"));
}

/* A state directory made as hydrate makes it, naming the victim. */
static void forge_in(struct fx *f, const char *dir, const char *extra)
{
	char lower[PATH_MAX];

	pathf(lower, dir, "lower");
	write_state(dir, f->ws, lower, f->victim, 1, f->victim, extra);
}

static void test_hydrate_state_dir_symlink(void **state)
{
	struct fx *f = *state;
	char evil[PATH_MAX];

	pathf(evil, f->base, "evil");
	ft_mkdir(f->base, "evil");
	chmod(evil, 0700);
	forge_in(f, evil, "");
	assert_int_equal(symlink(evil, f->sd), 0);
	refused(f, evil);
	assert_true(exists(f->base, ".ws.wsnap"));
	assert_string_equal(err.reason, "untrusted state of a hydrated "
					"workspace (a symlink)");
}

static void test_hydrate_state_dir_other_owner(void **state)
{
	struct fx *f = *state;

	if (geteuid() != 0)
		skip();
	assert_int_equal(mkdir(f->sd, 0700), 0);
	forge_in(f, f->sd, "");
	assert_int_equal(chown(f->sd, NOBODY, NOBODY), 0);
	refused(f, f->sd);
	assert_non_null(strstr(err.reason, "owned by uid 65534"));
}

static void test_hydrate_state_file_other_owner(void **state)
{
	struct fx *f = *state;
	char path[PATH_MAX];

	if (geteuid() != 0)
		skip();
	assert_int_equal(mkdir(f->sd, 0700), 0);
	forge_in(f, f->sd, "");
	pathf(path, f->sd, "state");
	assert_int_equal(chown(path, NOBODY, NOBODY), 0);
	refused(f, f->sd);
}

static void test_hydrate_state_dir_writable(void **state)
{
	static const mode_t modes[] = {0770, 0707, 0777, 01777};
	struct fx *f = *state;
	size_t i;

	assert_int_equal(mkdir(f->sd, 0700), 0);
	forge_in(f, f->sd, "");
	for (i = 0; i < ARRAY_SIZE(modes); i++) {
		assert_int_equal(chmod(f->sd, modes[i]), 0);
		refused(f, f->sd);
		assert_string_equal(err.reason,
				    "untrusted state of a hydrated workspace "
				    "(writable by group or others)");
	}
}

static void test_hydrate_state_file_symlink(void **state)
{
	struct fx *f = *state;
	char evil[PATH_MAX], link[PATH_MAX];

	pathf(evil, f->base, "evil");
	ft_mkdir(f->base, "evil");
	forge_in(f, evil, "");
	assert_int_equal(mkdir(f->sd, 0700), 0);
	pathf(evil, f->base, "evil/state");
	pathf(link, f->sd, "state");
	assert_int_equal(symlink(evil, link), 0);
	refused(f, f->sd);
}

/* A trusted directory whose state names paths hydrate never makes. */
static void test_hydrate_state_paths_elsewhere(void **state)
{
	struct fx *f = *state;
	char lower[PATH_MAX], upper[PATH_MAX], work[PATH_MAX];
	char sib[PATH_MAX], empty[PATH_MAX];

	assert_int_equal(mkdir(f->sd, 0700), 0);
	pathf(lower, f->sd, "lower");
	pathf(upper, f->sd, "upper");
	pathf(work, f->sd, "work");
	pathf(sib, f->base, ".victim.wsnap-work");
	pathf(empty, f->base, "empty");
	ft_mkdir(f->base, "empty");
	ft_mkdir(f->base, ".victim.wsnap-work");
	ft_put_str(f->base, ".victim.wsnap-work/keep", "precious\n");

	/* the work directory */
	write_state(f->sd, f->ws, lower, upper, 1, f->victim, "");
	refused(f, f->sd);
	assert_non_null(strstr(err.reason, "hydrate does not make"));
	/* a fresh upper directory */
	write_state(f->sd, f->ws, lower, f->victim, 1, work, "");
	refused(f, f->sd);
	/* the lower directory (removed when empty) */
	write_state(f->sd, f->ws, empty, upper, 1, work, "");
	refused(f, f->sd);
	assert_true(exists(f->base, "empty"));
	/* the sibling of --upper, but own-upper: never made */
	write_state(f->sd, f->ws, lower, f->victim, 1, sib, "");
	refused(f, f->sd);
	/* the sibling of --upper, recorded with another identity */
	write_state(f->sd, f->ws, lower, f->victim, 0, sib, "work-id 1 2\n");
	refused(f, f->sd);
	assert_true(exists(f->base, ".victim.wsnap-work/keep"));
	/* a path that climbs out */
	pathf(work, f->sd, "../victim");
	write_state(f->sd, f->ws, lower, upper, 1, work, "");
	refused(f, f->sd);
}

static void test_hydrate_state_malformed(void **state)
{
	static const char *const extras[] = {
		"work 1\n",			/* a key twice */
		"future-key 1\n",		/* unknown */
		"archive-id 1 2 3 4 5 6\n",	/* too few numbers */
		"archive-id 1 2 3 4 5 6 7 8\n", /* too many */
		"archive-id 1  2 3 4 5 6 7\n",	/* two spaces */
		"archive-id +1 2 3 4 5 6 7\n",	/* a sign */
		"archive-id 18446744073709551616 2 3 4 5 6 7\n", /* > u64 */
		"archive-id 1 2 3 4 1000000000 6 7\n", /* nsec too big */
		"archive-id 1 2 3 4 -1 6 7\n",	       /* negative nsec */
		"archive-id 1 2 3 9223372036854775808 5 6 7\n", /* > i64 */
		"work-id 1\n",					/* one number */
		"work-id 1 2\n", /* work in the state dir */
		"no-space\n",
		"key-without-value \n",
		"unterminated 1",
	};
	struct fx *f = *state;
	char lower[PATH_MAX], upper[PATH_MAX], work[PATH_MAX];
	size_t i;

	assert_int_equal(mkdir(f->sd, 0700), 0);
	pathf(lower, f->sd, "lower");
	pathf(upper, f->sd, "upper");
	pathf(work, f->sd, "work");
	ft_mkdir(f->sd, "work");
	ft_put_str(f->sd, "work/mine", "x\n");
	for (i = 0; i < ARRAY_SIZE(extras); i++) {
		write_state(f->sd, f->ws, lower, upper, 1, work, extras[i]);
		refused(f, f->sd);
		assert_true(exists(f->sd, "work/mine"));
	}
	/* bad values of the fixed keys */
	write_state(f->sd, "ws", lower, upper, 1, work, "");
	refused(f, f->sd);
	write_state(f->sd, f->ws, "lower", upper, 1, work, "");
	refused(f, f->sd);
	write_state(f->sd, f->ws, lower, upper, 2, work, "");
	refused(f, f->sd);
	pathf(work, f->sd, "wo%2");
	write_state(f->sd, f->ws, lower, upper, 1, work, "");
	refused(f, f->sd);
	pathf(work, f->sd, "wo%00rk");
	write_state(f->sd, f->ws, lower, upper, 1, work, "");
	refused(f, f->sd);
	pathf(work, f->sd, "/work");
	write_state(f->sd, f->ws, lower, upper, 1, work, "");
	refused(f, f->sd);
	assert_true(exists(f->sd, "work/mine"));
}

static void test_hydrate_state_nul_and_size(void **state)
{
	struct fx *f = *state;
	char *big;
	size_t n = (256u << 10) + 1;

	assert_int_equal(mkdir(f->sd, 0700), 0);
	free(ts_write_file(f->sd, "state", "wsnap-hydrate 1\nwork\0x\n", 23));
	refused(f, f->sd);
	big = malloc(n);
	assert_non_null(big);
	memset(big, '\n', n);
	memcpy(big, "wsnap-hydrate 1\n", 16);
	free(ts_write_file(f->sd, "state", big, n));
	free(big);
	refused(f, f->sd);
}

/* A state made through the API, with --upper beside the workspace: the
 * work directory outside the state directory, with its identity. */
static void make_outside(struct fx *f, struct wsnap_hydrate_state *st)
{
	memset(st, 0, sizeof(*st));
	ft_mkdir(f->base, "up");
	st->workspace = strdup(f->ws);
	st->dir = strdup(f->sd);
	st->archive = strdup("-");
	st->upper = ft_path(f->base, "up");
	st->lower = ft_path(f->sd, "lower");
	st->work = wsnap_hydrate_work_sibling(st->upper);
	assert_non_null(st->work);
	memcpy(st->policy, POLICY_HEX, sizeof(st->policy));
	st->kind = WSNAP_OVERLAY_KERNEL;
	wsnap_error_clear(&err);
	assert_int_equal(wsnap_hydrate_state_create(st, &err), WSNAP_OK);
	assert_int_equal(wsnap_hydrate_state_save(st, &err), WSNAP_OK);
	assert_int_equal(mkdir(st->lower, 0755), 0);
}

static void test_hydrate_unmount_removes_what_it_made(void **state)
{
	struct fx *f = *state;
	struct wsnap_hydrate_state st;
	enum wsnap_status status = WSNAP_IO;

	make_outside(f, &st);
	assert_int_equal(wsnap_hydrate_make_work(&st, &err), WSNAP_OK);
	ft_mkdir(f->base, ".up.wsnap-work/work");
	ft_put_str(f->base, ".up.wsnap-work/work/x", "overlay's\n");
	chmod(st.work, 0);
	assert_int_equal(wsnap_hydrate_unmount(f->ws, 0, &status, &err), 1);
	assert_int_equal(status, WSNAP_OK);
	assert_false(exists(f->base, ".ws.wsnap"));
	assert_false(exists(f->base, ".up.wsnap-work"));
	assert_true(exists(f->base, "up"));
	wsnap_hydrate_state_release(&st);
}

static void test_hydrate_unmount_work_swapped(void **state)
{
	struct fx *f = *state;
	struct wsnap_hydrate_state st;
	char moved[PATH_MAX];

	make_outside(f, &st);
	assert_int_equal(wsnap_hydrate_make_work(&st, &err), WSNAP_OK);
	/* a symlink to the victim in its place */
	pathf(moved, f->base, "moved");
	assert_int_equal(rename(st.work, moved), 0);
	assert_int_equal(symlink(f->victim, st.work), 0);
	refused(f, f->sd);
	assert_string_equal(err.reason,
			    "untrusted state of a hydrated workspace (not the "
			    "work directory hydrate made)");
	assert_true(exists(f->sd, "lower"));
	/* another directory in its place */
	assert_int_equal(unlink(st.work), 0);
	ft_mkdir(f->base, ".up.wsnap-work");
	ft_put_str(f->base, ".up.wsnap-work/keep", "precious\n");
	refused(f, f->sd);
	assert_true(exists(f->base, ".up.wsnap-work/keep"));
	wsnap_hydrate_state_release(&st);
}

/* A failed hydrate (the roll-back is the teardown of what it made) keeps a
 * work directory that was there before it. */
static void test_hydrate_rollback_keeps_existing_work(void **state)
{
	struct fx *f = *state;
	struct wsnap_hydrate_state st;

	ft_mkdir(f->base, ".up.wsnap-work");
	ft_put_str(f->base, ".up.wsnap-work/theirs", "precious\n");
	make_outside(f, &st);
	assert_int_equal(wsnap_hydrate_make_work(&st, &err), WSNAP_IO);
	assert_int_equal(err.errnum, EEXIST);
	assert_false(st.work_id_valid);
	wsnap_error_clear(&err);
	assert_int_equal(wsnap_hydrate_teardown(&st, false, &err), WSNAP_OK);
	assert_true(exists(f->base, ".up.wsnap-work/theirs"));
	assert_false(exists(f->base, ".ws.wsnap"));
	wsnap_hydrate_state_release(&st);
}

/* The state directory replaced between hydrate's steps: the roll-back
 * does not act in the new one. */
static void test_hydrate_rollback_state_dir_replaced(void **state)
{
	struct fx *f = *state;
	struct wsnap_hydrate_state st;
	char moved[PATH_MAX];

	make_outside(f, &st);
	pathf(moved, f->base, "moved");
	assert_int_equal(rename(f->sd, moved), 0);
	assert_int_equal(mkdir(f->sd, 0700), 0);
	ft_mkdir(f->sd, "lower");
	ft_put_str(f->sd, "lower/keep", "precious\n");
	assert_int_equal(wsnap_hydrate_teardown(&st, false, &err), WSNAP_IO);
	assert_true(exists(f->sd, "lower/keep"));
	wsnap_hydrate_state_release(&st);
}

/* ---- what unmount would lose ---- */

/* The changes of upper over lower, both plain directories under base. */
static uint64_t count(struct fx *f, enum wsnap_status want)
{
	char l[PATH_MAX], u[PATH_MAX];
	uint64_t n = 99;
	int lfd, ufd;

	pathf(l, f->base, "L");
	pathf(u, f->base, "U");
	lfd = open(l, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	ufd = open(u, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	assert_true(lfd >= 0 && ufd >= 0);
	wsnap_error_clear(&err);
	assert_int_equal(wsnap_hydrate_count_changes(lfd, l, ufd, -1,
						     WSNAP_UPPER_OVERLAYFS,
						     f->ws, &n, &err),
			 want);
	close(lfd);
	close(ufd);
	return n;
}

/*
 * A change is what 'wsnap diff ARCHIVE WORKSPACE' lists: what overlayfs
 * copied up unchanged (a directory, a file with its own bytes and mode, a
 * file touched) is none; content of the same size, a mode, a new file, a
 * type, a whiteout each is one.
 */
static void test_hydrate_count_changes(void **state)
{
	struct fx *f = *state;

	ft_mkdir(f->base, "L");
	ft_mkdir(f->base, "L/src");
	ft_put_str(f->base, "L/src/a.c", "aaaa\n");
	ft_put_str(f->base, "L/src/b.c", "bbbb\n");
	ft_put_mode(f->base, "L/run.sh", "#!/bin/sh\n", 0755);
	ft_symlink(f->base, "L/link", "src/a.c");
	ft_put_str(f->base, "L/gone", "x\n");
	ft_mkdir(f->base, "U");
	assert_int_equal(count(f, WSNAP_OK), 0);
	/* copied up without a change */
	ft_mkdir(f->base, "U/src");
	ft_put_str(f->base, "U/src/a.c", "aaaa\n");
	ft_mtime(f->base, "U/src/a.c", 1000000000, 0);
	ft_put_mode(f->base, "U/run.sh", "#!/bin/sh\n", 0755);
	assert_int_equal(count(f, WSNAP_OK), 0);
	/* the same size, other bytes: read and found */
	ft_put_str(f->base, "U/src/b.c", "BBBB\n");
	assert_int_equal(count(f, WSNAP_OK), 1);
	ft_put_mode(f->base, "U/run.sh", "#!/bin/sh\n", 0644);
	ft_put_str(f->base, "U/new", "new\n");
	ft_put_str(f->base, "U/link", "now a file\n");
	assert_int_equal(count(f, WSNAP_OK), 4);
	if (geteuid() == 0) {
		char *wh = ft_path(f->base, "U/gone");

		assert_int_equal(mknod(wh, S_IFCHR | 0600, 0), 0);
		assert_int_equal(count(f, WSNAP_OK), 5);
		free(wh);
	}
	/* what no snapshot holds cannot be counted */
	{
		char *fifo = ft_path(f->base, "U/src/fifo");

		assert_int_equal(mkfifo(fifo, 0600), 0);
		count(f, WSNAP_REJECTED);
		assert_string_equal(err.reason, "unsupported member type");
		free(fifo);
	}
}

/* A fresh upper directory with entries over a snapshot that is not
 * mounted: refused, nothing changed; --discard tears it down. */
static void test_hydrate_unmount_refuses_uncounted(void **state)
{
	struct fx *f = *state;
	enum wsnap_status status = WSNAP_OK;
	char lower[PATH_MAX], upper[PATH_MAX], work[PATH_MAX];

	assert_int_equal(mkdir(f->sd, 0700), 0);
	pathf(lower, f->sd, "lower");
	pathf(upper, f->sd, "upper");
	pathf(work, f->sd, "work");
	ft_mkdir(f->sd, "lower");
	ft_mkdir(f->sd, "work");
	ft_mkdir(f->sd, "upper");
	write_state(f->sd, f->ws, lower, upper, 1, work, "");
	/* an empty upper directory: nothing to lose, nothing to compare */
	assert_int_equal(wsnap_hydrate_unmount(f->ws, 0, &status, &err), 1);
	assert_int_equal(status, WSNAP_OK);
	assert_false(exists(f->base, ".ws.wsnap"));

	assert_int_equal(mkdir(f->sd, 0700), 0);
	ft_mkdir(f->sd, "lower");
	ft_mkdir(f->sd, "work");
	ft_mkdir(f->sd, "upper");
	ft_put_str(f->sd, "upper/mine", "work of a day\n");
	write_state(f->sd, f->ws, lower, upper, 1, work, "");
	assert_int_equal(wsnap_hydrate_unmount(f->ws, 0, &status, &err), 1);
	assert_int_equal(status, WSNAP_IO);
	assert_non_null(strstr(err.reason, "not unmounted: cannot tell what "
					   "changed (the snapshot is not "
					   "mounted at '"));
	assert_string_equal(err.member, f->ws);
	assert_true(exists(f->sd, "upper/mine"));
	assert_true(exists(f->sd, "state"));
	assert_int_equal(wsnap_hydrate_unmount(f->ws, WSNAP_HYDRATE_DISCARD,
					       &status, &err),
			 1);
	assert_int_equal(status, WSNAP_OK);
	assert_false(exists(f->base, ".ws.wsnap"));
}

int main(void)
{
	const struct CMUnitTest tests[] = {
#define T(name) cmocka_unit_test_setup_teardown(name, fx_setup, fx_teardown)
		T(test_hydrate_state_dir_symlink),
		T(test_hydrate_state_dir_other_owner),
		T(test_hydrate_state_file_other_owner),
		T(test_hydrate_state_dir_writable),
		T(test_hydrate_state_file_symlink),
		T(test_hydrate_state_paths_elsewhere),
		T(test_hydrate_state_malformed),
		T(test_hydrate_state_nul_and_size),
		T(test_hydrate_unmount_removes_what_it_made),
		T(test_hydrate_unmount_work_swapped),
		T(test_hydrate_rollback_keeps_existing_work),
		T(test_hydrate_rollback_state_dir_replaced),
		T(test_hydrate_count_changes),
		T(test_hydrate_unmount_refuses_uncounted),
#undef T
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
