/* SPDX-License-Identifier: MIT */
/*
 * Safe export (policy.md section 7): the entry point and the three passes.
 * See export.h for the invariants and the attacks they block, and
 * export_private.h for how the work is split between the export*.c files.
 *
 * Invariants kept here:
 *  - Pass 1 (archive order): directories and regular files; pass 2:
 *    symlinks, so no file of the archive is ever written through a symlink
 *    of the archive; pass 3: directory mtimes, deepest first, so that no
 *    later write in a directory changes its time. Pass 1 writes its files
 *    on several threads only after every directory and parent is made
 *    (export_pool.c); passes 2 and 3 run on the calling thread.
 *  - The data read is the data validated: the archive is checked unchanged
 *    before pass 1 (exp_init) and after it.
 *  - The first error stops the export. A system error names DEST/rel
 *    (wsnap_export_fail_io); a destination that did not exist is built
 *    beside it and only renamed into place on success (export_fresh.c).
 *  - Cancellation is checked before each member.
 */
#include "export_private.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

/* Progress callback at least every so many members or bytes. */
#define PROGRESS_MEMBERS 2048u
#define PROGRESS_BYTES	 (32ull << 20)

/* ---- errors ---------------------------------------------------------- */

enum wsnap_status wsnap_export_fail_io(struct exp *x, int errnum,
				       const char *rel, const char *what)
{
	int n;

	wsnap_error_io(x->err, errnum, NULL, "%s", what);
	if (rel && rel[0])
		n = snprintf(x->err->member, sizeof(x->err->member), "%s/%s",
			     x->label, rel);
	else
		n = snprintf(x->err->member, sizeof(x->err->member), "%s",
			     x->label);
	if (n < 0 || (size_t)n >= sizeof(x->err->member))
		x->err->truncated = 1;
	return WSNAP_IO;
}

/* ---- progress -------------------------------------------------------- */

void wsnap_export_progress_tick(struct exp *x, bool final)
{
	if (!x->opts || !x->opts->progress)
		return;
	if (!final && x->prog.members_done < x->next_members &&
	    x->prog.bytes_done < x->next_bytes)
		return;
	x->next_members = x->prog.members_done + PROGRESS_MEMBERS;
	x->next_bytes = x->prog.bytes_done + PROGRESS_BYTES;
	x->opts->progress(x->opts->ctx, &x->prog);
}

enum wsnap_status wsnap_export_check_cancel(struct exp *x)
{
	if (x->opts && x->opts->cancel && *x->opts->cancel)
		return wsnap_export_fail_io(x, EINTR, NULL, "interrupted");
	return WSNAP_OK;
}

static void node_done(struct exp *x, const struct wsnap_node *n)
{
	x->prog.members_done++;
	x->st->members++;
	if (x->opts && x->opts->node)
		x->opts->node(x->opts->ctx, n);
	wsnap_export_progress_tick(x, false);
}

/* ---- leaves of passes 2 and 3 ---------------------------------------- */

/* Pass 2, a symlink with its archived target; its own mtime. */
static enum wsnap_status put_symlink(struct exp *x, uint32_t ino)
{
	const struct wsnap_node *n = node_of(x, ino);
	const char *name = wsnap_node_name(n);
	struct timespec ts[2];
	enum wsnap_status s;
	int pfd, tries;

	pfd = wsnap_export_dir_fd(x, n->parent, n, true);
	if (pfd < 0)
		return x->err->status;
	for (tries = 0;; tries++) {
		if (symlinkat(n->target, pfd, name) == 0)
			break;
		if (errno != EEXIST)
			return wsnap_export_fail_io(x, errno, n->path,
						    "cannot create symlink");
		if (tries == LEAF_RETRIES)
			return wsnap_export_fail_io(
				x, EAGAIN, n->path,
				"destination keeps changing");
		s = wsnap_export_clear_leaf(x, pfd, n);
		if (s != WSNAP_OK)
			return s;
	}
	node_times(n, ts);
	if (utimensat(pfd, name, ts, AT_SYMLINK_NOFOLLOW) < 0)
		return wsnap_export_fail_io(x, errno, n->path,
					    "cannot set mtime");
	x->st->symlinks++;
	return WSNAP_OK;
}

/* Pass 3, one directory's mtime: the archived one, or the index's default
 * for a directory made only as a parent of what was selected. */
static enum wsnap_status put_dir_mtime(struct exp *x, uint32_t ino)
{
	const struct wsnap_node *n = node_of(x, ino);
	struct timespec ts[2];
	int fd;

	fd = wsnap_export_dir_fd(x, ino, n, false);
	if (fd < 0)
		return x->err->status;
	node_times(n, ts);
	if (!exp_selected(x, ino))
		ts[1] = (struct timespec){0, 0};
	if (futimens(fd, ts) < 0)
		return wsnap_export_fail_io(x, errno, n->path,
					    "cannot set mtime");
	return WSNAP_OK;
}

/* ---- passes ---------------------------------------------------------- */

static int order_key_cmp(const void *a, const void *b)
{
	const struct order_key *x = a, *y = b;

	if (x->key != y->key)
		return x->key < y->key ? -1 : 1;
	return x->ino < y->ino ? -1 : x->ino > y->ino;
}

static bool root_is_member(const struct wsnap_node *root)
{
	return !(root->flags & WSNAP_NODE_IMPLICIT);
}

/* The data read is the data validated: the archive has not changed. */
static enum wsnap_status check_data(struct exp *x)
{
	const struct wsnap_export_opts *o = x->opts;
	struct stat now;

	if (o && (o->flags & WSNAP_EXPORT_INPUT)) {
		const struct stat *then = o->input_stat;

		if (!then)
			return WSNAP_OK;
		if (fstat(o->input_fd, &now) < 0)
			return wsnap_export_fail_io(x, errno, NULL,
						    "cannot read the archive");
		if (now.st_dev != then->st_dev || now.st_ino != then->st_ino ||
		    now.st_size != then->st_size ||
		    now.st_mtim.tv_sec != then->st_mtim.tv_sec ||
		    now.st_mtim.tv_nsec != then->st_mtim.tv_nsec)
			return wsnap_export_fail_io(
				x, EIO, NULL,
				"archive changed since it was read");
		return WSNAP_OK;
	}
	if (wsnap_index_data_check(x->idx) < 0)
		return wsnap_export_fail_io(
			x, EIO, NULL, "archive changed since it was read");
	return WSNAP_OK;
}

/*
 * Pass 1 with the files written in parallel (export_pool.c): directories
 * and the parents of files first, in archive order, on this thread, so that
 * the workers only create leaves.
 */
static enum wsnap_status pass1_parallel(struct exp *x, struct order_key *keys,
					uint32_t nkeys, unsigned nworkers)
{
	uint32_t i, nfiles = 0;
	enum wsnap_status s = WSNAP_OK;

	for (i = 0; i < nkeys && s == WSNAP_OK; i++) {
		const struct wsnap_node *n = node_of(x, keys[i].ino);

		s = wsnap_export_check_cancel(x);
		if (s != WSNAP_OK)
			break;
		if (n->type == WSNAP_TYPE_DIR) {
			s = wsnap_export_put_dir(x, keys[i].ino);
			if (s == WSNAP_OK)
				node_done(x, n);
		} else if (wsnap_export_dir_fd(x, n->parent, n, true) < 0) {
			s = x->err->status;
		} else {
			keys[nfiles++] = keys[i]; /* the files, in order */
		}
	}
	if (s != WSNAP_OK)
		return s;
	return wsnap_export_pool_write(x, keys, nfiles, nworkers);
}

/* Pass 1: directories and regular files, in archive order. */
static enum wsnap_status pass1(struct exp *x, struct order_key *keys)
{
	uint32_t ino, nkeys = 0, i, nfiles;
	unsigned nworkers;
	enum wsnap_status s = WSNAP_OK;

	for (ino = WSNAP_ROOT_INO + 1; ino <= x->count; ino++) {
		const struct wsnap_node *n = node_of(x, ino);

		if (!exp_selected(x, ino))
			continue;
		if (n->type == WSNAP_TYPE_FILE ||
		    (n->type == WSNAP_TYPE_DIR &&
		     !(n->flags & WSNAP_NODE_IMPLICIT)))
			keys[nkeys++] = (struct order_key){n->order, ino};
	}
	qsort(keys, nkeys, sizeof(*keys), order_key_cmp);
	for (i = 0, nfiles = 0; i < nkeys; i++)
		nfiles += node_of(x, keys[i].ino)->type == WSNAP_TYPE_FILE;
	nworkers = wsnap_export_pool_workers(x, nfiles);
	if (nworkers > 1)
		return pass1_parallel(x, keys, nkeys, nworkers);
	for (i = 0; i < nkeys && s == WSNAP_OK; i++) {
		const struct wsnap_node *n = node_of(x, keys[i].ino);

		s = wsnap_export_check_cancel(x);
		if (s != WSNAP_OK)
			break;
		if (n->type == WSNAP_TYPE_DIR)
			s = wsnap_export_put_dir(x, keys[i].ino);
		else
			s = wsnap_export_put_file(x, keys[i].ino);
		if (s == WSNAP_OK)
			node_done(x, n);
	}
	return s;
}

/* Pass 2: symlinks, in archive order, once every file is written, so that
 * no file of the archive is ever written through a symlink of it. */
static enum wsnap_status pass2(struct exp *x, struct order_key *keys)
{
	uint32_t ino, nkeys = 0, i;
	enum wsnap_status s = WSNAP_OK;

	for (ino = WSNAP_ROOT_INO + 1; ino <= x->count; ino++) {
		const struct wsnap_node *n = node_of(x, ino);

		if (n->type == WSNAP_TYPE_SYMLINK && exp_selected(x, ino))
			keys[nkeys++] = (struct order_key){n->order, ino};
	}
	qsort(keys, nkeys, sizeof(*keys), order_key_cmp);
	for (i = 0; i < nkeys && s == WSNAP_OK; i++) {
		s = wsnap_export_check_cancel(x);
		if (s != WSNAP_OK)
			break;
		s = put_symlink(x, keys[i].ino);
		if (s == WSNAP_OK)
			node_done(x, node_of(x, keys[i].ino));
	}
	return s;
}

/*
 * Pass 3: directory mtimes, deepest first, so that writing in a directory
 * never follows setting its time. Members always; implicit directories
 * only when we created them; the root when it is a member or we created
 * it. Of a selection, parents only (like implicit directories) and
 * nothing else.
 */
static enum wsnap_status pass3(struct exp *x, struct order_key *keys)
{
	uint32_t ino, nkeys = 0, i;
	enum wsnap_status s = WSNAP_OK;

	for (ino = WSNAP_ROOT_INO; ino <= x->count; ino++) {
		const struct wsnap_node *n = node_of(x, ino);
		bool want;

		if (n->type != WSNAP_TYPE_DIR)
			continue;
		if (x->opts && x->opts->select &&
		    x->opts->select[ino] == WSNAP_SELECT_NO)
			continue;
		if (ino == WSNAP_ROOT_INO)
			want = x->fresh ||
			       (root_is_member(n) && exp_selected(x, ino));
		else if (!exp_selected(x, ino))
			want = x->created[ino];
		else
			want = !(n->flags & WSNAP_NODE_IMPLICIT) ||
			       x->created[ino];
		if (want)
			keys[nkeys++] = (struct order_key){
				UINT32_MAX - x->depth[ino], ino};
	}
	qsort(keys, nkeys, sizeof(*keys), order_key_cmp);
	for (i = 0; i < nkeys && s == WSNAP_OK; i++)
		s = put_dir_mtime(x, keys[i].ino);
	return s;
}

/* The three passes, the archive checked unchanged after the first (keys:
 * scratch for each pass's order). */
static enum wsnap_status run_passes(struct exp *x)
{
	struct order_key *keys;
	enum wsnap_status s;

	keys = calloc(x->count, sizeof(*keys));
	if (!keys)
		return wsnap_export_fail_io(x, ENOMEM, NULL, "out of memory");
	s = pass1(x, keys);
	if (s == WSNAP_OK)
		s = check_data(x);
	if (s == WSNAP_OK)
		s = pass2(x, keys);
	if (s == WSNAP_OK)
		s = pass3(x, keys);
	free(keys);
	return s;
}

/* ---- one export ------------------------------------------------------ */

static enum wsnap_status exp_init(struct exp *x, const struct wsnap_index *idx,
				  int rootfd, const char *label,
				  const struct wsnap_export_opts *opts,
				  struct wsnap_export_stats *st,
				  struct wsnap_error *err)
{
	uint32_t ino, maxdepth = 0;
	enum wsnap_status s;

	memset(x, 0, sizeof(*x));
	memset(st, 0, sizeof(*st));
	x->idx = idx;
	x->opts = opts;
	x->st = st;
	x->err = err;
	x->label = label;
	x->rootfd = rootfd;
	x->datafd = wsnap_index_data_fd(idx);
	x->use_openat2 = !(opts && (opts->flags & WSNAP_EXPORT_NO_OPENAT2));
	x->use_copy_range =
		!(opts && (opts->flags & WSNAP_EXPORT_NO_COPY_RANGE));
	st->openat2 = x->use_openat2;
	x->count = wsnap_index_count(idx);
	x->depth = calloc((size_t)x->count + 1, sizeof(*x->depth));
	x->created = calloc((size_t)x->count + 1, 1);
	if (!x->depth || !x->created || wsnap_export_copy_init(x) < 0)
		return wsnap_export_fail_io(x, ENOMEM, NULL, "out of memory");
	for (ino = WSNAP_ROOT_INO + 1; ino <= x->count; ino++) {
		const struct wsnap_node *n = node_of(x, ino);
		uint32_t d = 1, p = n->parent, guard = 0;

		/* Inos are sorted by path, so a parent precedes its child;
		 * walk up anyway when it does not (never trust an order). */
		if (p < ino) {
			d = x->depth[p] + 1;
		} else {
			while (p != WSNAP_ROOT_INO && guard++ < x->count) {
				d++;
				p = node_of(x, p)->parent;
			}
		}
		x->depth[ino] = d;
		if (d > maxdepth)
			maxdepth = d;
		if (!exp_selected(x, ino))
			continue;
		if (!(n->flags & WSNAP_NODE_IMPLICIT))
			x->prog.members_total++;
		if (n->type == WSNAP_TYPE_FILE)
			x->prog.bytes_total += n->size;
	}
	x->maxdepth = maxdepth;
	if (wsnap_export_cache_init(x) < 0)
		return wsnap_export_fail_io(x, ENOMEM, NULL, "out of memory");
	if (opts && (opts->flags & WSNAP_EXPORT_INPUT)) {
		struct wsnap_index_stats is;

		wsnap_index_stats(idx, &is);
		if (!is.compression || strcmp(is.compression, "none") == 0) {
			x->datafd = opts->input_fd; /* in place */
		} else if (x->prog.bytes_total > 0) {
			s = wsnap_export_stream_open(x, opts->input_fd);
			if (s != WSNAP_OK)
				return s;
		}
	}
	if (x->prog.bytes_total > 0 && x->datafd < 0 && !x->stream &&
	    !wsnap_index_has_data(idx))
		return wsnap_export_fail_io(
			x, EBADF, NULL,
			"index has no data (built without keep_data)");
	s = check_data(x);
	if (s == WSNAP_OK)
		s = wsnap_export_case_init(x);
	return s;
}

static void exp_release(struct exp *x)
{
	wsnap_export_cache_release(x);
	wsnap_export_copy_release(x);
	free(x->depth);
	free(x->created);
	free(x->cases);
}

enum wsnap_status wsnap_export_at(const struct wsnap_index *idx, int rootfd,
				  const char *label, bool fresh,
				  const struct wsnap_export_opts *opts,
				  struct wsnap_export_stats *stats,
				  struct wsnap_error *err)
{
	struct wsnap_export_stats local;
	struct exp x;
	enum wsnap_status s;

	if (!stats)
		stats = &local;
	s = exp_init(&x, idx, rootfd, label, opts, stats, err);
	x.fresh = fresh;
	stats->created = fresh;
	if (s == WSNAP_OK)
		s = run_passes(&x);
	if (s == WSNAP_OK)
		wsnap_export_progress_tick(&x, true);
	exp_release(&x);
	return s;
}

/* ---- entry point ---------------------------------------------------- */

enum wsnap_status wsnap_export_run(const struct wsnap_index *idx,
				   const char *dest,
				   const struct wsnap_export_opts *opts,
				   struct wsnap_export_stats *stats,
				   struct wsnap_error *err)
{
	enum wsnap_status s;
	size_t len;
	char *path;
	int rootfd;

	len = dest ? strlen(dest) : 0;
	if (len == 0)
		return wsnap_error_usage(err, "empty destination");
	path = strdup(dest);
	if (!path)
		return wsnap_error_io(err, ENOMEM, NULL, "out of memory");
	while (len > 1 && path[len - 1] == '/')
		path[--len] = '\0';
	rootfd = open(path, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (rootfd >= 0) {
		s = wsnap_export_at(idx, rootfd, path, false, opts, stats, err);
		close(rootfd);
	} else if (errno == ENOENT) {
		s = wsnap_export_fresh(idx, dest, path, opts, stats, err);
	} else if (errno == ENOTDIR) {
		s = wsnap_error_io(err, ENOTDIR, dest,
				   "destination is not a directory");
	} else {
		s = wsnap_error_io(err, errno, dest, "cannot open destination");
	}
	free(path);
	return s;
}
