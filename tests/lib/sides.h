/* SPDX-License-Identifier: MIT */
/*
 * Test support: the two kinds of diff side (diff.h) over a directory or
 * an archive, and a pair of trees to compare, for the diff and patch
 * tests. Every function aborts the test
 * (cmocka fail) on an error.
 */
#ifndef WSNAP_TEST_SIDES_H
#define WSNAP_TEST_SIDES_H

#include "diff.h"
#include "index.h"
#include "pack.h"
#include "policy.h"
#include "tree.h"

struct ts_side {
	int root;
	int data;
	struct wsnap_index *idx;
	struct wsnap_tree_cursor *cursor;
	struct wsnap_diff_archive arc;
	struct wsnap_diff_side s; /* the side to compare */
};

/* An empty side, safe to release. */
void ts_side_reset(struct ts_side *sd);
/* Frees what sd holds and resets it. */
void ts_side_release(struct ts_side *sd);
/* A directory side: walked under the policy, read through a cursor. */
void ts_side_dir(struct ts_side *sd, const char *dir,
		 const struct wsnap_policy *p);
/* An archive side over the bytes in fd (a memfd, now sd's), indexed
 * under p. */
void ts_side_fd(struct ts_side *sd, int fd, const struct wsnap_policy *p);
/* An archive side: dir packed into a memfd and read back. */
void ts_side_archive(struct ts_side *sd, const char *dir,
		     const struct wsnap_policy *p, enum wsnap_pack_compress c);

/* Two fresh directories a and b, a default policy and two empty sides,
 * for comparing a with b. */
struct ts_pair {
	char *a;
	char *b;
	struct wsnap_policy p;
	struct ts_side sa;
	struct ts_side sb;
};

void ts_pair_init(struct ts_pair *t);
/* Releases the sides and the policy, removes both directories. */
void ts_pair_release(struct ts_pair *t);

#endif
