/* SPDX-License-Identifier: MIT */
/*
 * The walker against libarchive (readers_diff.h). Each read records its
 * members as one byte string (rd_put), so that the comparison is one
 * memcmp and the first difference can be located. The record grows to at
 * most RD_MAX_RECORD bytes; an archive whose members need more is not
 * compared (both reads are still run, so a crash would show).
 */
#include "readers_diff.h"

#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "error.h"
#include "reader.h"
#include "seek.h"

#define RD_MAX_RECORD (256u << 20)
#define RD_PIPE_SIZE  (1u << 20)

struct rd_record {
	unsigned char *p;
	size_t len, cap;
	bool too_big;
	uint64_t members;
};

static void rd_put(struct rd_record *r, const void *p, size_t n)
{
	if (r->too_big)
		return;
	if (n > RD_MAX_RECORD - r->len) {
		r->too_big = true;
		return;
	}
	if (r->cap - r->len < n) {
		size_t cap = r->cap ? r->cap : 4096;
		unsigned char *q;

		while (cap - r->len < n)
			cap = cap > RD_MAX_RECORD / 2 ? RD_MAX_RECORD : cap * 2;
		q = realloc(r->p, cap);
		if (!q)
			abort();
		r->p = q;
		r->cap = cap;
	}
	memcpy(r->p + r->len, p, n);
	r->len += n;
}

static void rd_put_u64(struct rd_record *r, uint64_t v)
{
	rd_put(r, &v, sizeof(v));
}

static void rd_put_str(struct rd_record *r, const char *s, size_t len)
{
	rd_put_u64(r, s ? len : UINT64_MAX);
	if (s)
		rd_put(r, s, len);
}

static enum wsnap_status rd_collect(void *ctx, const struct wsnap_raw_member *m,
				    struct wsnap_error *err)
{
	struct rd_record *r = ctx;
	size_t i;

	(void)err;
	r->members++;
	rd_put_str(r, m->name, m->name_len);
	rd_put_u64(r, (uint64_t)m->type);
	rd_put_u64(r, (unsigned char)m->typeflag);
	rd_put_str(r, m->linkname, m->linkname_len);
	rd_put_u64(r, m->mode);
	rd_put_u64(r, m->size);
	rd_put_u64(r, m->data_offset);
	rd_put_u64(r, m->ext_bytes);
	rd_put_u64(r, (uint64_t)m->mtime_sec);
	rd_put_u64(r, m->mtime_nsec);
	rd_put_u64(r, m->nsparse);
	for (i = 0; i < m->nsparse; i++) {
		rd_put_u64(r, m->sparse[i].offset);
		rd_put_u64(r, m->sparse[i].length);
	}
	return WSNAP_OK;
}

static int rd_memfd(const uint8_t *data, size_t size)
{
	int fd = memfd_create("readers-diff", MFD_CLOEXEC);
	size_t done = 0;

	if (fd < 0)
		abort();
	while (done < size) {
		ssize_t n = write(fd, data + done, size - done);

		if (n <= 0)
			abort();
		done += (size_t)n;
	}
	return fd;
}

/* A pipe holding all the bytes, write end closed; -1 if they do not fit. */
static int rd_pipe(const uint8_t *data, size_t size)
{
	int fds[2];
	size_t done = 0;

	if (pipe2(fds, O_CLOEXEC) != 0)
		abort();
	if (fcntl(fds[1], F_SETPIPE_SZ, RD_PIPE_SIZE) < (int)size) {
		close(fds[0]);
		close(fds[1]);
		return -1;
	}
	while (done < size) {
		ssize_t n = write(fds[1], data + done, size - done);

		if (n <= 0)
			abort();
		done += (size_t)n;
	}
	close(fds[1]);
	return fds[0];
}

struct rd_outcome {
	enum wsnap_status st;
	struct wsnap_error err;
	struct wsnap_reader_result res;
	struct rd_record rec;
};

/* One read; false when the input cannot be made (a pipe too small). */
static bool rd_read(const uint8_t *data, size_t size,
		    enum readers_diff_input how, bool libarchive,
		    struct rd_outcome *o)
{
	struct wsnap_reader_opts opts = {
		.libarchive_only = libarchive,
		.sequential = true,
	};
	int fd = how == READERS_DIFF_PIPE ? rd_pipe(data, size)
					  : rd_memfd(data, size);

	memset(o, 0, sizeof(*o));
	if (fd < 0)
		return false;
	o->st = wsnap_reader_run(fd, &opts, rd_collect, &o->rec, &o->res,
				 &o->err);
	close(fd);
	if (o->res.data_fd >= 0)
		close(o->res.data_fd);
	/* a regular compressed file's seek points: not compared */
	wsnap_seek_table_free(o->res.seek);
	o->res.seek = NULL;
	return true;
}

/* Which member the records part at (the first byte that differs). */
static uint64_t rd_first_difference(const struct rd_record *a,
				    const struct rd_record *b)
{
	size_t n = a->len < b->len ? a->len : b->len, i;

	for (i = 0; i < n && a->p[i] == b->p[i]; i++)
		;
	return i;
}

bool readers_diff(const uint8_t *data, size_t size, enum readers_diff_input how,
		  char *why, size_t whylen)
{
	struct rd_outcome w, l;
	bool same = true;

	why[0] = '\0';
	if (!rd_read(data, size, how, false, &w))
		return true;
	rd_read(data, size, how, true, &l);
	if (w.st != l.st) {
		snprintf(why, whylen,
			 "status: walker %d '%s' '%s', libarchive %d '%s' "
			 "'%s'",
			 w.st, w.err.member, w.err.reason, l.st, l.err.member,
			 l.err.reason);
		same = false;
	} else if (w.st != WSNAP_OK &&
		   (strcmp(w.err.member, l.err.member) != 0 ||
		    strcmp(w.err.reason, l.err.reason) != 0)) {
		snprintf(why, whylen,
			 "failure: walker '%s' '%s' (%s), libarchive '%s' "
			 "'%s' (%s)",
			 w.err.member, w.err.reason, w.err.detail, l.err.member,
			 l.err.reason, l.err.detail);
		same = false;
	} else if (w.rec.too_big || l.rec.too_big) {
		/* not compared: too many members to record */
	} else if (w.rec.len != l.rec.len ||
		   (w.rec.len && memcmp(w.rec.p, l.rec.p, w.rec.len) != 0)) {
		snprintf(
			why, whylen,
			"members: walker %llu, libarchive %llu, records "
			"part at byte %llu (status %d, walker '%s', "
			"libarchive '%s')",
			(unsigned long long)w.rec.members,
			(unsigned long long)l.rec.members,
			(unsigned long long)rd_first_difference(&w.rec, &l.rec),
			w.st, w.err.detail, l.err.detail);
		same = false;
	} else if (w.st == WSNAP_OK &&
		   (strcmp(w.res.compression, l.res.compression) != 0 ||
		    w.res.stream_bytes != l.res.stream_bytes)) {
		snprintf(why, whylen,
			 "result: walker %s %llu bytes, libarchive %s %llu "
			 "bytes",
			 w.res.compression,
			 (unsigned long long)w.res.stream_bytes,
			 l.res.compression,
			 (unsigned long long)l.res.stream_bytes);
		same = false;
	}
	free(w.rec.p);
	free(l.rec.p);
	return same;
}
