/* SPDX-License-Identifier: MIT */
/*
 * The detail of an invalid stream (cli.md "Diagnostics"): what was wrong
 * and where, for the '-v' line and the JSON "detail". The one-line
 * rejection ("<tar>": "invalid tar stream") never changes; only
 * err->detail is set here.
 *
 * Two sources:
 *  - the sites that detect a problem say what they saw
 *    (wsnap_reader_invalid), a decoder its own failure;
 *  - a failure of libarchive's tar parser is explained by the header due
 *    next (wsnap_reader_fail): past the end of the stream (truncated), a
 *    checksum that does not match, else libarchive's own message;
 *  - when not even one member was read, the first bytes say what the
 *    input is instead (wsnap_reader_explain): empty, a zip, 7z or rar
 *    file, plain text, a compression wsnap does not read (compress .Z,
 *    lzip, lzma), or compressed data that is no tar stream.
 *
 * Invariants: nothing here allocates or prints; a detail never replaces
 * an I/O error or a policy rejection.
 */
#include "tar_private.h"

#include "archive_dl.h"
#include <errno.h>
#include <stdarg.h>
#include <string.h>
#include <unistd.h>

enum wsnap_status wsnap_reader_invalid(struct wsnap_reader *r, const char *fmt,
				       ...)
{
	va_list ap;

	wsnap_error_stream(r->err);
	va_start(ap, fmt);
	wsnap_error_vdetail(r->err, fmt, ap);
	va_end(ap);
	return WSNAP_REJECTED;
}

void wsnap_reader_keep_head(unsigned char *dst, size_t *dst_len,
			    const unsigned char *p, size_t n)
{
	size_t room = WSNAP_TAR_BLOCK - *dst_len;

	if (n > room)
		n = room;
	if (n)
		memcpy(dst + *dst_len, p, n);
	*dst_len += n;
}

void wsnap_reader_keep_name(struct wsnap_reader *r, const char *name,
			    size_t len)
{
	if (len >= sizeof(r->last_name))
		len = sizeof(r->last_name) - 1;
	memcpy(r->last_name, name, len);
	r->last_name[len] = '\0';
}

/* Whether the header block h has a valid checksum (unsigned sum, as POSIX;
 * the signed sum some old writers used is accepted too). */
static bool rd_checksum_ok(const unsigned char *h)
{
	const size_t off = WSNAP_TAR_OFF(chksum), len = WSNAP_TAR_LEN(chksum);
	unsigned long want = 0, usum = 0;
	long ssum = 0;
	size_t i = off;

	while (i < off + len && h[i] == ' ')
		i++;
	for (; i < off + len && h[i] >= '0' && h[i] <= '7'; i++)
		want = want * 8 + (unsigned long)(h[i] - '0');
	for (i = 0; i < WSNAP_TAR_BLOCK; i++) {
		unsigned char c = i >= off && i < off + len ? ' ' : h[i];

		usum += c;
		ssum += (signed char)c;
	}
	return want == usum || (long)want == ssum;
}

/* The block of the decoded stream at pos into out, if at hand. */
static bool rd_block_at(struct wsnap_reader *r, uint64_t pos,
			unsigned char *out)
{
	ssize_t n;

	if (pos >= r->win_off && r->win_len >= WSNAP_TAR_BLOCK &&
	    pos - r->win_off <= r->win_len - WSNAP_TAR_BLOCK) {
		memcpy(out, r->win + (pos - r->win_off), WSNAP_TAR_BLOCK);
		return true;
	}
	if (!r->direct) {
		/* the walker reads headers in place in the decoded bytes
		 * not yet taken, which start at stream_bytes - pend_len */
		uint64_t off = r->stream_bytes - r->pend_len;

		if (pos < off || r->pend_len < WSNAP_TAR_BLOCK ||
		    pos - off > r->pend_len - WSNAP_TAR_BLOCK)
			return false;
		memcpy(out, r->pend + (pos - off), WSNAP_TAR_BLOCK);
		return true;
	}
	do
		n = pread(r->fd, out, WSNAP_TAR_BLOCK, (off_t)pos);
	while (n < 0 && errno == EINTR);
	return n == WSNAP_TAR_BLOCK;
}

enum wsnap_status wsnap_reader_fail(struct wsnap_reader *r, struct archive *a)
{
	return wsnap_reader_fail_msg(r, a ? archive_error_string(a) : NULL);
}

enum wsnap_status wsnap_reader_fail_msg(struct wsnap_reader *r, const char *msg)
{
	unsigned char h[WSNAP_TAR_BLOCK];
	uint64_t pos = r->next_hdr;
	bool ended = r->direct || r->dec.eof;
	uint64_t end = r->direct ? r->size : r->stream_bytes;

	if (r->io_failed)
		return WSNAP_IO;
	if (r->err->status == WSNAP_REJECTED)
		return WSNAP_REJECTED; /* a decoder said why */
	if (ended && end < pos + WSNAP_TAR_BLOCK) {
		if (r->members && pos > end)
			return wsnap_reader_invalid(
				r,
				"truncated tar stream at byte %llu: the data "
				"of member '%s' ends at byte %llu",
				(unsigned long long)end, r->last_name,
				(unsigned long long)pos);
		return wsnap_reader_invalid(
			r,
			"truncated tar stream at byte %llu: a header is due "
			"at byte %llu",
			(unsigned long long)end, (unsigned long long)pos);
	}
	if (rd_block_at(r, pos, h) && !wsnap_tar_all_zero(h, sizeof(h)) &&
	    !rd_checksum_ok(h))
		return wsnap_reader_invalid(
			r,
			"header checksum mismatch in the header at byte %llu",
			(unsigned long long)pos);
	return wsnap_reader_invalid(r, "tar parser: %s (header at byte %llu)",
				    msg ? msg : "unreadable header",
				    (unsigned long long)pos);
}

/* What the n bytes at p start look like, when it is no tar: NULL if
 * nothing is recognised. */
static const char *rd_looks_like(const unsigned char *p, size_t n)
{
	static const unsigned char sz[] = {'7', 'z', 0xbc, 0xaf, 0x27, 0x1c};
	size_t i;

	if (n == 0)
		return "empty";
	if (n >= 4 && p[0] == 'P' && p[1] == 'K' &&
	    ((p[2] == 3 && p[3] == 4) || (p[2] == 5 && p[3] == 6) ||
	     (p[2] == 7 && p[3] == 8)))
		return "zip file";
	if (n >= sizeof(sz) && memcmp(p, sz, sizeof(sz)) == 0)
		return "7z file";
	if (n >= 6 && memcmp(p, "Rar!\x1a\x07", 6) == 0)
		return "rar file";
	if (n >= 6 &&
	    (memcmp(p, "07070", 5) == 0 || (p[0] == 0xc7 && p[1] == 0x71)))
		return "cpio archive";
	for (i = 0; i < n; i++)
		if (p[i] == 0 ||
		    (p[i] < 0x20 && !strchr("\t\n\v\f\r\x1b", p[i])))
			return NULL;
	return "plain text";
}

/* A compression wsnap does not read, by the magic at p. */
static const char *rd_unsupported(const unsigned char *p, size_t n)
{
	if (n >= 2 && p[0] == 0x1f && p[1] == 0x9d)
		return "compress (.Z)";
	if (n >= 4 && memcmp(p, "LZIP", 4) == 0)
		return "lzip";
	/* .lzma: the properties byte lc=3 lp=0 pb=2 of every encoder's
	 * default, then a dictionary size of at least 64 KiB */
	if (n >= 13 && p[0] == 0x5d && p[1] == 0 && p[2] == 0)
		return "lzma";
	return NULL;
}

void wsnap_reader_explain(struct wsnap_reader *r, enum wsnap_status st,
			  const char *compression)
{
	struct wsnap_error *err = r->err;
	const char *what;

	if (st != WSNAP_REJECTED || r->members ||
	    strcmp(err->member, WSNAP_TAR_MEMBER) != 0 ||
	    strcmp(err->reason, WSNAP_REASON_INVALID_STREAM) != 0)
		return;
	what = rd_unsupported(r->head, r->head_len);
	if (what) {
		wsnap_error_detail(err, "unsupported compression: %s", what);
		return;
	}
	if (!compression || strcmp(compression, "none") == 0) {
		what = rd_looks_like(r->head, r->head_len);
		if (what)
			wsnap_error_detail(err, "not an archive: %s%s", what,
					   r->head_len	? ""
					   : r->regular ? " file"
							: " input");
		return;
	}
	if (r->dec.said)
		return; /* the decoder failed, and said why */
	what = rd_looks_like(r->dhead, r->dhead_len);
	if (!what && r->dhead_len >= WSNAP_TAR_OFF(magic) + 5 &&
	    memcmp(r->dhead + WSNAP_TAR_OFF(magic), "ustar", 5) == 0)
		return; /* a tar stream, with its own detail */
	wsnap_error_detail(err,
			   "%s-compressed data that is not a tar archive%s%s%s",
			   compression, what ? " (" : "", what ? what : "",
			   what ? ")" : "");
}
