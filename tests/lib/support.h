/* SPDX-License-Identifier: MIT */
/*
 * Test support: archives built in memory, and inputs made from them.
 *
 * Ordinary members go through libarchive's writer (pax format, so long
 * names, sub-second mtimes and non-ASCII names work); what the writer refuses
 * to produce (bad checksums, unknown typeflags, '..' names, negative or
 * overflowing sizes, truncation) is made from raw 512-byte headers with
 * ts_raw_*. Every function aborts the test (cmocka fail) on an internal
 * error, so tests need not check results.
 */
#ifndef WSNAP_TEST_SUPPORT_H
#define WSNAP_TEST_SUPPORT_H

#include <stddef.h>
#include <stdint.h>

#include "header.h"

struct ts_archive; /* a tar stream being built in memory */

/* A new empty archive (no end marker yet). */
struct ts_archive *ts_archive_new(void);

/* Members via libarchive's pax writer; mtime in seconds, nsec fraction. */
void ts_add_file(struct ts_archive *a, const char *name, unsigned mode,
		 const void *data, size_t len);
void ts_add_dir(struct ts_archive *a, const char *name, unsigned mode);
void ts_add_symlink(struct ts_archive *a, const char *name, const char *target);
void ts_add_hardlink(struct ts_archive *a, const char *name,
		     const char *target);
/* FIFO, char device etc. by libarchive file type (AE_IFIFO, AE_IFCHR...) */
void ts_add_special(struct ts_archive *a, const char *name, unsigned type);
/* Sets mtime (and nsec) for the members added after this call; until then
 * members, and raw headers always, have mtime 1700000000. */
void ts_set_mtime(struct ts_archive *a, int64_t sec, long nsec);

/*
 * Raw headers. ts_raw_header fills a ustar header block (name up to 100
 * bytes, typeflag, mode, size in octal, mtime, magic "ustar\0" "00") with a
 * correct checksum; edit fields and call ts_raw_checksum again, or not, to
 * make it wrong. Offsets and lengths of the fields are WSNAP_TAR_OFF and
 * WSNAP_TAR_LEN of header.h.
 */
void ts_raw_header(unsigned char block[WSNAP_TAR_BLOCK], const char *name,
		   char typeflag, unsigned mode, uint64_t size,
		   const char *linkname);
void ts_raw_checksum(unsigned char block[WSNAP_TAR_BLOCK]);
/* Appends raw bytes (headers, data, padding) as they are. */
void ts_add_raw(struct ts_archive *a, const void *data, size_t len);
/* Appends a raw header and its data padded to a whole block. */
void ts_add_raw_member(struct ts_archive *a, const char *name, char typeflag,
		       unsigned mode, const void *data, size_t len,
		       const char *linkname);

/*
 * Ends the archive (two zero blocks unless end_marker is 0) and returns the
 * bytes (caller frees with free()); a is freed.
 */
unsigned char *ts_archive_finish(struct ts_archive *a, int end_marker,
				 size_t *len);

/* Compresses with a libarchive write filter: "gzip", "bzip2", "xz",
 * "zstd", "lz4". Caller frees. */
unsigned char *ts_compress(const void *data, size_t len, const char *filter,
			   size_t *outlen);

/* A seekable descriptor (memfd) holding the bytes, positioned at 0. */
int ts_memfd(const void *data, size_t len);
/* A non-seekable descriptor (pipe) fed the bytes by a background thread. */
int ts_pipefd(const void *data, size_t len);
/* A fresh temporary directory (mkdtemp under $TMPDIR); caller frees the
 * string; ts_rmtree removes a tree without following symlinks. */
char *ts_tempdir(void);
/* The same, its path resolved (no symlink in it: realpath). */
char *ts_tempdir_real(void);
void ts_rmtree(const char *path);
/* Writes the bytes to dir/name; returns the malloc'd path. */
char *ts_write_file(const char *dir, const char *name, const void *data,
		    size_t len);

#endif
