/* SPDX-License-Identifier: MIT */
/*
 * A chunk cache over a fetch function (a remote object's range requests):
 * what reads at random offsets of an object of known size go through.
 *
 *  - A read that is large (at least half a chunk) or continues the last
 *    one is served from chunks of WSNAP_CHUNK bytes, each starting where
 *    the read that needed it did (a sidecar's digest check reads a
 *    member's 1 MiB chunks: each is then one request, and the reads of it
 *    that follow none); a small one from its own extent rounded out to
 *    WSNAP_CHUNK_SMALL, so that a small member costs one request of about
 *    its size. A new entry ends where the next one starts;
 *  - a range is fetched once however many threads want it: the first
 *    inserts an entry and fetches, the others wait for it (single-flight),
 *    each only until the bytes it wants have arrived;
 *    a failed fetch is handed to its waiters and forgotten;
 *  - sequential reads grow a read-ahead window, doubling up to
 *    WSNAP_CHUNK_AHEAD chunks (fewer when the budget holds fewer beside
 *    the one read); once less than half of it is there, the rest is
 *    queued in requests of 2 chunks, fetched side by side by two
 *    background threads (started on first need, again after a fork);
 *  - entries take at most budget bytes (entries in use excepted), least
 *    recently used dropped first; the buffers of dropped entries of a
 *    chunk or two are kept for the next (at most WSNAP_CHUNK_POOL of
 *    each), so that a sequential read does not map, fault in and unmap
 *    fresh memory for every chunk;
 *  - a checker (wsnap_chunks_set_check) sees every entry fetched, whole,
 *    in the thread that fetched it (a read-ahead thread, ahead of the
 *    reader), before any reader waiting for all of it goes on: one that
 *    refuses it fails the entry, which is then fetched again when next
 *    read;
 *  - with a store of pieces on disk (wsnap_chunks_set_store, pieces.h), an
 *    entry takes what good pieces hold of it from there and fetches only
 *    the rest (the ranges between pieces, at most 8 fetches); the checker
 *    sees it whole as before, wherever its bytes came from, and when it
 *    refuses one that pieces gave, those pieces are removed and the entry
 *    is fetched again whole from the network (with a checker, readers
 *    wait for such an entry whole: its bytes are not final before). What
 *    the fetch gave and the checker took is handed to the store (which
 *    copies it and writes it from a thread of its own) by the thread that
 *    fetched it, after its waiters have gone on; but not an entry made
 *    once a run of reads had read more than WSNAP_CHUNK_SEQ_STORE bytes
 *    (a run: reads each starting within 4 chunks of where the ones before
 *    it end, in any order; another read starts a new run).
 */
#ifndef WSNAP_CHUNKS_H
#define WSNAP_CHUNKS_H

#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#define WSNAP_CHUNK	  (1u << 20)
#define WSNAP_CHUNK_SMALL (16u << 10)
#define WSNAP_CHUNK_AHEAD 8
#define WSNAP_CHUNK_POOL  4
/* A run of sequential reads puts its first bytes on disk (pieces), up to
 * this many; what it reads after them is not stored (a long stream read
 * once would otherwise push out of the bounded cache what was read
 * before, and writing it cost 1.4 s of CPU per GiB here, about what
 * fetching and checking it cost: bcache's sequential cutoff) */
#define WSNAP_CHUNK_SEQ_STORE (32ull << 20)

/*
 * Fills buf with exactly len bytes at off: 0 or a negative errno. On the
 * way it may call filled(fctx, n), unless filled is NULL, with the number
 * of leading bytes of buf that are final (never written again), never
 * decreasing: readers of those bytes need not wait for the rest.
 */
typedef int (*wsnap_chunk_fetch_fn)(void *ctx, void *buf, uint64_t off,
				    size_t len,
				    void (*filled)(void *fctx, size_t n),
				    void *fctx);

struct wsnap_chunks;

/* Returns 0 and *out, or -ENOMEM. */
int wsnap_chunks_new(uint64_t size, uint64_t budget, wsnap_chunk_fetch_fn fn,
		     void *ctx, struct wsnap_chunks **out);

/* Reads up to len bytes at off (fewer only at the end of the object): the
 * bytes read, or a negative errno. */
ssize_t wsnap_chunks_read(struct wsnap_chunks *c, void *buf, size_t len,
			  uint64_t off);

/*
 * Checks the bytes [off, off + len) of an entry just fetched (data):
 * 0, or a negative errno that fails the entry. Called without any lock of
 * the cache, from any thread, never twice at once for the same bytes.
 */
typedef int (*wsnap_chunk_check_fn)(void *ctx, uint64_t off, const void *data,
				    size_t len);

/* Sets the checker of entries fetched from now on (NULL: none). Call it
 * before the first read. */
void wsnap_chunks_set_check(struct wsnap_chunks *c, wsnap_chunk_check_fn fn,
			    void *ctx);

/*
 * What wsnap_chunks_read(c, -, len, off) does, without copying: returns
 * once every entry holding the bytes wanted is whole and checked, 0, or a
 * negative errno. The same read-ahead and sequential-read bookkeeping.
 */
int wsnap_chunks_fill(struct wsnap_chunks *c, size_t len, uint64_t off);

struct wsnap_pieces;

/* Sets the store of pieces on disk that entries fetched from now on are
 * read from and written to (NULL: none; borrowed, it must outlive c). Call
 * it before the first read. */
void wsnap_chunks_set_store(struct wsnap_chunks *c, struct wsnap_pieces *p);

/* Stops the read-ahead threads and frees everything; NULL does nothing. */
void wsnap_chunks_free(struct wsnap_chunks *c);

/* The extent a read of [off, off+len) of an object of size bytes fetches
 * when nothing holds off (before it is cut at the next entry): [*start,
 * *end). */
void wsnap_chunks_plan(uint64_t off, size_t len, uint64_t size, int big,
		       uint64_t *start, uint64_t *end);

#endif
