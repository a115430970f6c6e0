/* SPDX-License-Identifier: MIT */
/*
 * Comparing two snapshots (cli.md 'wsnap diff').
 *
 * A side is an index (archive or directory, both built under the policy)
 * plus a way to read the content of its regular files. The engine is a
 * merge: both indexes iterate their inos 2..count in bytewise path order,
 * so one pass over the two sequences finds every path that is only in A
 * ('D'), only in B ('A'), or in both with another type ('T') or with a
 * different presented mode, symlink target or content ('M'); with
 * opts->mtime also a different mtime. The roots are not compared.
 *
 * Content is read only for two regular files of equal size whose other
 * attributes are equal, in chunks of WSNAP_DIFF_CHUNK bytes, stopping at the
 * first difference. Memory: two chunk buffers besides the indexes; nothing
 * is extracted.
 *
 * New kinds of side plug in through struct wsnap_diff_content: for example a
 * hydrated workspace (an overlay whose upper directory holds the changes)
 * can be a side whose index merges the archive with the upper directory,
 * whose read() takes a node's bytes from the upper directory when it lives
 * there and from the archive otherwise, and whose ident() gives the
 * archive's identity for untouched nodes, so that they are never read.
 */
#ifndef WSNAP_DIFF_H
#define WSNAP_DIFF_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "error.h"
#include "index.h"
#include "tree.h"

#define WSNAP_DIFF_CHUNK (128u << 10)

/*
 * Where the bytes of a regular file come from. Two files of two sides with
 * valid, equal identities hold the same bytes (same data file, same offset,
 * same size), so the engine does not read them.
 */
struct wsnap_diff_ident {
	bool valid;
	uint64_t dev;
	uint64_t ino;
	uint64_t offset;
};

struct wsnap_diff_content {
	/*
	 * Prepares reading regular file ino (node n) of the side: *h is an
	 * opaque handle for read and close. Errors: WSNAP_IO.
	 */
	enum wsnap_status (*open)(void *ctx, uint32_t ino,
				  const struct wsnap_node *n, void **h,
				  struct wsnap_error *err);
	/*
	 * Reads exactly len bytes at off (off + len <= the node's size) into
	 * buf. A file that ends early or changed is WSNAP_IO.
	 */
	enum wsnap_status (*read)(void *ctx, void *h, void *buf, size_t len,
				  uint64_t off, struct wsnap_error *err);
	void (*close)(void *ctx, void *h);
	/* Optional (may be NULL): the identity of the bytes of ino. */
	void (*ident)(void *ctx, uint32_t ino, const struct wsnap_node *n,
		      struct wsnap_diff_ident *id);
	/*
	 * Optional (may be NULL): called once after a comparison that found
	 * no error, to confirm that what was read is still what was indexed.
	 */
	enum wsnap_status (*finish)(void *ctx, struct wsnap_error *err);
};

struct wsnap_diff_side {
	const struct wsnap_index *idx;
	const struct wsnap_diff_content *content;
	void *ctx;
};

/*
 * An archive side: idx must have been built with keep_data. Content is read
 * from the index's data descriptor at the physical offsets of its extents
 * (wsnap_index_extent; holes read as zeros). Reads that follow each other
 * through the data (an archive sorted by path, as pack writes them) are
 * served from a window of WSNAP_DIFF_WINDOW bytes read at once, so that a
 * hundred thousand small files cost a few hundred reads, not two hundred
 * thousand; other reads go straight to the descriptor. An archive that is
 * shorter than the index says, or that changed since the index was built
 * (checked at the end), is 'archive changed while being read' (WSNAP_IO).
 * label names the archive in errors. The side is valid while idx and label
 * live; release it with wsnap_diff_archive_release.
 */
#define WSNAP_DIFF_WINDOW (1u << 20)

struct wsnap_diff_archive {
	const struct wsnap_index *idx;
	const char *label;
	int fd;		/* the index's data descriptor */
	bool has_ident; /* dev/ino of the data descriptor are known */
	uint64_t dev;
	uint64_t ino;
	unsigned char *win; /* WSNAP_DIFF_WINDOW bytes once used */
	uint64_t win_off;   /* physical offset of win[0] */
	size_t win_len;	    /* valid bytes in win */
	bool seq;	    /* last_end is valid */
	uint64_t last_end;  /* physical end of the previous read */
};
void wsnap_diff_side_archive(struct wsnap_diff_side *side,
			     struct wsnap_diff_archive *arc,
			     const struct wsnap_index *idx, const char *label);
void wsnap_diff_archive_release(struct wsnap_diff_archive *arc);

/*
 * A directory side: idx from wsnap_tree_index, content read through the
 * cursor (files opened without following links; a file whose size is not
 * the indexed size, or that ends early, is 'file changed while being
 * read', WSNAP_IO).
 */
void wsnap_diff_side_tree(struct wsnap_diff_side *side,
			  const struct wsnap_index *idx,
			  struct wsnap_tree_cursor *cursor);

enum wsnap_diff_kind {
	WSNAP_DIFF_ADDED = 'A',	   /* only in B */
	WSNAP_DIFF_REMOVED = 'D',  /* only in A */
	WSNAP_DIFF_MODIFIED = 'M', /* same type, different attributes */
	WSNAP_DIFF_TYPE = 'T',	   /* type changed */
};

struct wsnap_diff_change {
	enum wsnap_diff_kind kind;
	const char *path;	    /* rel path (raw bytes) */
	const struct wsnap_node *a; /* node of side A, NULL for 'A' */
	const struct wsnap_node *b; /* node of side B, NULL for 'D' */
	uint32_t ino_a;		    /* a's ino in side A's index, or 0 */
	uint32_t ino_b;		    /* b's ino in side B's index, or 0 */
};

/* Called once per change, in bytewise path order. A non-OK return stops
 * the comparison and is returned unchanged. */
typedef enum wsnap_status (*wsnap_diff_fn)(void *ctx,
					   const struct wsnap_diff_change *c,
					   struct wsnap_error *err);

struct wsnap_diff_opts {
	bool mtime; /* a different mtime (seconds and fraction) is 'M' */
};

struct wsnap_diff_stats {
	uint64_t added;
	uint64_t removed;
	uint64_t modified;
	uint64_t type_changed;
	uint64_t files_read; /* pairs of files whose content was compared */
	uint64_t bytes_read; /* bytes read from each side for that */
};

/*
 * Compares side a (old) with side b (new), calling fn per change; fills
 * *stats (may be NULL). Returns WSNAP_OK whether or not anything differs
 * (see stats or the callback); errors: WSNAP_IO from content reads (the
 * message names the file), out of memory, or the callback's status.
 */
enum wsnap_status
wsnap_diff_run(const struct wsnap_diff_side *a, const struct wsnap_diff_side *b,
	       const struct wsnap_diff_opts *opts, wsnap_diff_fn fn, void *ctx,
	       struct wsnap_diff_stats *stats, struct wsnap_error *err);

/* Total changes counted in stats. */
uint64_t wsnap_diff_total(const struct wsnap_diff_stats *stats);

#endif
