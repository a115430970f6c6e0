/* SPDX-License-Identifier: MIT */
/*
 * The container of index files (doc/index-format.md), shared by the cache
 * entries (indexfile.c) and the sidecars (sidecar.c). Internal to core.
 *
 * A file is a 64-byte header, a table of sections (type, offset, length,
 * checksum: 32 bytes each) and the sections, laid back to back after the
 * table, each a multiple of 8 bytes long, the last ending at the end of the
 * file. Every integer of the header and the table is little-endian. The
 * header's checksum covers the header (with that field zero) and the
 * table; each section's checksum covers the section: so every byte of the
 * file is covered, and a later version can verify one section alone (seek
 * points loaded when first needed). Checksums are XXH3-64 (libxxhash):
 * they catch a truncated or damaged file, not an attacker, who could
 * recompute them.
 */
#ifndef WSNAP_IXF_H
#define WSNAP_IXF_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define IXF_MAGIC	 "WSNAPIDX"
#define IXF_VERSION	 3u /* 3: seek tables; 2: case dependencies */
#define IXF_HEADER_SIZE	 64u
#define IXF_SECTION_SIZE 32u
#define IXF_MAX_SECTIONS 32u

enum ixf_kind {
	IXF_KIND_ENTRY = 1,   /* a cache entry: native layout, abi tagged */
	IXF_KIND_SIDECAR = 2, /* a sidecar: portable, hostile input */
};

/* Section types. Unknown ones are skipped by a reader (checksum still
 * verified), so that later versions can add sections (seek points). */
enum ixf_type {
	IXF_META = 1,	       /* fixed fields, little-endian u64 each */
	IXF_POLICY = 2,	       /* wsnap_policy_encode() bytes */
	IXF_NODES = 3,	       /* entry: struct wsnap_node records */
	IXF_CHILDREN = 4,      /* entry: u32 */
	IXF_BUCKETS = 5,       /* entry: u32 */
	IXF_PATHS = 6,	       /* entry: NUL-terminated paths */
	IXF_TARGETS = 7,       /* entry: NUL-terminated symlink targets */
	IXF_RUNS = 8,	       /* entry: struct wsnap_index_run */
	IXF_SPARSE = 9,	       /* entry: struct wsnap_index_sparse */
	IXF_MEMBERS = 10,      /* sidecar: raw member records */
	IXF_STRINGS = 11,      /* sidecar: names and link names */
	IXF_MRUNS = 12,	       /* sidecar: sparse runs of the members */
	IXF_DIGESTS = 13,      /* sidecar: SHA-256 of each data chunk */
	IXF_CASE_DEPS = 14,    /* entry: struct wsnap_index_case_dep */
	IXF_SEEK = 15,	       /* both: a seek table's header and points */
	IXF_SEEK_WINDOWS = 16, /* both: its stored windows */
};

/* A sidecar's member record (IXF_MEMBERS): these little-endian u64 fields.
 * Names and link names are offsets into IXF_STRINGS; a member's sparse
 * runs follow those of the members before it in IXF_MRUNS. */
enum ixf_rec_field {
	IXF_R_NAME_OFF,
	IXF_R_NAME_LEN,
	IXF_R_TYPE, /* enum wsnap_raw_type */
	IXF_R_TYPEFLAG,
	IXF_R_MODE,
	IXF_R_LINK_OFF, /* UINT64_MAX: none */
	IXF_R_LINK_LEN,
	IXF_R_SIZE,
	IXF_R_DATA_OFFSET,
	IXF_R_MTIME_SEC,
	IXF_R_MTIME_NSEC,
	IXF_R_NSPARSE,
	IXF_R_NFIELDS
};

#define IXF_REC_SIZE (IXF_R_NFIELDS * 8u)

struct ixf_section {
	uint32_t type;
	uint64_t offset;
	uint64_t length;
	uint64_t checksum;
};

/* A parsed container over a buffer the caller keeps. */
struct ixf_view {
	const unsigned char *base;
	uint64_t len;
	uint32_t kind;
	uint32_t abi;
	uint32_t nsections;
	struct ixf_section sec[IXF_MAX_SECTIONS];
};

static inline uint64_t ixf_get64(const unsigned char *p)
{
	uint64_t v = 0;
	int i;

	for (i = 7; i >= 0; i--)
		v = v << 8 | p[i];
	return v;
}

static inline void ixf_put64(unsigned char *p, uint64_t v)
{
	int i;

	for (i = 0; i < 8; i++)
		p[i] = (unsigned char)(v >> (8 * i));
}

/*
 * Checks the container in buf[0..len): magic, version, kind, the table,
 * the tiling of the sections and every checksum. Returns true with *v
 * filled, else false with *why saying what is wrong (a static string).
 */
bool ixf_parse(struct ixf_view *v, const void *buf, uint64_t len, uint32_t kind,
	       const char **why);

/* The section of type t, or NULL. */
const struct ixf_section *ixf_find(const struct ixf_view *v, uint32_t t);

/* Pointer to a section's bytes. */
static inline const unsigned char *ixf_data(const struct ixf_view *v,
					    const struct ixf_section *s)
{
	return v->base + s->offset;
}

/*
 * Writing: sections are streamed in order to fd (a regular file, written
 * from offset 0), then the header and the table. ixf_writer_* record the
 * first error (an errno) in w->error and do nothing after it.
 */
struct ixf_writer {
	int fd;
	uint64_t off; /* where the next byte goes */
	void *hash;   /* XXH3 state of the open section */
	unsigned char *buf;
	size_t used;
	uint32_t n;
	struct ixf_section sec[IXF_MAX_SECTIONS];
	int error;
};

/* Returns 0 or ENOMEM. nsections: how many sections will be written. */
int ixf_writer_init(struct ixf_writer *w, int fd, uint32_t nsections);
void ixf_writer_begin(struct ixf_writer *w, uint32_t type);
void ixf_writer_put(struct ixf_writer *w, const void *p, size_t len);
/* Pads the open section to a multiple of 8 with zeros and closes it. */
void ixf_writer_end(struct ixf_writer *w);
/* Writes header and table; returns 0 or the first errno. Frees w's
 * buffers in every case. */
int ixf_writer_finish(struct ixf_writer *w, uint32_t kind, uint32_t abi);
/* Frees w's buffers (after an error, instead of finish). */
void ixf_writer_release(struct ixf_writer *w);

/* Writes a whole section: the bytes, or n u64 little-endian. */
void ixf_writer_section(struct ixf_writer *w, uint32_t type, const void *p,
			size_t len);
void ixf_writer_u64s(struct ixf_writer *w, uint32_t type, const uint64_t *f,
		     size_t n);

/* The compressions the reader names (reader.h), by their code in index
 * files. */
#define IXF_NCOMPRESSIONS 6
extern const char *const ixf_compressions[IXF_NCOMPRESSIONS];

/* The code of a compression's name (0, "none", for an unknown one). */
uint64_t ixf_compression_code(const char *name);

struct wsnap_policy;

/* The policy's wsnap_policy_encode bytes, malloc'd; NULL when out of
 * memory. */
unsigned char *ixf_policy_bytes(const struct wsnap_policy *p, size_t *len);

/*
 * The seek table of the file in v (IXF_SEEK and IXF_SEEK_WINDOWS), checked
 * (wsnap_seek_table_decode) against the archive's size and the stream's:
 * 0 and *out (NULL when the file has none), or -1 with *why (static).
 */
struct wsnap_seek_table;
int wsnap_ixf_seek_load(const struct ixf_view *v, uint64_t archive_size,
			uint64_t stream_size, struct wsnap_seek_table **out,
			const char **why);
/* The same, the table's windows left in v's bytes, not copied
 * (WSNAP_SEEK_BORROW_WINDOWS): for a file mapped read only that outlives
 * the table (a cache entry, whose index frees its stream before its
 * mapping), whose pages the table drops once used
 * (WSNAP_SEEK_WINDOWS_IN_FILE_MAP): v's bytes must be such a mapping. */
int wsnap_ixf_seek_map(const struct ixf_view *v, uint64_t archive_size,
		       uint64_t stream_size, struct wsnap_seek_table **out,
		       const char **why);

/*
 * Recomputes every checksum of the container in buf[0..len) in place (for
 * tests and the fuzz target, which change bytes and still want the
 * structure checked). Does nothing when the table cannot be read.
 */
void ixf_seal(void *buf, uint64_t len);

#endif
