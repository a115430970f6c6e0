/* SPDX-License-Identifier: MIT */
/*
 * pack: a directory into a deterministic pax tar (pack.h).
 *
 * Invariants:
 *  - the plan (every member the walk reported, with its metadata as on disk)
 *    and the index the builder made of the same members are complete before
 *    the output is created; only members the index holds are written, so
 *    what the policy skipped or refused never reaches the archive;
 *  - entries are written in the index's order (bytewise by rel path), so the
 *    output depends on the tree only; the libarchive handle runs under the
 *    C.UTF-8 locale whatever the environment, so names are stored the same
 *    everywhere (UTF-8 names as pax 'path', other bytes with
 *    hdrcharset=BINARY);
 *  - a member's header is written with the size the walk saw, and exactly
 *    that many bytes follow it, or the whole output is abandoned;
 *  - file bytes are read by one thread (the read-ahead, or this one when it
 *    cannot start) in the order they are written; memory is bounded by the
 *    read-ahead ring, whatever the file sizes.
 */
#include "pack.h"
#include "pack_private.h"

#include "archive_dl.h"
#include <errno.h>
#include <fcntl.h>
#include <locale.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "engine.h"
#include "frames.h"
#include "fsutil.h"
#include "grow.h"
#include "index.h"
#include "tree.h"
#include "array.h"

#define PACK_BUF (256u << 10)

static void plan_release(struct plan *p)
{
	wsnap_builder_free(p->builder);
	wsnap_index_free(p->idx);
	free(p->e);
	free(p->arena);
	memset(p, 0, sizeof(*p));
}

/* Copies len bytes and a NUL into the arena; returns the offset. */
static bool arena_put(struct plan *p, const char *s, size_t len, size_t *off)
{
	char *na = wsnap_grow(p->arena, &p->acap, p->used + len + 1, 1);

	if (!na)
		return false;
	p->arena = na;
	memcpy(p->arena + p->used, s, len);
	p->arena[p->used + len] = '\0';
	*off = p->used;
	p->used += len + 1;
	return true;
}

/* The walk's callback: the builder first (phase one of the policy), then
 * the plan keeps what it needs to write the member. */
static enum wsnap_status plan_add(void *ctx, const struct wsnap_raw_member *m,
				  struct wsnap_error *err)
{
	struct plan *p = ctx;
	struct plan_entry *pe, *ne;
	/* "." is the root, "./rel" the others (tree.h) */
	const char *rel = m->name_len > 2 ? m->name + 2 : "";
	size_t rl = m->name_len > 2 ? m->name_len - 2 : 0;
	enum wsnap_status s;

	s = wsnap_builder_add(p->builder, m, err);
	if (s != WSNAP_OK)
		return s;
	ne = wsnap_grow(p->e, &p->cap, p->n + 1, sizeof(*p->e));
	if (!ne)
		return wsnap_error_io(err, ENOMEM, NULL, "out of memory");
	p->e = ne;
	pe = &p->e[p->n];
	memset(pe, 0, sizeof(*pe));
	if (!arena_put(p, rel, rl, &pe->path_off) ||
	    (m->linkname &&
	     !arena_put(p, m->linkname, m->linkname_len, &pe->target_off)))
		return wsnap_error_io(err, ENOMEM, NULL, "out of memory");
	pe->path_len = rl;
	pe->size = m->size;
	pe->mtime_sec = m->mtime_sec;
	pe->mtime_nsec = m->mtime_nsec;
	pe->mode = (uint16_t)(m->mode & 07777);
	pe->type = (uint8_t)m->type;
	if (!m->linkname)
		pe->target_off = SIZE_MAX;
	p->n++;
	return WSNAP_OK;
}

/* Step 1: walk, policy, sorted plan. Nothing is written. */
static enum wsnap_status plan_build(struct plan *p, int root_fd,
				    const char *label,
				    const struct wsnap_policy *policy,
				    struct wsnap_error *err)
{
	enum wsnap_status s;
	struct wsnap_builder *b;
	size_t i;

	memset(p, 0, sizeof(*p));
	p->label = label;
	s = wsnap_builder_new(&p->builder, policy, err);
	if (s != WSNAP_OK)
		return s;
	s = wsnap_tree_walk(root_fd, label, policy, plan_add, p, err);
	if (s != WSNAP_OK)
		return s;
	b = p->builder;
	p->builder = NULL; /* finish frees it in all cases */
	s = wsnap_builder_finish(b, &p->idx, err);
	if (s != WSNAP_OK)
		return s;
	for (i = 0; i < p->n; i++) {
		p->e[i].path = p->arena + p->e[i].path_off;
		p->e[i].target = p->e[i].target_off == SIZE_MAX
					 ? NULL
					 : p->arena + p->e[i].target_off;
	}
	/* the walk reports the root first (tree.h) */
	if (!p->n || p->e[0].path_len || p->e[0].type != WSNAP_RAW_DIR)
		return wsnap_error_io(err, 0, label, "cannot walk directory");
	return WSNAP_OK;
}

/* ---- step 2: writing ---- */

/* The compressed bytes of the seekable writer, to the output. */
static int sink_out(void *ctx, const void *buf, size_t len)
{
	struct sink *k = ctx;
	int e = wsnap_write_full(k->fd, buf, len);

	if (!e)
		k->bytes += len;
	return e;
}

static la_ssize_t sink_write(struct archive *a, void *ctx, const void *buf,
			     size_t len)
{
	struct sink *k = ctx;
	int e = k->fw ? wsnap_fwriter_write(k->fw, buf, len)
		      : wsnap_write_full(k->fd, buf, len);

	if (e) {
		k->errnum = e;
		archive_set_error(a, e, "cannot write");
		return -1;
	}
	if (!k->fw)
		k->bytes += len;
	return (la_ssize_t)len;
}

enum wsnap_status wsnap_pack_write_fail(struct archive *a, const struct sink *k,
					struct wsnap_error *err)
{
	int e = k->errnum ? k->errnum : archive_errno(a);

	if (e == ENOSPC)
		return wsnap_error_io(err, e, k->label,
				      "no space left writing");
	return wsnap_error_io(err, e > 0 ? e : 0, k->label,
			      "cannot write archive (%s)",
			      archive_error_string(a) ? archive_error_string(a)
						      : "unknown error");
}

static enum wsnap_status changed(const struct plan *p, const char *rel,
				 struct wsnap_error *err)
{
	char buf[WSNAP_ERROR_TEXT_MAX];

	return wsnap_error_io(
		err, 0, wsnap_tree_describe(p->label, rel, buf, sizeof(buf)),
		"file changed while being read");
}

/*
 * The plan entry of an index node. The index is sorted by path (index.h),
 * and each node records the position of its member among those the builder
 * received ('order', 1-based), which is the position of the entry in the
 * plan: so the plan needs no sorting and members the policy skipped (not in
 * the index) are passed over. NULL if they disagree (a bug).
 */
const struct plan_entry *wsnap_pack_entry_of(const struct plan *p, uint32_t ino)
{
	const struct wsnap_node *n = wsnap_index_node(p->idx, ino);
	const struct plan_entry *pe;

	if (ino == WSNAP_ROOT_INO)
		return &p->e[0];
	if (!n || n->order == 0 || n->order > p->n)
		return NULL;
	pe = &p->e[n->order - 1];
	if (pe->path_len != strlen(n->path) ||
	    memcmp(pe->path, n->path, pe->path_len) != 0)
		return NULL;
	return pe;
}

/*
 * Reads the file of pe through the cursor: exactly pe->size bytes, then its
 * end (a size 0 file too), handing them to the feed. A file whose size is
 * not the walked one is 'file changed while being read'.
 */
enum wsnap_status wsnap_pack_read_file(const struct plan *p,
				       struct wsnap_tree_cursor *cur,
				       const struct plan_entry *pe,
				       const struct feed *f,
				       struct wsnap_error *err)
{
	enum wsnap_status s = WSNAP_OK;
	uint64_t left = pe->size;
	/*
	 * No fstat: the reads show a size other than the walked one, and
	 * whatever may have replaced the file (a FIFO opened without
	 * blocking reads as empty, a directory fails) cannot give exactly
	 * the walked size of bytes followed by an end.
	 */
	int fd = wsnap_tree_cursor_open(cur, pe->path, NULL, err);

	if (fd < 0)
		return err->status;
	for (;;) {
		/* one byte more than is left: growth shows at once */
		size_t ask = left < PACK_BUF ? (size_t)left + 1 : PACK_BUF;
		char *buf = f->space(f->ctx, ask);
		ssize_t n;

		if (!buf) {
			s = WSNAP_IO; /* stopped: the consumer has the error */
			goto out;
		}
		WSNAP_RETRY_EINTR(n, read(fd, buf, ask));
		if (n < 0) {
			char path[WSNAP_ERROR_TEXT_MAX];

			s = wsnap_error_io(err, errno,
					   wsnap_tree_describe(p->label,
							       pe->path, path,
							       sizeof(path)),
					   "cannot read");
			goto out;
		}
		if ((uint64_t)n > left || (n == 0 && left)) {
			s = changed(p, pe->path, err);
			goto out;
		}
		if (n == 0)
			goto out;
		s = f->put(f->ctx, buf, (size_t)n, err);
		if (s != WSNAP_OK)
			goto out;
		left -= (uint64_t)n;
		/*
		 * A read of a regular file that returns less than asked has
		 * met the end of the file: when it stops exactly at the size
		 * the walk saw, the file has not grown (a growth after this
		 * point is after the snapshot), and one more read would only
		 * confirm it.
		 */
		if (!left && (size_t)n < ask)
			goto out;
	}
out:
	close(fd);
	return s;
}

/* ---- the direct feed ---- */

struct direct {
	struct archive *a;
	const struct sink *k;
	char *buf; /* PACK_BUF bytes */
};

static char *direct_space(void *ctx, size_t want)
{
	return ((struct direct *)ctx)->buf;
}

static enum wsnap_status direct_put(void *ctx, char *buf, size_t n,
				    struct wsnap_error *err)
{
	struct direct *d = ctx;

	if (archive_write_data(d->a, buf, n) != (la_ssize_t)n)
		return wsnap_pack_write_fail(d->a, d->k, err);
	return WSNAP_OK;
}

static int add_filter(struct archive *a, enum wsnap_pack_compress c)
{
	switch (c) {
	case WSNAP_PACK_GZIP:
		if (archive_write_add_filter_gzip(a) != ARCHIVE_OK)
			return -1;
		/* no timestamp in the gzip header: determinism */
		return archive_write_set_filter_option(a, "gzip", "timestamp",
						       NULL) == ARCHIVE_OK
			       ? 0
			       : -1;
	case WSNAP_PACK_ZSTD:
	case WSNAP_PACK_XZ:
		/* compressed by the seekable writer (sink_write) */
		return archive_write_add_filter_none(a) == ARCHIVE_OK ? 0 : -1;
	case WSNAP_PACK_BZIP2:
		return archive_write_add_filter_bzip2(a) == ARCHIVE_OK ? 0 : -1;
	case WSNAP_PACK_LZ4:
		return archive_write_add_filter_lz4(a) == ARCHIVE_OK ? 0 : -1;
	default:
		return archive_write_add_filter_none(a) == ARCHIVE_OK ? 0 : -1;
	}
}

static void set_entry(struct archive_entry *ae, const struct plan_entry *pe,
		      char *name, size_t cap)
{
	archive_entry_clear(ae);
	if (pe->path_len) {
		memcpy(name, "./", 2);
		memcpy(name + 2, pe->path, pe->path_len + 1);
	} else {
		memcpy(name, ".", 2);
	}
	archive_entry_copy_pathname(ae, name);
	archive_entry_set_uid(ae, 0);
	archive_entry_set_gid(ae, 0);
	archive_entry_set_mtime(ae, pe->mtime_sec, (long)pe->mtime_nsec);
	switch (pe->type) {
	case WSNAP_RAW_DIR:
		archive_entry_set_filetype(ae, AE_IFDIR);
		archive_entry_set_perm(ae, pe->mode & 0777);
		archive_entry_set_size(ae, 0);
		break;
	case WSNAP_RAW_SYMLINK:
		archive_entry_set_filetype(ae, AE_IFLNK);
		archive_entry_set_perm(ae, 0777);
		archive_entry_copy_symlink(ae, pe->target);
		archive_entry_set_size(ae, 0);
		break;
	default:
		archive_entry_set_filetype(ae, AE_IFREG);
		archive_entry_set_perm(ae, pe->mode & 0777);
		archive_entry_set_size(ae, (la_int64_t)pe->size);
		break;
	}
}

/* One member written: the progress callback, if any. */
static void tell_progress(const struct wsnap_pack_opts *opts,
			  struct wsnap_pack_progress *g,
			  const struct plan_entry *pe)
{
	if (!opts->progress || !pe->path_len)
		return;
	g->members_done++;
	if (pe->type == WSNAP_RAW_FILE)
		g->bytes_done += pe->size;
	opts->progress(opts->progress_ctx, g);
}

static void tally(struct wsnap_pack_stats *st, const struct plan_entry *pe)
{
	if (!pe->path_len)
		return;
	st->members++;
	if (pe->type == WSNAP_RAW_DIR)
		st->dirs++;
	else if (pe->type == WSNAP_RAW_SYMLINK)
		st->symlinks++;
	else {
		st->files++;
		st->file_bytes += pe->size;
	}
}

/* Step 2: the members the index holds, in its order. */
static enum wsnap_status plan_write(const struct plan *p, int root_fd,
				    int out_fd, const char *out_label,
				    const struct wsnap_pack_opts *opts,
				    struct wsnap_pack_stats *st,
				    struct wsnap_error *err)
{
	enum wsnap_pack_compress comp = opts->compress;
	struct wsnap_pack_progress prog = {0};
	struct wsnap_index_stats is;
	struct wsnap_tree_cursor *cur = NULL;
	struct archive *a = NULL;
	struct archive_entry *ae = NULL;
	struct sink k = {.fd = out_fd, .label = out_label};
	struct direct d = {.k = &k};
	struct feed f = {direct_space, direct_put, &d};
	struct ahead q;
	pthread_t th;
	bool threaded = false;
	locale_t cloc, old = (locale_t)0;
	char *buf = NULL, *name = NULL;
	size_t i, maxlen = 0;
	uint32_t ino, count = wsnap_index_count(p->idx);
	enum wsnap_status s;

	/* names that are UTF-8 stored as such (pax path), others as bytes
	 * (hdrcharset=BINARY); C where C.UTF-8 is missing (older libc) */
	cloc = newlocale(LC_ALL_MASK, "C.UTF-8", (locale_t)0);
	if (cloc == (locale_t)0)
		cloc = newlocale(LC_ALL_MASK, "C", (locale_t)0);
	if (cloc == (locale_t)0)
		return wsnap_error_io(err, errno, NULL, "cannot set locale");
	old = uselocale(cloc);
	for (i = 0; i < p->n; i++)
		if (p->e[i].path_len > maxlen)
			maxlen = p->e[i].path_len;
	s = wsnap_tree_cursor_new(&cur, root_fd, p->label, err);
	if (s != WSNAP_OK)
		goto out;
	buf = malloc(PACK_BUF);
	name = malloc(maxlen + 3);
	a = archive_write_new();
	ae = archive_entry_new();
	if (!buf || !name || !a || !ae) {
		s = wsnap_error_io(err, ENOMEM, NULL, "out of memory");
		goto out;
	}
	/*
	 * A compressed stream ends where the compressor ends it: padding it
	 * to a 10240-byte block would put zeros after the gzip trailer or the
	 * zstd frame, which strict readers (ours) refuse. A plain tar keeps
	 * the customary padding.
	 */
	if (comp != WSNAP_PACK_NONE)
		archive_write_set_bytes_in_last_block(a, 1);
	if (comp == WSNAP_PACK_ZSTD || comp == WSNAP_PACK_XZ) {
		/* zstd's default level and xz's default preset, as
		 * libarchive's filters had them */
		int e = wsnap_fwriter_new(
			&k.fw,
			comp == WSNAP_PACK_ZSTD ? WSNAP_SPAN_ZSTD
						: WSNAP_SPAN_XZ,
			WSNAP_FRAMES_PIECE, comp == WSNAP_PACK_ZSTD ? 3 : 6,
			sink_out, &k);

		if (e) {
			s = wsnap_error_io(err, e, NULL,
					   e == ENOMEM ? "out of memory"
						       : "cannot set up "
							 "compression");
			goto out;
		}
	}
	if (archive_write_set_format_pax(a) != ARCHIVE_OK ||
	    add_filter(a, comp) != 0 ||
	    archive_write_open(a, &k, NULL, sink_write, NULL) != ARCHIVE_OK) {
		s = wsnap_pack_write_fail(a, &k, err);
		goto out;
	}
	d.a = a;
	d.buf = buf;
	wsnap_index_stats(p->idx, &is);
	prog.members_total = is.members;
	prog.bytes_total = is.total_bytes;
	threaded = wsnap_pack_ahead_start(&q, &th, p, root_fd);
	for (ino = WSNAP_ROOT_INO; ino <= count; ino++) {
		const struct plan_entry *pe = wsnap_pack_entry_of(p, ino);
		int r;

		if (!pe) {
			s = wsnap_error_io(err, 0, p->label,
					   "directory and index disagree");
			goto out;
		}
		set_entry(ae, pe, name, maxlen + 3);
		r = archive_write_header(a, ae);
		/* ARCHIVE_WARN: a name that is not UTF-8 is stored as raw
		 * bytes (pax hdrcharset=BINARY), as wanted */
		if (r != ARCHIVE_OK && r != ARCHIVE_WARN) {
			s = wsnap_pack_write_fail(a, &k, err);
			goto out;
		}
		if (pe->type == WSNAP_RAW_FILE) {
			if (threaded)
				s = wsnap_pack_ahead_write(&q, a, &k, err);
			else
				s = wsnap_pack_read_file(p, cur, pe, &f, err);
			if (s != WSNAP_OK)
				goto out;
		}
		if (st)
			tally(st, pe);
		tell_progress(opts, &prog, pe);
	}
	if (archive_write_close(a) != ARCHIVE_OK) {
		s = wsnap_pack_write_fail(a, &k, err);
		goto out;
	}
	if (k.fw) {
		k.errnum = wsnap_fwriter_finish(k.fw);
		if (k.errnum) {
			s = wsnap_pack_write_fail(a, &k, err);
			goto out;
		}
	}
	if (st)
		st->out_bytes = k.bytes;
	s = WSNAP_OK;
out:
	if (threaded)
		wsnap_pack_ahead_stop(&q, th);
	if (a)
		archive_write_free(a);
	wsnap_fwriter_free(k.fw);
	archive_entry_free(ae);
	free(buf);
	free(name);
	wsnap_tree_cursor_free(cur);
	uselocale(old);
	freelocale(cloc);
	return s;
}

/* Step 3: read the output back under the same policy; st (may be NULL)
 * gets the compression found. */
static enum wsnap_status plan_check(const struct plan *p, int out_fd,
				    const struct wsnap_policy *policy,
				    const char *out_label,
				    struct wsnap_pack_stats *st,
				    struct wsnap_error *err)
{
	struct wsnap_reader_opts ro = {0};
	struct wsnap_index_stats want, got;
	struct wsnap_index *idx = NULL;
	enum wsnap_status s;

	if (lseek(out_fd, 0, SEEK_SET) < 0)
		return wsnap_error_io(err, errno, out_label,
				      "cannot read back");
	s = wsnap_index_build(&idx, out_fd, policy, &ro, err);
	if (s != WSNAP_OK)
		return s;
	wsnap_index_stats(p->idx, &want);
	wsnap_index_stats(idx, &got);
	if (want.members != got.members || want.dirs != got.dirs ||
	    want.files != got.files || want.symlinks != got.symlinks ||
	    want.total_bytes != got.total_bytes)
		s = wsnap_error_io(err, 0, out_label,
				   "written archive does not hold the "
				   "directory's members");
	if (st)
		st->compression = got.compression;
	wsnap_index_free(idx);
	return s;
}

enum wsnap_status wsnap_pack_fd(int root_fd, const char *label, int out_fd,
				const struct wsnap_pack_opts *opts,
				struct wsnap_pack_stats *st,
				struct wsnap_error *err)
{
	struct plan p;
	enum wsnap_status s;

	if (st)
		memset(st, 0, sizeof(*st));
	s = plan_build(&p, root_fd, label, opts->policy, err);
	if (s == WSNAP_OK && opts->after_plan)
		opts->after_plan(opts->after_plan_ctx);
	if (s == WSNAP_OK)
		s = plan_write(&p, root_fd, out_fd, "", opts, st, err);
	if (s == WSNAP_OK)
		s = plan_check(&p, out_fd, opts->policy, "", st, err);
	plan_release(&p);
	return s;
}

static char ascii_lower(char ch)
{
	return ch >= 'A' && ch <= 'Z' ? (char)(ch - 'A' + 'a') : ch;
}

/* Whether s ends with suffix (lowercase), ASCII case ignored in s: not
 * strcasecmp(), whose idea of case follows the locale. */
static bool ends_with_nocase(const char *s, const char *suffix)
{
	size_t n = strlen(s), m = strlen(suffix), i;

	if (n < m)
		return false;
	for (i = 0; i < m; i++)
		if (ascii_lower(s[n - m + i]) != suffix[i])
			return false;
	return true;
}

int wsnap_pack_compress_for(const char *out, enum wsnap_pack_compress *c)
{
	static const struct {
		const char *ext;
		enum wsnap_pack_compress c;
	} exts[] = {
		{".tar", WSNAP_PACK_NONE},   {".tar.gz", WSNAP_PACK_GZIP},
		{".tgz", WSNAP_PACK_GZIP},   {".tar.bz2", WSNAP_PACK_BZIP2},
		{".tbz2", WSNAP_PACK_BZIP2}, {".tar.xz", WSNAP_PACK_XZ},
		{".txz", WSNAP_PACK_XZ},     {".tar.zst", WSNAP_PACK_ZSTD},
		{".tzst", WSNAP_PACK_ZSTD},  {".tar.lz4", WSNAP_PACK_LZ4},
	};
	size_t i;

	if (strcmp(out, "-") == 0) {
		*c = WSNAP_PACK_NONE;
		return 0;
	}
	for (i = 0; i < ARRAY_SIZE(exts); i++) {
		if (ends_with_nocase(out, exts[i].ext)) {
			*c = exts[i].c;
			return 0;
		}
	}
	return -1;
}

int wsnap_pack_compress_parse(const char *name, enum wsnap_pack_compress *c)
{
	static const struct {
		const char *name;
		enum wsnap_pack_compress c;
	} names[] = {
		{"none", WSNAP_PACK_NONE},   {"gzip", WSNAP_PACK_GZIP},
		{"bzip2", WSNAP_PACK_BZIP2}, {"xz", WSNAP_PACK_XZ},
		{"zstd", WSNAP_PACK_ZSTD},   {"lz4", WSNAP_PACK_LZ4},
	};
	size_t i;

	for (i = 0; i < ARRAY_SIZE(names); i++) {
		if (strcmp(name, names[i].name) == 0) {
			*c = names[i].c;
			return 0;
		}
	}
	return -1;
}

static enum wsnap_status copy_out(int fd, int to, struct wsnap_error *err)
{
	enum wsnap_status s = WSNAP_OK;
	char *buf = malloc(PACK_BUF);

	if (!buf)
		return wsnap_error_io(err, ENOMEM, NULL, "out of memory");
	if (lseek(fd, 0, SEEK_SET) < 0) {
		s = wsnap_error_io(err, errno, NULL, "cannot read back");
		goto out;
	}
	for (;;) {
		size_t n;
		int e = wsnap_read_full(fd, buf, PACK_BUF, &n);

		if (e) {
			s = wsnap_error_io(err, e, NULL, "cannot read back");
			goto out;
		}
		if (n == 0)
			break;
		e = wsnap_write_full(to, buf, n);
		if (e) {
			s = wsnap_error_io(err, e, "-", "cannot write");
			goto out;
		}
	}
out:
	free(buf);
	return s;
}

enum wsnap_status wsnap_pack_run(const char *dir, const char *out,
				 const struct wsnap_pack_opts *opts,
				 struct wsnap_pack_stats *st,
				 struct wsnap_error *err)
{
	bool to_stdout = strcmp(out, "-") == 0;
	char *tmp = NULL;
	struct plan p;
	enum wsnap_status s;
	int root_fd, fd = -1;

	memset(&p, 0, sizeof(p));
	if (st)
		memset(st, 0, sizeof(*st));
	root_fd = wsnap_tree_open(dir, err);
	if (root_fd < 0)
		return err->status;
	/* the verdict comes before the output exists */
	s = plan_build(&p, root_fd, dir, opts->policy, err);
	if (s != WSNAP_OK)
		goto out;
	if (opts->after_plan)
		opts->after_plan(opts->after_plan_ctx);
	if (to_stdout) {
		fd = wsnap_fs_tmpfile(opts->tmpdir, "wsnap-pack", err);
		if (fd < 0) {
			s = err->status;
			goto out;
		}
	} else {
		int e = wsnap_fs_tmpfile_beside(out, ".", &tmp, &fd);

		if (e) {
			fd = -1;
			s = e == ENOMEM ? wsnap_error_io(err, e, NULL,
							 "out of memory")
					: wsnap_error_io(err, e, out,
							 "cannot create");
			goto out;
		}
	}
	s = plan_write(&p, root_fd, fd, out, opts, st, err);
	if (s == WSNAP_OK)
		s = plan_check(&p, fd, opts->policy, out, st, err);
	if (s != WSNAP_OK)
		goto out;
	if (to_stdout) {
		s = copy_out(fd, STDOUT_FILENO, err);
	} else {
		mode_t um = umask(022);

		umask(um);
		if (fchmod(fd, 0666 & ~um) < 0 || rename(tmp, out) < 0)
			s = wsnap_error_io(err, errno, out, "cannot write");
		else {
			free(tmp);
			tmp = NULL;
		}
	}
out:
	if (tmp) {
		unlink(tmp);
		free(tmp);
	}
	if (fd >= 0)
		close(fd);
	plan_release(&p);
	close(root_fd);
	return s;
}
