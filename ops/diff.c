/* SPDX-License-Identifier: MIT */
/*
 * The diff engine (diff.h) and its two kinds of side.
 *
 * Invariants:
 *  - both node sequences are sorted bytewise by path (index.h), so the merge
 *    below emits changes sorted the same way and visits each node once;
 *  - content is read only for regular files of equal size whose other
 *    attributes are equal, never more than WSNAP_DIFF_CHUNK bytes at a time
 *    per side, and reading stops at the first differing chunk;
 *  - a handle opened on a side is closed on every path out.
 */
#include "diff.h"

#include <errno.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "fsutil.h"

/* ---- archive side ---- */

static enum wsnap_status arc_changed(const struct wsnap_diff_archive *arc,
				     struct wsnap_error *err)
{
	return wsnap_error_io(err, EIO, arc->label,
			      "archive changed while being read");
}

/* Copies len bytes at physical offset phys of the data into dst. */
static enum wsnap_status arc_fill(struct wsnap_diff_archive *arc, void *dst,
				  size_t len, uint64_t phys,
				  struct wsnap_error *err)
{
	bool seq = arc->seq && phys >= arc->last_end &&
		   phys - arc->last_end <= WSNAP_DIFF_WINDOW;
	size_t n;
	ssize_t r;

	if (arc->win && phys >= arc->win_off &&
	    phys - arc->win_off <= arc->win_len &&
	    len <= arc->win_len - (phys - arc->win_off)) {
		memcpy(dst, arc->win + (phys - arc->win_off), len);
		goto done;
	}
	if (seq && len < WSNAP_DIFF_WINDOW / 2 && !arc->win) {
		arc->win = malloc(WSNAP_DIFF_WINDOW);
		if (!arc->win)
			return wsnap_error_io(err, ENOMEM, NULL,
					      "out of memory");
	}
	if (seq && len < WSNAP_DIFF_WINDOW / 2) {
		/* reading along the data: take a window at once */
		arc->win_len = 0;
		r = wsnap_index_read_stored(arc->idx, arc->win,
					    WSNAP_DIFF_WINDOW, phys);
		if (r < 0)
			return wsnap_error_io(err, (int)-r, arc->label,
					      "cannot read archive data");
		n = (size_t)r;
		/* a window is kept only once its bytes are known unchanged */
		if (n < len || wsnap_index_data_check(arc->idx) != 0)
			return arc_changed(arc, err);
		arc->win_off = phys;
		arc->win_len = n;
		memcpy(dst, arc->win, len);
		goto done;
	}
	r = wsnap_index_read_stored(arc->idx, dst, len, phys);
	if (r < 0)
		return wsnap_error_io(err, (int)-r, arc->label,
				      "cannot read archive data");
	n = (size_t)r;
	/* bytes read are the judged ones only if the file is still the same */
	if (n < len || wsnap_index_data_check(arc->idx) != 0)
		return arc_changed(arc, err);
done:
	arc->seq = true;
	arc->last_end = phys + len;
	return WSNAP_OK;
}

static enum wsnap_status arc_open(void *ctx, uint32_t ino,
				  const struct wsnap_node *n, void **h,
				  struct wsnap_error *err)
{
	*h = (void *)(uintptr_t)ino;
	return WSNAP_OK;
}

static enum wsnap_status arc_read(void *ctx, void *h, void *buf, size_t len,
				  uint64_t off, struct wsnap_error *err)
{
	struct wsnap_diff_archive *arc = ctx;
	uint32_t ino = (uint32_t)(uintptr_t)h;
	unsigned char *p = buf;

	if (!wsnap_index_has_data(arc->idx))
		return wsnap_error_io(err, EBADF, arc->label,
				      "cannot read archive data");
	while (len) {
		struct wsnap_extent ext;
		uint64_t skip, avail;
		size_t n;
		enum wsnap_status s;

		if (wsnap_index_extent(arc->idx, ino, off, &ext) != 0 ||
		    off < ext.logical || off - ext.logical >= ext.length)
			return arc_changed(arc, err);
		skip = off - ext.logical;
		avail = ext.length - skip;
		n = avail < len ? (size_t)avail : len;
		if (ext.physical < 0) {
			memset(p, 0, n);
		} else if (wsnap_index_verify(arc->idx, ino,
					      (uint64_t)ext.physical + skip,
					      n) != 0) {
			/* an index from a sidecar: bytes not as it says */
			return arc_changed(arc, err);
		} else {
			s = arc_fill(arc, p, n, (uint64_t)ext.physical + skip,
				     err);
			if (s != WSNAP_OK)
				return s;
		}
		p += n;
		off += n;
		len -= n;
	}
	return WSNAP_OK;
}

static void arc_close(void *ctx, void *h)
{
}

static void arc_ident(void *ctx, uint32_t ino, const struct wsnap_node *n,
		      struct wsnap_diff_ident *id)
{
	struct wsnap_diff_archive *arc = ctx;

	memset(id, 0, sizeof(*id));
	/* a sparse file's offset does not describe its bytes alone */
	if (!arc->has_ident || (n->flags & WSNAP_NODE_SPARSE))
		return;
	id->valid = true;
	id->dev = arc->dev;
	id->ino = arc->ino;
	id->offset = n->offset;
}

static enum wsnap_status arc_finish(void *ctx, struct wsnap_error *err)
{
	struct wsnap_diff_archive *arc = ctx;

	if (wsnap_index_data_check(arc->idx) != 0)
		return arc_changed(arc, err);
	return WSNAP_OK;
}

static const struct wsnap_diff_content arc_content = {
	.open = arc_open,
	.read = arc_read,
	.close = arc_close,
	.ident = arc_ident,
	.finish = arc_finish,
};

void wsnap_diff_side_archive(struct wsnap_diff_side *side,
			     struct wsnap_diff_archive *arc,
			     const struct wsnap_index *idx, const char *label)
{
	struct stat st;

	memset(arc, 0, sizeof(*arc));
	arc->idx = idx;
	arc->label = label;
	arc->fd = wsnap_index_data_fd(idx);
	arc->has_ident = arc->fd >= 0 && fstat(arc->fd, &st) == 0;
	arc->dev = arc->has_ident ? (uint64_t)st.st_dev : 0;
	arc->ino = arc->has_ident ? (uint64_t)st.st_ino : 0;
	side->idx = idx;
	side->content = &arc_content;
	side->ctx = arc;
}

void wsnap_diff_archive_release(struct wsnap_diff_archive *arc)
{
	free(arc->win);
	arc->win = NULL;
	arc->win_len = 0;
}

/* ---- directory side ---- */

static enum wsnap_status tree_changed(struct wsnap_tree_cursor *c,
				      const char *rel, struct wsnap_error *err)
{
	char buf[WSNAP_ERROR_TEXT_MAX];

	return wsnap_error_io(err, 0,
			      wsnap_tree_describe(wsnap_tree_cursor_label(c),
						  rel, buf, sizeof(buf)),
			      "file changed while being read");
}

struct tree_handle {
	int fd;
	const char *path;
};

static enum wsnap_status tree_open(void *ctx, uint32_t ino,
				   const struct wsnap_node *n, void **h,
				   struct wsnap_error *err)
{
	struct wsnap_tree_cursor *c = ctx;
	struct tree_handle *th;
	struct stat st;
	int fd;

	*h = NULL;
	fd = wsnap_tree_cursor_open(c, n->path, &st, err);
	if (fd < 0)
		return err->status;
	if ((uint64_t)st.st_size != n->size) {
		close(fd);
		return tree_changed(c, n->path, err);
	}
	th = malloc(sizeof(*th));
	if (!th) {
		close(fd);
		return wsnap_error_io(err, ENOMEM, NULL, "out of memory");
	}
	th->fd = fd;
	th->path = n->path;
	*h = th;
	return WSNAP_OK;
}

static enum wsnap_status tree_read(void *ctx, void *h, void *buf, size_t len,
				   uint64_t off, struct wsnap_error *err)
{
	struct wsnap_tree_cursor *c = ctx;
	struct tree_handle *th = h;
	size_t n;
	int e = wsnap_pread_full(th->fd, buf, len, off, &n);

	if (e) {
		char path[WSNAP_ERROR_TEXT_MAX];

		return wsnap_error_io(
			err, e,
			wsnap_tree_describe(wsnap_tree_cursor_label(c),
					    th->path, path, sizeof(path)),
			"cannot read");
	}
	if (n < len)
		return tree_changed(c, th->path, err);
	return WSNAP_OK;
}

static void tree_close(void *ctx, void *h)
{
	struct tree_handle *th = h;

	if (!th)
		return;
	close(th->fd);
	free(th);
}

static const struct wsnap_diff_content tree_content = {
	.open = tree_open,
	.read = tree_read,
	.close = tree_close,
	.ident = NULL,
	.finish = NULL,
};

void wsnap_diff_side_tree(struct wsnap_diff_side *side,
			  const struct wsnap_index *idx,
			  struct wsnap_tree_cursor *cursor)
{
	side->idx = idx;
	side->content = &tree_content;
	side->ctx = cursor;
}

/* ---- the engine ---- */

struct engine {
	const struct wsnap_diff_side *a;
	const struct wsnap_diff_side *b;
	const struct wsnap_diff_opts *opts;
	struct wsnap_diff_stats *st;
	unsigned char *buf_a;
	unsigned char *buf_b;
};

static bool same_ident(const struct engine *e, uint32_t ia,
		       const struct wsnap_node *na, uint32_t ib,
		       const struct wsnap_node *nb)
{
	struct wsnap_diff_ident x, y;

	if (!e->a->content->ident || !e->b->content->ident)
		return false;
	e->a->content->ident(e->a->ctx, ia, na, &x);
	e->b->content->ident(e->b->ctx, ib, nb, &y);
	return x.valid && y.valid && x.dev == y.dev && x.ino == y.ino &&
	       x.offset == y.offset;
}

/* Compares the bytes of two regular files of equal size. */
static enum wsnap_status same_content(struct engine *e, uint32_t ia,
				      const struct wsnap_node *na, uint32_t ib,
				      const struct wsnap_node *nb, bool *same,
				      struct wsnap_error *err)
{
	const struct wsnap_diff_content *ca = e->a->content;
	const struct wsnap_diff_content *cb = e->b->content;
	void *ha = NULL, *hb = NULL;
	uint64_t off = 0;
	enum wsnap_status s;

	*same = true;
	if (na->size == 0 || same_ident(e, ia, na, ib, nb))
		return WSNAP_OK;
	s = ca->open(e->a->ctx, ia, na, &ha, err);
	if (s != WSNAP_OK)
		return s;
	s = cb->open(e->b->ctx, ib, nb, &hb, err);
	if (s != WSNAP_OK)
		goto out_a;
	e->st->files_read++;
	while (off < na->size) {
		uint64_t left = na->size - off;
		size_t n = left < WSNAP_DIFF_CHUNK ? (size_t)left
						   : WSNAP_DIFF_CHUNK;

		s = ca->read(e->a->ctx, ha, e->buf_a, n, off, err);
		if (s != WSNAP_OK)
			break;
		s = cb->read(e->b->ctx, hb, e->buf_b, n, off, err);
		if (s != WSNAP_OK)
			break;
		e->st->bytes_read += n;
		if (memcmp(e->buf_a, e->buf_b, n) != 0) {
			*same = false;
			break;
		}
		off += n;
	}
	cb->close(e->b->ctx, hb);
out_a:
	ca->close(e->a->ctx, ha);
	return s;
}

/* Decides the kind of change between two nodes at the same path; 0 when
 * they are equal. */
static enum wsnap_status compare(struct engine *e, uint32_t ia,
				 const struct wsnap_node *na, uint32_t ib,
				 const struct wsnap_node *nb, int *kind,
				 struct wsnap_error *err)
{
	bool same = true;
	enum wsnap_status s;

	*kind = 0;
	if (na->type != nb->type) {
		*kind = WSNAP_DIFF_TYPE;
		return WSNAP_OK;
	}
	if (na->mode != nb->mode)
		same = false;
	if (same && e->opts && e->opts->mtime &&
	    (na->mtime_sec != nb->mtime_sec ||
	     na->mtime_nsec != nb->mtime_nsec))
		same = false;
	if (same && na->type == WSNAP_TYPE_SYMLINK)
		same = na->size == nb->size && na->target && nb->target &&
		       memcmp(na->target, nb->target, (size_t)na->size) == 0;
	if (same && na->type == WSNAP_TYPE_FILE) {
		if (na->size != nb->size) {
			same = false;
		} else {
			s = same_content(e, ia, na, ib, nb, &same, err);
			if (s != WSNAP_OK)
				return s;
		}
	}
	if (!same)
		*kind = WSNAP_DIFF_MODIFIED;
	return WSNAP_OK;
}

static enum wsnap_status emit(struct engine *e, wsnap_diff_fn fn, void *ctx,
			      int kind, uint32_t ia,
			      const struct wsnap_node *na, uint32_t ib,
			      const struct wsnap_node *nb,
			      struct wsnap_error *err)
{
	struct wsnap_diff_change c;

	switch (kind) {
	case WSNAP_DIFF_ADDED:
		e->st->added++;
		break;
	case WSNAP_DIFF_REMOVED:
		e->st->removed++;
		break;
	case WSNAP_DIFF_MODIFIED:
		e->st->modified++;
		break;
	default:
		e->st->type_changed++;
		break;
	}
	c.kind = (enum wsnap_diff_kind)kind;
	c.path = na ? na->path : nb->path;
	c.a = na;
	c.b = nb;
	c.ino_a = na ? ia : 0;
	c.ino_b = nb ? ib : 0;
	return fn ? fn(ctx, &c, err) : WSNAP_OK;
}

enum wsnap_status
wsnap_diff_run(const struct wsnap_diff_side *a, const struct wsnap_diff_side *b,
	       const struct wsnap_diff_opts *opts, wsnap_diff_fn fn, void *ctx,
	       struct wsnap_diff_stats *stats, struct wsnap_error *err)
{
	struct wsnap_diff_stats local;
	struct engine e;
	uint32_t ia = WSNAP_ROOT_INO + 1, ib = WSNAP_ROOT_INO + 1;
	uint32_t ca = wsnap_index_count(a->idx), cb = wsnap_index_count(b->idx);
	enum wsnap_status s = WSNAP_OK;

	memset(&local, 0, sizeof(local));
	memset(&e, 0, sizeof(e));
	e.a = a;
	e.b = b;
	e.opts = opts;
	e.st = &local;
	e.buf_a = malloc(WSNAP_DIFF_CHUNK);
	e.buf_b = malloc(WSNAP_DIFF_CHUNK);
	if (!e.buf_a || !e.buf_b) {
		s = wsnap_error_io(err, ENOMEM, NULL, "out of memory");
		goto out;
	}
	while (s == WSNAP_OK && (ia <= ca || ib <= cb)) {
		const struct wsnap_node *na =
			ia <= ca ? wsnap_index_node(a->idx, ia) : NULL;
		const struct wsnap_node *nb =
			ib <= cb ? wsnap_index_node(b->idx, ib) : NULL;
		int c, kind;

		if (!na)
			c = 1;
		else if (!nb)
			c = -1;
		else
			c = strcmp(na->path, nb->path);
		if (c < 0) {
			s = emit(&e, fn, ctx, WSNAP_DIFF_REMOVED, ia, na, 0,
				 NULL, err);
			ia++;
		} else if (c > 0) {
			s = emit(&e, fn, ctx, WSNAP_DIFF_ADDED, 0, NULL, ib, nb,
				 err);
			ib++;
		} else {
			s = compare(&e, ia, na, ib, nb, &kind, err);
			if (s == WSNAP_OK && kind)
				s = emit(&e, fn, ctx, kind, ia, na, ib, nb,
					 err);
			ia++;
			ib++;
		}
	}
	if (s == WSNAP_OK && a->content->finish)
		s = a->content->finish(a->ctx, err);
	if (s == WSNAP_OK && b->content->finish)
		s = b->content->finish(b->ctx, err);
out:
	free(e.buf_a);
	free(e.buf_b);
	if (stats)
		*stats = local;
	return s;
}

uint64_t wsnap_diff_total(const struct wsnap_diff_stats *stats)
{
	return stats->added + stats->removed + stats->modified +
	       stats->type_changed;
}
