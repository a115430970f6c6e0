/* SPDX-License-Identifier: MIT */
/*
 * Escaped names and JSON lines on stdio streams (json.h).
 *
 * Long strings are escaped in pieces of at most PIECE bytes. A piece ends
 * before a byte that is not a UTF-8 continuation byte, or after three
 * continuation bytes in a row: no valid sequence (at most three
 * continuation bytes after its lead) spans such a cut, and invalid bytes
 * are escaped one by one anyway, so the pieces escape exactly as the whole.
 */
#include "json.h"

#include <string.h>

#include "escape.h"

#define PIECE 4096

static void put(FILE *f, const char *s, size_t n)
{
	fwrite_unlocked(s, 1, n, f);
}

static void puts_(FILE *f, const char *s)
{
	fputs_unlocked(s, f);
}

static bool is_cont(unsigned char c)
{
	return (c & 0xc0) == 0x80;
}

/* End of the next piece of s[0..len) (len > PIECE): see the top comment. */
static size_t piece_end(const unsigned char *s)
{
	size_t k;

	if (!is_cont(s[PIECE]))
		return PIECE;
	for (k = 1; k <= 3; k++)
		if (!is_cont(s[PIECE - k]))
			return PIECE - k;
	return PIECE;
}

/*
 * The body of an escaped string in pieces; quote is the quote character
 * that repr escapes ('\'' when the name has both quotes), or 0.
 */
static void put_body(FILE *f, bool json, const char *s, size_t len, char quote)
{
	static char buf[WSNAP_ESCAPE_CAP(PIECE)];
	const unsigned char *u = (const unsigned char *)s;
	size_t n, cut;
	const char *q;

	while (len > 0) {
		cut = len > PIECE ? piece_end(u) : len;
		/* a quote to escape is a cut of its own (ASCII, so safe) */
		q = quote ? memchr(s, quote, cut) : NULL;
		if (q)
			cut = (size_t)(q - s);
		if (json) {
			n = wsnap_escape_json(buf, s, cut);
			put(f, buf + 1, n - 2);
		} else {
			n = wsnap_escape_bare(buf, s, cut);
			put(f, buf, n);
		}
		if (q) {
			putc_unlocked('\\', f);
			putc_unlocked(quote, f);
			cut++;
		}
		s += cut;
		u += cut;
		len -= cut;
	}
}

void wsnap_put_escaped(FILE *f, enum wsnap_esc kind, const char *s, size_t len)
{
	static char buf[WSNAP_ESCAPE_CAP(PIECE)];
	size_t n;

	if (len <= PIECE) {
		if (kind == WSNAP_ESC_REPR)
			n = wsnap_escape_repr(buf, s, len);
		else if (kind == WSNAP_ESC_BARE)
			n = wsnap_escape_bare(buf, s, len);
		else
			n = wsnap_escape_json(buf, s, len);
		put(f, buf, n);
		return;
	}
	if (kind == WSNAP_ESC_BARE) {
		put_body(f, false, s, len, 0);
	} else if (kind == WSNAP_ESC_JSON) {
		putc_unlocked('"', f);
		put_body(f, true, s, len, 0);
		putc_unlocked('"', f);
	} else {
		/* the quote choice of wsnap_escape_repr, over the whole */
		bool sq = memchr(s, '\'', len) != NULL;
		bool dq = memchr(s, '"', len) != NULL;
		char quote = (sq && !dq) ? '"' : '\'';

		putc_unlocked(quote, f);
		put_body(f, false, s, len, (sq && dq) ? '\'' : 0);
		putc_unlocked(quote, f);
	}
}

size_t wsnap_fmt_u64(char *buf, uint64_t v)
{
	char tmp[21];
	size_t n = 0, i;

	do {
		tmp[n++] = (char)('0' + v % 10);
		v /= 10;
	} while (v);
	for (i = 0; i < n; i++)
		buf[i] = tmp[n - 1 - i];
	buf[n] = '\0';
	return n;
}

size_t wsnap_fmt_time(char *buf, int64_t sec, uint32_t nsec, bool frac)
{
	size_t n = 0;
	uint64_t ip;
	int i;

	if (!frac)
		nsec = 0;
	if (sec < 0) {
		buf[n++] = '-';
		/* sec + nsec/1e9 = -((-sec - 1) + (1e9 - nsec)/1e9) */
		if (nsec) {
			ip = (uint64_t)(-(sec + 1));
			nsec = 1000000000u - nsec;
		} else {
			ip = (uint64_t)0 - (uint64_t)sec;
		}
	} else {
		ip = (uint64_t)sec;
	}
	n += wsnap_fmt_u64(buf + n, ip);
	if (!frac) {
		buf[n] = '\0';
		return n;
	}
	buf[n++] = '.';
	for (i = 8; i >= 0; i--) {
		buf[n + (size_t)i] = (char)('0' + nsec % 10);
		nsec /= 10;
	}
	n += 9;
	while (buf[n - 1] == '0' && buf[n - 2] != '.')
		n--;
	buf[n] = '\0';
	return n;
}

void wsnap_json_begin(struct wsnap_json *j, FILE *f)
{
	j->f = f;
	j->depth = 1;
	j->non_empty = 0;
	putc_unlocked('{', f);
}

static void key(struct wsnap_json *j, const char *k)
{
	unsigned bit = 1u << (j->depth - 1);

	if (j->non_empty & bit)
		putc_unlocked(',', j->f);
	j->non_empty |= bit;
	putc_unlocked('"', j->f);
	puts_(j->f, k);
	putc_unlocked('"', j->f);
	putc_unlocked(':', j->f);
}

void wsnap_json_open(struct wsnap_json *j, const char *k)
{
	if (j->depth >= WSNAP_JSON_MAX_DEPTH)
		return; /* a programming error; keep the line well-formed */
	key(j, k);
	putc_unlocked('{', j->f);
	j->depth++;
	j->non_empty &= ~(1u << (j->depth - 1));
}

void wsnap_json_close(struct wsnap_json *j)
{
	if (j->depth <= 1)
		return;
	putc_unlocked('}', j->f);
	j->depth--;
}

void wsnap_json_end(struct wsnap_json *j)
{
	while (j->depth > 0) {
		putc_unlocked('}', j->f);
		j->depth--;
	}
	putc_unlocked('\n', j->f);
}

void wsnap_json_string(struct wsnap_json *j, const char *k, const char *s,
		       size_t len)
{
	key(j, k);
	wsnap_put_escaped(j->f, WSNAP_ESC_JSON, s, len);
}

void wsnap_json_cstring(struct wsnap_json *j, const char *k, const char *s)
{
	if (!s) {
		wsnap_json_null(j, k);
		return;
	}
	wsnap_json_string(j, k, s, strlen(s));
}

void wsnap_json_u64(struct wsnap_json *j, const char *k, uint64_t v)
{
	char buf[24];

	key(j, k);
	put(j->f, buf, wsnap_fmt_u64(buf, v));
}

void wsnap_json_bool(struct wsnap_json *j, const char *k, bool v)
{
	key(j, k);
	puts_(j->f, v ? "true" : "false");
}

void wsnap_json_null(struct wsnap_json *j, const char *k)
{
	key(j, k);
	puts_(j->f, "null");
}

void wsnap_json_time(struct wsnap_json *j, const char *k, int64_t sec,
		     uint32_t nsec, bool frac)
{
	char buf[32];

	key(j, k);
	put(j->f, buf, wsnap_fmt_time(buf, sec, nsec, frac));
}

void wsnap_json_mode(struct wsnap_json *j, const char *k, unsigned mode)
{
	char buf[7] = {'"', '0', '0', '0', '0', '"', '\0'};

	buf[1] = (char)('0' + ((mode >> 9) & 7));
	buf[2] = (char)('0' + ((mode >> 6) & 7));
	buf[3] = (char)('0' + ((mode >> 3) & 7));
	buf[4] = (char)('0' + (mode & 7));
	key(j, k);
	puts_(j->f, buf);
}
