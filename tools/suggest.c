/* SPDX-License-Identifier: MIT */
/* Did-you-mean for subcommands, and the version lines (suggest.h). */
#include "suggest.h"

#include "archive_dl.h"
#include <fuse_lowlevel.h>
#include <stdint.h>
#include <string.h>
#include "array.h"

#define WORD_MAX 64

/* The words other tools (and habits) use for wsnap's subcommands. */
static const struct {
	const char *word, *means;
} aliases[] = {
	{"umount", "unmount"},	  {"list", "ls"},
	{"extract", "export"},	  {"validate", "check"},
	{"verify", "check"},	  {"strip", "strip-prefix"},
	{"version", "--version"}, {"create", "pack"},
};

size_t wsnap_edit_distance(const char *a, size_t alen, const char *b,
			   size_t blen)
{
	/* three rows of the distance matrix: i - 2, i - 1, i */
	size_t rows[3][WORD_MAX + 1], i, j, best;
	size_t *r2, *r1, *r0;

	if (alen > WORD_MAX || blen > WORD_MAX)
		return SIZE_MAX;
	for (j = 0; j <= blen; j++)
		rows[1][j] = j;
	r2 = rows[2];
	r1 = rows[1];
	r0 = rows[0];
	for (i = 1; i <= alen; i++) {
		size_t *t;

		r0[0] = i;
		for (j = 1; j <= blen; j++) {
			best = r1[j - 1] + (a[i - 1] != b[j - 1]);
			if (r1[j] + 1 < best)
				best = r1[j] + 1;
			if (r0[j - 1] + 1 < best)
				best = r0[j - 1] + 1;
			if (i > 1 && j > 1 && a[i - 1] == b[j - 2] &&
			    a[i - 2] == b[j - 1] && r2[j - 2] + 1 < best)
				best = r2[j - 2] + 1;
			r0[j] = best;
		}
		t = r2;
		r2 = r1;
		r1 = r0;
		r0 = t;
	}
	return r1[blen];
}

size_t wsnap_suggest(const char *typed, const char *const *names, size_t n,
		     const char **out)
{
	size_t len = strlen(typed), i, d, best = 3, count = 0;
	const char *prefix_of = NULL;
	int prefixes = 0;

	if (len > WORD_MAX)
		return 0;
	for (i = 0; i < ARRAY_SIZE(aliases); i++) {
		if (strcmp(typed, aliases[i].word) == 0) {
			out[0] = aliases[i].means;
			return 1;
		}
	}
	for (i = 0; i < n; i++) {
		d = wsnap_edit_distance(typed, len, names[i], strlen(names[i]));
		if (d > 2 || d >= len || d > best)
			continue;
		if (d < best) {
			best = d;
			count = 0;
		}
		if (count < WSNAP_SUGGEST_MAX)
			out[count++] = names[i];
	}
	if (count)
		return count;
	for (i = 0; len >= 2 && i < n; i++) {
		if (strncmp(names[i], typed, len) == 0) {
			prefix_of = names[i];
			prefixes++;
		}
	}
	if (prefixes != 1)
		return 0;
	out[0] = prefix_of;
	return 1;
}

/* The compression libraries in libarchive's details ('zlib/1.2.13
 * liblzma/5.4.1 ...'): one 'NAME VERSION' line per word. */
static void put_libraries(FILE *f, const char *s)
{
	const char *slash;
	size_t len;

	for (;; s += len) {
		s += strspn(s, " ");
		len = strcspn(s, " ");
		if (!len)
			return;
		slash = memchr(s, '/', len);
		if (slash)
			fprintf(f, "%.*s %.*s\n", (int)(slash - s), s,
				(int)(len - (size_t)(slash - s) - 1),
				slash + 1);
		else
			fprintf(f, "%.*s\n", (int)len, s);
	}
}

void wsnap_version_print(FILE *f)
{
	const char *details = archive_version_details();
	const char *own = archive_version_string(); /* "libarchive 3.6.2" */
	size_t n = strlen(own);

	fprintf(f, "wsnap %s\n%s\nlibfuse %s\n", WSNAP_VERSION, own,
		fuse_pkgversion());
	/* the details start with the same words */
	if (strncmp(details, own, n) == 0)
		details += n;
	put_libraries(f, details);
}
