/* SPDX-License-Identifier: MIT */
/* Test support: diff sides (sides.h). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "sides.h"
#include "support.h"

void ts_side_reset(struct ts_side *sd)
{
	memset(sd, 0, sizeof(*sd));
	sd->root = -1;
	sd->data = -1;
}

void ts_side_release(struct ts_side *sd)
{
	wsnap_diff_archive_release(&sd->arc);
	wsnap_tree_cursor_free(sd->cursor);
	wsnap_index_free(sd->idx);
	if (sd->root >= 0)
		close(sd->root);
	if (sd->data >= 0)
		close(sd->data);
	ts_side_reset(sd);
}

void ts_side_dir(struct ts_side *sd, const char *dir,
		 const struct wsnap_policy *p)
{
	struct wsnap_error err;

	ts_side_release(sd);
	sd->root = wsnap_tree_open(dir, &err);
	assert_true(sd->root >= 0);
	assert_int_equal(wsnap_tree_index(sd->root, dir, p, &sd->idx, &err),
			 WSNAP_OK);
	assert_int_equal(
		wsnap_tree_cursor_new(&sd->cursor, sd->root, dir, &err),
		WSNAP_OK);
	wsnap_diff_side_tree(&sd->s, sd->idx, sd->cursor);
}

void ts_side_fd(struct ts_side *sd, int fd, const struct wsnap_policy *p)
{
	struct wsnap_reader_opts ro = {.keep_data = true};
	struct wsnap_error err;

	ts_side_release(sd);
	sd->data = fd;
	assert_int_equal(lseek(fd, 0, SEEK_SET), 0);
	assert_int_equal(wsnap_index_build(&sd->idx, fd, p, &ro, &err),
			 WSNAP_OK);
	wsnap_diff_side_archive(&sd->s, &sd->arc, sd->idx, "archive");
}

void ts_side_archive(struct ts_side *sd, const char *dir,
		     const struct wsnap_policy *p, enum wsnap_pack_compress c)
{
	struct wsnap_pack_opts po = {.policy = p, .compress = c};
	struct wsnap_error err;
	int root = wsnap_tree_open(dir, &err);
	int fd = memfd_create("diff-test", MFD_CLOEXEC);

	assert_true(fd >= 0 && root >= 0);
	assert_int_equal(wsnap_pack_fd(root, dir, fd, &po, NULL, &err),
			 WSNAP_OK);
	close(root);
	ts_side_fd(sd, fd, p);
}

void ts_pair_init(struct ts_pair *t)
{
	t->a = ts_tempdir();
	t->b = ts_tempdir();
	wsnap_policy_init(&t->p);
	ts_side_reset(&t->sa);
	ts_side_reset(&t->sb);
}

void ts_pair_release(struct ts_pair *t)
{
	ts_side_release(&t->sa);
	ts_side_release(&t->sb);
	wsnap_policy_release(&t->p);
	ts_rmtree(t->a);
	ts_rmtree(t->b);
	free(t->a);
	free(t->b);
}
