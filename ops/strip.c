/* SPDX-License-Identifier: MIT */
/*
 * Prefix stripping (policy.md section 8); see strip.h for the steps.
 *
 * Invariants:
 *  - nothing is written to out_fd before the whole input passed the index
 *    builder (step 1), and the caller publishes out_fd only when this
 *    returns WSNAP_OK, i.e. after steps 3 and 4 accepted what was written;
 *  - step 2 reads the validated bytes: a regular file again (no copy of
 *    it is made; it must be unchanged, by fstat, after the copy, and step 3
 *    would catch a header that changed), a pipe from the index's data file
 *    (the stream spilled while it was validated);
 *  - a member name that reaches the writer is rebuilt from components: no
 *    '.', '..' or empty component and no leading '/' can pass through.
 */
#include "strip.h"

#include "archive_dl.h"
#include <errno.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "fileid.h"
#include "fsutil.h"
#include "index.h"
#include "reader.h"

#define STRIP_READ_BUF	 (128u << 10)
#define STRIP_ZEROS_SIZE (64u << 10)

/* The next component of [*p, end) other than '' and '.'; false at the end. */
static bool next_component(const char **p, const char *end, const char **c,
			   size_t *cl)
{
	while (*p < end) {
		const char *s = *p;

		while (*p < end && **p != '/')
			(*p)++;
		*c = s;
		*cl = (size_t)(*p - s);
		if (*p < end)
			(*p)++;
		if (*cl > 0 && !(*cl == 1 && s[0] == '.'))
			return true;
	}
	return false;
}

long wsnap_strip_name(const char *name, size_t len, const char *prefix,
		      char *out, size_t cap)
{
	const char *p = name, *end = name + len, *probe = name, *q = prefix;
	const char *c;
	size_t cl, n = 0;

	if (cap < 2)
		return -2;
	/* A root entry ('', '.', './', '/') becomes '.' too. */
	if (!next_component(&probe, end, &c, &cl))
		goto root;
	/* Consume the prefix, component by component (never a string
	 * prefix: 'workspace2/x' is not within 'workspace'). */
	while (*q) {
		const char *qe = strchr(q, '/');
		size_t ql = qe ? (size_t)(qe - q) : strlen(q);

		if (!next_component(&p, end, &c, &cl) || cl != ql ||
		    memcmp(c, q, ql) != 0)
			return -1;
		q += ql;
		if (*q == '/')
			q++;
	}
	/* Join what is left. */
	while (next_component(&p, end, &c, &cl)) {
		if (n + (n ? 1 : 0) + cl + 1 > cap)
			return -2;
		if (n)
			out[n++] = '/';
		memcpy(out + n, c, cl);
		n += cl;
	}
	if (n > 0) {
		out[n] = '\0';
		return (long)n;
	}
root:
	out[0] = '.';
	out[1] = '\0';
	return 1;
}

/* ---- libarchive over descriptors ------------------------------------ */

struct strip_in {
	int fd;
	uint64_t off;
	char *buf;
	int errnum;
};

static la_ssize_t in_read(struct archive *a, void *ctx, const void **buf)
{
	struct strip_in *in = ctx;
	ssize_t r;

	WSNAP_RETRY_EINTR(
		r, pread(in->fd, in->buf, STRIP_READ_BUF, (off_t)in->off));
	if (r < 0) {
		in->errnum = errno;
		archive_set_error(a, errno, "cannot read");
		return -1;
	}
	in->off += (uint64_t)r;
	*buf = in->buf;
	return r;
}

static la_int64_t in_skip(struct archive *a, void *ctx, la_int64_t request)
{
	struct strip_in *in = ctx;

	if (request < 0)
		return 0;
	in->off += (uint64_t)request;
	return request;
}

struct strip_out {
	int fd;
	uint64_t bytes;
	int errnum;
};

static la_ssize_t out_write(struct archive *a, void *ctx, const void *buf,
			    size_t len)
{
	struct strip_out *out = ctx;
	int e = wsnap_write_full(out->fd, buf, len);

	if (e) {
		out->errnum = e;
		archive_set_error(a, e, "cannot write");
		return -1;
	}
	out->bytes += len;
	return (la_ssize_t)len;
}

/* ---- step 2: the copy ------------------------------------------------ */

struct strip_copy {
	struct archive *ar, *aw;
	struct strip_in in;
	struct strip_out out;
	const char *prefix;
	char *name; /* new name buffer */
	size_t name_cap;
	uint64_t members;
	struct wsnap_error *err;
};

static enum wsnap_status read_failed(struct strip_copy *c)
{
	if (c->in.errnum)
		return wsnap_error_io(c->err, c->in.errnum, NULL,
				      "cannot read archive data");
	wsnap_error_stream(c->err);
	wsnap_error_detail(c->err, "copying member %llu: %s",
			   (unsigned long long)c->members + 1,
			   archive_error_string(c->ar)
				   ? archive_error_string(c->ar)
				   : "the archive cannot be read again");
	return WSNAP_REJECTED;
}

static enum wsnap_status write_failed(struct strip_copy *c)
{
	return wsnap_error_io(c->err, c->out.errnum ? c->out.errnum : EIO, NULL,
			      "cannot write the rewritten archive (%s)",
			      archive_error_string(c->aw)
				      ? archive_error_string(c->aw)
				      : "libarchive");
}

static enum wsnap_status write_all(struct strip_copy *c, const void *buf,
				   size_t len)
{
	while (len > 0) {
		la_ssize_t w = archive_write_data(c->aw, buf, len);

		if (w <= 0)
			return write_failed(c);
		buf = (const char *)buf + w;
		len -= (size_t)w;
	}
	return WSNAP_OK;
}

/* Zeros for the holes of a sparse file: the pax writer takes the logical
 * contents and drops what falls in a hole of the entry's sparse map. */
static enum wsnap_status write_zeros(struct strip_copy *c, uint64_t len)
{
	static const char zeros[STRIP_ZEROS_SIZE];
	enum wsnap_status s;

	while (len > 0) {
		size_t n = len > sizeof(zeros) ? sizeof(zeros) : (size_t)len;

		s = write_all(c, zeros, n);
		if (s != WSNAP_OK)
			return s;
		len -= n;
	}
	return WSNAP_OK;
}

/* size: the logical size, taken before the writer saw the entry (for a
 * sparse file it then sets the entry's size to the bytes it stores). */
static enum wsnap_status copy_file_data(struct strip_copy *c, uint64_t size)
{
	uint64_t pos = 0;
	enum wsnap_status s;

	for (;;) {
		const void *buf;
		size_t len;
		la_int64_t off;
		int r = archive_read_data_block(c->ar, &buf, &len, &off);

		if (r == ARCHIVE_EOF)
			break;
		if (r != ARCHIVE_OK || off < 0 || (uint64_t)off < pos ||
		    (uint64_t)off > size || len > size - (uint64_t)off)
			return read_failed(c);
		s = write_zeros(c, (uint64_t)off - pos);
		if (s == WSNAP_OK)
			s = write_all(c, buf, len);
		if (s != WSNAP_OK)
			return s;
		pos = (uint64_t)off + len;
	}
	return write_zeros(c, size - pos);
}

struct xattr_ref {
	const char *name;
	int index;
};

static int xattr_ref_cmp(const void *a, const void *b)
{
	const struct xattr_ref *x = a, *y = b;
	int c = strcmp(x->name, y->name);

	return c ? c : (x->index > y->index) - (x->index < y->index);
}

/*
 * libarchive's pax writer stores each xattr twice (LIBARCHIVE.xattr.* and
 * SCHILY.xattr.*) and its reader reports both: without this, every rewrite
 * would double them. Keeps the first value of each name, in order.
 */
static enum wsnap_status dedupe_xattrs(struct strip_copy *c,
				       struct archive_entry *e)
{
	int n = archive_entry_xattr_reset(e), i, kept = 0;
	struct xattr_ref *refs;
	char *keep;
	enum wsnap_status s = WSNAP_OK;

	if (n < 2)
		return WSNAP_OK;
	refs = calloc((size_t)n, sizeof(*refs));
	keep = calloc((size_t)n, 1);
	if (!refs || !keep) {
		s = wsnap_error_io(c->err, ENOMEM, NULL, "out of memory");
		goto out;
	}
	for (i = 0; i < n; i++) {
		const char *name = NULL;
		const void *value;
		size_t size;

		archive_entry_xattr_next(e, &name, &value, &size);
		refs[i].name = name ? name : "";
		refs[i].index = i;
	}
	qsort(refs, (size_t)n, sizeof(*refs), xattr_ref_cmp);
	for (i = 0; i < n; i++)
		if (i == 0 || strcmp(refs[i].name, refs[i - 1].name) != 0) {
			keep[refs[i].index] = 1;
			kept++;
		}
	if (kept == n)
		goto out;
	{
		/* the entry owns the strings: copy what is kept first */
		struct archive_entry *copy = archive_entry_clone(e);

		if (!copy) {
			s = wsnap_error_io(c->err, ENOMEM, NULL,
					   "out of memory");
			goto out;
		}
		archive_entry_xattr_clear(e);
		archive_entry_xattr_reset(copy);
		for (i = 0; i < n; i++) {
			const char *name;
			const void *value;
			size_t size;

			archive_entry_xattr_next(copy, &name, &value, &size);
			if (keep[i])
				archive_entry_xattr_add_entry(e, name, value,
							      size);
		}
		archive_entry_free(copy);
	}
out:
	free(refs);
	free(keep);
	return s;
}

static enum wsnap_status copy_member(struct strip_copy *c,
				     struct archive_entry *e)
{
	const char *name = archive_entry_pathname(e);
	bool regular = archive_entry_filetype(e) == AE_IFREG;
	uint64_t size;
	long n;

	if (!name)
		return read_failed(c);
	n = wsnap_strip_name(name, strlen(name), c->prefix, c->name,
			     c->name_cap);
	if (n == -1)
		return wsnap_error_reject(c->err, name, "%s: %s",
					  WSNAP_REASON_NO_PREFIX, c->prefix);
	if (n < 0)
		return wsnap_error_reject(c->err, name, "path too long");
	if (archive_entry_hardlink(e))
		return wsnap_error_reject(c->err, name,
					  "hardlink member not allowed");
	/* The entry keeps every other attribute; the writer derives its
	 * extended header (and 'path' when needed) from this new name. */
	archive_entry_copy_pathname(e, c->name);
	if (dedupe_xattrs(c, e) != WSNAP_OK)
		return WSNAP_IO;
	if (!regular || archive_entry_size(e) < 0)
		archive_entry_set_size(e, 0);
	size = (uint64_t)archive_entry_size(e);
	if (archive_write_header(c->aw, e) < ARCHIVE_WARN)
		return write_failed(c);
	if (regular && size > 0) {
		enum wsnap_status s = copy_file_data(c, size);

		if (s != WSNAP_OK)
			return s;
	}
	if (archive_write_finish_entry(c->aw) < ARCHIVE_WARN)
		return write_failed(c);
	c->members++;
	return WSNAP_OK;
}

static enum wsnap_status copy_archive(struct strip_copy *c, int data_fd)
{
	struct archive_entry *e;
	enum wsnap_status s = WSNAP_OK;
	int r;

	c->ar = archive_read_new();
	c->aw = archive_write_new();
	c->in.buf = malloc(STRIP_READ_BUF);
	c->name_cap = WSNAP_ERROR_TEXT_MAX;
	c->name = malloc(c->name_cap);
	if (!c->ar || !c->aw || !c->in.buf || !c->name)
		return wsnap_error_io(c->err, ENOMEM, NULL, "out of memory");
	c->in.fd = data_fd;
	/* the input file again (maybe compressed) or the plain spill file */
	archive_read_support_filter_gzip(c->ar);
	archive_read_support_filter_bzip2(c->ar);
	archive_read_support_filter_xz(c->ar);
	archive_read_support_filter_zstd(c->ar);
	archive_read_support_filter_lz4(c->ar);
	archive_read_support_format_tar(c->ar);
	if (archive_read_open2(c->ar, &c->in, NULL, in_read, in_skip, NULL) !=
	    ARCHIVE_OK)
		return read_failed(c);
	if (archive_write_set_format_pax(c->aw) != ARCHIVE_OK ||
	    archive_write_add_filter_none(c->aw) != ARCHIVE_OK ||
	    archive_write_open(c->aw, &c->out, NULL, out_write, NULL) !=
		    ARCHIVE_OK)
		return write_failed(c);
	for (;;) {
		r = archive_read_next_header(c->ar, &e);
		if (r == ARCHIVE_EOF)
			break;
		/* a UTF-8 pax name in the C locale: raw bytes, as validated */
		if (r != ARCHIVE_OK &&
		    !(r == ARCHIVE_WARN && wsnap_reader_charset_warning(c->ar)))
			return read_failed(c);
		s = copy_member(c, e);
		if (s != WSNAP_OK)
			return s;
	}
	if (archive_write_close(c->aw) != ARCHIVE_OK)
		return write_failed(c);
	return WSNAP_OK;
}

static void copy_release(struct strip_copy *c)
{
	if (c->ar)
		archive_read_free(c->ar);
	if (c->aw)
		archive_write_free(c->aw);
	free(c->in.buf);
	free(c->name);
}

/* ---- steps 1, 3, 4 --------------------------------------------------- */

/* Step 3: what was written reads back as exactly what was validated. */
static bool same_index(const struct wsnap_index *a, const struct wsnap_index *b)
{
	uint32_t ino, count = wsnap_index_count(a);

	if (count != wsnap_index_count(b))
		return false;
	for (ino = WSNAP_ROOT_INO; ino <= count; ino++) {
		const struct wsnap_node *x = wsnap_index_node(a, ino);
		const struct wsnap_node *y = wsnap_index_node(b, ino);

		if (strcmp(x->path, y->path) != 0 || x->type != y->type ||
		    x->mode != y->mode || x->size != y->size ||
		    x->mtime_sec != y->mtime_sec ||
		    x->mtime_nsec != y->mtime_nsec ||
		    (x->flags & WSNAP_NODE_IMPLICIT) !=
			    (y->flags & WSNAP_NODE_IMPLICIT) ||
		    !x->target != !y->target ||
		    (x->target && strcmp(x->target, y->target) != 0))
			return false;
	}
	return true;
}

/* The policy of step 1 (and 3): the caller's limits, nothing else. */
static void strip_policy(struct wsnap_policy *p,
			 const struct wsnap_policy *caller)
{
	wsnap_policy_init(p);
	p->allow_external_symlinks = true;
	p->max_members = caller->max_members;
	p->max_total_size = caller->max_total_size;
	p->max_file_size = caller->max_file_size;
	p->max_path_length = caller->max_path_length;
	p->max_depth = caller->max_depth;
	p->max_index_size = caller->max_index_size;
}

enum wsnap_status wsnap_strip_run(int in_fd, int out_fd,
				  const struct wsnap_policy *policy,
				  const char *prefix, const char *tmpdir,
				  struct wsnap_strip_stats *stats,
				  struct wsnap_error *err)
{
	return wsnap_strip_run_with(in_fd, out_fd, policy, prefix, tmpdir, NULL,
				    NULL, stats, err);
}

enum wsnap_status wsnap_strip_run_with(int in_fd, int out_fd,
				       const struct wsnap_policy *policy,
				       const char *prefix, const char *tmpdir,
				       wsnap_strip_load_fn load, void *ctx,
				       struct wsnap_strip_stats *stats,
				       struct wsnap_error *err)
{
	struct wsnap_reader_opts ropts = {.keep_data = true, .tmpdir = tmpdir};
	struct wsnap_reader_opts vopts = {.keep_data = false, .tmpdir = tmpdir};
	struct wsnap_index *in_idx = NULL, *out_idx = NULL;
	struct wsnap_policy p1, p3, caller;
	struct wsnap_fileid id0, id1;
	struct stat st0;
	bool reread;
	int rc;
	struct wsnap_index_stats ist;
	struct strip_copy c;
	enum wsnap_status s;

	memset(&c, 0, sizeof(c));
	c.err = err;
	c.out.fd = out_fd;
	if (stats)
		memset(stats, 0, sizeof(*stats));
	strip_policy(&p1, policy);
	s = wsnap_policy_set_strip_prefix(&p1, prefix ? prefix : "", err);
	if (s != WSNAP_OK)
		goto out;
	c.prefix = p1.strip_prefix;

	/* Step 1: the input, every member, under section 8. A regular file
	 * is read again in step 2; a pipe's stream is kept (spilled). */
	reread = fstat(in_fd, &st0) == 0 && S_ISREG(st0.st_mode);
	/* read twice: the same file, unchanged, both times (fileid.h) */
	rc = reread ? wsnap_fileid_settle(in_fd, &id0) : 0;
	if (rc) {
		s = wsnap_error_io(err, -rc, NULL,
				   rc == -EBUSY ? "archive keeps changing"
						: "cannot stat archive");
		goto out;
	}
	ropts.keep_data = !reread;
	s = load ? load(ctx, in_fd, &p1, ropts.keep_data, &in_idx, err)
		 : wsnap_index_build(&in_idx, in_fd, &p1, &ropts, err);
	if (s != WSNAP_OK)
		goto out;

	/* Step 2: the copy, from the validated bytes. */
	s = copy_archive(&c, reread ? in_fd : wsnap_index_data_fd(in_idx));
	if (s != WSNAP_OK)
		goto out;
	if (reread && (wsnap_fileid_get(in_fd, &id1) != 0 ||
		       !wsnap_fileid_same(&id0, &id1))) {
		s = wsnap_error_io(err, EIO, NULL,
				   "archive changed since it was read");
		goto out;
	}
	if (fsync(out_fd) < 0 && errno != EINVAL && errno != EROFS) {
		s = wsnap_error_io(err, errno, NULL,
				   "cannot write the rewritten archive");
		goto out;
	}

	/* Step 3: the output says what the input said, under new names. */
	p3 = p1;
	p3.strip_prefix = NULL;
	s = wsnap_index_build(&out_idx, out_fd, &p3, &vopts, err);
	if (s != WSNAP_OK)
		goto out;
	if (!same_index(in_idx, out_idx)) {
		s = wsnap_error_io(
			err, EIO, NULL,
			"rewritten archive does not match its input");
		goto out;
	}
	wsnap_index_free(out_idx);
	out_idx = NULL;

	/* Step 4: the caller's policy on the result. */
	caller = *policy;
	caller.strip_prefix = NULL;
	s = wsnap_index_build(&out_idx, out_fd, &caller, &vopts, err);
	if (s != WSNAP_OK)
		goto out;
	if (stats) {
		wsnap_index_stats(in_idx, &ist);
		stats->members = c.members;
		stats->output_bytes = c.out.bytes;
		stats->stream_bytes = ist.stream_bytes;
		stats->compression = ist.compression;
	}
out:
	copy_release(&c);
	wsnap_index_free(out_idx);
	wsnap_index_free(in_idx);
	wsnap_policy_release(&p1);
	return s;
}
