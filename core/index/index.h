/* SPDX-License-Identifier: MIT */
/*
 * The member index: what a validated archive contains, built once and
 * immutable afterwards, so readers (the FUSE threads) need no locks.
 *
 * Invariants:
 *  - node numbers ("inos") run from 1 to wsnap_index_count(); 1 is the root
 *    (FUSE_ROOT_ID). Inos are assigned in bytewise order of the rel path, so
 *    the same archive and policy always give the same inos, and iterating
 *    ino 2..count visits the members sorted exactly as 'wsnap ls' prints.
 *  - every ancestor of a member exists as a directory node; ancestors that
 *    are not members are 'implicit' (WSNAP_NODE_IMPLICIT, default metadata:
 *    mode 0755, mtime 0).
 *  - modes are presented modes: sanitized (policy.md 7.6) for files, 0755
 *    for directories, 0777 for symlinks.
 *  - a regular file's data lies at 'offset' in the data stream
 *    (wsnap_index_data_fd), or is described by a sparse map.
 */
#ifndef WSNAP_INDEX_H
#define WSNAP_INDEX_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "error.h"
#include "policy.h"
#include "reader.h"

#define WSNAP_ROOT_INO 1u

enum wsnap_type {
	WSNAP_TYPE_DIR = 1,
	WSNAP_TYPE_FILE = 2,
	WSNAP_TYPE_SYMLINK = 3,
};

enum wsnap_node_flags {
	WSNAP_NODE_IMPLICIT = 1 << 0,	/* directory synthesized for a parent */
	WSNAP_NODE_MTIME_FRAC = 1 << 1, /* archive gave a sub-second mtime */
	WSNAP_NODE_SPARSE = 1 << 2,	/* data described by a sparse map */
};

/* Presented size of a directory (st_size, 'ls'). */
#define WSNAP_DIR_SIZE 4096u

/* Read-only view of one node; owned by the index. */
struct wsnap_node {
	const char *path; /* rel path, NUL-terminated; "" for the root */
	const char
		*target; /* symlink target (raw), NUL-terminated; else NULL */
	uint64_t size;	 /* file: logical size; symlink: target length;
			    dir: WSNAP_DIR_SIZE */
	uint64_t offset; /* file: data offset in the data stream; dir: how
			    many of its children are directories */
	int64_t mtime_sec;
	uint32_t mtime_nsec;
	uint32_t parent;      /* ino of the parent; the root's is itself */
	uint32_t first_child; /* private: index into the children table */
	/* one word for what only one type has (72 bytes a node, not 80) */
	union {
		uint32_t nchildren; /* directory: its entries; else 0 */
		uint32_t sparse;    /* private, file: sparse map reference */
	};
	uint32_t hash_next; /* private */
	uint32_t name_off;  /* offset of the last component within path */
	uint32_t order;	    /* position of the member in the archive (1-based;
			       0 for the root and implicit directories) */
	uint16_t mode;	    /* presented permission bits */
	uint8_t type;	    /* enum wsnap_type */
	uint8_t flags;	    /* enum wsnap_node_flags */
};

struct wsnap_index;

struct wsnap_index_stats {
	uint64_t members;  /* archive members indexed (not skipped, not root) */
	uint64_t dirs;	   /* directory nodes, implicit included, root not */
	uint64_t implicit; /* of which implicit */
	uint64_t files;
	uint64_t symlinks;
	uint64_t total_bytes;  /* sum of regular file sizes */
	uint64_t memory_bytes; /* heap held by the index */
	uint64_t stream_bytes; /* decompressed tar stream */
	uint64_t input_bytes;  /* bytes read from the input */
	const char *compression;
	/* a zstd file's seekable-format table, as the build found it (not
	 * kept in index files: NONE for a loaded index) */
	enum wsnap_zstd_table zstd_table;
};

/*
 * Reads the archive on fd (see wsnap_reader_run), enforces the whole policy
 * and builds the index. fd is not closed nor owned; with opts->keep_data the
 * index holds its own descriptor for data reads. On success *out owns the
 * index (free with wsnap_index_free). Errors: WSNAP_REJECTED with the
 * member and reason of the first failing rule, WSNAP_IO.
 */
enum wsnap_status wsnap_index_build(struct wsnap_index **out, int fd,
				    const struct wsnap_policy *policy,
				    const struct wsnap_reader_opts *opts,
				    struct wsnap_error *err);

/* Frees the index and closes its data descriptor. NULL does nothing. */
void wsnap_index_free(struct wsnap_index *idx);

/* Number of nodes, root included; inos are 1..count. */
uint32_t wsnap_index_count(const struct wsnap_index *idx);

/* The node of ino, or NULL when ino is out of range. */
const struct wsnap_node *wsnap_index_node(const struct wsnap_index *idx,
					  uint32_t ino);

/* Last path component of a node ("" for the root). */
static inline const char *wsnap_node_name(const struct wsnap_node *n)
{
	return n->path + n->name_off;
}

/* Ino of the rel path (normalized, no leading or trailing '/'), or 0. O(1). */
uint32_t wsnap_index_lookup(const struct wsnap_index *idx, const char *path,
			    size_t len);

/* Ino of the entry 'name' in directory 'parent', or 0. O(1). */
uint32_t wsnap_index_child(const struct wsnap_index *idx, uint32_t parent,
			   const char *name, size_t len);

/*
 * Children of a directory, sorted bytewise by name: *children points into
 * the index (valid while it lives); returns their number (0 for non-dirs).
 */
uint32_t wsnap_index_children(const struct wsnap_index *idx, uint32_t dir,
			      const uint32_t **children);

/*
 * How many of a directory's children are directories (its nlink is 2 more);
 * 0 for non-dirs. Counted once when the index is frozen, in the word a
 * directory does not use otherwise (offset): counted on each call, the
 * first ls of the 1,000,000-member snapshot's root read every node record
 * (its 1,000 directories' 1,000 children each), 12-14 ms.
 */
uint32_t wsnap_index_nsubdirs(const struct wsnap_index *idx, uint32_t dir);

void wsnap_index_stats(const struct wsnap_index *idx,
		       struct wsnap_index_stats *st);

/*
 * A symlink whose target, resolved as on a case-folding filesystem
 * (policy.md 4), reaches 'member' through a name that byte for byte names
 * nothing there, or only one of several members that fold alike: export
 * refuses to write it onto a destination that folds that directory (7.7).
 * The strict walk records at most one per directory; none when it did not
 * run (--allow-external-symlinks).
 */
struct wsnap_index_case_dep {
	uint32_t link;
	uint32_t member;
};

/* The case dependencies of idx: *deps points into the index; returns their
 * number. */
size_t wsnap_index_case_deps(const struct wsnap_index *idx,
			     const struct wsnap_index_case_dep **deps);

/*
 * Data access (needs opts->keep_data at build time).
 *
 * wsnap_index_data_fd: the descriptor data is read from (-1 if none). The
 * index owns it.
 *
 * wsnap_index_extent: for a regular file and a logical offset off < size,
 * fills *ext with the extent containing off: either data at a physical
 * offset of the data fd, or a hole (physical < 0) that reads as zeros;
 * length is clipped to the end of the run and of the file. Returns 0, or
 * -EINVAL (not a file, off >= size).
 *
 * wsnap_index_pread: reads up to len bytes of a regular file at off into buf
 * (holes as zeros); returns the bytes read (0 at or past the end) or a
 * negative errno: -EIO when the archive changed underneath (shorter than
 * the index says, or changed since before it was first read: device, inode,
 * size, mtime or ctime differ, fileid.h), checked both before and after
 * the bytes are read, so that what it returns is what was judged.
 *
 * wsnap_index_data_check: -EIO if the data file (or stream) changed since
 * before the build read it, else 0 (-EBADF without data).
 *
 * wsnap_index_data_spilled: whether the data descriptor is the spill file
 * this process wrote (unlinked, its own), not the archive itself, which
 * whoever may write it can change at any moment.
 */
struct wsnap_extent {
	uint64_t logical;
	uint64_t length;
	int64_t physical; /* < 0: hole */
};
int wsnap_index_data_fd(const struct wsnap_index *idx);

/*
 * Data through a stream (stream.h: a compressed archive decoded from seek
 * points, a remote object): wsnap_index_attach_stream makes idx read its
 * data from s, which it owns from then on (a descriptor attached before is
 * closed; wsnap_index_data_fd is -1 after it). wsnap_index_has_data: a
 * descriptor or a stream is attached.
 *
 * wsnap_index_read_stored: reads up to len bytes of the decoded stream at
 * physical offset phys (what extents address) from the descriptor or the
 * stream; returns the bytes read (fewer only at the end of the data) or a
 * negative errno (-EIO when the data changed). No digest is checked: a
 * caller serving the bytes calls wsnap_index_verify first.
 */
struct wsnap_stream;
void wsnap_index_attach_stream(struct wsnap_index *idx, struct wsnap_stream *s);
bool wsnap_index_has_data(const struct wsnap_index *idx);

/*
 * A compressed archive's seek points (seek.h) held by an index that has no
 * data yet: loaded from an index file or a sidecar, or recorded by a build
 * without keep_data. wsnap_index_has_seek_table: whether idx holds them.
 * wsnap_index_attach_seek_source makes idx read its data through a
 * seekable stream over src (the compressed object as stored, a local file
 * or a remote source, remote.h) from those points, a span cache of at
 * most cache_bytes (0: the default): a read decodes only the spans it
 * touches, and fetches only their compressed bytes. Takes over src, also
 * on failure. Returns 0, -ENOENT (idx holds no seek points), -EINVAL (the
 * points are not for idx's stream, or not for src's size), or -ENOMEM.
 */
struct wsnap_source;
bool wsnap_index_has_seek_table(const struct wsnap_index *idx);
int wsnap_index_attach_seek_source(struct wsnap_index *idx,
				   struct wsnap_source *src,
				   size_t cache_bytes);
/* What a command makes of the rc of wsnap_index_attach_seek_source (or
 * wsnap_index_attach_seekable): WSNAP_OK, or an I/O error in err. */
enum wsnap_status wsnap_index_seek_status(int rc, struct wsnap_error *err);
ssize_t wsnap_index_read_stored(const struct wsnap_index *idx, void *buf,
				size_t len, uint64_t phys);
int wsnap_index_extent(const struct wsnap_index *idx, uint32_t ino,
		       uint64_t off, struct wsnap_extent *ext);
ssize_t wsnap_index_pread(const struct wsnap_index *idx, uint32_t ino,
			  void *buf, size_t len, uint64_t off);
int wsnap_index_data_check(const struct wsnap_index *idx);
bool wsnap_index_data_spilled(const struct wsnap_index *idx);

/* The most decoded bytes the span cache of idx's data keeps, when it is a
 * compressed archive read in place (0: the default, seek.h
 * wsnap_seek_cache_default); does nothing for any other data. */
void wsnap_index_set_span_cache(struct wsnap_index *idx, size_t bytes);

/*
 * Data digests (an index built from a sidecar, indexfile.h): checks that
 * the stored bytes [phys, phys + len) of regular file ino, as the data
 * descriptor holds them now, are those the sidecar's digests describe, by
 * reading and hashing every chunk (at most WSNAP_SIDECAR_CHUNK bytes of the
 * member) they touch that was not verified before; verified chunks are
 * remembered (any thread). Single-flight: a thread that needs a chunk
 * another is hashing waits for that result instead of hashing it too. Returns 0
 * (also for an index without digests), -EIO on a mismatch or short read,
 * -ENOMEM, or -errno of the read. wsnap_index_pread verifies by itself; a
 * caller reading the data descriptor directly calls this first.
 */
int wsnap_index_verify(const struct wsnap_index *idx, uint32_t ino,
		       uint64_t phys, uint64_t len);

/* Whether reads of idx are checked against digests (wsnap_index_verify). */
bool wsnap_index_has_digests(const struct wsnap_index *idx);

/* How many chunks wsnap_index_verify has read and hashed so far (each
 * chunk once when all succeed, however many threads ask for it). */
uint64_t wsnap_index_digest_reads(const struct wsnap_index *idx);

#endif
