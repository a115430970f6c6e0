/* SPDX-License-Identifier: MIT */
/*
 * The on-disk chunk cache of remote objects (cli.md "Remote snapshots"):
 * pieces of an object's bytes kept in the cache directory (cache.h), in
 * chunks/KEY/, so that a later mount or hydrate of the same object version
 * on this host does not fetch them again.
 *
 * Invariants:
 *  - KEY is the hex of a SHA-256 over the object's identity as the remote
 *    source pinned it (label without credentials, ETag, Last-Modified,
 *    version id, size): another version of the object has another
 *    directory, and every piece names the key inside too, so bytes of one
 *    version are never served for another;
 *  - a piece file is named OFFSET-LENGTH (16 hex digits each) and holds a
 *    header (WSNAP_PIECE_HDR bytes: magic, format version, key, offset,
 *    length, XXH3-64 of the bytes, XXH3-64 of the header) then exactly
 *    LENGTH bytes. What is on disk is hostile input: a piece is used only
 *    when it is a regular file of ours of exactly that size whose header
 *    and checksum match what its name and the key say; anything else is
 *    removed and read as a miss, never served, never an error;
 *  - a piece is written whole to a temporary file and renamed into place,
 *    so a reader (another daemon included) sees it whole or not at all;
 *    a write that fails (a full disk, a directory made read-only) costs the
 *    cache only, never a read;
 *  - the pieces of all objects together take at most max_bytes: after
 *    every max_bytes / 8 written by this process, and whenever its own
 *    count says the bound is passed, the directory is measured again
 *    (another process's pieces included) and the least recently used
 *    pieces (mtime, set on every use) are removed down to 7/8 of the
 *    bound, and once more when p is freed if it wrote since: processes
 *    that write at once may pass the bound by what each wrote since it
 *    last measured (at most an eighth of it and a piece) until one of
 *    them measures again, and it holds once the last has ended;
 *    temporary files of writers that died go once an hour old;
 *  - a piece is at most WSNAP_PIECE_MAX bytes; the pieces this process
 *    knows of (listed when first needed, then kept up to date with what it
 *    writes and removes) are at most WSNAP_PIECES_KNOWN_MAX.
 * Thread-safe: one mutex guards the list and the writer's queue; file I/O
 * runs without it. A process forked while nothing is queued may use p:
 * the child starts a writer of its own.
 */
#ifndef WSNAP_PIECES_H
#define WSNAP_PIECES_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define WSNAP_PIECE_KEY	       32
#define WSNAP_PIECE_HDR	       80
#define WSNAP_PIECE_MAX	       (8u << 20)
#define WSNAP_PIECES_KNOWN_MAX (1u << 20)
/* Bytes of pieces waiting for the writer at most. */
#define WSNAP_PIECES_QUEUE (16u << 20)
/* "OFFSET-LENGTH": 16 + 1 + 16 characters */
#define WSNAP_PIECE_NAME_LEN 33

/* The header of the piece of key holding data (len bytes at off). */
void wsnap_piece_header(unsigned char hdr[WSNAP_PIECE_HDR],
			const unsigned char key[WSNAP_PIECE_KEY], uint64_t off,
			const void *data, size_t len);

/*
 * Checks a piece: its header hdr and its bytes data (dlen of them) are
 * those of the piece of key at off of len bytes. Returns 0, or -EINVAL
 * (another magic, format version, key, offset or length, dlen not len, a
 * len above WSNAP_PIECE_MAX), or -EBADMSG (a checksum that does not
 * match).
 */
int wsnap_piece_verify(const unsigned char *hdr,
		       const unsigned char key[WSNAP_PIECE_KEY], uint64_t off,
		       uint64_t len, const void *data, size_t dlen);

/* The name of the piece at off of len bytes, into name. */
void wsnap_piece_name(uint64_t off, uint64_t len,
		      char name[WSNAP_PIECE_NAME_LEN + 1]);

/* Parses a piece's name: true with *off and *len when it is one (exactly
 * 16 lowercase hex digits, '-', 16 more; 0 < len <= WSNAP_PIECE_MAX; off +
 * len without overflow). */
bool wsnap_piece_name_parse(const char *name, uint64_t *off, uint64_t *len);

struct wsnap_pieces;

/*
 * The pieces of the object of key (size bytes long) under the chunks
 * directory dirfd (duplicated: the caller keeps its descriptor), bounded
 * to max_bytes in all. say, when not NULL, is told (a line, no newline)
 * why the cache could not do its part: a write that failed, a piece that
 * was bad (at most a few lines in all). Nothing is read or made on disk
 * before the first get or put. Returns 0 and *out, or -ENOMEM, or the
 * negative errno of dup.
 */
int wsnap_pieces_new(int dirfd, const unsigned char key[WSNAP_PIECE_KEY],
		     uint64_t size, uint64_t max_bytes,
		     void (*say)(const char *line), struct wsnap_pieces **out);

/*
 * Copies into buf the bytes from off (at most len) that a good piece
 * holding off has: returns how many (> 0), or 0 when no piece holds off,
 * with *next the offset of the next piece known after off (UINT64_MAX
 * when none). A bad piece is removed and is a miss. The piece read is
 * marked used.
 */
size_t wsnap_pieces_get(struct wsnap_pieces *p, void *buf, uint64_t off,
			size_t len, uint64_t *next);

/*
 * Stores the len bytes of data at off as a piece (nothing when len is 0
 * or above WSNAP_PIECE_MAX, or the piece is there), then keeps the bound:
 * a copy is queued for p's writer thread (started on first need, again
 * after a fork), so that the caller never waits for the disk; what would
 * take the queue past WSNAP_PIECES_QUEUE bytes is not kept.
 */
void wsnap_pieces_put(struct wsnap_pieces *p, uint64_t off, const void *data,
		      size_t len);

/* Waits until what was put before is written (or failed to be). */
void wsnap_pieces_flush(struct wsnap_pieces *p);

/* Removes every known piece with a byte in [off, off + len). */
void wsnap_pieces_drop(struct wsnap_pieces *p, uint64_t off, uint64_t len);

/* Bytes served from pieces, and bytes written as pieces, so far. */
void wsnap_pieces_stats(struct wsnap_pieces *p, uint64_t *hit_bytes,
			uint64_t *put_bytes);

/* Writes what is queued, ends the writer and frees p (the files stay);
 * NULL does nothing. */
void wsnap_pieces_free(struct wsnap_pieces *p);

#endif
