/* SPDX-License-Identifier: MIT */
/*
 * Index files (doc/index-format.md): a validated index written to disk and
 * loaded again without reading the archive.
 *
 *  - A cache entry (indexfile.c) is the frozen index itself, in the native
 *    layout of struct wsnap_node, for the same build of wsnap on the same
 *    machine: loading maps the file (MAP_PRIVATE) and turns the stored
 *    offsets into pointers in one linear pass that also checks every
 *    offset, so a damaged entry that passes its checksum still cannot make
 *    a read leave the mapping. It is keyed by the archive's identity, the
 *    policy and the format version, all stored in full inside it.
 *  - A sidecar (sidecar.c) comes from elsewhere and is hostile: it holds
 *    the raw members as the reader gave them, which are judged again by
 *    the policy engine under the caller's policy, and SHA-256 digests of
 *    the member data that reads check before serving.
 */
#ifndef WSNAP_INDEXFILE_H
#define WSNAP_INDEXFILE_H

#include <stdbool.h>
#include <stdint.h>

#include "error.h"
#include "fileid.h"
#include "index.h"
#include "policy.h"
#include "reader.h"

/* Length of a cache entry's file name: 32 hex digits and ".idx". */
#define WSNAP_INDEXFILE_NAME_LEN 36

/* The cache entry's file name for (id, policy): a SipHash of the whole key
 * (the key itself is checked inside the entry). */
void wsnap_indexfile_name(const struct wsnap_fileid *id,
			  const struct wsnap_policy *policy,
			  char out[WSNAP_INDEXFILE_NAME_LEN + 1]);

/*
 * Writes idx as a cache entry for (id, policy) to fd, a new empty regular
 * file opened for reading and writing. Errors: WSNAP_IO (write, no space,
 * out of memory).
 */
enum wsnap_status wsnap_indexfile_write(int fd, const struct wsnap_index *idx,
					const struct wsnap_fileid *id,
					const struct wsnap_policy *policy,
					struct wsnap_error *err);

/*
 * Loads the cache entry on fd (not closed; the mapping stays valid after
 * it is closed) when it is intact and its key is (id, policy) and this
 * format; *out then owns the index, which has no data descriptor yet
 * (wsnap_index_attach_archive). Otherwise WSNAP_IO with the reason the
 * entry cannot be used in err ("truncated", "checksum mismatch", "key
 * mismatch", ...): nothing of it is used.
 */
enum wsnap_status wsnap_indexfile_load(struct wsnap_index **out, int fd,
				       const struct wsnap_fileid *id,
				       const struct wsnap_policy *policy,
				       struct wsnap_error *err);

/*
 * Gives an index loaded from an index file its data: a dup of archive_fd
 * for an uncompressed archive, else the archive decompressed again into a
 * spill file in opts->tmpdir (its members are not judged again: the index
 * already holds the outcome), whose size must be the stream size the index
 * records. Errors: WSNAP_IO ('archive changed since it was indexed'),
 * WSNAP_REJECTED (the stream no longer reads).
 */
enum wsnap_status
wsnap_index_attach_archive(struct wsnap_index *idx, int archive_fd,
			   const struct wsnap_reader_opts *opts,
			   struct wsnap_error *err);

/* Sidecars (sidecar.c). */

/* The name a sidecar is published under: the archive's with this added. */
#define WSNAP_SIDECAR_SUFFIX ".wsnapidx"

/* Data digests cover chunks of at most this many bytes of one member. */
#define WSNAP_SIDECAR_CHUNK (1u << 20)

/*
 * Validates the archive on archive_fd under policy (as wsnap_index_build,
 * sequentially) and writes the sidecar to out_fd (a new empty regular
 * file): every member as the reader gave it, the policy, what the index
 * holds, and the SHA-256 of every chunk of member data. Errors: those of
 * wsnap_index_build, WSNAP_IO writing.
 */
enum wsnap_status wsnap_sidecar_write(int out_fd, int archive_fd,
				      const struct wsnap_policy *policy,
				      const struct wsnap_reader_opts *opts,
				      struct wsnap_error *err);

struct wsnap_sidecar;

/*
 * Reads the sidecar on fd (whole, into memory: the file may change while
 * it is used) and checks its container. path names it in messages.
 * Errors: WSNAP_IO ('invalid index file (...)', read errors).
 */
enum wsnap_status wsnap_sidecar_read(struct wsnap_sidecar **out, int fd,
				     const char *path, struct wsnap_error *err);

/* What the sidecar says of its archive: the file's size, its compression
 * ("none", "gzip", ...) and the size of its tar stream. */
uint64_t wsnap_sidecar_archive_size(const struct wsnap_sidecar *sc);
const char *wsnap_sidecar_compression(const struct wsnap_sidecar *sc);
uint64_t wsnap_sidecar_stream_bytes(const struct wsnap_sidecar *sc);

/*
 * Builds the index the sidecar describes: every member goes through the
 * policy engine under policy, exactly as the reader's would; each data
 * extent must lie inside the data stream (stream_bytes long), in archive
 * order, without overlap; under the policy it was written with, the index
 * must be the one the sidecar claims. The index carries the data digests
 * (wsnap_index_verify). Errors: WSNAP_REJECTED (the policy's verdict),
 * WSNAP_IO ('invalid index file (...)').
 */
enum wsnap_status wsnap_sidecar_index(const struct wsnap_sidecar *sc,
				      const struct wsnap_policy *policy,
				      uint64_t stream_bytes,
				      struct wsnap_index **out,
				      struct wsnap_error *err);

void wsnap_sidecar_free(struct wsnap_sidecar *sc);

#endif
