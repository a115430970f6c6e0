/* SPDX-License-Identifier: MIT */
/*
 * The tar header block, named once: the byte layout of ustar, old GNU and
 * pax headers, their typeflags and magic strings, and the parsers of a
 * member's header region (header.c). Everything in the project that reads
 * or writes raw header bytes (the reader, the tests' raw headers) spells
 * offsets and lengths with WSNAP_TAR_OFF / WSNAP_TAR_LEN from here.
 *
 * Invariants:
 *  - the structs below describe layout only: no code casts a buffer to
 *    them. Blocks are unsigned char arrays indexed by the offsets the
 *    structs yield, so alignment and aliasing never come into it;
 *  - the field lengths are the definition and the offsets follow from
 *    them; the static assertions check both blocks are WSNAP_TAR_BLOCK
 *    bytes and pin the offsets the formats fix;
 *  - every field is char only, so no struct has padding.
 */
#ifndef WSNAP_TAR_HEADER_H
#define WSNAP_TAR_HEADER_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* Every header, extension body and data area is a whole number of these. */
#define WSNAP_TAR_BLOCK 512u

/* One old GNU sparse entry: where a run of data starts and its length. */
struct wsnap_tar_sparse {
	char offset[12];
	char numbytes[12];
};

/*
 * A header block (the offsets in the comments). Bytes 345..499 are the
 * POSIX prefix under a ustar magic and GNU fields under the GNU magic
 * (magic and version together "ustar  \0").
 */
struct wsnap_tar_header {
	char name[100];	    /* 0 */
	char mode[8];	    /* 100 */
	char uid[8];	    /* 108 */
	char gid[8];	    /* 116 */
	char size[12];	    /* 124 */
	char mtime[12];	    /* 136 */
	char chksum[8];	    /* 148 */
	char typeflag;	    /* 156 */
	char linkname[100]; /* 157 */
	char magic[6];	    /* 257 */
	char version[2];    /* 263 */
	char uname[32];	    /* 265 */
	char gname[32];	    /* 297 */
	char devmajor[8];   /* 329 */
	char devminor[8];   /* 337 */
	union {
		char prefix[155]; /* 345, POSIX ustar */
		struct {
			char atime[12];	   /* 345 */
			char ctime[12];	   /* 357 */
			char offset[12];   /* 369, multi-volume */
			char longnames[4]; /* 381 */
			char unused;	   /* 385 */
			struct wsnap_tar_sparse sparse[4]; /* 386 */
			char isextended;   /* 482: an extension block follows */
			char realsize[12]; /* 483: size of the sparse file */
		} gnu;			   /* 345, old GNU, 150 bytes */
	};
	char pad[12]; /* 500 */
};

/* An old GNU sparse extension block (after an 'S' header whose isextended
 * is set, and after each such block whose isextended is set). */
struct wsnap_tar_gnu_ext {
	struct wsnap_tar_sparse sparse[21]; /* 0 */
	char isextended;		    /* 504 */
	char pad[7];			    /* 505 */
};

/* Offset and length of a field of a header block: WSNAP_TAR_OFF(size),
 * WSNAP_TAR_LEN(gnu.realsize). */
#define WSNAP_TAR_OFF(field) offsetof(struct wsnap_tar_header, field)
#define WSNAP_TAR_LEN(field) sizeof(((struct wsnap_tar_header *)0)->field)
/* The same for a GNU sparse extension block. */
#define WSNAP_TAR_EXT_OFF(field) offsetof(struct wsnap_tar_gnu_ext, field)
/* Entries of one sparse entry array: the header's and an extension's. */
#define WSNAP_TAR_GNU_SPARSE_N                                                 \
	(WSNAP_TAR_LEN(gnu.sparse) / sizeof(struct wsnap_tar_sparse))
#define WSNAP_TAR_GNU_EXT_SPARSE_N                                             \
	(WSNAP_TAR_EXT_OFF(isextended) / sizeof(struct wsnap_tar_sparse))
/* Offset and length within one sparse entry. */
#define WSNAP_TAR_SPARSE_OFF(field) offsetof(struct wsnap_tar_sparse, field)
#define WSNAP_TAR_SPARSE_LEN(field)                                            \
	sizeof(((struct wsnap_tar_sparse *)0)->field)

_Static_assert(sizeof(struct wsnap_tar_sparse) == 24, "sparse entry");
_Static_assert(sizeof(struct wsnap_tar_header) == WSNAP_TAR_BLOCK, "header");
_Static_assert(sizeof(struct wsnap_tar_gnu_ext) == WSNAP_TAR_BLOCK, "ext");
/* The offsets the formats fix, checked against the lengths above. */
_Static_assert(WSNAP_TAR_OFF(typeflag) == 156, "typeflag");
_Static_assert(WSNAP_TAR_OFF(magic) == 257, "magic");
_Static_assert(WSNAP_TAR_OFF(devmajor) == 329, "devmajor");
_Static_assert(WSNAP_TAR_OFF(prefix) == 345, "prefix");
_Static_assert(WSNAP_TAR_OFF(gnu.sparse) == 386, "gnu.sparse");
_Static_assert(WSNAP_TAR_OFF(gnu.isextended) == 482, "gnu.isextended");
_Static_assert(WSNAP_TAR_OFF(gnu.realsize) == 483, "gnu.realsize");
_Static_assert(WSNAP_TAR_OFF(pad) == 500, "pad");
_Static_assert(WSNAP_TAR_EXT_OFF(isextended) == 504, "ext offsets");

/*
 * Magic and version, 8 bytes from WSNAP_TAR_OFF(magic) (GNU's "magic"
 * runs into the version field). libarchive takes "ustar" followed by
 * anything but GNU's bytes as POSIX ustar, GNU tar only "ustar\0".
 */
#define WSNAP_TAR_MAGIC_LEN   (WSNAP_TAR_LEN(magic) + WSNAP_TAR_LEN(version))
#define WSNAP_TAR_USTAR_MAGIC "ustar" /* with its NUL: the magic field */
#define WSNAP_TAR_POSIX_MAGIC                                                  \
	"ustar\0"                                                              \
	"00"
#define WSNAP_TAR_GNU_MAGIC "ustar  " /* with its NUL: 8 bytes */

/* Typeflags (the byte at WSNAP_TAR_OFF(typeflag)). */
enum wsnap_tar_typeflag {
	WSNAP_TAR_AREG = '\0', /* old regular file */
	WSNAP_TAR_REG = '0',
	WSNAP_TAR_LNK = '1', /* hardlink */
	WSNAP_TAR_SYM = '2',
	WSNAP_TAR_CHR = '3',
	WSNAP_TAR_BLK = '4',
	WSNAP_TAR_DIR = '5',
	WSNAP_TAR_FIFO = '6',
	WSNAP_TAR_CONT = '7',	      /* contiguous file: a regular file */
	WSNAP_TAR_PAX = 'x',	      /* pax extended header, next member */
	WSNAP_TAR_PAX_GLOBAL = 'g',   /* pax global header */
	WSNAP_TAR_SOLARIS_PAX = 'X',  /* Solaris' 'x' */
	WSNAP_TAR_SOLARIS_ACL = 'A',  /* Solaris ACL */
	WSNAP_TAR_GNU_LONGNAME = 'L', /* GNU long name, next member */
	WSNAP_TAR_GNU_LONGLINK = 'K', /* GNU long link target */
	WSNAP_TAR_GNU_SPARSE = 'S',   /* old GNU sparse file */
	WSNAP_TAR_GNU_VOLHDR = 'V',   /* GNU volume header */
};

/* ---- the header region (header.c) ------------------------------------- */

/* A sparse map's runs as they come (header.c, rd_run): how many, where
 * the last one ends, and whether a run with data ended inside a block. */
struct wsnap_tar_runs {
	uint64_t n;
	uint64_t end;
	bool unaligned;
};

/* What pax headers set that the reader needs: one member's 'x' header, or
 * all global 'g' headers so far. */
struct wsnap_tar_pax {
	bool has_mtime;
	int64_t mtime_sec;
	uint32_t mtime_nsec;
	bool has_path, has_linkpath, has_sparse_name;
	bool has_size;
	uint64_t size;
	/* GNU sparse: 1.0 (major, minor), 0.1 (map), 0.0 (numblocks, then
	 * offset / numbytes pairs); GNU.sparse.size goes with 0.0 and 0.1 */
	bool has_major, has_minor;
	bool has_sparse_size, has_numblocks, sparse_pending;
	uint64_t numblocks;
	unsigned n_map, n_offset, n_numbytes;
	uint64_t offset;	    /* 0.0: of the run being paired */
	struct wsnap_tar_runs runs; /* 0.0 and 0.1 */
};

/* A member's header region as wsnap_tar_scan_region found it. */
struct wsnap_tar_scan {
	const unsigned char *main;  /* the main header block */
	uint64_t stored;	    /* bytes of data (size field or pax) */
	size_t tail;		    /* region bytes after the main header */
	uint64_t map;		    /* of which a pax 1.0 sparse map */
	struct wsnap_tar_runs runs; /* its sparse map (n 0: none) */
	struct wsnap_tar_pax pax;   /* the 'x' attributes */
	unsigned n_pax, n_longname, n_longlink; /* 'x'/'X', 'L', 'K' */
};

/*
 * Walks a member's header region [p, p + len): extension headers ('x',
 * 'X', 'g', 'L', 'K') with their bodies, then the main header; after it
 * only GNU sparse extension blocks or a pax 1.0 sparse map may follow.
 * Fills *s (pointing into p) and adds the attributes of 'g' headers to
 * *global. Returns false when the region is not exactly that, or readers
 * would disagree on it (an invalid stream).
 */
bool wsnap_tar_scan_region(const unsigned char *p, size_t len,
			   struct wsnap_tar_pax *global,
			   struct wsnap_tar_scan *s);

/* True when the name field of header block h is not empty and ends in
 * '/' (what tarfile takes for a directory under typeflag NUL). */
bool wsnap_tar_name_field_is_dir(const unsigned char *h);

/* True when the n bytes at p are all zero. */
bool wsnap_tar_all_zero(const unsigned char *p, size_t n);

#endif
