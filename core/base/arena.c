/* SPDX-License-Identifier: MIT */
/*
 * The string arena (arena.h). Copies go into 256 KiB chunks; a copy of a
 * quarter chunk or more gets a chunk of its own, linked behind the current
 * one, which stays open for small copies. So at most a quarter of a chunk
 * is left unused at the end of each chunk.
 */
#include "arena.h"

#include <stdlib.h>
#include <string.h>

#define ARENA_CHUNK ((size_t)256 * 1024)

struct wsnap_arena_chunk {
	struct wsnap_arena_chunk *next;
	size_t cap;
	size_t used;
	char data[];
};

char *wsnap_arena_dup(struct wsnap_arena *a, const char *s, size_t len)
{
	struct wsnap_arena_chunk *c = a->head;
	char *d;

	if (!c || c->cap - c->used <= len) {
		size_t cap = len >= ARENA_CHUNK / 4 ? len + 1 : ARENA_CHUNK;

		if (len >= SIZE_MAX - sizeof(*c) - 1)
			return NULL;
		c = malloc(sizeof(*c) + cap);
		if (!c)
			return NULL;
		c->cap = cap;
		c->used = 0;
		if (cap != ARENA_CHUNK && a->head) {
			c->next = a->head->next;
			a->head->next = c;
		} else {
			c->next = a->head;
			a->head = c;
		}
		a->bytes += sizeof(*c) + cap;
	}
	d = c->data + c->used;
	if (len)
		memcpy(d, s, len);
	d[len] = '\0';
	c->used += len + 1;
	return d;
}

void wsnap_arena_release(struct wsnap_arena *a)
{
	struct wsnap_arena_chunk *c, *next;

	for (c = a->head; c; c = next) {
		next = c->next;
		free(c);
	}
	a->head = NULL;
	a->bytes = 0;
}
