/* SPDX-License-Identifier: MIT */
/*
 * The patch writer (patch.h): git's per-file lines written here, the diff
 * of the contents made and printed by libgit2.
 *
 * Why libgit2's buffer API (git_patch_from_buffers) and not a git_diff of
 * two trees built in an in-memory repository (git_repository_new, a
 * mempack odb, git_diff_tree_to_tree), which would write the mode lines
 * itself: libgit2 1.5 gives such a repository the user's global and
 * system configuration and attribute files (core.abbrev, diff.noprefix
 * and a '* binary' attribute all changed its output when tried), looks
 * for an 'index' file in the working directory, and its tree builder
 * refuses entries named '.git'. The buffer API reads nothing but the two
 * buffers, so the output depends on the snapshots and the options only.
 *
 * Invariants:
 *  - a part (one 'diff --git' block) is written whole or the diff stops
 *    with an error: nothing is written for a part before both contents
 *    are read and libgit2 has made its diff;
 *  - at most one file's two contents are held (ca, cb), each at most
 *    opts.max_size bytes; a file over it is compared, when it must be, in
 *    WSNAP_DIFF_CHUNK pieces and never held;
 *  - stats[] holds one record per file written, in order (opts.stat).
 */
#include "patch.h"

#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "git_dl.h"
#include "grow.h"
#include "patch_private.h"

#define GIT_MODE_FILE 0100644u
#define GIT_MODE_EXEC 0100755u
#define GIT_MODE_LINK 0120000u
#define ABBREV	      7

/* One side of a part: a file or symlink of one side, or nothing. */
struct entry {
	const struct wsnap_diff_side *side;
	const struct wsnap_node *n; /* NULL: absent */
	uint32_t ino;
	unsigned mode; /* git's mode; 0 when absent */
	const char *data;
	size_t len;
	bool sized_out; /* a file over max_size: data not read */
};

struct wsnap_patch {
	const struct wsnap_diff_side *a;
	const struct wsnap_diff_side *b;
	struct wsnap_patch_opts opts;
	wsnap_patch_write_fn write;
	void *wctx;
	unsigned char *ca, *cb; /* content buffers, reused */
	size_t cap_a, cap_b;
	struct wsnap_patch_buf hdr; /* the lines of a part before its diff */
	struct wsnap_patch_file *stats;
	size_t nstats, cap_stats;
	struct wsnap_patch_counts counts;
	bool git_started;
	/* set by print_line when writing failed */
	enum wsnap_status print_status;
	struct wsnap_error *print_err;
};

/* ---- quoting ---- */

/* The letter of git's backslash escape for c, or 0. */
static char escape_letter(unsigned char c)
{
	static const char letters[] = "abtnvfr"; /* \a (7) .. \r (13) */

	if (c >= '\a' && c <= '\r')
		return letters[c - '\a'];
	if (c == '"' || c == '\\')
		return (char)c;
	return 0;
}

static bool needs_quote(const char *s)
{
	const unsigned char *p;

	for (p = (const unsigned char *)s; *p; p++)
		if (*p < 0x20 || *p == '"' || *p == '\\' || *p >= 0x7f)
			return true;
	return false;
}

struct sink {
	char *dst;
	size_t cap;
	size_t len;
};

static void sink_put(struct sink *k, char c)
{
	if (k->len < k->cap)
		k->dst[k->len] = c;
	k->len++;
}

static void quote_part(struct sink *k, const char *s, bool quoted)
{
	const unsigned char *p;
	char e;

	for (p = (const unsigned char *)s; *p; p++) {
		if (!quoted) {
			sink_put(k, (char)*p);
			continue;
		}
		e = escape_letter(*p);
		if (e) {
			sink_put(k, '\\');
			sink_put(k, e);
		} else if (*p < 0x20 || *p >= 0x7f) {
			sink_put(k, '\\');
			sink_put(k, (char)('0' + (*p >> 6)));
			sink_put(k, (char)('0' + ((*p >> 3) & 7)));
			sink_put(k, (char)('0' + (*p & 7)));
		} else {
			sink_put(k, (char)*p);
		}
	}
}

size_t wsnap_patch_quote(char *dst, size_t cap, const char *prefix,
			 const char *path)
{
	struct sink k = {.dst = dst, .cap = cap, .len = 0};
	bool quoted = needs_quote(prefix) || needs_quote(path);

	if (quoted)
		sink_put(&k, '"');
	quote_part(&k, prefix, quoted);
	quote_part(&k, path, quoted);
	if (quoted)
		sink_put(&k, '"');
	if (cap)
		dst[k.len < cap ? k.len : cap - 1] = '\0';
	return k.len;
}

/* ---- a growing buffer ---- */

static enum wsnap_status nomem(struct wsnap_error *err)
{
	return wsnap_error_io(err, ENOMEM, NULL, "out of memory");
}

/* Room for len more bytes and a NUL at b->p + b->len. */
static enum wsnap_status buf_reserve(struct wsnap_patch_buf *b, size_t len,
				     struct wsnap_error *err)
{
	char *p;

	if (len > SIZE_MAX - b->len - 1)
		return nomem(err);
	p = wsnap_grow(b->p, &b->cap, b->len + len + 1, 1);
	if (!p)
		return nomem(err);
	b->p = p;
	return WSNAP_OK;
}

enum wsnap_status wsnap_patch_buf_put(struct wsnap_patch_buf *b, const void *s,
				      size_t len, struct wsnap_error *err)
{
	enum wsnap_status st = buf_reserve(b, len, err);

	if (st != WSNAP_OK)
		return st;
	memcpy(b->p + b->len, s, len);
	b->len += len;
	b->p[b->len] = '\0';
	return WSNAP_OK;
}

enum wsnap_status wsnap_patch_buf_str(struct wsnap_patch_buf *b, const char *s,
				      struct wsnap_error *err)
{
	return wsnap_patch_buf_put(b, s, strlen(s), err);
}

enum wsnap_status wsnap_patch_buf_quote(struct wsnap_patch_buf *b,
					const char *prefix, const char *path,
					struct wsnap_error *err)
{
	size_t n = wsnap_patch_quote(NULL, 0, prefix, path);
	enum wsnap_status st = buf_reserve(b, n, err);

	if (st != WSNAP_OK)
		return st;
	wsnap_patch_quote(b->p + b->len, n + 1, prefix, path);
	b->len += n;
	return WSNAP_OK;
}

void wsnap_patch_buf_release(struct wsnap_patch_buf *b)
{
	free(b->p);
	memset(b, 0, sizeof(*b));
}

/* ---- the writer ---- */

enum wsnap_status wsnap_patch_new(struct wsnap_patch **out,
				  const struct wsnap_diff_side *a,
				  const struct wsnap_diff_side *b,
				  const struct wsnap_patch_opts *opts,
				  wsnap_patch_write_fn write, void *wctx,
				  struct wsnap_error *err)
{
	struct wsnap_patch *p = calloc(1, sizeof(*p));

	*out = NULL;
	if (!p)
		return nomem(err);
	p->a = a;
	p->b = b;
	p->opts = *opts;
	p->write = write;
	p->wctx = wctx;
	*out = p;
	return WSNAP_OK;
}

/*
 * libgit2 is loaded and started for the first diff only: starting it loads its
 * TLS library and certificates (some 20 ms), which two equal snapshots need not
 * pay.
 */
static enum wsnap_status git_start(struct wsnap_patch *p,
				   struct wsnap_error *err)
{
	const git_error *e;
	const char *why;

	if (p->git_started)
		return WSNAP_OK;
	if (wsnap_git_load(&why) != 0)
		return wsnap_error_io(err, 0, NULL, "cannot load libgit2 (%s)",
				      why);
	if (git_libgit2_init() < 0) {
		e = git_error_last();
		return wsnap_error_io(err, 0, NULL, "cannot start libgit2 (%s)",
				      e && e->message ? e->message
						      : "no reason given");
	}
	p->git_started = true;
	return WSNAP_OK;
}

void wsnap_patch_free(struct wsnap_patch *p)
{
	size_t i;

	if (!p)
		return;
	for (i = 0; i < p->nstats; i++)
		free(p->stats[i].name);
	free(p->stats);
	free(p->ca);
	free(p->cb);
	wsnap_patch_buf_release(&p->hdr);
	if (p->git_started)
		git_libgit2_shutdown();
	free(p);
}

void wsnap_patch_get_counts(const struct wsnap_patch *p,
			    struct wsnap_patch_counts *counts)
{
	*counts = p->counts;
}

static enum wsnap_status out_write(struct wsnap_patch *p, const void *buf,
				   size_t len, struct wsnap_error *err)
{
	return len ? p->write(p->wctx, buf, len, err) : WSNAP_OK;
}

/* ---- reading a side ---- */

static unsigned git_mode(const struct wsnap_node *n)
{
	if (!n)
		return 0;
	if (n->type == WSNAP_TYPE_SYMLINK)
		return GIT_MODE_LINK;
	if (n->type == WSNAP_TYPE_FILE)
		return (n->mode & 0100) ? GIT_MODE_EXEC : GIT_MODE_FILE;
	return 0; /* a directory: nothing of its own in git */
}

static void entry_init(struct entry *e, const struct wsnap_diff_side *side,
		       const struct wsnap_node *n, uint32_t ino,
		       uint64_t max_size)
{
	memset(e, 0, sizeof(*e));
	e->side = side;
	e->mode = git_mode(n);
	if (!e->mode)
		return;
	e->n = n;
	e->ino = ino;
	e->sized_out = n->type == WSNAP_TYPE_FILE &&
		       (n->size > max_size || n->size > SIZE_MAX - 1);
}

/* Reads len bytes at off of file e into buf. */
static enum wsnap_status read_at(const struct entry *e, void *h, void *buf,
				 size_t len, uint64_t off,
				 struct wsnap_error *err)
{
	return e->side->content->read(e->side->ctx, h, buf, len, off, err);
}

/* Makes e's content available in e->data (the buffer *buf, grown). */
static enum wsnap_status entry_load(struct wsnap_patch *p, struct entry *e,
				    unsigned char **buf, size_t *cap,
				    struct wsnap_error *err)
{
	const struct wsnap_diff_content *c = e->side->content;
	unsigned char *nb;
	void *h = NULL;
	enum wsnap_status s;

	if (!e->n || e->sized_out)
		return WSNAP_OK;
	if (e->n->type == WSNAP_TYPE_SYMLINK) {
		e->data = e->n->target ? e->n->target : "";
		e->len = e->n->target ? (size_t)e->n->size : 0;
		return WSNAP_OK;
	}
	e->len = (size_t)e->n->size;
	e->data = "";
	if (e->len == 0)
		return WSNAP_OK;
	nb = wsnap_grow(*buf, cap, e->len, 1);
	if (!nb)
		return nomem(err);
	*buf = nb;
	s = c->open(e->side->ctx, e->ino, e->n, &h, err);
	if (s != WSNAP_OK)
		return s;
	s = read_at(e, h, nb, e->len, 0, err);
	c->close(e->side->ctx, h);
	if (s == WSNAP_OK)
		p->counts.bytes_read += e->len;
	e->data = (const char *)nb;
	return s;
}

/*
 * Whether two files over max_size of equal size hold the same bytes,
 * compared in pieces of WSNAP_DIFF_CHUNK through the content buffers.
 */
static enum wsnap_status same_big(struct wsnap_patch *p, struct entry *o,
				  struct entry *n, bool *same,
				  struct wsnap_error *err)
{
	const struct wsnap_diff_content *co = o->side->content;
	const struct wsnap_diff_content *cn = n->side->content;
	void *ho = NULL, *hn = NULL;
	unsigned char *x, *y;
	uint64_t off = 0, size = o->n->size;
	enum wsnap_status s;

	*same = false;
	x = wsnap_grow(p->ca, &p->cap_a, WSNAP_DIFF_CHUNK, 1);
	if (x)
		p->ca = x;
	y = x ? wsnap_grow(p->cb, &p->cap_b, WSNAP_DIFF_CHUNK, 1) : NULL;
	if (!y)
		return nomem(err);
	p->cb = y;
	s = co->open(o->side->ctx, o->ino, o->n, &ho, err);
	if (s != WSNAP_OK)
		return s;
	s = cn->open(n->side->ctx, n->ino, n->n, &hn, err);
	if (s != WSNAP_OK)
		goto out_o;
	*same = true;
	while (*same && off < size) {
		size_t k = size - off < WSNAP_DIFF_CHUNK ? (size_t)(size - off)
							 : WSNAP_DIFF_CHUNK;

		s = read_at(o, ho, x, k, off, err);
		if (s == WSNAP_OK)
			s = read_at(n, hn, y, k, off, err);
		if (s != WSNAP_OK)
			break;
		p->counts.bytes_read += 2 * (uint64_t)k;
		*same = memcmp(x, y, k) == 0;
		off += k;
	}
	cn->close(n->side->ctx, hn);
out_o:
	co->close(o->side->ctx, ho);
	return s;
}

/* ---- one part ---- */

static enum wsnap_status put_mode_line(struct wsnap_patch_buf *b,
				       const char *what, unsigned mode,
				       struct wsnap_error *err)
{
	char line[64];

	snprintf(line, sizeof(line), "%s %06o\n", what, mode);
	return wsnap_patch_buf_str(b, line, err);
}

/* 'a/X' or '/dev/null' for a ---/+++ or Binary line. */
static enum wsnap_status put_label(struct wsnap_patch_buf *b,
				   const struct entry *e, const char *prefix,
				   const char *path, struct wsnap_error *err)
{
	if (!e->n)
		return wsnap_patch_buf_str(b, "/dev/null", err);
	return wsnap_patch_buf_quote(b, prefix, path, err);
}

/* '--- LABEL' or '+++ LABEL', with git's TAB after a label holding a
 * space (so that patch(1) can tell where the name ends). */
static enum wsnap_status put_file_line(struct wsnap_patch_buf *b,
				       const char *what, const struct entry *e,
				       const char *prefix, const char *path,
				       struct wsnap_error *err)
{
	size_t start;
	enum wsnap_status s = wsnap_patch_buf_str(b, what, err);

	start = b->len;
	if (s == WSNAP_OK)
		s = put_label(b, e, prefix, path, err);
	if (s == WSNAP_OK && memchr(b->p + start, ' ', b->len - start))
		s = wsnap_patch_buf_str(b, "\t", err);
	if (s == WSNAP_OK)
		s = wsnap_patch_buf_str(b, "\n", err);
	return s;
}

static enum wsnap_status put_index_line(struct wsnap_patch_buf *b,
					const struct entry *o,
					const struct entry *n,
					const git_oid *io, const git_oid *in,
					int abbrev, struct wsnap_error *err)
{
	char x[GIT_OID_HEXSZ + 1], y[GIT_OID_HEXSZ + 1], line[128];

	git_oid_tostr(x, (size_t)abbrev + 1, io);
	git_oid_tostr(y, (size_t)abbrev + 1, in);
	if (o->mode == n->mode)
		snprintf(line, sizeof(line), "index %s..%s %06o\n", x, y,
			 o->mode);
	else
		snprintf(line, sizeof(line), "index %s..%s\n", x, y);
	return wsnap_patch_buf_str(b, line, err);
}

/*
 * The lines of a part before its diff, into p->hdr: 'diff --git', the
 * mode lines, the index line (ids NULL: none), and with hunks the ---/+++
 * lines.
 */
static enum wsnap_status header(struct wsnap_patch *p, const char *path,
				const struct entry *o, const struct entry *n,
				const git_oid *io, const git_oid *in,
				int abbrev, bool hunks, struct wsnap_error *err)
{
	struct wsnap_patch_buf *b = &p->hdr;
	enum wsnap_status s;

	b->len = 0;
	s = wsnap_patch_buf_str(b, "diff --git ", err);
	if (s == WSNAP_OK)
		s = wsnap_patch_buf_quote(b, "a/", path, err);
	if (s == WSNAP_OK)
		s = wsnap_patch_buf_str(b, " ", err);
	if (s == WSNAP_OK)
		s = wsnap_patch_buf_quote(b, "b/", path, err);
	if (s == WSNAP_OK)
		s = wsnap_patch_buf_str(b, "\n", err);
	if (s == WSNAP_OK && !o->mode)
		s = put_mode_line(b, "new file mode", n->mode, err);
	else if (s == WSNAP_OK && !n->mode)
		s = put_mode_line(b, "deleted file mode", o->mode, err);
	else if (s == WSNAP_OK && o->mode != n->mode) {
		s = put_mode_line(b, "old mode", o->mode, err);
		if (s == WSNAP_OK)
			s = put_mode_line(b, "new mode", n->mode, err);
	}
	if (s == WSNAP_OK && io && !git_oid_equal(io, in))
		s = put_index_line(b, o, n, io, in, abbrev, err);
	if (s == WSNAP_OK && hunks)
		s = put_file_line(b, "--- ", o, "a/", path, err);
	if (s == WSNAP_OK && hunks)
		s = put_file_line(b, "+++ ", n, "b/", path, err);
	return s;
}

/* git_patch_print's callback: everything but libgit2's file header. */
static int print_line(const git_diff_delta *d, const git_diff_hunk *h,
		      const git_diff_line *l, void *payload)
{
	struct wsnap_patch *p = payload;
	char origin = l->origin;
	enum wsnap_status s = WSNAP_OK;

	if (l->origin == GIT_DIFF_LINE_FILE_HDR)
		return 0; /* written by header() */
	if (l->origin == GIT_DIFF_LINE_CONTEXT ||
	    l->origin == GIT_DIFF_LINE_ADDITION ||
	    l->origin == GIT_DIFF_LINE_DELETION)
		s = out_write(p, &origin, 1, p->print_err);
	if (s == WSNAP_OK)
		s = out_write(p, l->content, l->content_len, p->print_err);
	if (s != WSNAP_OK) {
		p->print_status = s;
		return GIT_EUSER;
	}
	return 0;
}

static enum wsnap_status git_failed(const char *path, struct wsnap_error *err)
{
	const git_error *e = git_error_last();

	return wsnap_error_io(err, 0, path,
			      "cannot make its diff (libgit2: %s)",
			      e && e->message ? e->message : "no reason given");
}

/* A part with a file over max_size: header and git's binary line. */
static enum wsnap_status sized_out_part(struct wsnap_patch *p, const char *path,
					struct entry *o, struct entry *n,
					struct wsnap_patch_file *st,
					struct wsnap_error *err)
{
	struct wsnap_patch_buf *b = &p->hdr;
	bool same = false;
	enum wsnap_status s = WSNAP_OK;

	if (o->n && n->n && o->n->size == n->n->size)
		s = same_big(p, o, n, &same, err);
	if (s != WSNAP_OK || (same && o->mode == n->mode))
		return s;
	s = header(p, path, o, n, NULL, NULL, 0, false, err);
	if (s == WSNAP_OK && !same) {
		s = wsnap_patch_buf_str(b, "Binary files ", err);
		if (s == WSNAP_OK)
			s = put_label(b, o, "a/", path, err);
		if (s == WSNAP_OK)
			s = wsnap_patch_buf_str(b, " and ", err);
		if (s == WSNAP_OK)
			s = put_label(b, n, "b/", path, err);
		if (s == WSNAP_OK)
			s = wsnap_patch_buf_str(b, " differ\n", err);
		st->binary = true;
		p->counts.sized_out++;
		p->counts.binary++;
	}
	if (s == WSNAP_OK)
		s = out_write(p, b->p, b->len, err);
	st->shown = true;
	p->counts.files++;
	return s;
}

/* The diff --git block from o to n (either may be absent, not both). */
static enum wsnap_status part(struct wsnap_patch *p, const char *path,
			      struct entry *o, struct entry *n,
			      struct wsnap_patch_file *st,
			      struct wsnap_error *err)
{
	git_diff_options go;
	git_patch *gp = NULL;
	const git_diff_delta *d;
	size_t add = 0, del = 0;
	bool binary, same;
	enum wsnap_status s;

	if (o->sized_out || n->sized_out)
		return sized_out_part(p, path, o, n, st, err);
	s = git_start(p, err);
	if (s == WSNAP_OK)
		s = entry_load(p, o, &p->ca, &p->cap_a, err);
	if (s == WSNAP_OK)
		s = entry_load(p, n, &p->cb, &p->cap_b, err);
	if (s != WSNAP_OK)
		return s;
	git_diff_options_init(&go, GIT_DIFF_OPTIONS_VERSION);
	go.context_lines = p->opts.context;
	go.interhunk_lines = 0;
	/* git's defaults: the indent heuristic places ambiguous hunks */
	go.flags = GIT_DIFF_INDENT_HEURISTIC;
	if (p->opts.binary)
		go.flags |= GIT_DIFF_SHOW_BINARY;
	go.max_size = -1; /* no larger file gets here */
	if (git_patch_from_buffers(&gp, o->n ? o->data : NULL, o->len, path,
				   n->n ? n->data : NULL, n->len, path,
				   &go) < 0)
		return git_failed(path, err);
	d = git_patch_get_delta(gp);
	same = o->n && n->n && git_oid_equal(&d->old_file.id, &d->new_file.id);
	if (same && o->mode == n->mode)
		goto out; /* nothing git can see */
	binary = (d->flags & GIT_DIFF_FLAG_BINARY) != 0;
	s = header(p, path, o, n, &d->old_file.id, &d->new_file.id,
		   binary && p->opts.binary ? GIT_OID_HEXSZ : ABBREV,
		   !binary && git_patch_num_hunks(gp) > 0, err);
	if (s == WSNAP_OK)
		s = out_write(p, p->hdr.p, p->hdr.len, err);
	if (s == WSNAP_OK && !same) {
		p->print_status = WSNAP_OK;
		p->print_err = err;
		if (git_patch_print(gp, print_line, p) < 0)
			s = p->print_status != WSNAP_OK ? p->print_status
							: git_failed(path, err);
	}
	if (s != WSNAP_OK)
		goto out;
	if (!binary && git_patch_line_stats(NULL, &add, &del, gp) == 0) {
		st->added += add;
		st->deleted += del;
	}
	st->binary = st->binary || (binary && !same);
	st->shown = true;
	p->counts.files++;
	p->counts.binary += binary && !same;
out:
	git_patch_free(gp);
	return s;
}

static enum wsnap_status keep_stat(struct wsnap_patch *p, const char *path,
				   const struct wsnap_patch_file *st,
				   struct wsnap_error *err)
{
	struct wsnap_patch_file *nv;
	size_t n = wsnap_patch_quote(NULL, 0, "", path);
	char *name = malloc(n + 1);

	if (!name)
		return nomem(err);
	nv = wsnap_grow(p->stats, &p->cap_stats, p->nstats + 1, sizeof(*nv));
	if (!nv) {
		free(name);
		return nomem(err);
	}
	p->stats = nv;
	wsnap_patch_quote(name, n + 1, "", path);
	nv[p->nstats] = *st;
	nv[p->nstats].name = name;
	nv[p->nstats].name_len = n;
	p->nstats++;
	return WSNAP_OK;
}

enum wsnap_status wsnap_patch_change(void *ctx,
				     const struct wsnap_diff_change *c,
				     struct wsnap_error *err)
{
	struct wsnap_patch *p = ctx;
	struct wsnap_patch_file st;
	struct entry o, n, none_a, none_b;
	enum wsnap_status s = WSNAP_OK;

	memset(&st, 0, sizeof(st));
	entry_init(&o, p->a, c->a, c->ino_a, p->opts.max_size);
	entry_init(&n, p->b, c->b, c->ino_b, p->opts.max_size);
	if (c->kind == WSNAP_DIFF_TYPE) {
		/* git writes a change of type as a deletion, then an addition
		 */
		entry_init(&none_a, p->a, NULL, 0, 0);
		entry_init(&none_b, p->b, NULL, 0, 0);
		if (o.mode)
			s = part(p, c->path, &o, &none_b, &st, err);
		if (s == WSNAP_OK && n.mode)
			s = part(p, c->path, &none_a, &n, &st, err);
	} else if (o.mode || n.mode) {
		s = part(p, c->path, &o, &n, &st, err);
	}
	if (s == WSNAP_OK && !st.shown)
		p->counts.unexpressed++;
	if (s != WSNAP_OK || !st.shown || !p->opts.stat)
		return s;
	st.old_size = o.n ? o.n->size : 0;
	st.new_size = n.n ? n.n->size : 0;
	return keep_stat(p, c->path, &st, err);
}

enum wsnap_status wsnap_patch_stat(const struct wsnap_patch *p,
				   wsnap_patch_write_fn write, void *wctx,
				   struct wsnap_error *err)
{
	return wsnap_patch_stat_write(p->stats, p->nstats,
				      WSNAP_PATCH_STAT_WIDTH, write, wctx, err);
}
