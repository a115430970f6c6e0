/* SPDX-License-Identifier: MIT */
/*
 * libFuzzer target: arbitrary bytes -> wsnap_index_build.
 *
 * Input layout (fuzz_common.h): without the "WSNP" prefix the archive is
 * built under the default policy from a memfd and, when it fits a pipe, once
 * more from a pipe; with it, under the options it selects (every policy
 * option and limit, keep_data, memfd or pipe, compare or not).
 *
 * Oracles (a violation aborts, so libFuzzer records the input):
 *  - a failure is WSNAP_REJECTED with one of the reasons of policy.md, and
 *    'invalid tar stream' only for the member '<tar>' (never WSNAP_IO: the
 *    input is a memfd or a pipe, the spill goes to /tmp);
 *  - a success gives an index that keeps every invariant of index.h and
 *    the policy: sorted unique paths, parents before children, lookup and
 *    children consistent, no '..', '.', empty component, backslash or
 *    leading '/', limits held, skipped and protected paths absent, modes
 *    sanitized, every data extent inside the decompressed stream (so data
 *    that was skipped by seeking really exists);
 *  - the memfd and the pipe give the same outcome, member and reason, the
 *    same nodes and, with keep_data, the same bytes.
 * Builds run sequentially (reader opts 'sequential'), except when bits 0-2
 * of configuration byte 11 are all set: then the memfd build runs the
 * two-thread pipeline of core/index/build.c, so the comparison with the pipe
 * build is also the pipeline against the sequential loop. (A thread per
 * input costs the sanitizers a few hundred bytes that are never given
 * back: on every input, RSS would reach the 2 GiB limit within an hour.)
 */
#include <errno.h>
#include <fcntl.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "error.h"
#include "index.h"
#include "policy.h"
#include "reader.h"

#include "fuzz_common.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

/* bytes of each file compared between the memfd and the pipe build */
#define FUZZ_READ_MAX (64u << 10)

struct fuzz_run {
	enum wsnap_status status;
	struct wsnap_error err;
	struct wsnap_index *idx;
};

static void fuzz_check_failure(const struct fuzz_run *r)
{
	FUZZ_CHECK(r->idx == NULL);
	if (r->status != WSNAP_REJECTED) {
		fprintf(stderr, "fuzz_index: status %d errno %d: %s: %s\n",
			r->status, r->err.errnum, r->err.member, r->err.reason);
		abort();
	}
	FUZZ_CHECK(r->err.status == WSNAP_REJECTED);
	if (strcmp(r->err.reason, WSNAP_REASON_INVALID_STREAM) == 0)
		FUZZ_CHECK(strcmp(r->err.member, WSNAP_TAR_MEMBER) == 0);
	if (!fuzz_known_reason(r->err.reason)) {
		fprintf(stderr, "fuzz_index: unknown reason '%s' for '%s'\n",
			r->err.reason, r->err.member);
		abort();
	}
}

/* A rel path as the index must hold it: components neither empty, '.' nor
 * '..', no backslash; returns the number of components. */
static uint64_t fuzz_check_rel_path(const char *path)
{
	const char *p = path, *slash;
	uint64_t depth = 0;
	size_t len;

	FUZZ_CHECK(strchr(path, '\\') == NULL);
	while (*p) {
		slash = strchr(p, '/');
		len = slash ? (size_t)(slash - p) : strlen(p);
		FUZZ_CHECK(len > 0);
		FUZZ_CHECK(!(len == 1 && p[0] == '.'));
		FUZZ_CHECK(!(len == 2 && p[0] == '.' && p[1] == '.'));
		depth++;
		if (!slash)
			break;
		p = slash + 1;
		FUZZ_CHECK(*p != '\0');
	}
	return depth;
}

static bool fuzz_within_any(const char *path, const struct wsnap_pathlist *l)
{
	size_t i;

	for (i = 0; i < l->count; i++)
		if (wsnap_path_within(path, strlen(path), l->items[i],
				      strlen(l->items[i])))
			return true;
	return false;
}

/* Every extent of a file: contiguous from 0 to size, data inside the
 * stream. Bounded: at most 4096 extents are walked. */
static void fuzz_check_extents(const struct wsnap_index *idx, uint32_t ino,
			       const struct wsnap_node *n, uint64_t stream)
{
	struct wsnap_extent ext;
	uint64_t off = 0;
	unsigned steps = 0;

	while (off < n->size && steps++ < 4096) {
		FUZZ_CHECK(wsnap_index_extent(idx, ino, off, &ext) == 0);
		FUZZ_CHECK(ext.logical <= off);
		FUZZ_CHECK(ext.length > 0);
		FUZZ_CHECK(ext.logical + ext.length > off);
		FUZZ_CHECK(ext.logical + ext.length <= n->size);
		if (ext.physical >= 0)
			FUZZ_CHECK((uint64_t)ext.physical + ext.length <=
				   stream);
		off = ext.logical + ext.length;
	}
	if (n->size > 0)
		FUZZ_CHECK(wsnap_index_extent(idx, ino, n->size, &ext) ==
			   -EINVAL);
}

static void fuzz_check_index(const struct wsnap_index *idx,
			     const struct wsnap_policy *p, bool keep_data)
{
	struct wsnap_index_stats st;
	const struct wsnap_node *n, *prev = NULL, *parent;
	const uint32_t *kids;
	uint32_t count = wsnap_index_count(idx), ino, k, nk;
	uint64_t total = 0, files = 0, dirs = 0, links = 0, members = 0;
	bool stripped = p->strip_prefix != NULL;

	wsnap_index_stats(idx, &st);
	FUZZ_CHECK(count >= 1);
	FUZZ_CHECK(wsnap_index_node(idx, 0) == NULL);
	FUZZ_CHECK(wsnap_index_node(idx, count + 1) == NULL);
	n = wsnap_index_node(idx, WSNAP_ROOT_INO);
	FUZZ_CHECK(n && n->path[0] == '\0' && n->type == WSNAP_TYPE_DIR);
	FUZZ_CHECK(n->parent == WSNAP_ROOT_INO);
	FUZZ_CHECK(wsnap_index_lookup(idx, "", 0) == WSNAP_ROOT_INO);
	for (ino = 2; ino <= count; ino++) {
		size_t len;

		n = wsnap_index_node(idx, ino);
		FUZZ_CHECK(n != NULL);
		len = strlen(n->path);
		FUZZ_CHECK(len > 0 && len <= p->max_path_length);
		FUZZ_CHECK(fuzz_check_rel_path(n->path) <= p->max_depth);
		if (prev && prev->path[0])
			FUZZ_CHECK(strcmp(prev->path, n->path) < 0);
		prev = n;
		FUZZ_CHECK(wsnap_index_lookup(idx, n->path, len) == ino);
		FUZZ_CHECK(n->parent >= 1 && n->parent < ino);
		parent = wsnap_index_node(idx, n->parent);
		FUZZ_CHECK(parent->type == WSNAP_TYPE_DIR);
		FUZZ_CHECK(n->name_off <= len);
		FUZZ_CHECK(strchr(wsnap_node_name(n), '/') == NULL);
		FUZZ_CHECK(wsnap_index_child(idx, n->parent, wsnap_node_name(n),
					     strlen(wsnap_node_name(n))) ==
			   ino);
		if (!(n->flags & WSNAP_NODE_IMPLICIT))
			members++;
		if (!stripped) {
			FUZZ_CHECK(!fuzz_within_any(n->path, &p->skip));
			FUZZ_CHECK(!fuzz_within_any(n->path, &p->reject_path));
		}
		switch (n->type) {
		case WSNAP_TYPE_DIR:
			dirs++;
			FUZZ_CHECK(n->mode == WSNAP_DIR_MODE);
			FUZZ_CHECK(n->target == NULL);
			break;
		case WSNAP_TYPE_FILE:
			files++;
			FUZZ_CHECK((n->mode & ~0755u) == 0);
			FUZZ_CHECK((n->mode & 0600u) == 0600u);
			FUZZ_CHECK(n->size <= p->max_file_size);
			FUZZ_CHECK(!(n->flags & WSNAP_NODE_IMPLICIT));
			total += n->size;
			if (keep_data)
				fuzz_check_extents(idx, ino, n,
						   st.stream_bytes);
			break;
		case WSNAP_TYPE_SYMLINK:
			links++;
			FUZZ_CHECK(!p->no_symlinks);
			FUZZ_CHECK(n->target != NULL);
			FUZZ_CHECK(n->size == strlen(n->target));
			if (!p->allow_external_symlinks)
				FUZZ_CHECK(n->target[0] != '/');
			for (k = 0; k < p->reject_symlink.count && !stripped;
			     k++)
				FUZZ_CHECK(strcmp(n->path,
						  p->reject_symlink.items[k]));
			break;
		default:
			FUZZ_CHECK(!"node type");
		}
	}
	FUZZ_CHECK(total <= p->max_total_size);
	FUZZ_CHECK(members <= p->max_members);
	FUZZ_CHECK(st.files == files && st.symlinks == links);
	/* repeated directories are members but one node */
	FUZZ_CHECK(st.dirs == dirs && st.members >= members);
	FUZZ_CHECK(st.members <= p->max_members);
	FUZZ_CHECK(st.total_bytes == total);
	for (ino = 1; ino <= count; ino++) {
		n = wsnap_index_node(idx, ino);
		nk = wsnap_index_children(idx, ino, &kids);
		FUZZ_CHECK(nk ==
			   (n->type == WSNAP_TYPE_DIR ? n->nchildren : 0));
		for (k = 0; k < nk; k++) {
			const struct wsnap_node *c =
				wsnap_index_node(idx, kids[k]);

			FUZZ_CHECK(c && c->parent == ino && kids[k] != ino);
			if (k > 0)
				FUZZ_CHECK(
					strcmp(wsnap_node_name(wsnap_index_node(
						       idx, kids[k - 1])),
					       wsnap_node_name(c)) < 0);
		}
	}
}

static void fuzz_build(struct fuzz_run *r, int fd, const struct wsnap_policy *p,
		       bool keep_data, bool threads)
{
	struct wsnap_reader_opts opts = {.keep_data = keep_data,
					 .sequential = !threads};

	r->idx = NULL;
	wsnap_error_clear(&r->err);
	r->status = wsnap_index_build(&r->idx, fd, p, &opts, &r->err);
	close(fd);
	if (r->status == WSNAP_OK) {
		FUZZ_CHECK(r->idx != NULL);
		fuzz_check_index(r->idx, p, keep_data);
	} else {
		fuzz_check_failure(r);
	}
}

static void fuzz_compare_bytes(const struct wsnap_index *a,
			       const struct wsnap_index *b, uint32_t ino,
			       uint64_t size)
{
	static unsigned char ba[FUZZ_READ_MAX], bb[FUZZ_READ_MAX];
	size_t want = size < FUZZ_READ_MAX ? (size_t)size : FUZZ_READ_MAX;
	ssize_t na = wsnap_index_pread(a, ino, ba, want, 0);
	ssize_t nb = wsnap_index_pread(b, ino, bb, want, 0);

	FUZZ_CHECK(na == (ssize_t)want && nb == (ssize_t)want);
	FUZZ_CHECK(memcmp(ba, bb, want) == 0);
	FUZZ_CHECK(wsnap_index_pread(a, ino, ba, 1, size) == 0);
}

/* The same archive from a memfd and from a pipe: same outcome. */
static void fuzz_compare(const struct fuzz_run *a, const struct fuzz_run *b,
			 bool keep_data)
{
	uint32_t ino, count;

	if (a->status != b->status || strcmp(a->err.member, b->err.member) ||
	    strcmp(a->err.reason, b->err.reason)) {
		fprintf(stderr,
			"fuzz_index: memfd gives %d '%s': %s, pipe gives %d "
			"'%s': %s\n",
			a->status, a->err.member, a->err.reason, b->status,
			b->err.member, b->err.reason);
		abort();
	}
	if (a->status != WSNAP_OK)
		return;
	count = wsnap_index_count(a->idx);
	FUZZ_CHECK(count == wsnap_index_count(b->idx));
	for (ino = 1; ino <= count; ino++) {
		const struct wsnap_node *x = wsnap_index_node(a->idx, ino);
		const struct wsnap_node *y = wsnap_index_node(b->idx, ino);

		FUZZ_CHECK(strcmp(x->path, y->path) == 0);
		FUZZ_CHECK(x->type == y->type && x->mode == y->mode);
		FUZZ_CHECK(x->size == y->size && x->flags == y->flags);
		FUZZ_CHECK(x->mtime_sec == y->mtime_sec &&
			   x->mtime_nsec == y->mtime_nsec);
		FUZZ_CHECK((x->target == NULL) == (y->target == NULL));
		if (x->target)
			FUZZ_CHECK(strcmp(x->target, y->target) == 0);
		if (keep_data && x->type == WSNAP_TYPE_FILE)
			fuzz_compare_bytes(a->idx, b->idx, ino, x->size);
	}
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct wsnap_policy policy;
	struct fuzz_input in;
	struct fuzz_run a, b;
	bool keep;
	int fd = -1;

	fuzz_input_parse(&in, &policy, data, size);
	keep = in.flags & FUZZ_KEEP_DATA;
	a.idx = b.idx = NULL;
	if (in.flags & FUZZ_PIPE)
		fd = fuzz_pipe(in.data, in.size);
	if (fd < 0)
		fd = fuzz_memfd(in.data, in.size);
	fuzz_build(&a, fd, &policy, keep, (in.extra & 7) == 7);
	if ((in.flags & FUZZ_COMPARE) && !(in.flags & FUZZ_PIPE)) {
		fd = fuzz_pipe(in.data, in.size);
		if (fd >= 0) {
			fuzz_build(&b, fd, &policy, keep, false);
			fuzz_compare(&a, &b, keep);
		}
	}
	wsnap_index_free(a.idx);
	wsnap_index_free(b.idx);
	wsnap_policy_release(&policy);
	return 0;
}
