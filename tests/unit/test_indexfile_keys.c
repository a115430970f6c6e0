/* SPDX-License-Identifier: MIT */
/*
 * Unit tests of what an index file must carry besides the tree: the case
 * dependencies of its symlinks, so that export refuses a cached or sidecar
 * index onto a case-folding destination exactly as a fresh one (a cache
 * entry keeps them, a sidecar has them recomputed by the policy engine),
 * and the key of a cache entry, which every policy option changes.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>
#include <cmocka.h>

#include "export.h"
#include "indexfile.h"
#include "support.h"

static void some_id(struct wsnap_fileid *id)
{
	memset(id, 0, sizeof(*id));
	id->dev = 3;
	id->ino = 4;
	id->size = 10240;
	id->mtime.tv_sec = 1700000000;
	id->ctime.tv_sec = 1700000002;
	id->ctime.tv_nsec = 7;
}

/* A destination that folds case everywhere (export.h's test hook). */
static int always_folds(int fd)
{
	(void)fd;
	return 1;
}

/* Exports idx onto a fresh folding destination: refused because of the
 * symlink 'l', which reaches Dir/f through 'dir/f'. */
static void expect_fold_refused(const struct wsnap_index *idx)
{
	struct wsnap_export_opts o = {.dir_folds = always_folds};
	const struct wsnap_index_case_dep *deps;
	struct wsnap_error err;
	char *dest = ts_tempdir();

	assert_int_equal(wsnap_index_case_deps(idx, &deps), 1);
	assert_int_equal(deps[0].link,
			 wsnap_index_lookup(idx, "l", strlen("l")));
	wsnap_error_clear(&err);
	assert_int_equal(wsnap_export_run(idx, dest, &o, NULL, &err),
			 WSNAP_REJECTED);
	assert_string_equal(err.member, "l");
	assert_string_equal(err.reason, "destination folds case: Dir");
	ts_rmtree(dest);
	free(dest);
}

static int case_archive(void)
{
	struct ts_archive *a = ts_archive_new();
	unsigned char *tar;
	size_t len;
	int fd;

	ts_add_dir(a, "Dir", 0755);
	ts_add_file(a, "Dir/f", 0644, "f", 1);
	ts_add_symlink(a, "l", "dir/f");
	tar = ts_archive_finish(a, 1, &len);
	fd = ts_memfd(tar, len);
	free(tar);
	return fd;
}

static void test_case_deps_survive_index_files(void **state)
{
	struct wsnap_reader_opts ro = {.keep_data = true};
	struct wsnap_index *fresh, *cached, *side;
	struct wsnap_sidecar *sc;
	struct wsnap_fileid id;
	struct wsnap_policy p;
	struct wsnap_error err;
	int afd = case_archive(), efd, sfd;

	(void)state;
	wsnap_policy_init(&p);
	assert_int_equal(wsnap_index_build(&fresh, afd, &p, &ro, &err),
			 WSNAP_OK);
	expect_fold_refused(fresh);

	/* a cache entry */
	some_id(&id);
	efd = memfd_create("entry", MFD_CLOEXEC);
	assert_true(efd >= 0);
	assert_int_equal(wsnap_indexfile_write(efd, fresh, &id, &p, &err),
			 WSNAP_OK);
	assert_int_equal(wsnap_indexfile_load(&cached, efd, &id, &p, &err),
			 WSNAP_OK);
	close(efd);
	assert_int_equal(wsnap_index_attach_archive(cached, afd, &ro, &err),
			 WSNAP_OK);
	expect_fold_refused(cached);

	/* a sidecar: recomputed by the engine, not read from the file */
	sfd = memfd_create("sidecar", MFD_CLOEXEC);
	assert_true(sfd >= 0);
	assert_int_equal(lseek(afd, 0, SEEK_SET), 0);
	assert_int_equal(wsnap_sidecar_write(sfd, afd, &p, &ro, &err),
			 WSNAP_OK);
	assert_int_equal(lseek(sfd, 0, SEEK_SET), 0);
	assert_int_equal(wsnap_sidecar_read(&sc, sfd, "x.wsnapidx", &err),
			 WSNAP_OK);
	close(sfd);
	assert_int_equal(wsnap_sidecar_index(sc, &p,
					     wsnap_sidecar_archive_size(sc),
					     &side, &err),
			 WSNAP_OK);
	wsnap_sidecar_free(sc);
	assert_int_equal(wsnap_index_attach_archive(side, afd, &ro, &err),
			 WSNAP_OK);
	expect_fold_refused(side);

	wsnap_index_free(side);
	wsnap_index_free(cached);
	wsnap_index_free(fresh);
	wsnap_policy_release(&p);
	close(afd);
}

/* One policy option changed from the defaults. */
static void change(struct wsnap_policy *p, int which)
{
	struct wsnap_error err;

	switch (which) {
	case 0:
		p->allow_external_symlinks = true;
		break;
	case 1:
		p->no_symlinks = true;
		break;
	case 2:
		assert_int_equal(wsnap_policy_add_skip(p, "x", &err), WSNAP_OK);
		break;
	case 3:
		assert_int_equal(wsnap_policy_add_reject_path(p, "x", &err),
				 WSNAP_OK);
		break;
	case 4:
		assert_int_equal(wsnap_policy_add_reject_symlink(p, "x", &err),
				 WSNAP_OK);
		break;
	case 5:
		assert_int_equal(wsnap_policy_set_root_name(p, "r", &err),
				 WSNAP_OK);
		break;
	case 6:
		assert_int_equal(wsnap_policy_set_strip_prefix(p, "s", &err),
				 WSNAP_OK);
		break;
	case 7:
		p->max_members--;
		break;
	case 8:
		p->max_total_size--;
		break;
	case 9:
		p->max_file_size--;
		break;
	case 10:
		p->max_path_length--;
		break;
	case 11:
		p->max_depth--;
		break;
	case 12:
		p->max_index_size--;
		break;
	default:
		fail();
	}
}

#define NCHANGES 13

/* Every option, changed alone, gives another entry name and a key that an
 * entry written under the defaults does not match (and none two alike). */
static void test_every_option_changes_the_key(void **state)
{
	char names[NCHANGES + 1][WSNAP_INDEXFILE_NAME_LEN + 1];
	struct wsnap_reader_opts ro = {.keep_data = true};
	struct wsnap_index *idx, *back;
	struct wsnap_policy base, p;
	struct wsnap_fileid id;
	struct wsnap_error err;
	int afd = case_archive(), efd, i, j;

	(void)state;
	some_id(&id);
	wsnap_policy_init(&base);
	assert_int_equal(wsnap_index_build(&idx, afd, &base, &ro, &err),
			 WSNAP_OK);
	efd = memfd_create("entry", MFD_CLOEXEC);
	assert_true(efd >= 0);
	assert_int_equal(wsnap_indexfile_write(efd, idx, &id, &base, &err),
			 WSNAP_OK);
	wsnap_indexfile_name(&id, &base, names[NCHANGES]);
	for (i = 0; i < NCHANGES; i++) {
		wsnap_policy_init(&p);
		change(&p, i);
		wsnap_indexfile_name(&id, &p, names[i]);
		back = NULL;
		assert_int_equal(
			wsnap_indexfile_load(&back, efd, &id, &p, &err),
			WSNAP_IO);
		assert_string_equal(err.reason, "key mismatch");
		assert_null(back);
		wsnap_policy_release(&p);
	}
	for (i = 0; i <= NCHANGES; i++)
		for (j = i + 1; j <= NCHANGES; j++)
			if (strcmp(names[i], names[j]) == 0)
				fail_msg("options %d and %d: one name", i, j);
	/* and the defaults still match */
	assert_int_equal(wsnap_indexfile_load(&back, efd, &id, &base, &err),
			 WSNAP_OK);
	wsnap_index_free(back);
	close(efd);
	wsnap_index_free(idx);
	wsnap_policy_release(&base);
	close(afd);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_case_deps_survive_index_files),
		cmocka_unit_test(test_every_option_changes_the_key),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
