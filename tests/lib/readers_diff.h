/* SPDX-License-Identifier: MIT */
/*
 * The differential oracle of the walker (core/tar/walker.c): one archive
 * read twice by wsnap_reader_run, once as wsnap reads it (the walker, and
 * libarchive from the first member it hands over) and once with every
 * header through libarchive (reader opts libarchive_only, the reader as it
 * was before the walker). Used by fuzz/fuzz_walker.c and by the ctest
 * readers_diff (tests/unit/readers_diff_main.c).
 *
 * Agreement means: the same status; for a failure the same member and
 * reason string (policy.md, byte for byte; the human detail may differ,
 * since the walker words some failures itself); the same members handed
 * to the callback, in order, before the outcome (every field of struct
 * wsnap_raw_member: name, type, typeflag, link target, mode, size, data
 * offset, extension bytes, mtime, sparse runs); for a success the same
 * compression and decoded stream length.
 */
#ifndef WSNAP_READERS_DIFF_H
#define WSNAP_READERS_DIFF_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* How the archive reaches the reader. */
enum readers_diff_input {
	READERS_DIFF_MEMFD, /* a regular file: the direct layout if plain */
	READERS_DIFF_PIPE,  /* a pipe: always the piped layout */
};

/*
 * Reads the size bytes at data both ways from a memfd or a pipe (a pipe
 * only when the bytes fit its buffer; else returns true at once). Returns
 * true when the two agree; otherwise false with what differs in why
 * (NUL-terminated, cut to whylen). Aborts when a memfd or a pipe cannot be
 * made.
 */
bool readers_diff(const uint8_t *data, size_t size, enum readers_diff_input how,
		  char *why, size_t whylen);

#endif
