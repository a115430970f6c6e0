/* SPDX-License-Identifier: MIT */
/*
 * The tar reader (reader.h): our own walk of plain header blocks
 * (walker.c), and libarchive's tar parser for every other member, fed
 * through our own read callbacks so that the raw header bytes of every
 * member can be seen. This file drives one read: it opens the input, lets
 * input.c choose the layout, has walker.c and then, from the first member
 * the walker hands over, member.c read the members, and input.c drain the
 * rest, and hands back the result. Where the rest is:
 *  - input.c: the direct and piped layouts, the window over the stream,
 *    libarchive's read callbacks, the spill file, the bound on what
 *    follows the end-of-archive marker;
 *  - decode.c: the decompressors (liblzma for xz, libarchive for the
 *    rest) and the checks of a compressed stream's end (gzip CRC-32 and
 *    length, zero padding only);
 *  - header.c: the walk of each member's raw header region;
 *  - walker.c: the members libarchive would read as plain ones, and the
 *    hand-over of the rest to libarchive;
 *  - member.c: the struct wsnap_raw_member of each libarchive entry;
 *  - tar_private.h: the state of one read, which they share.
 *
 * Invariants:
 *  - the read runs in the "C" locale (uselocale, this thread only), so that
 *    libarchive never converts names: they come out as their raw bytes. The
 *    only libarchive warning accepted (member.c) is the "can't be
 *    converted" one that this produces for non-ASCII pax names;
 *  - on any error no descriptor is handed back: a spill file or a dup of
 *    the input made for the result is closed;
 *  - a stream that decodes to nothing (zero bytes, or an empty compressed
 *    stream) is an invalid stream.
 */
#include "tar_private.h"

#include <archive.h>
#include <errno.h>
#include <fcntl.h>
#include <locale.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "seek.h"

/* Whether the walker reads the plain members: unless libarchive is to
 * read them all (reader.h, libarchive_only). */
static bool rd_use_walker(const struct wsnap_reader_opts *opts)
{
	const char *env = getenv("WSNAP_READER");

	return !opts->libarchive_only &&
	       !(env && strcmp(env, "libarchive") == 0);
}

static enum wsnap_status rd_run(struct wsnap_reader *r, wsnap_reader_fn fn,
				void *ctx, struct wsnap_reader_result *res)
{
	const char *compression = NULL;
	struct archive *inner = NULL;
	enum wsnap_status st;
	struct stat sb;
	la_int64_t tar_end = -1;

	if (fstat(r->fd, &sb) != 0)
		return wsnap_reader_io(r, errno, "cannot stat archive");
	r->regular = S_ISREG(sb.st_mode);
	r->size = r->regular && sb.st_size > 0 ? (uint64_t)sb.st_size : 0;
	if (r->regular && r->size == 0)
		return wsnap_error_stream(r->err); /* zero bytes: explained */

	st = wsnap_decoder_open(r, &compression);
	if (st != WSNAP_OK)
		return st;
	res->compression = compression;
	st = wsnap_reader_layout(r, compression);
	if (st != WSNAP_OK)
		return st;

	if (rd_use_walker(r->opts)) {
		uint64_t pos = 0;

		/* the walker, libarchive for what it hands over, the walker
		 * again from where libarchive hands the stream back */
		for (;;) {
			st = wsnap_walker_run(r, fn, ctx, &pos);
			if (st != WSNAP_OK)
				return st;
			if (!r->handed) {
				tar_end = (la_int64_t)pos;
				goto drain;
			}
			st = wsnap_reader_inner_open(r, &inner);
			if (st == WSNAP_OK)
				st = wsnap_reader_members(r, inner, fn, ctx);
			if (st != WSNAP_OK || !r->back)
				break;
			archive_read_free(inner);
			inner = NULL;
			pos = r->back_at;
		}
	} else {
		st = wsnap_reader_inner_open(r, &inner);
		if (st == WSNAP_OK)
			st = wsnap_reader_members(r, inner, fn, ctx);
	}
	/* where the end-of-archive marker ends: what libarchive consumed */
	if (st == WSNAP_OK)
		tar_end = archive_filter_bytes(inner, 0);
	if (st == WSNAP_OK && tar_end >= 0)
		tar_end += r->la_shift;
	if (inner)
		archive_read_free(inner);
	if (st != WSNAP_OK)
		return st;
	if (tar_end < 0)
		return wsnap_reader_invalid(r, "tar stream of unknown length");
drain:
	st = wsnap_reader_drain(r, (uint64_t)tar_end);
	if (st != WSNAP_OK)
		return st;
	if (!r->direct && r->stream_bytes == 0)
		return wsnap_reader_invalid(r,
					    "%s stream that decodes to "
					    "nothing",
					    compression);
	res->stream_bytes = r->direct ? r->size : r->stream_bytes;
	res->input_bytes = r->input_bytes;
	/* gzip's points, or the spans of xz and zstd as a seek table */
	res->seek = wsnap_decoder_take_seek(r);
	res->zstd_table = r->zstd_table;
	/* restart points of a regular xz or zstd file (decode_zstd.c,
	 * decode_xzidx.c), handed over when they are sound */
	if (r->opts->want_spans && r->regular && !r->spans_lost && r->spans.n &&
	    wsnap_spans_valid(r->spans.v, r->spans.n, r->size,
			      r->stream_bytes)) {
		res->spans = r->spans.v;
		res->nspans = r->spans.n;
		res->pieces = r->spans.pieces;
		res->seekable = wsnap_spans_seekable(&r->spans);
		r->spans.v = NULL;
		r->spans.n = 0;
	}
	if (r->opts->keep_data) {
		if (r->direct || (r->seekable && res->seek)) {
			res->data_fd = fcntl(r->fd, F_DUPFD_CLOEXEC, 0);
			if (res->data_fd < 0)
				return wsnap_reader_io(r, errno,
						       "cannot dup archive");
		} else if (!r->seekable) {
			res->data_fd = r->spill_fd;
			res->spilled = true;
			r->spill_fd = -1;
		}
	}
	if (r->opts->progress)
		r->opts->progress(r->opts->progress_ctx,
				  r->direct ? r->size : r->in_pos,
				  r->regular ? r->size : 0);
	return WSNAP_OK;
}

enum wsnap_status wsnap_reader_run(int fd, const struct wsnap_reader_opts *opts,
				   wsnap_reader_fn fn, void *ctx,
				   struct wsnap_reader_result *result,
				   struct wsnap_error *err)
{
	static const struct wsnap_reader_opts defaults;
	struct wsnap_reader_result res = {.data_fd = -1, .compression = "none"};
	struct wsnap_reader r;
	enum wsnap_status st;
	locale_t c_locale, old;

	memset(&r, 0, sizeof(r));
	r.fd = fd;
	r.opts = opts ? opts : &defaults;
	r.err = err;
	r.spill_fd = -1;
	r.ocur = 1;
	wsnap_error_clear(err);

	/* names must reach us as raw bytes: no locale conversion */
	c_locale = newlocale(LC_ALL_MASK, "C", (locale_t)0);
	if (c_locale == (locale_t)0)
		return wsnap_error_io(err, errno, NULL, "cannot set locale");
	old = uselocale(c_locale);

	st = rd_run(&r, fn, ctx, &res);
	wsnap_reader_explain(&r, st, res.compression);

	wsnap_reader_input_release(&r);
	free(r.runs);
	uselocale(old);
	freelocale(c_locale);
	if (st != WSNAP_OK && res.data_fd >= 0) {
		close(res.data_fd);
		res.data_fd = -1;
	}
	if (st != WSNAP_OK || !result) {
		free(res.spans);
		res.spans = NULL;
		res.nspans = 0;
		res.seekable = false;
	}
	if (st != WSNAP_OK) {
		wsnap_seek_table_free(res.seek);
		res.seek = NULL;
	}
	if (result) {
		*result = res;
	} else {
		if (res.data_fd >= 0)
			close(res.data_fd);
		wsnap_seek_table_free(res.seek);
	}
	return st;
}
