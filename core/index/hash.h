/* SPDX-License-Identifier: MIT */
/*
 * Seeded hashing for the tables of the builder and the index (internal to
 * core).
 *
 * Member names are chosen by whoever made the archive, so the tables are
 * keyed: SipHash-1-3 under a random 128-bit key drawn per table. Without the
 * key nobody can make names collide on purpose and turn O(1) lookups into
 * O(n) chain walks.
 */
#ifndef WSNAP_HASH_H
#define WSNAP_HASH_H

#include <stddef.h>
#include <stdint.h>

struct wsnap_hash_key {
	uint64_t k0;
	uint64_t k1;
};

/* Fills key with random bits (getrandom, or a mix of clocks, the pid and
 * addresses when the kernel has no entropy yet). Never fails. */
void wsnap_hash_key_init(struct wsnap_hash_key *key);

/* A SipHash-1-3 computation over a message given in pieces. */
struct wsnap_hasher {
	uint64_t v0, v1, v2, v3;
	uint64_t tail; /* the last len % 8 bytes, little-endian */
	uint64_t len;  /* bytes so far */
};

void wsnap_hasher_init(struct wsnap_hasher *h, const struct wsnap_hash_key *k);
void wsnap_hasher_update(struct wsnap_hasher *h, const void *data, size_t len);
uint64_t wsnap_hasher_final(const struct wsnap_hasher *h);

/* SipHash-1-3 of (word as 8 little-endian bytes) || data[0..len) under key:
 * an entry keyed by (parent id, name). */
uint64_t wsnap_hash_entry(const struct wsnap_hash_key *key, uint64_t word,
			  const void *data, size_t len);

#endif
