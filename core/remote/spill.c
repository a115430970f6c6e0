/* SPDX-License-Identifier: MIT */
/*
 * A remote object through a pipe (remote.h, wsnap_remote_pipe_*), and the
 * stream of a compressed remote object that has no seek points: decoded
 * once, on its first read, into a spill file (wsnap_stream_spill). Until a
 * seekable stream over the source exists for its format, this is what a
 * remount from the index cache or a sidecar uses, so that it costs no more
 * than the HEAD until a member's data is read.
 */
#include "remote.h"

#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "fsutil.h"
#include "reader.h"

static void *pipe_main(void *arg)
{
	struct wsnap_remote_pipe *p = arg;

	p->rc = wsnap_remote_copy(p->src, p->fd, p->msg);
	close(p->fd);
	return NULL;
}

int wsnap_remote_pipe_start(struct wsnap_remote_pipe *p,
			    struct wsnap_source *src, int *rfd)
{
	int fds[2], e;

	memset(p, 0, sizeof(*p));
	p->src = src;
	if (pipe2(fds, O_CLOEXEC) != 0)
		return -errno;
	p->fd = fds[1];
	e = pthread_create(&p->thread, NULL, pipe_main, p);
	if (e) {
		close(fds[0]);
		close(fds[1]);
		return -e;
	}
	*rfd = fds[0];
	return 0;
}

int wsnap_remote_pipe_finish(struct wsnap_remote_pipe *p, int rfd)
{
	close(rfd);
	pthread_join(p->thread, NULL);
	return p->rc == -EPIPE ? 0 : p->rc;
}

/* ---- the spilled stream ------------------------------------------------ */

struct spill_stream {
	struct wsnap_stream base;
	struct wsnap_source *src;
	const char *compression; /* static, from the index */
	pthread_mutex_t lock;
	int fd; /* the spill file, -1 until made */
};

static enum wsnap_status ignore_member(void *ctx,
				       const struct wsnap_raw_member *m,
				       struct wsnap_error *err)
{
	(void)ctx;
	(void)m;
	(void)err;
	return WSNAP_OK;
}

/* Decodes the whole object into a spill file (lock held). */
static int spill(struct spill_stream *s)
{
	static __thread struct wsnap_error err; /* large: not on the stack */
	struct wsnap_reader_opts ro = {.keep_data = true};
	struct wsnap_reader_result res = {.data_fd = -1};
	struct wsnap_remote_pipe p;
	enum wsnap_status st;
	int rfd, rc;

	rc = wsnap_remote_pipe_start(&p, s->src, &rfd);
	if (rc)
		return rc;
	st = wsnap_reader_run(rfd, &ro, ignore_member, NULL, &res, &err);
	rc = wsnap_remote_pipe_finish(&p, rfd);
	if (st == WSNAP_OK && rc == 0 &&
	    (res.stream_bytes != s->base.size ||
	     strcmp(res.compression, s->compression) != 0))
		rc = -EIO; /* not the stream the index describes */
	if (st != WSNAP_OK && rc == 0)
		rc = -EIO;
	if (rc) {
		if (res.data_fd >= 0)
			close(res.data_fd);
		return rc;
	}
	s->fd = res.data_fd;
	return 0;
}

static ssize_t spill_pread(struct wsnap_stream *st, void *buf, size_t len,
			   uint64_t off)
{
	struct spill_stream *s = (struct spill_stream *)st;
	size_t got;
	int rc = 0, e;

	if (off >= s->base.size)
		return 0;
	if (len > s->base.size - off)
		len = (size_t)(s->base.size - off);
	pthread_mutex_lock(&s->lock);
	if (s->fd < 0)
		rc = spill(s);
	pthread_mutex_unlock(&s->lock);
	if (rc)
		return rc;
	e = wsnap_pread_full(s->fd, buf, len, off, &got);
	if (e)
		return -e;
	return got == len ? (ssize_t)got : -EIO;
}

static int spill_check(struct wsnap_stream *st)
{
	struct spill_stream *s = (struct spill_stream *)st;

	return s->src->ops->check(s->src);
}

static void spill_destroy(struct wsnap_stream *st)
{
	struct spill_stream *s = (struct spill_stream *)st;

	if (s->fd >= 0)
		close(s->fd);
	pthread_mutex_destroy(&s->lock);
	wsnap_source_free(s->src);
	free(s);
}

static const struct wsnap_stream_ops spill_ops = {
	.pread = spill_pread,
	.check = spill_check,
	.destroy = spill_destroy,
};

int wsnap_stream_spill(struct wsnap_source *src, uint64_t stream_bytes,
		       const char *compression, struct wsnap_stream **out)
{
	struct spill_stream *s = calloc(1, sizeof(*s));

	*out = NULL;
	if (!s) {
		wsnap_source_free(src);
		return -ENOMEM;
	}
	pthread_mutex_init(&s->lock, NULL);
	s->base.ops = &spill_ops;
	s->base.size = stream_bytes;
	s->src = src;
	s->compression = compression;
	s->fd = -1;
	*out = &s->base;
	return 0;
}
