/* SPDX-License-Identifier: MIT */
/*
 * What wsnap says when the first word names no subcommand: the commands a
 * user may have meant (git's "did you mean"), and the version lines of
 * 'wsnap --version'.
 */
#ifndef WSNAP_SUGGEST_H
#define WSNAP_SUGGEST_H

#include <stddef.h>
#include <stdio.h>

/* Most suggestions for one word. */
#define WSNAP_SUGGEST_MAX 3

/*
 * The names among names[0..n) that typed may have meant, best first, into
 * out (at most WSNAP_SUGGEST_MAX; they point into names or are static);
 * returns how many. First the word other tools use for the same job
 * ('umount' -> 'unmount', 'list' -> 'ls', 'extract' -> 'export', 'version'
 * -> '--version', ...); else the names at the smallest edit distance
 * (insertions, deletions, substitutions and swaps of neighbours, each 1)
 * when it is at most 2 and less than the length of typed; else the one
 * name typed is a prefix of (2 characters or more). Nothing for a word
 * longer than 64 bytes.
 */
size_t wsnap_suggest(const char *typed, const char *const *names, size_t n,
		     const char **out);

/*
 * The edit distance of a[0..alen) and b[0..blen) as above (optimal string
 * alignment), both at most 64 bytes; larger inputs give SIZE_MAX.
 */
size_t wsnap_edit_distance(const char *a, size_t alen, const char *b,
			   size_t blen);

/*
 * 'wsnap --version': wsnap's version, then the versions of libarchive,
 * libfuse and the compression libraries libarchive was built with, one
 * 'NAME VERSION' per line.
 */
void wsnap_version_print(FILE *f);

#endif
