/* SPDX-License-Identifier: MIT */
/*
 * The stream layer's common parts (stream.h): exact reads over any
 * implementation, the local file source and the plain stream.
 */
#include "stream.h"

#include <errno.h>
#include <limits.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "fileid.h"
#include "fsutil.h"

/* Calls pread until len bytes are read: short means the end came first. */
#define READ_EXACT(obj, buf, len, off)                                         \
	do {                                                                   \
		size_t done_ = 0;                                              \
		while (done_ < (len)) {                                        \
			ssize_t r_ = (obj)->ops->pread(                        \
				(obj), (char *)(buf) + done_, (len)-done_,     \
				(off) + done_);                                \
			if (r_ < 0)                                            \
				return (int)r_;                                \
			if (r_ == 0)                                           \
				return -EIO;                                   \
			done_ += (size_t)r_;                                   \
		}                                                              \
		return 0;                                                      \
	} while (0)

int wsnap_source_read(struct wsnap_source *src, void *buf, size_t len,
		      uint64_t off)
{
	if (off > UINT64_MAX - len)
		return -EINVAL;
	READ_EXACT(src, buf, len, off);
}

int wsnap_stream_read(struct wsnap_stream *s, void *buf, size_t len,
		      uint64_t off)
{
	if (off > UINT64_MAX - len)
		return -EINVAL;
	READ_EXACT(s, buf, len, off);
}

void wsnap_source_free(struct wsnap_source *src)
{
	if (src)
		src->ops->destroy(src);
}

void wsnap_stream_free(struct wsnap_stream *s)
{
	if (s)
		s->ops->destroy(s);
}

/* ---- the local file source ---------------------------------------------- */

struct file_source {
	struct wsnap_source base;
	int fd;
	struct wsnap_fileid id;
	char *label;
};

static int file_check(struct wsnap_source *src)
{
	struct file_source *f = (struct file_source *)src;
	struct wsnap_fileid now;

	if (wsnap_fileid_get(f->fd, &now) != 0 ||
	    !wsnap_fileid_same(&now, &f->id))
		return -EIO;
	return 0;
}

/* Checked before and after the bytes are read: what is returned is what the
 * file held as it was validated. */
static ssize_t file_pread(struct wsnap_source *src, void *buf, size_t len,
			  uint64_t off)
{
	struct file_source *f = (struct file_source *)src;
	size_t got;
	int e, rc;

	if (off >= f->base.size)
		return 0;
	if (len > f->base.size - off)
		len = (size_t)(f->base.size - off);
	if (len > SSIZE_MAX)
		len = SSIZE_MAX;
	rc = file_check(src);
	if (rc)
		return rc;
	e = wsnap_pread_full(f->fd, buf, len, off, &got);
	if (e)
		return -e;
	if (got != len)
		return -EIO; /* shorter than when it was validated */
	rc = file_check(src);
	return rc ? rc : (ssize_t)got;
}

static void file_destroy(struct wsnap_source *src)
{
	struct file_source *f = (struct file_source *)src;

	close(f->fd);
	free(f->label);
	free(f);
}

static const struct wsnap_source_ops file_ops = {
	.pread = file_pread,
	.check = file_check,
	.destroy = file_destroy,
};

int wsnap_source_file(int fd, const char *label, struct wsnap_source **out)
{
	struct file_source *f = calloc(1, sizeof(*f));
	int rc;

	*out = NULL;
	if (!f || !(f->label = strdup(label ? label : ""))) {
		free(f);
		close(fd);
		return -ENOMEM;
	}
	f->fd = fd;
	rc = wsnap_fileid_settle(fd, &f->id);
	if (rc) {
		file_destroy(&f->base);
		return rc;
	}
	f->base.ops = &file_ops;
	f->base.size = f->id.size > 0 ? (uint64_t)f->id.size : 0;
	f->base.label = f->label;
	*out = &f->base;
	return 0;
}

/* ---- the plain stream ------------------------------------------------- */

struct plain_stream {
	struct wsnap_stream base;
	struct wsnap_source *src;
};

static ssize_t plain_pread(struct wsnap_stream *s, void *buf, size_t len,
			   uint64_t off)
{
	struct plain_stream *p = (struct plain_stream *)s;

	return p->src->ops->pread(p->src, buf, len, off);
}

static int plain_check(struct wsnap_stream *s)
{
	struct plain_stream *p = (struct plain_stream *)s;

	return p->src->ops->check(p->src);
}

static void plain_set_data_check(struct wsnap_stream *s, wsnap_data_check_fn fn,
				 void *ctx)
{
	struct plain_stream *p = (struct plain_stream *)s;

	p->src->ops->set_data_check(p->src, fn, ctx);
}

static int plain_fill(struct wsnap_stream *s, size_t len, uint64_t off)
{
	struct plain_stream *p = (struct plain_stream *)s;

	return p->src->ops->fill(p->src, len, off);
}

static void plain_destroy(struct wsnap_stream *s)
{
	struct plain_stream *p = (struct plain_stream *)s;

	wsnap_source_free(p->src);
	free(p);
}

static const struct wsnap_stream_ops plain_ops = {
	.pread = plain_pread,
	.check = plain_check,
	.destroy = plain_destroy,
};

/* a plain stream over a source that keeps what it reads */
static const struct wsnap_stream_ops plain_keeping_ops = {
	.pread = plain_pread,
	.check = plain_check,
	.destroy = plain_destroy,
	.set_data_check = plain_set_data_check,
	.fill = plain_fill,
};

int wsnap_stream_plain(struct wsnap_source *src, struct wsnap_stream **out)
{
	struct plain_stream *p = calloc(1, sizeof(*p));

	*out = NULL;
	if (!p) {
		wsnap_source_free(src);
		return -ENOMEM;
	}
	p->base.ops = src->ops->set_data_check && src->ops->fill
			      ? &plain_keeping_ops
			      : &plain_ops;
	p->base.size = src->size;
	p->src = src;
	*out = &p->base;
	return 0;
}
