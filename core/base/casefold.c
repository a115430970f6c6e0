/* SPDX-License-Identifier: MIT */
/*
 * Caseless keys (casefold.h): decompose, order the combining marks, fold,
 * order again.
 *
 * Invariants:
 *  - the tables of casefold_data.h are sorted by code point (the generator
 *    writes them so), so each look-up is a binary search; ASCII never
 *    reaches them;
 *  - every code point maps to at least one, so no step shortens a key, and
 *    a key is at most WSNAP_CASEFOLD_CAP of its input (the generator's
 *    maximum over all code points is 1.5 per byte);
 *  - canonical ordering is a stable sort by combining class of each run of
 *    marks: insertion for short runs, counting sort for long ones, so that
 *    a hostile name of thousands of marks costs linear time.
 */
#include "casefold.h"

#include <stdbool.h>

#include "casefold_data.h"
#include "escape.h"
#include "array.h"

#define N_OF(a)	     (ARRAY_SIZE(a))
#define RAW_BYTE     0x110000u /* + byte: a byte that is not UTF-8 */
#define SHORT_RUN    8u	       /* longer runs of marks: counting sort */
#define HANGUL_FIRST 0xac00u
#define HANGUL_LAST  0xd7a3u

const char *wsnap_casefold_unicode(void)
{
	return CF_UNICODE_VERSION;
}

static const struct cf_map *map_find(const struct cf_map *t, size_t n,
				     uint32_t cp)
{
	size_t lo = 0, hi = n;

	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;

		if (t[mid].cp == cp)
			return &t[mid];
		if (t[mid].cp < cp)
			lo = mid + 1;
		else
			hi = mid;
	}
	return NULL;
}

static unsigned ccc_of(uint32_t cp)
{
	size_t lo = 0, hi = N_OF(cf_ccc);

	if (cp < cf_ccc[0].first)
		return 0;
	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;

		if (cp < cf_ccc[mid].first)
			hi = mid;
		else if (cp > cf_ccc[mid].last)
			lo = mid + 1;
		else
			return cf_ccc[mid].ccc;
	}
	return 0;
}

/* The sequence cp maps to in table t (pool p), or cp itself. */
static size_t map_put(const struct cf_map *t, size_t n, const uint32_t *p,
		      uint32_t cp, uint32_t *out)
{
	const struct cf_map *m = map_find(t, n, cp);
	size_t i;

	if (!m) {
		out[0] = cp;
		return 1;
	}
	for (i = 0; i < m->len; i++)
		out[i] = p[m->off + i];
	return m->len;
}

/* NFD of one code point; Hangul syllables by their arithmetic. */
static size_t decompose(uint32_t cp, uint32_t *out)
{
	if (cp >= HANGUL_FIRST && cp <= HANGUL_LAST) {
		uint32_t s = cp - HANGUL_FIRST, t = s % 28;

		out[0] = 0x1100 + s / 588;
		out[1] = 0x1161 + (s % 588) / 28;
		if (!t)
			return 2;
		out[2] = 0x11a7 + t;
		return 3;
	}
	return map_put(cf_decomp, N_OF(cf_decomp), cf_decomp_pool, cp, out);
}

static size_t fold(uint32_t cp, uint32_t *out)
{
	if (cp < 0x80) {
		out[0] = cp >= 'A' && cp <= 'Z' ? cp + ('a' - 'A') : cp;
		return 1;
	}
	return map_put(cf_fold, N_OF(cf_fold), cf_fold_pool, cp, out);
}

/* A stable sort of run[0..n) by combining class; tmp holds n. */
static void sort_run(uint32_t *run, size_t n, uint32_t *tmp)
{
	size_t count[257] = {0}, i, j;

	if (n <= SHORT_RUN) {
		for (i = 1; i < n; i++) {
			uint32_t v = run[i];
			unsigned c = ccc_of(v);

			for (j = i; j > 0 && ccc_of(run[j - 1]) > c; j--)
				run[j] = run[j - 1];
			run[j] = v;
		}
		return;
	}
	for (i = 0; i < n; i++)
		count[ccc_of(run[i]) + 1]++;
	for (i = 1; i < 257; i++)
		count[i] += count[i - 1];
	for (i = 0; i < n; i++)
		tmp[count[ccc_of(run[i])]++] = run[i];
	for (i = 0; i < n; i++)
		run[i] = tmp[i];
}

/* Canonical ordering of s[0..n): each run of marks sorted by class. */
static void order(uint32_t *s, size_t n, uint32_t *tmp)
{
	size_t i = 0, start;

	while (i < n) {
		if (s[i] < 0x300 || ccc_of(s[i]) == 0) {
			i++;
			continue;
		}
		start = i;
		while (i < n && s[i] >= 0x300 && ccc_of(s[i]) != 0)
			i++;
		if (i - start > 1)
			sort_run(s + start, i - start, tmp);
	}
}

size_t wsnap_casefold_key(uint32_t *key, uint32_t *scratch, const char *s,
			  size_t len)
{
	const unsigned char *u = (const unsigned char *)s;
	size_t i, n = 0, m = 0;
	bool ascii = true;

	for (i = 0; i < len && ascii; i++)
		ascii = u[i] < 0x80;
	if (ascii) {
		for (i = 0; i < len; i++)
			fold(u[i], key + i);
		return len;
	}
	for (i = 0; i < len;) {
		uint32_t cp;
		size_t k = wsnap_utf8_seq(u + i, len - i, &cp);

		if (k == 0) {
			scratch[n++] = RAW_BYTE + u[i++];
			continue;
		}
		n += decompose(cp, scratch + n);
		i += k;
	}
	order(scratch, n, key);
	for (i = 0; i < n; i++)
		m += fold(scratch[i], key + m);
	order(key, m, scratch);
	return m;
}
