/* SPDX-License-Identifier: MIT */
/*
 * Escaping of member names and targets (policy.md section 2, cli.md).
 *
 * Invariants:
 *  - the input is walked as UTF-8; a byte that does not start a complete,
 *    shortest-form sequence of a scalar value (U+0000-U+D7FF,
 *    U+E000-U+10FFFF) is "invalid" and escaped on its own; the walk resumes
 *    at the next byte. This gives the same per-byte result as Python's
 *    surrogateescape decoding (what tarfile does with names on Linux).
 *  - repr and bare escape every code point that Python's str.isprintable()
 *    rejects, as Python's repr does (\xHH, \uHHHH, \UHHHHHHHH), from the
 *    table generated into unicode_table.h; so no such output contains a
 *    control, format, separator (other than U+0020), private-use or
 *    unassigned code point, or invalid UTF-8: a name cannot inject terminal
 *    control sequences, reorder a line or pass for another name.
 *  - JSON escapes only " and \\ and C0, DEL and C1 (as \\u00XX, which a
 *    parser reads back as the same code point): names in JSON are exact,
 *    and JSON is for programs, so printability is not its concern.
 *  - every output of len input bytes fits WSNAP_ESCAPE_CAP(len): at most 6
 *    bytes per input byte (\udcXX), \UHHHHHHHH being 10 for 4 bytes.
 */
#include "escape.h"

#include <stdbool.h>
#include <stdint.h>

#include "array.h"
#include "unicode_table.h"

static const char hexdigits[] = "0123456789abcdef";

size_t wsnap_utf8_seq(const unsigned char *s, size_t len, uint32_t *cp)
{
	unsigned char c = s[0];
	unsigned char lo = 0x80, hi = 0xbf;
	size_t n, i;
	uint32_t v;

	if (c < 0x80) {
		*cp = c;
		return 1;
	}
	if (c >= 0xc2 && c <= 0xdf) {
		n = 2;
		v = c & 0x1f;
	} else if (c >= 0xe0 && c <= 0xef) {
		n = 3;
		v = c & 0x0f;
		if (c == 0xe0)
			lo = 0xa0; /* overlong */
		else if (c == 0xed)
			hi = 0x9f; /* surrogates U+D800-U+DFFF */
	} else if (c >= 0xf0 && c <= 0xf4) {
		n = 4;
		v = c & 0x07;
		if (c == 0xf0)
			lo = 0x90; /* overlong */
		else if (c == 0xf4)
			hi = 0x8f; /* above U+10FFFF */
	} else {
		return 0; /* continuation, C0/C1 overlong lead, F5-FF */
	}
	if (len < n)
		return 0;
	if (s[1] < lo || s[1] > hi)
		return 0;
	v = (v << 6) | (s[1] & 0x3f);
	for (i = 2; i < n; i++) {
		if (s[i] < 0x80 || s[i] > 0xbf)
			return 0;
		v = (v << 6) | (s[i] & 0x3f);
	}
	*cp = v;
	return n;
}

static char *put_hex2(char *o, const char *prefix, unsigned v)
{
	while (*prefix)
		*o++ = *prefix++;
	*o++ = hexdigits[(v >> 4) & 0xf];
	*o++ = hexdigits[v & 0xf];
	return o;
}

/* A code point that JSON output escapes: C0, DEL, C1. */
static bool is_control(uint32_t cp)
{
	return cp < 0x20 || (cp >= 0x7f && cp <= 0x9f);
}

bool wsnap_escape_printable(uint32_t cp)
{
	const struct wsnap_unicode_range *r = wsnap_unicode_nonprintable;
	size_t lo = 0, hi, mid;

	hi = ARRAY_SIZE(wsnap_unicode_nonprintable);
	if (cp >= 0x20 && cp < 0x7f)
		return true; /* the common case, without a search */
	if (cp > 0x10ffff)
		return false;
	while (lo < hi) {
		mid = lo + (hi - lo) / 2;
		if (cp > r[mid].last)
			lo = mid + 1;
		else if (cp < r[mid].first)
			hi = mid;
		else
			return false;
	}
	return true;
}

const char *wsnap_escape_unicode_version(void)
{
	return WSNAP_UNICODE_VERSION;
}

/* Python's escape of a non-printable code point: \xHH, \uHHHH, \UHHHHHHHH */
static char *put_codepoint(char *o, uint32_t cp)
{
	int digits, i;

	*o++ = '\\';
	if (cp < 0x100) {
		*o++ = 'x';
		digits = 2;
	} else if (cp < 0x10000) {
		*o++ = 'u';
		digits = 4;
	} else {
		*o++ = 'U';
		digits = 8;
	}
	for (i = digits - 1; i >= 0; i--)
		*o++ = hexdigits[(cp >> (4 * i)) & 0xf];
	return o;
}

/*
 * The body of a repr; quote is the quote character to escape, or 0 for the
 * bare variant. Returns the end of the output.
 */
static char *repr_body(char *o, const unsigned char *s, size_t len, char quote)
{
	size_t i = 0, n, k;
	uint32_t cp;

	while (i < len) {
		n = wsnap_utf8_seq(s + i, len - i, &cp);
		if (n == 0) {
			o = put_hex2(o, "\\x", s[i]);
			i++;
			continue;
		}
		switch (cp) {
		case '\\':
			*o++ = '\\';
			*o++ = '\\';
			break;
		case '\t':
			*o++ = '\\';
			*o++ = 't';
			break;
		case '\n':
			*o++ = '\\';
			*o++ = 'n';
			break;
		case '\r':
			*o++ = '\\';
			*o++ = 'r';
			break;
		default:
			if (!wsnap_escape_printable(cp)) {
				o = put_codepoint(o, cp);
			} else if (quote && cp == (uint32_t)quote) {
				*o++ = '\\';
				*o++ = quote;
			} else {
				for (k = 0; k < n; k++)
					*o++ = (char)s[i + k];
			}
		}
		i += n;
	}
	return o;
}

size_t wsnap_escape_repr(char *out, const char *s, size_t len)
{
	bool squote = false, dquote = false;
	char quote, *o = out;
	size_t i;

	for (i = 0; i < len; i++) {
		if (s[i] == '\'')
			squote = true;
		else if (s[i] == '"')
			dquote = true;
	}
	quote = (squote && !dquote) ? '"' : '\'';
	*o++ = quote;
	o = repr_body(o, (const unsigned char *)s, len, quote);
	*o++ = quote;
	*o = '\0';
	return (size_t)(o - out);
}

size_t wsnap_escape_bare(char *out, const char *s, size_t len)
{
	char *o = repr_body(out, (const unsigned char *)s, len, 0);

	*o = '\0';
	return (size_t)(o - out);
}

size_t wsnap_escape_json(char *out, const char *s, size_t len)
{
	const unsigned char *u = (const unsigned char *)s;
	size_t i = 0, n, k;
	uint32_t cp;
	char *o = out;

	*o++ = '"';
	while (i < len) {
		n = wsnap_utf8_seq(u + i, len - i, &cp);
		if (n == 0) {
			/* a lone surrogate: os.fsencode gives the byte back */
			o = put_hex2(o, "\\udc", u[i]);
			i++;
			continue;
		}
		if (cp == '"' || cp == '\\') {
			*o++ = '\\';
			*o++ = (char)cp;
		} else if (is_control(cp)) {
			/* DEL and C1 are legal raw JSON; escaped for terminals,
			 * they decode to the same code point */
			o = put_hex2(o, "\\u00", cp);
		} else {
			for (k = 0; k < n; k++)
				*o++ = (char)u[i + k];
		}
		i += n;
	}
	*o++ = '"';
	*o = '\0';
	return (size_t)(o - out);
}
