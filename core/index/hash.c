/* SPDX-License-Identifier: MIT */
/*
 * SipHash-1-3 (Aumasson and Bernstein), written from the published
 * description: one compression round per 8-byte little-endian block, the
 * message length in the top byte of the last block, three finalization
 * rounds, a 64-bit result.
 */
#include "hash.h"

#include <errno.h>
#include <stdatomic.h>
#include <stdint.h>
#include <string.h>
#include <sys/random.h>
#include <time.h>
#include <unistd.h>

#include "fsutil.h"

#define ROTL64(x, b) (uint64_t)(((x) << (b)) | ((x) >> (64 - (b))))

static void sip_round(struct wsnap_hasher *s)
{
	s->v0 += s->v1;
	s->v1 = ROTL64(s->v1, 13);
	s->v1 ^= s->v0;
	s->v0 = ROTL64(s->v0, 32);
	s->v2 += s->v3;
	s->v3 = ROTL64(s->v3, 16);
	s->v3 ^= s->v2;
	s->v0 += s->v3;
	s->v3 = ROTL64(s->v3, 21);
	s->v3 ^= s->v0;
	s->v2 += s->v1;
	s->v1 = ROTL64(s->v1, 17);
	s->v1 ^= s->v2;
	s->v2 = ROTL64(s->v2, 32);
}

static void sip_block(struct wsnap_hasher *s, uint64_t m)
{
	s->v3 ^= m;
	sip_round(s);
	s->v0 ^= m;
}

static uint64_t load_le64(const unsigned char *p)
{
	return (uint64_t)p[0] | (uint64_t)p[1] << 8 | (uint64_t)p[2] << 16 |
	       (uint64_t)p[3] << 24 | (uint64_t)p[4] << 32 |
	       (uint64_t)p[5] << 40 | (uint64_t)p[6] << 48 |
	       (uint64_t)p[7] << 56;
}

void wsnap_hasher_init(struct wsnap_hasher *h, const struct wsnap_hash_key *k)
{
	h->v0 = k->k0 ^ 0x736f6d6570736575ULL;
	h->v1 = k->k1 ^ 0x646f72616e646f6dULL;
	h->v2 = k->k0 ^ 0x6c7967656e657261ULL;
	h->v3 = k->k1 ^ 0x7465646279746573ULL;
	h->tail = 0;
	h->len = 0;
}

void wsnap_hasher_update(struct wsnap_hasher *h, const void *data, size_t len)
{
	const unsigned char *p = data;
	unsigned have = (unsigned)(h->len & 7);

	h->len += len;
	/* complete a pending partial block first */
	while (have && len) {
		h->tail |= (uint64_t)*p++ << (8 * have);
		len--;
		if (++have == 8) {
			sip_block(h, h->tail);
			h->tail = 0;
			have = 0;
		}
	}
	for (; len >= 8; p += 8, len -= 8)
		sip_block(h, load_le64(p));
	for (; len; len--)
		h->tail |= (uint64_t)*p++ << (8 * have++);
}

uint64_t wsnap_hasher_final(const struct wsnap_hasher *h)
{
	struct wsnap_hasher s = *h;

	sip_block(&s, s.tail | s.len << 56);
	s.v2 ^= 0xff;
	sip_round(&s);
	sip_round(&s);
	sip_round(&s);
	return s.v0 ^ s.v1 ^ s.v2 ^ s.v3;
}

uint64_t wsnap_hash_entry(const struct wsnap_hash_key *key, uint64_t word,
			  const void *data, size_t len)
{
	struct wsnap_hasher h;

	wsnap_hasher_init(&h, key);
	sip_block(&h, word);
	h.len = 8;
	wsnap_hasher_update(&h, data, len);
	return wsnap_hasher_final(&h);
}

void wsnap_hash_key_init(struct wsnap_hash_key *key)
{
	static atomic_uint_fast64_t counter;
	uint64_t salt = atomic_fetch_add(&counter, 1) + 1;
	struct timespec ts = {0, 0};
	uint64_t buf[2] = {0, 0};
	ssize_t n;

	WSNAP_RETRY_EINTR(n, getrandom(buf, sizeof(buf), GRND_NONBLOCK));
	if (n == (ssize_t)sizeof(buf)) {
		key->k0 = buf[0];
		key->k1 = buf[1];
		return;
	}
	/* no entropy yet: weaker, but still not predictable from outside */
	clock_gettime(CLOCK_MONOTONIC, &ts);
	key->k0 = (uint64_t)ts.tv_nsec ^ ((uint64_t)ts.tv_sec << 30) ^
		  (uint64_t)(uintptr_t)key ^ salt;
	clock_gettime(CLOCK_REALTIME, &ts);
	key->k1 = (uint64_t)ts.tv_nsec ^ ((uint64_t)getpid() << 32) ^
		  (uint64_t)(uintptr_t)&ts;
	key->k1 = wsnap_hash_entry(key, key->k1, &salt, sizeof(salt));
}
