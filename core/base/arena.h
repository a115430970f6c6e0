/* SPDX-License-Identifier: MIT */
/*
 * A string arena (internal to core): NUL-terminated copies kept in chunks
 * that are freed together, for names and targets that live as long as a
 * tree or an index. Nothing in it is freed on its own and nothing moves, so
 * a copy's address holds until the arena is released; an arena can change
 * owner (the engine's symlink targets become the index's) by copying the
 * struct.
 */
#ifndef WSNAP_ARENA_H
#define WSNAP_ARENA_H

#include <stddef.h>
#include <stdint.h>

struct wsnap_arena_chunk;

/* An empty arena is all zeros. */
struct wsnap_arena {
	struct wsnap_arena_chunk *head; /* the chunk being filled first */
	uint64_t bytes;			/* heap held, chunk headers included */
};

/* A NUL-terminated copy of s[0..len) (s may be NULL when len is 0), or
 * NULL when out of memory. Owned by the arena. */
char *wsnap_arena_dup(struct wsnap_arena *a, const char *s, size_t len);

/* Frees every copy; the arena is empty (and usable) afterwards. */
void wsnap_arena_release(struct wsnap_arena *a);

#endif
