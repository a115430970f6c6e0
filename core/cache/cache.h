/* SPDX-License-Identifier: MIT */
/*
 * The index cache directory (cli.md "Snapshot indexes"): where cache
 * entries (indexfile.h) live, how they are found, replaced and pruned.
 *
 * Invariants:
 *  - the directory is used only when it is a directory owned by the
 *    effective user and not writable by group or others; it is reached
 *    through descriptors, and every component wsnap creates on the way is
 *    made 0700 and opened without following symlinks, as is the cache
 *    directory itself;
 *  - an entry is only ever replaced whole: written to a temporary file in
 *    the directory, then renamed over its name, so a reader (another
 *    process included) sees the old entry or the new one, never part of
 *    one; a mapping of an old entry stays valid after the rename;
 *  - entries are not fsync'ed: a crash can leave an entry damaged, which
 *    its checksum then rejects (and it is rebuilt);
 *  - the total size of the entries is kept at most max_bytes after every
 *    write by removing the least recently used (an entry's mtime is set
 *    on every use); temporary files of writers that died are removed
 *    once they are an hour old.
 */
#ifndef WSNAP_CACHE_H
#define WSNAP_CACHE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* Default bound of the cache (WSNAP_CACHE_MAX overrides it). */
#define WSNAP_CACHE_DEFAULT_MAX (1ull << 30)

/* A temporary entry's name: ".tmp-" and 16 hex digits. */
#define WSNAP_CACHE_TMP_LEN 21

/* Longest text of why a cache directory is not used. */
#define WSNAP_CACHE_WHY_MAX 512

struct wsnap_cache {
	int dirfd; /* -1: no cache */
	uint64_t max_bytes;
};

/*
 * Opens the cache directory: $WSNAP_CACHE_DIR, else $XDG_CACHE_HOME/wsnap
 * (an absolute $XDG_CACHE_HOME), else $HOME/.cache/wsnap, creating what is
 * missing. max_bytes from $WSNAP_CACHE_MAX (a number of bytes with an
 * optional K, M, G or T suffix, powers of 1024), else the default. Returns
 * true with c->dirfd open, or false with c->dirfd -1 and why (a sentence
 * naming the directory, at most WSNAP_CACHE_WHY_MAX bytes with its NUL)
 * saying why no cache is used.
 */
bool wsnap_cache_open(struct wsnap_cache *c, char *why, size_t whylen);

/*
 * The same directory for another user of it than the index cache: why
 * then names what (e.g. "chunk cache") where wsnap_cache_open says "index
 * cache". wsnap_cache_open is wsnap_cache_open_as(c, "index cache", ...).
 */
bool wsnap_cache_open_as(struct wsnap_cache *c, const char *what, char *why,
			 size_t whylen);

/*
 * Opens the subdirectory name of the cache directory (one component),
 * making it 0700 when missing, never through a symlink, and used only under
 * the rules of the directory itself (a directory owned by the effective
 * user, not writable by group or others). Returns the descriptor (O_RDONLY,
 * O_DIRECTORY, close-on-exec), or -1 with why (a sentence naming what and
 * the subdirectory) saying why it is not used.
 */
int wsnap_cache_subdir(const struct wsnap_cache *c, const char *name,
		       const char *what, char *why, size_t whylen);

/* Closes the directory. */
void wsnap_cache_close(struct wsnap_cache *c);

/*
 * Opens entry name for reading and marks it used (its mtime set to now).
 * Returns the descriptor, or -1 when there is no such regular file.
 */
int wsnap_cache_get(struct wsnap_cache *c, const char *name);

/*
 * Creates a temporary file in the directory (0600, read-write) for a new
 * entry; its name goes to tmp. Returns the descriptor or -1 with errno.
 */
int wsnap_cache_tmp(struct wsnap_cache *c, char tmp[WSNAP_CACHE_TMP_LEN + 1]);

/*
 * Renames tmp over name (atomically replacing an entry there), then prunes
 * the cache to max_bytes, never removing name. Returns 0 or the errno of
 * the rename (tmp is then removed).
 */
int wsnap_cache_commit(struct wsnap_cache *c, const char *tmp,
		       const char *name);

/* Removes the temporary file tmp. */
void wsnap_cache_discard(struct wsnap_cache *c, const char *tmp);

/*
 * Removes least recently used entries until they take at most max_bytes
 * together, never keep (may be NULL), and temporary files at least an
 * hour old.
 */
void wsnap_cache_prune(struct wsnap_cache *c, const char *keep);

#endif
