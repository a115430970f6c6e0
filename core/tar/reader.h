/* SPDX-License-Identifier: MIT */
/*
 * The tar reader: walks every header of an archive once (plain members by
 * itself, every other member through libarchive: reader.c) and hands each
 * member to a callback as a struct wsnap_raw_member. It knows
 * tar and compression, not the policy: stream rules (policy.md section 5,
 * first two bullets, and the last) are enforced here, everything else by the
 * callback (the index builder).
 *
 * Invariants:
 *  - any status from libarchive other than ARCHIVE_OK / ARCHIVE_EOF ends the
 *    read as '<tar>': 'invalid tar stream' (no ARCHIVE_RETRY resync);
 *  - the raw typeflag of each member's main header is read from the bytes of
 *    the stream itself, never guessed from libarchive's file type;
 *  - a compressed stream is read to its very end, so a bad trailer fails,
 *    unless more than WSNAP_READER_MAX_TRAILING_BYTES follow the
 *    end-of-archive marker, which fails too;
 *  - memory is bounded by WSNAP_READER_MAX_HEADER_BYTES and the decoders'
 *    limits (WSNAP_READER_XZ_MEMLIMIT, WSNAP_READER_ZSTD_WINDOW_MAX)
 *    whatever the input;
 *  - for an uncompressed, seekable input file data is skipped by seeking:
 *    the cost grows with the number of members, not the bytes.
 */
#ifndef WSNAP_READER_H
#define WSNAP_READER_H

#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "error.h"

/* Most bytes of extended headers (pax, GNU L/K, sparse maps) of one member. */
#define WSNAP_READER_MAX_HEADER_BYTES (4u << 20)

/*
 * Most bytes of the decoded stream after the end-of-archive marker (GNU tar
 * and tarfile pad to 10 KiB records); beyond them the stream is invalid.
 */
#define WSNAP_READER_MAX_TRAILING_BYTES (4u << 20)

/*
 * Memory the xz decoder may use (liblzma's memlimit): LZMA2 dictionaries up
 * to 128 MiB, twice what xz -9 uses. zstd frames may ask for windows up to
 * WSNAP_READER_ZSTD_WINDOW_MAX (libzstd's default limit, which libarchive
 * keeps). A stream beyond either is invalid.
 */
#define WSNAP_READER_XZ_MEMLIMIT     ((128u + 1u) << 20)
#define WSNAP_READER_ZSTD_WINDOW_MAX (128u << 20)

enum wsnap_raw_type {
	WSNAP_RAW_FILE,	    /* typeflag '0', NUL, '7', GNU sparse 'S' */
	WSNAP_RAW_DIR,	    /* '5' (and NUL with a trailing '/', as tarfile) */
	WSNAP_RAW_SYMLINK,  /* '2' */
	WSNAP_RAW_HARDLINK, /* '1' */
	WSNAP_RAW_OTHER,    /* devices, FIFOs, unknown typeflags */
};

/* One run of a sparse file: logical offset and length; runs are stored
 * back to back from the member's data offset. */
struct wsnap_sparse_run {
	uint64_t offset;
	uint64_t length;
};

struct wsnap_raw_member {
	/* member name (policy.md section 1) as the reader reports it: raw
	 * bytes, NUL-terminated, not normalized (trailing '/' kept) */
	const char *name;
	size_t name_len;
	enum wsnap_raw_type type;
	char typeflag; /* raw typeflag of the main header */
	/* symlink or hardlink target, raw, NUL-terminated; NULL otherwise */
	const char *linkname;
	size_t linkname_len;
	uint32_t mode; /* permission bits of the header (07777) */
	/* regular file: logical size (a sparse file's full size); else 0 */
	uint64_t size;
	/* offset of the member's data in the decompressed stream */
	uint64_t data_offset;
	/*
	 * Bytes of the member's headers beyond its main header block:
	 * extension headers (pax 'x' and 'g', GNU 'L' and 'K') with their
	 * blocks and padding, GNU sparse extension blocks, a pax 1.0 sparse
	 * map. At most WSNAP_READER_MAX_HEADER_BYTES - 512. What the stream
	 * holds (and a spill file stores) for the member besides its header
	 * block and its data.
	 */
	uint64_t ext_bytes;
	int64_t mtime_sec;
	uint32_t mtime_nsec;
	/* sparse files only: runs sorted, non-overlapping, within size,
	 * none empty, except that a file of holes only has one run
	 * {size, 0} (so nsparse > 0 marks a sparse file); NULL / 0 for
	 * ordinary files */
	const struct wsnap_sparse_run *sparse;
	size_t nsparse;
};

/*
 * Called once per member in archive order. The member and everything it
 * points to is valid only during the call. A non-OK return stops the read
 * and is returned by wsnap_reader_run unchanged (err as the callback set it).
 */
typedef enum wsnap_status (*wsnap_reader_fn)(void *ctx,
					     const struct wsnap_raw_member *m,
					     struct wsnap_error *err);

/* Called now and then with the position reached in the input (bytes read,
 * or skipped over in a plain file) and its total size (0 when unknown, as
 * for a pipe); last with done == total for a file. */
typedef void (*wsnap_progress_fn)(void *ctx, uint64_t done, uint64_t total);

struct wsnap_reader_opts {
	/*
	 * When true, make member data readable after the read: a plain
	 * (uncompressed) seekable file is used in place; anything else
	 * (compressed, or a pipe) is written, decompressed, to an unlinked
	 * temporary file in tmpdir while it is read ("spill").
	 */
	bool keep_data;
	const char *tmpdir; /* NULL: $TMPDIR, else /tmp */
	wsnap_progress_fn progress;
	void *progress_ctx;
	/*
	 * wsnap_index_build only: judge the members on the calling thread
	 * instead of the two-thread pipeline (same outcome). For fuzz
	 * targets: under the sanitizers every thread started leaves a few
	 * hundred bytes of bookkeeping behind, which adds up over millions
	 * of inputs.
	 */
	bool sequential;
	/*
	 * When not NULL, checked before each chunk of the stream is read or
	 * decoded: once another thread sets it, the read stops with WSNAP_IO
	 * (ECANCELED). wsnap_index_build's pipeline sets it when the builder
	 * has failed, so that no more of the stream is decoded for nothing
	 * (a rejected member may declare 100 GiB of bzip2 zeros).
	 */
	const atomic_bool *cancel;
	/*
	 * Hand back the restart points of a regular xz or zstd file
	 * (result.spans, which the caller then frees).
	 */
	bool want_spans;
	/*
	 * Record no seek points: a compressed stream that keep_data needs is
	 * spilled even where it could be read in place (the fallback when a
	 * table cannot be used).
	 */
	bool no_seek;
	/*
	 * Record gzip's seek points also when the input is not a regular
	 * file (a remote object copied through a pipe, whose source the
	 * caller then reads them from), without keep_data only: nothing of
	 * a pipe can be read in place.
	 */
	bool seek_stream;
	/* With keep_data, a compressed archive read in place: the most
	 * decoded bytes its span cache keeps (0: WSNAP_SEEK_CACHE_DEFAULT,
	 * 64 MiB) */
	size_t span_cache_bytes;
	/*
	 * Tests and the differential fuzz target only: read every header
	 * through libarchive (the oracle the walker is checked against)
	 * instead of walking plain members ourselves (same outcome). The
	 * environment variable WSNAP_READER=libarchive does the same for a
	 * whole process.
	 */
	bool libarchive_only;
};

/* The zstd seekable format's seek table at the end of a zstd file. */
enum wsnap_zstd_table {
	WSNAP_ZSTD_TABLE_NONE = 0, /* none (or not a zstd file) */
	WSNAP_ZSTD_TABLE_AGREES,   /* it lists exactly the frames decoded */
	/* it breaks the format, or disagrees with the frames: ignored, the
	 * frames decoded are the restart points */
	WSNAP_ZSTD_TABLE_IGNORED,
};

struct wsnap_span;
struct wsnap_seek_table;
struct wsnap_reader_result {
	/*
	 * With keep_data: a descriptor (owned by the caller, O_CLOEXEC) from
	 * which member data is read at data_offset: a dup of the input for a
	 * plain seekable archive, the spill file otherwise. -1 without
	 * keep_data.
	 */
	int data_fd;
	bool spilled;		 /* data_fd is a spill file */
	uint64_t stream_bytes;	 /* size of the decompressed stream read */
	uint64_t input_bytes;	 /* bytes read from the input */
	const char *compression; /* "none", "gzip", ... (static string) */
	/*
	 * Regular xz and zstd files, with want_spans: the restart points
	 * found (frames.h), owned by the caller (free()); NULL / 0 when
	 * there are none, or too many. seekable: wsnap_spans_seekable holds for
	 * them, so the stream can be read in place. pieces: frames or blocks
	 * decoded.
	 */
	struct wsnap_span *spans;
	size_t nspans;
	bool seekable;
	uint64_t pieces;
	enum wsnap_zstd_table zstd_table;
	/*
	 * A compressed regular file (gzip; xz and zstd with restart points)
	 * decoded with seek points: the
	 * table (owned by the caller, wsnap_seek_table_free; seek.h), else
	 * NULL. With keep_data, data_fd is then a dup of the input (the
	 * compressed archive, not the stream) and nothing was spilled; when
	 * no table could be kept there, data_fd is -1 and the caller spills
	 * with no_seek (wsnap_index_build does).
	 */
	struct wsnap_seek_table *seek;
};

/*
 * Reads the archive from fd (not closed; position irrelevant for a seekable
 * regular file, current position for a pipe) and calls fn per member.
 * Errors: WSNAP_REJECTED ('<tar>' invalid tar stream, or the callback's),
 * WSNAP_IO (read error, spill file cannot be written).
 */
enum wsnap_status wsnap_reader_run(int fd, const struct wsnap_reader_opts *opts,
				   wsnap_reader_fn fn, void *ctx,
				   struct wsnap_reader_result *result,
				   struct wsnap_error *err);

/*
 * Whether the warning libarchive's handle a just returned (ARCHIVE_WARN) is
 * the one a read in the "C" locale gives for a name it could not convert
 * (a UTF-8 pax path, errno EILSEQ): the entry then holds the raw bytes,
 * which is what wsnap wants. Every other warning is an error. For a second
 * libarchive reader over the same stream (strip-prefix's copy).
 */
struct archive;
bool wsnap_reader_charset_warning(struct archive *a);

#endif
