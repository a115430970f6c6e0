/* SPDX-License-Identifier: MIT */
/*
 * Unit tests of workspace/mountpoint.c and the source of a snapshot mount
 * (workspace/snapshot.c), without any mount.
 *
 * Regression: every mount showed 'wsnap' as its source,
 * and a missing mountpoint was an error. The source option must reach
 * libfuse as the exact path (commas and backslashes in it too); a made
 * mountpoint is removed only when its marker is trusted and names that
 * very directory, and an existing one never.
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
#include "mountpoint.h"
#include "snapshot.h"
#include "support.h"
#include "array.h"

static struct wsnap_error err;

/* ---- the source as libfuse parses it ---- */

struct fsname_opts {
	char *fsname;
};

static const struct fuse_opt fsname_spec[] = {
	{"fsname=%s", offsetof(struct fsname_opts, fsname), 0},
	FUSE_OPT_END,
};

/* What libfuse's option parser makes of the source of the mount args. */
static char *parsed_source(const char *source, const char *user_opts)
{
	struct fuse_args fargs = FUSE_ARGS_INIT(0, NULL);
	struct fsname_opts o = {0};

	assert_int_equal(wsnap_mount_fuse_args(&fargs, source, user_opts), 0);
	/* the other options are not ours to parse here: keep them */
	assert_int_equal(fuse_opt_parse(&fargs, &o, fsname_spec, NULL), 0);
	fuse_opt_free_args(&fargs);
	assert_non_null(o.fsname);
	return o.fsname;
}

static void test_mountpoint_source_escaped(void **state)
{
	static const char *const paths[] = {
		"/srv/snap.tar",
		"/srv/a,b.tar",
		"/srv/back\\slash,\\,x.tar",
		"/srv/ends\\",
		"/srv/\\054not octal\\134.tar",
		"/srv/sp ace\ttab.tar",
		"-",
	};
	size_t i;
	char *got;

	for (i = 0; i < ARRAY_SIZE(paths); i++) {
		got = parsed_source(paths[i], NULL);
		assert_string_equal(got, paths[i]);
		free(got);
	}
	/* the user's own fsname= comes later and wins */
	got = parsed_source("/srv/snap.tar", "allow_other,fsname=mine");
	assert_string_equal(got, "mine");
	free(got);
}

static void test_mountpoint_source_of_archive(void **state)
{
	char *d = ts_tempdir(), *real = realpath(d, NULL), *cwd, *src;
	char want[PATH_MAX];

	assert_non_null(real);
	ft_put_str(d, "a.tar", "x");
	ft_symlink(d, "link.tar", "a.tar");
	cwd = getcwd(NULL, 0);
	assert_int_equal(chdir(d), 0);
	snprintf(want, sizeof(want), "%s/a.tar", real);
	src = wsnap_mount_source("link.tar");
	assert_string_equal(src, want);
	free(src);
	src = wsnap_mount_source("-");
	assert_string_equal(src, "-");
	free(src);
	assert_null(wsnap_mount_source("missing.tar"));
	assert_int_equal(chdir(cwd), 0);
	free(cwd);
	ts_rmtree(d);
	free(d);
	free(real);
}

/* ---- made and removed ---- */

struct fx {
	char *base; /* resolved temporary directory */
	char mnt[PATH_MAX];
	char marker[PATH_MAX];
};

static int fx_setup(void **state)
{
	struct fx *f = calloc(1, sizeof(*f));

	assert_non_null(f);
	f->base = ts_tempdir_real();
	snprintf(f->mnt, sizeof(f->mnt), "%s/mnt", f->base);
	snprintf(f->marker, sizeof(f->marker), "%s/.mnt.wsnap-mountpoint",
		 f->base);
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

static bool exists(const char *path)
{
	struct stat sb;

	return lstat(path, &sb) == 0;
}

static void test_mountpoint_made_and_removed(void **state)
{
	struct fx *f = *state;
	struct wsnap_fs_id id, other;
	struct stat sb;
	mode_t um = umask(027);

	assert_int_equal(wsnap_mountpoint_make(f->mnt, &id, &err), WSNAP_OK);
	umask(um);
	assert_int_equal(stat(f->mnt, &sb), 0);
	assert_true(S_ISDIR(sb.st_mode));
	assert_int_equal(sb.st_mode & 07777, 0750);
	assert_true(wsnap_fs_id_same(&sb, &id));
	assert_int_equal(lstat(f->marker, &sb), 0);
	assert_true(S_ISREG(sb.st_mode));
	assert_int_equal(sb.st_mode & 07777, 0600);
	/* another directory's identity: not the daemon's to remove */
	other = id;
	other.ino++;
	assert_false(wsnap_mountpoint_remove(f->mnt, &other));
	assert_true(exists(f->mnt) && exists(f->marker));
	/* something made in it since: it is not the directory made (its
	 * ctime changed), and stays, emptied again or not */
	ft_put_str(f->mnt, "mine", "x\n");
	assert_false(wsnap_mountpoint_remove(f->mnt, &id));
	assert_true(exists(f->mnt) && exists(f->marker));
	ft_rm(f->mnt, "mine");
	assert_false(wsnap_mountpoint_remove(f->mnt, NULL));
	assert_true(exists(f->mnt));
	assert_int_equal(rmdir(f->mnt), 0);
	assert_int_equal(unlink(f->marker), 0);

	/* made again: removed with the marker, by identity or without */
	assert_int_equal(wsnap_mountpoint_make(f->mnt, &id, &err), WSNAP_OK);
	assert_true(wsnap_mountpoint_remove(f->mnt, &id));
	assert_false(exists(f->mnt) || exists(f->marker));
	assert_int_equal(wsnap_mountpoint_make(f->mnt, &id, &err), WSNAP_OK);
	assert_true(wsnap_mountpoint_remove(f->mnt, NULL));
	assert_false(exists(f->mnt) || exists(f->marker));
	/* a leftover marker of ours does not stop the next make */
	ft_put_str(f->base, ".mnt.wsnap-mountpoint", "old\n");
	assert_int_equal(chmod(f->marker, 0600), 0);
	assert_int_equal(wsnap_mountpoint_make(f->mnt, &id, &err), WSNAP_OK);
	assert_true(wsnap_mountpoint_remove(f->mnt, &id));
}

/* Clears what a case left at f->mnt and its marker, then makes it. */
static void fresh(struct fx *f, struct wsnap_fs_id *id)
{
	char *mnt = ft_path(f->base, "mnt");

	unlink(f->marker);
	if (unlink(mnt) != 0)
		rmdir(mnt);
	free(mnt);
	assert_int_equal(wsnap_mountpoint_make(f->mnt, id, &err), WSNAP_OK);
}

static void test_mountpoint_untrusted_marker(void **state)
{
	struct fx *f = *state;
	struct wsnap_fs_id id;
	char moved[PATH_MAX], other[PATH_MAX], cmd[3 * PATH_MAX];

	snprintf(moved, sizeof(moved), "%s/moved", f->base);
	/* a marker writable by others names nothing */
	fresh(f, &id);
	assert_int_equal(chmod(f->marker, 0666), 0);
	assert_false(wsnap_mountpoint_remove(f->mnt, &id));
	assert_true(exists(f->mnt) && exists(f->marker));
	/* a directory changed since it was made (its ctime) stays */
	fresh(f, &id);
	assert_int_equal(chmod(f->mnt, 0700), 0);
	assert_false(wsnap_mountpoint_remove(f->mnt, NULL));
	assert_true(exists(f->mnt) && exists(f->marker));
	/* the directory replaced by another one: both stay */
	fresh(f, &id);
	assert_int_equal(rename(f->mnt, moved), 0);
	assert_int_equal(mkdir(f->mnt, 0755), 0);
	assert_false(wsnap_mountpoint_remove(f->mnt, NULL));
	assert_true(exists(f->mnt) && exists(f->marker));
	assert_int_equal(rmdir(moved), 0);
	/* a symlink to the directory made in its place is not followed */
	fresh(f, &id);
	assert_int_equal(rename(f->mnt, moved), 0);
	assert_int_equal(symlink(moved, f->mnt), 0);
	assert_false(wsnap_mountpoint_remove(f->mnt, NULL));
	assert_true(exists(moved) && exists(f->marker));
	assert_int_equal(rmdir(moved), 0);
	/* the marker a symlink to a good marker: not read */
	fresh(f, &id);
	assert_int_equal(rename(f->marker, moved), 0);
	assert_int_equal(symlink(moved, f->marker), 0);
	assert_false(wsnap_mountpoint_remove(f->mnt, NULL));
	assert_true(exists(f->mnt));
	assert_int_equal(unlink(moved), 0);
	/* a good marker copied beside another directory names nothing */
	fresh(f, &id);
	snprintf(other, sizeof(other), "%s/other", f->base);
	snprintf(cmd, sizeof(cmd), "cp -p '%s' '%s/.other.wsnap-mountpoint'",
		 f->marker, f->base);
	assert_int_equal(system(cmd), 0);
	assert_int_equal(mkdir(other, 0755), 0);
	assert_false(wsnap_mountpoint_remove(other, NULL));
	assert_true(exists(other));
	/* another user's marker, its text right */
	if (geteuid() == 0) {
		fresh(f, &id);
		assert_int_equal(chown(f->marker, 65534, 65534), 0);
		assert_false(wsnap_mountpoint_remove(f->mnt, &id));
		assert_true(exists(f->mnt) && exists(f->marker));
		assert_int_equal(chown(f->marker, 0, 0), 0);
		assert_true(wsnap_mountpoint_remove(f->mnt, &id));
	}
}

static void test_mountpoint_make_refuses(void **state)
{
	struct fx *f = *state;
	struct wsnap_fs_id id;
	char path[PATH_MAX], target[PATH_MAX];
	char name[300];

	/* anything there, a dangling symlink included: EEXIST */
	snprintf(target, sizeof(target), "%s/target", f->base);
	assert_int_equal(symlink(target, f->mnt), 0);
	assert_int_equal(wsnap_mountpoint_make(f->mnt, &id, &err), WSNAP_IO);
	assert_int_equal(err.errnum, EEXIST);
	assert_false(exists(target));
	assert_false(exists(f->marker));
	/* a missing parent is not made */
	snprintf(path, sizeof(path), "%s/no/mnt", f->base);
	assert_int_equal(wsnap_mountpoint_make(path, &id, &err), WSNAP_IO);
	assert_int_equal(err.errnum, ENOENT);
	/* a parent reached through a symlink is refused */
	assert_int_equal(mkdir(target, 0755), 0);
	snprintf(path, sizeof(path), "%s/mnt/sub", f->base);
	assert_int_equal(wsnap_mountpoint_make(path, &id, &err), WSNAP_IO);
	assert_false(exists(path));
	/* a name with no room for its marker: nothing made */
	memset(name, 'n', 250);
	name[250] = '\0';
	snprintf(path, sizeof(path), "%s/%s", f->base, name);
	assert_int_equal(wsnap_mountpoint_make(path, &id, &err), WSNAP_IO);
	assert_int_equal(err.errnum, ENAMETOOLONG);
	assert_false(exists(path));
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_mountpoint_source_escaped),
		cmocka_unit_test(test_mountpoint_source_of_archive),
#define T(name) cmocka_unit_test_setup_teardown(name, fx_setup, fx_teardown)
		T(test_mountpoint_made_and_removed),
		T(test_mountpoint_untrusted_marker),
		T(test_mountpoint_make_refuses),
#undef T
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
