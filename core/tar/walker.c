/* SPDX-License-Identifier: MIT */
/*
 * The walker: the tar reader's own pass over the header blocks of the
 * (decoded) stream, so that a plain member costs one look at its 512-byte
 * header and nothing else: no libarchive entry, no wide-string conversion
 * of its name, no second parse. It reads the members libarchive would
 * read as plain ones exactly as member.c reads them from libarchive's
 * entry (the same struct wsnap_raw_member, the same checks, in the same
 * order, through wsnap_reader_check_member), and hands everything else
 * over to libarchive at the header where it starts.
 *
 * A plain member, as libarchive 3.6.2 reads it (archive_read_support_
 * format_tar.c, tar_read_header and header_ustar / header_gnutar /
 * header_old_tar / header_common):
 *  - a header block with a checksum libarchive takes (its own test:
 *    digits, blanks and NULs only, the unsigned or the signed sum);
 *  - typeflag '0', '7', NUL, '1' (with a size field of 0: libarchive's
 *    guess whether a hardlink's size counts depends on the archive
 *    format seen so far and on the block itself), '2', '3', '4', '5',
 *    '6';
 *  - size, mode and mtime in octal (a base-256 field goes to
 *    libarchive), a name that is not empty, and under the GNU magic no
 *    realsize and no sparse entry (header_gnutar reads them whatever the
 *    typeflag);
 *  - the name: under the GNU magic and in an old header the name field,
 *    under any other "ustar" magic the prefix field (if not empty), a
 *    '/' unless it ends in one, and the name field; the link target the
 *    linkname field, each up to its first NUL;
 *  - the size libarchive reports: the size field for '0', '7' and NUL,
 *    0 for the others; its data: the same, but none for a NUL member
 *    whose name ends in '/' (libarchive's directory), which header.c
 *    refuses to carry any (rd_data_agree), so tarfile's data_end and
 *    libarchive's position after the data always agree here;
 *  - an all-zero block ends the archive (a second one is consumed if it
 *    follows), and so does the end of the stream at a header boundary,
 *    as libarchive has it ("some writers do omit the block of nulls");
 *  - the first block of the stream is bid on as libarchive's
 *    archive_read_open does: an all-zero block, or a valid checksum, a
 *    typeflag NUL, digit or letter and number fields libarchive's
 *    validate_number_field takes; anything else is no tar stream.
 * A plain member has no extension headers, so header.c walks a region of
 * one block; the global pax attributes are those seen so far (none: the
 * first 'g' header is handed over).
 *
 * The hand-over. libarchive cannot start in the middle of a stream: its
 * bid looks at the first block, with stricter rules than its header
 * reader. So libarchive is given our dummy header (a ustar directory
 * "./", read and dropped by member.c) and then the stream from the header
 * the walker stopped at; its offsets are ours minus la_shift. libarchive
 * reads members until the header after one it read is a plain one and in
 * the window (wsnap_walker_can_resume): then a fresh walk goes on from
 * there and libarchive's reader is closed. The only state libarchive
 * carries from member to member that matters here is whether it has seen
 * a pax header (its archive format, for that hardlink guess): the walker
 * keeps it (la_pax: set when libarchive hands back in that state, cleared
 * by a GNU or v7 header as libarchive's own is, kept by a ustar one) and
 * the next dummy starts with an empty 'g' header when it is set, so that
 * libarchive is in the same state again. (The AppleDouble "._" handling
 * of libarchive's tar reader is compiled in on macOS only.)
 *
 * Invariants:
 *  - the walker only moves forward; the window holds stream bytes
 *    [win_off, win_off + win_len), at most WK_CHUNK + one block;
 *  - direct layout: in_pos == win_off + win_len (data beyond the window
 *    is skipped by moving both, never read); piped layout: the window
 *    holds bytes taken from the decoder, pend the rest from the window's
 *    end on (a header lying whole in pend is read there, not copied),
 *    and every byte taken from the decoder is spilled (keep_data) in
 *    order;
 *  - an error is recorded once (I/O) or as an invalid stream, with the
 *    detail libarchive's failure would have given.
 */
#include "tar_private.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

/* Bytes per read of a plain file, and decoded bytes taken at once. */
#define WK_CHUNK (1u << 20)

/* The name of a ustar member: prefix, '/', name, NUL. */
#define WK_NAME_MAX (WSNAP_TAR_LEN(prefix) + 1 + WSNAP_TAR_LEN(name) + 1)

/* libarchive's messages for what the walker refuses as it would. */
#define WK_NOT_TAR   "Unrecognized archive format"
#define WK_TRUNCATED "Truncated tar archive"

/* Writes one octal field of n bytes: n - 1 digits and a NUL. */
static void wk_put_octal(unsigned char *f, size_t n, unsigned v)
{
	size_t i;

	for (i = n - 1; i-- > 0; v >>= 3)
		f[i] = (unsigned char)('0' + (v & 7));
	f[n - 1] = '\0';
}

/* A ustar header block of size 0 named name, typeflag tf. */
static void wk_dummy_block(unsigned char *b, const char *name, char tf)
{
	unsigned sum = 0;
	size_t i;

	memset(b, 0, WSNAP_TAR_BLOCK);
	memcpy(b + WSNAP_TAR_OFF(name), name, strlen(name));
	wk_put_octal(b + WSNAP_TAR_OFF(mode), WSNAP_TAR_LEN(mode), 0755);
	wk_put_octal(b + WSNAP_TAR_OFF(uid), WSNAP_TAR_LEN(uid), 0);
	wk_put_octal(b + WSNAP_TAR_OFF(gid), WSNAP_TAR_LEN(gid), 0);
	wk_put_octal(b + WSNAP_TAR_OFF(size), WSNAP_TAR_LEN(size), 0);
	wk_put_octal(b + WSNAP_TAR_OFF(mtime), WSNAP_TAR_LEN(mtime), 0);
	b[WSNAP_TAR_OFF(typeflag)] = tf;
	memcpy(b + WSNAP_TAR_OFF(magic), WSNAP_TAR_POSIX_MAGIC,
	       WSNAP_TAR_MAGIC_LEN);
	wk_put_octal(b + WSNAP_TAR_OFF(devmajor), WSNAP_TAR_LEN(devmajor), 0);
	wk_put_octal(b + WSNAP_TAR_OFF(devminor), WSNAP_TAR_LEN(devminor), 0);
	memset(b + WSNAP_TAR_OFF(chksum), ' ', WSNAP_TAR_LEN(chksum));
	for (i = 0; i < WSNAP_TAR_BLOCK; i++)
		sum += b[i];
	wk_put_octal(b + WSNAP_TAR_OFF(chksum), WSNAP_TAR_LEN(chksum), sum);
}

void wsnap_walker_dummy(struct wsnap_reader *r)
{
	r->dummy_len = 0;
	if (r->la_pax) {
		wk_dummy_block(r->dummy, "g", WSNAP_TAR_PAX_GLOBAL);
		r->dummy_len = WSNAP_TAR_BLOCK;
	}
	wk_dummy_block(r->dummy + r->dummy_len, "./", WSNAP_TAR_DIR);
	r->dummy_len += WSNAP_TAR_BLOCK;
}

/* ---- the stream --------------------------------------------------------- */

/* Whether the decoded stream has ended at the window's end. */
static bool wk_ended(const struct wsnap_reader *r)
{
	if (r->direct)
		return r->win_off + r->win_len >= r->size;
	return r->dec.eof && r->pend_len == 0;
}

/* Piped layout: takes up to max decoded bytes into the window (append)
 * or past it (discard, for skipped data). Returns the bytes taken, 0 at
 * the end of the stream, -1 on an error (recorded). */
static ssize_t wk_take(struct wsnap_reader *r, size_t max, bool append)
{
	size_t n;

	if (!r->pend_len && !wsnap_decoder_next(r))
		return -1;
	n = r->pend_len < max ? r->pend_len : max;
	if (!n)
		return 0;
	if (append)
		memcpy(r->win + r->win_len, r->pend, n);
	if (!wsnap_reader_spill(r, r->pend, n))
		return -1;
	r->pend += n;
	r->pend_len -= n;
	return (ssize_t)n;
}

/* Makes room for WK_CHUNK + a block in the window. */
static bool wk_window_alloc(struct wsnap_reader *r)
{
	unsigned char *w;

	if (r->win_cap >= WK_CHUNK + WSNAP_TAR_BLOCK)
		return true;
	w = realloc(r->win, WK_CHUNK + WSNAP_TAR_BLOCK);
	if (!w) {
		wsnap_reader_io(r, ENOMEM, "out of memory");
		return false;
	}
	r->win = w;
	r->win_cap = WK_CHUNK + WSNAP_TAR_BLOCK;
	return true;
}

/* Piped layout: appends decoded bytes to the window until it holds n
 * (or the stream ends). Returns false on an error (recorded). */
static bool wk_append(struct wsnap_reader *r, size_t n)
{
	while (r->win_len < n) {
		ssize_t k = wk_take(r, n - r->win_len, true);

		if (k < 0)
			return false;
		if (k == 0)
			break;
		r->win_len += (size_t)k;
	}
	return true;
}

/*
 * Piped layout (see wk_fill). The window holds decoded bytes already
 * taken from the decoder (and spilled), and pend the rest from the
 * window's end on. A block that lies whole in pend is read in place,
 * not copied: only a block that straddles two decoded chunks is put
 * together in the window. Data is passed over in pend.
 */
static ssize_t wk_fill_piped(struct wsnap_reader *r, uint64_t pos, size_t n,
			     bool *past, const unsigned char **at)
{
	uint64_t end = r->win_off + r->win_len;

	if (r->win_len && pos >= r->win_off && pos < end) {
		size_t drop = (size_t)(pos - r->win_off);

		if (pos + n > end) {
			/* straddles the window and pend */
			if (drop)
				memmove(r->win, r->win + drop,
					r->win_len - drop);
			r->win_len -= drop;
			r->win_off = pos;
			if (!wk_append(r, n))
				return -1;
			drop = 0;
		}
		*at = r->win + drop;
		return (ssize_t)(r->win_len - drop < n ? r->win_len - drop : n);
	}
	/* beyond the window: pass over pend up to pos */
	end = r->stream_bytes - r->pend_len;
	r->win_len = 0;
	while (end < pos) {
		uint64_t gap = pos - end;
		ssize_t k;

		if (wsnap_reader_cancelled(r))
			return -1;
		k = wk_take(r, gap < WK_CHUNK ? (size_t)gap : WK_CHUNK, false);
		if (k < 0)
			return -1;
		if (k == 0)
			break;
		end += (uint64_t)k;
	}
	r->win_off = end;
	if (end < pos) {
		*past = true;
		return 0;
	}
	if (!r->pend_len && !wsnap_decoder_next(r))
		return -1;
	if (r->pend_len >= n) {
		*at = r->pend;
		return (ssize_t)n;
	}
	if (!wk_window_alloc(r) || !wk_append(r, n))
		return -1;
	*at = r->win;
	return (ssize_t)(r->win_len < n ? r->win_len : n);
}

/*
 * Makes the n bytes (n <= WSNAP_TAR_BLOCK) of the stream at pos (at or
 * after win_off) readable at *at, as far as the stream has them: in the
 * window (a plain file: read in chunks, data beyond them skipped without
 * a read), or in place in the decoder's output (wk_fill_piped). Returns
 * how many it has, or -1 on an error (recorded); *past is set when the
 * stream ended before pos.
 */
static ssize_t wk_fill(struct wsnap_reader *r, uint64_t pos, size_t n,
		       bool *past, const unsigned char **at)
{
	uint64_t end = r->win_off + r->win_len;

	*past = false;
	if (!r->direct)
		return wk_fill_piped(r, pos, n, past, at);
	if (pos + n <= end) {
		*at = r->win + (pos - r->win_off);
		return (ssize_t)n;
	}
	if (pos <= end) {
		size_t drop = (size_t)(pos - r->win_off);

		if (drop)
			memmove(r->win, r->win + drop, r->win_len - drop);
		r->win_len -= drop;
		r->win_off = pos;
	} else {
		/* skip the data between: no read at all */
		r->win_off = pos;
		r->win_len = 0;
		r->in_pos = pos;
		wsnap_reader_progress(r, pos < r->size ? pos : r->size);
	}
	if (pos > r->size) {
		*past = true;
		return 0;
	}
	if (!wk_window_alloc(r))
		return -1;
	while (r->win_len < n && !wk_ended(r)) {
		ssize_t k;

		if (wsnap_reader_cancelled(r))
			return -1;
		k = wsnap_reader_input_read(r, r->win + r->win_len,
					    r->win_cap - r->win_len);
		if (k < 0)
			return -1;
		if (k == 0)
			break;
		r->win_len += (size_t)k;
	}
	*at = r->win;
	return (ssize_t)(r->win_len < n ? r->win_len : n);
}

/* ---- libarchive's view of a header block -------------------------------- */

/* libarchive's tar_atol8 of a field the walker has let through (blanks,
 * octal digits, then blanks or NULs: header.c's rd_tar_field_ok). */
static uint64_t wk_octal(const unsigned char *f, size_t n)
{
	uint64_t v = 0;
	size_t i = 0;

	while (i < n && (f[i] == ' ' || f[i] == '\t'))
		i++;
	for (; i < n && f[i] >= '0' && f[i] <= '7'; i++)
		v = v * 8 + (uint64_t)(f[i] - '0'); /* 12 digits fit */
	return v;
}

/* libarchive's checksum(): the field holds only blanks, NULs and octal
 * digits, and matches the unsigned or the signed sum. */
static bool wk_checksum(const unsigned char *h)
{
	const size_t off = WSNAP_TAR_OFF(chksum), len = WSNAP_TAR_LEN(chksum);
	uint64_t lanes = 0;
	unsigned usum;
	int ssum = 0, want;
	size_t i;

	for (i = off; i < off + len; i++)
		if (h[i] != ' ' && h[i] != '\0' && (h[i] < '0' || h[i] > '7'))
			return false;
	want = (int)wk_octal(h + off, len);
	/* the whole block, eight bytes a step in four 16-bit lanes (64
	 * steps of at most 2 * 255 each fit), then the field counted as
	 * blanks */
	for (i = 0; i < WSNAP_TAR_BLOCK; i += 8) {
		uint64_t w;

		memcpy(&w, h + i, sizeof(w));
		lanes += (w & 0x00ff00ff00ff00ffu) +
			 ((w >> 8) & 0x00ff00ff00ff00ffu);
	}
	usum = (unsigned)((lanes & 0xffff) + ((lanes >> 16) & 0xffff) +
			  ((lanes >> 32) & 0xffff) + (lanes >> 48));
	for (i = off; i < off + len; i++)
		usum += (unsigned)' ' - h[i];
	if ((unsigned)want == usum)
		return true;
	for (i = 0; i < WSNAP_TAR_BLOCK; i++)
		ssum += (signed char)h[i];
	for (i = off; i < off + len; i++)
		ssum += ' ' - (signed char)h[i];
	return want == ssum;
}

/* libarchive's validate_number_field (its bid only). */
static bool wk_bid_field(const unsigned char *f, size_t n)
{
	size_t i = 0;

	if (f[0] == 0x80 || f[0] == 0xff || f[0] == 0)
		return true;
	while (i < n && f[i] == ' ')
		i++;
	while (i < n && f[i] >= '0' && f[i] <= '7')
		i++;
	for (; i < n; i++)
		if (f[i] != ' ' && f[i] != '\0')
			return false;
	return true;
}

/* libarchive's bid on the first block of the stream (not all zero). */
static bool wk_bid(const unsigned char *h)
{
	static const unsigned short fields[][2] = {
		{WSNAP_TAR_OFF(mode), WSNAP_TAR_LEN(mode)},
		{WSNAP_TAR_OFF(uid), WSNAP_TAR_LEN(uid)},
		{WSNAP_TAR_OFF(gid), WSNAP_TAR_LEN(gid)},
		{WSNAP_TAR_OFF(mtime), WSNAP_TAR_LEN(mtime)},
		{WSNAP_TAR_OFF(size), WSNAP_TAR_LEN(size)},
		{WSNAP_TAR_OFF(devmajor), WSNAP_TAR_LEN(devmajor)},
		{WSNAP_TAR_OFF(devminor), WSNAP_TAR_LEN(devminor)},
	};
	unsigned char tf = h[WSNAP_TAR_OFF(typeflag)];
	size_t i;

	if (!wk_checksum(h))
		return false;
	if (tf != 0 && !(tf >= '0' && tf <= '9') && !(tf >= 'A' && tf <= 'Z') &&
	    !(tf >= 'a' && tf <= 'z'))
		return false;
	for (i = 0; i < sizeof(fields) / sizeof(fields[0]); i++)
		if (!wk_bid_field(h + fields[i][0], fields[i][1]))
			return false;
	return true;
}

/* A member libarchive would read as a plain one (see the top). */
struct wk_plain {
	char name[WK_NAME_MAX];
	char link[WSNAP_TAR_LEN(linkname) + 1];
	bool is_link;
};

static size_t wk_field(char *dst, const unsigned char *f, size_t n)
{
	size_t len = strnlen((const char *)f, n);

	memcpy(dst, f, len);
	dst[len] = '\0';
	return len;
}

static bool wk_is_plain(const unsigned char *h, struct wk_plain *p)
{
	unsigned char tf = h[WSNAP_TAR_OFF(typeflag)];
	bool gnu = memcmp(h + WSNAP_TAR_OFF(magic), WSNAP_TAR_GNU_MAGIC,
			  WSNAP_TAR_MAGIC_LEN) == 0;
	bool ustar = !gnu && memcmp(h + WSNAP_TAR_OFF(magic), "ustar", 5) == 0;
	size_t len = 0;

	if ((tf != '\0' && (tf < '0' || tf > '7')) || !wk_checksum(h))
		return false;
	if ((h[WSNAP_TAR_OFF(size)] | h[WSNAP_TAR_OFF(mode)] |
	     h[WSNAP_TAR_OFF(mtime)]) &
	    0x80)
		return false; /* base-256 */
	if (tf == WSNAP_TAR_LNK &&
	    wk_octal(h + WSNAP_TAR_OFF(size), WSNAP_TAR_LEN(size)))
		return false;
	if (gnu &&
	    (h[WSNAP_TAR_OFF(gnu.realsize)] || h[WSNAP_TAR_OFF(gnu.sparse)]))
		return false;
	if (ustar && h[WSNAP_TAR_OFF(prefix)]) {
		len = wk_field(p->name, h + WSNAP_TAR_OFF(prefix),
			       WSNAP_TAR_LEN(prefix));
		if (p->name[len - 1] != '/')
			p->name[len++] = '/';
	}
	len += wk_field(p->name + len, h + WSNAP_TAR_OFF(name),
			WSNAP_TAR_LEN(name));
	if (len == 0)
		return false;
	p->is_link = tf == WSNAP_TAR_LNK || tf == WSNAP_TAR_SYM;
	if (p->is_link)
		wk_field(p->link, h + WSNAP_TAR_OFF(linkname),
			 WSNAP_TAR_LEN(linkname));
	return true;
}

/* ---- the walk ----------------------------------------------------------- */

/* Hands the rest over to libarchive at the header at pos (see the top). */
static enum wsnap_status wk_hand_over(struct wsnap_reader *r, uint64_t pos)
{
	/* wk_fill left the block at pos in the window, or (piped) in pend
	 * with the window empty at pos: libarchive gets the window from
	 * there on as its first client buffer after the dummy (moving it to
	 * the front would copy up to WK_CHUNK a hand-over), then pend */
	r->replay = (size_t)(r->win_off + r->win_len - pos);
	r->handed = true;
	r->la_dummy = true;
	wsnap_walker_dummy(r);
	r->la_shift = (int64_t)pos - (int64_t)r->dummy_len;
	return WSNAP_OK;
}

/* The member whose plain header h is at pos: built and handed to fn. */
static enum wsnap_status wk_member(struct wsnap_reader *r,
				   const unsigned char *h, uint64_t pos,
				   struct wk_plain *p, wsnap_reader_fn fn,
				   void *ctx, uint64_t *data_end)
{
	struct wsnap_raw_member m;
	struct wsnap_tar_scan s;
	enum wsnap_status st;
	int64_t esize = 0;
	bool have_mtime;
	char tf = (char)h[WSNAP_TAR_OFF(typeflag)];

	if (!wsnap_tar_scan_region(h, WSNAP_TAR_BLOCK, &r->global, &s))
		return wsnap_reader_region_invalid(r, &s, p->name,
						   (int64_t)pos);
	if (tf == WSNAP_TAR_REG || tf == WSNAP_TAR_CONT || tf == WSNAP_TAR_AREG)
		esize = (int64_t)s.stored;
	st = wsnap_reader_check_member(r, &s, p->name, esize, (int64_t)pos,
				       (int64_t)(pos + WSNAP_TAR_BLOCK), &m,
				       data_end, &have_mtime);
	if (st != WSNAP_OK)
		return st;
	m.mode = (uint32_t)wk_octal(h + WSNAP_TAR_OFF(mode),
				    WSNAP_TAR_LEN(mode)) &
		 07777;
	if (!have_mtime)
		m.mtime_sec = (int64_t)wk_octal(h + WSNAP_TAR_OFF(mtime),
						WSNAP_TAR_LEN(mtime));
	if (p->is_link) {
		st = wsnap_reader_check_link(r, &m, p->link);
		if (st != WSNAP_OK)
			return st;
	}
	r->members++;
	r->next_hdr = *data_end;
	wsnap_reader_keep_name(r, m.name, m.name_len);
	return fn(ctx, &m, r->err);
}

bool wsnap_walker_can_resume(struct wsnap_reader *r, struct archive *inner,
			     uint64_t pos)
{
	const unsigned char *h;
	struct wk_plain p;
	bool filled = false;

	/*
	 * A plain file whose window libarchive's skip emptied (in_pos ==
	 * pos): read on, and if the walker does not take over, hand what
	 * was read to libarchive as its next client buffer (replay).
	 */
	if (r->direct && r->win_len == 0 && r->win_off == pos &&
	    r->in_pos == pos) {
		bool past;

		if (wk_fill(r, pos, WSNAP_TAR_BLOCK, &past, &h) < 0)
			return false; /* recorded: libarchive's next read */
		filled = true;
	}
	if (pos < r->win_off || r->win_len < WSNAP_TAR_BLOCK ||
	    pos - r->win_off > r->win_len - WSNAP_TAR_BLOCK)
		goto libarchive;
	h = r->win + (pos - r->win_off);
	/* the end is libarchive's to read */
	if ((h[0] == 0 && wsnap_tar_all_zero(h, WSNAP_TAR_BLOCK)) ||
	    !wk_is_plain(h, &p))
		goto libarchive;
	r->la_pax = archive_format(inner) == ARCHIVE_FORMAT_TAR_PAX_INTERCHANGE;
	return true;
libarchive:
	if (filled)
		r->replay = r->win_len;
	return false;
}

enum wsnap_status wsnap_walker_run(struct wsnap_reader *r, wsnap_reader_fn fn,
				   void *ctx, uint64_t *at)
{
	struct wk_plain p;
	uint64_t pos = *at;

	if (r->direct && pos == 0) {
		r->in_pos = 0;
		r->win_off = 0;
		r->win_len = 0;
	}
	r->handed = false;
	r->back = false;
	r->la_dummy = false;
	r->la_shift = 0;
	r->replay = 0;
	for (;;) {
		const unsigned char *h = NULL;
		enum wsnap_status st;
		bool past;
		ssize_t got = wk_fill(r, pos, WSNAP_TAR_BLOCK, &past, &h);

		if (got < 0)
			return wsnap_reader_fail_msg(r, NULL);
		if (past || (got < (ssize_t)WSNAP_TAR_BLOCK && (got || !pos)))
			return wsnap_reader_fail_msg(r, pos ? WK_TRUNCATED
							    : WK_NOT_TAR);
		if (got == 0) {
			*at = pos; /* the end of the stream */
			return WSNAP_OK;
		}
		if (h[0] == 0 && wsnap_tar_all_zero(h, WSNAP_TAR_BLOCK)) {
			/* the end: a second zero block is consumed too */
			pos += WSNAP_TAR_BLOCK;
			got = wk_fill(r, pos, WSNAP_TAR_BLOCK, &past, &h);
			if (got < 0)
				return wsnap_reader_fail_msg(r, NULL);
			if (got == (ssize_t)WSNAP_TAR_BLOCK &&
			    wsnap_tar_all_zero(h, WSNAP_TAR_BLOCK))
				pos += WSNAP_TAR_BLOCK;
			*at = pos;
			return WSNAP_OK;
		}
		if (pos == 0 && !wk_bid(h))
			return wsnap_reader_fail_msg(r, WK_NOT_TAR);
		if (!wk_is_plain(h, &p))
			return wk_hand_over(r, pos);
		/* libarchive's format state after this header (the magic) */
		if (memcmp(h + WSNAP_TAR_OFF(magic), "ustar", 5) != 0 ||
		    memcmp(h + WSNAP_TAR_OFF(magic), WSNAP_TAR_GNU_MAGIC,
			   WSNAP_TAR_MAGIC_LEN) == 0)
			r->la_pax = false;
		st = wk_member(r, h, pos, &p, fn, ctx, &pos);
		if (st != WSNAP_OK)
			return st;
	}
}
