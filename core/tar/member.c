/* SPDX-License-Identifier: MIT */
/*
 * Members from their headers: for each entry libarchive returns, the walk
 * of its raw header region (header.c) and libarchive's entry are joined
 * into one struct wsnap_raw_member (reader.h) and handed to the callback.
 *
 * Invariants:
 *  - the type comes from the raw typeflag of the main header as walked,
 *    never from libarchive's file type;
 *  - the region walked is exactly [header position, data offset) as
 *    libarchive read it, and must still be whole in the window;
 *  - the stored bytes come from the walk, and libarchive must agree with
 *    them (a sparse map adds up to them, other data is skipped by them);
 *  - what libarchive, tarfile and GNU tar would read as different members
 *    is an invalid stream: a sparse map libarchive trimmed, a regular
 *    file whose name ends in '/' (a directory to libarchive and GNU tar),
 *    a symlink without a target, and data that one of them skips and
 *    another reads as headers (rd_data_agree);
 *  - after each member's data, libarchive must be where tarfile would be:
 *    at data_offset plus the data tarfile skips (rd_tarfile_skip), padded
 *    to a block. Before the callback, the entry's size says what
 *    libarchive will skip (regular files aside); wsnap_reader_members
 *    checks the position itself after the skip;
 *  - the member and the sparse runs it points to live in the reader's
 *    state and are valid only during the callback; the runs buffer grows
 *    to at most RD_MAX_SPARSE_RUNS.
 */
#include "tar_private.h"

#include "archive_dl.h"
#include <errno.h>
#include <stdlib.h>
#include <string.h>

/* Most runs of one sparse file (a map needs more header bytes than this
 * allows anyway; the bound keeps the allocation obvious). */
#define RD_MAX_SPARSE_RUNS (WSNAP_READER_MAX_HEADER_BYTES / 8)

static enum wsnap_raw_type rd_classify(char tf, const unsigned char *h)
{
	switch (tf) {
	case WSNAP_TAR_REG:
	case WSNAP_TAR_CONT:
	case WSNAP_TAR_GNU_SPARSE:
		return WSNAP_RAW_FILE;
	case WSNAP_TAR_AREG:
		/* as Python's tarfile: an old-style regular file whose name
		 * field ends in '/' is a directory (rd_member refuses a
		 * final name ending in '/' otherwise) */
		if (wsnap_tar_name_field_is_dir(h))
			return WSNAP_RAW_DIR;
		return WSNAP_RAW_FILE;
	case WSNAP_TAR_DIR:
		return WSNAP_RAW_DIR;
	case WSNAP_TAR_SYM:
		return WSNAP_RAW_SYMLINK;
	case WSNAP_TAR_LNK:
		return WSNAP_RAW_HARDLINK;
	default:
		return WSNAP_RAW_OTHER;
	}
}

/*
 * The sparse map of a regular file: sorted, non-overlapping runs within
 * the size whose lengths add up to the stored data. libarchive drops runs
 * it finds invalid, so a map it trimmed no longer adds up and is refused.
 * The raw map (rr, from the header region) must end at the size: GNU tar
 * extracts a sparse file up to the end of its last run only (a run of
 * length 0 at the size marks a trailing hole), libarchive and tarfile to
 * its size. libarchive reports no map for one run over the whole file.
 */
static bool rd_sparse_map(struct wsnap_reader *r, struct archive_entry *e,
			  uint64_t size, uint64_t data_len,
			  const struct wsnap_tar_runs *rr,
			  struct wsnap_raw_member *m)
{
	la_int64_t off, len;
	uint64_t end = 0, sum = 0;
	size_t n = 0;
	int count = archive_entry_sparse_reset(e);

	if (rr->n && rr->end != size)
		return false;
	if (count <= 0)
		return data_len == size; /* not sparse after all */
	while (archive_entry_sparse_next(e, &off, &len) == ARCHIVE_OK) {
		if (off < 0 || len < 0 || (uint64_t)off < end ||
		    (uint64_t)len > size ||
		    (uint64_t)off > size - (uint64_t)len)
			return false;
		end = (uint64_t)off + (uint64_t)len;
		sum += (uint64_t)len; /* <= end <= size: no overflow */
		if (len == 0)
			continue;
		if (n == r->runs_cap) {
			size_t cap = r->runs_cap ? r->runs_cap * 2 : 16;
			struct wsnap_sparse_run *p;

			if (cap > RD_MAX_SPARSE_RUNS)
				return false;
			p = realloc(r->runs, cap * sizeof(*p));
			if (!p) {
				wsnap_reader_io(r, ENOMEM, "out of memory");
				return false;
			}
			r->runs = p;
			r->runs_cap = cap;
		}
		r->runs[n].offset = (uint64_t)off;
		r->runs[n].length = (uint64_t)len;
		n++;
	}
	if (sum != data_len)
		return false;
	if (n == 0) {
		/* all holes: one empty run keeps the file marked sparse */
		if (!r->runs_cap) {
			r->runs = malloc(sizeof(*r->runs));
			if (!r->runs) {
				wsnap_reader_io(r, ENOMEM, "out of memory");
				return false;
			}
			r->runs_cap = 1;
		}
		r->runs[0].offset = size;
		r->runs[0].length = 0;
		n = 1;
	}
	m->sparse = r->runs;
	m->nsparse = n;
	return true;
}

/* A device or FIFO: a type tarfile knows and never skips data for. */
static bool rd_is_special(char tf)
{
	return tf == WSNAP_TAR_CHR || tf == WSNAP_TAR_BLK ||
	       tf == WSNAP_TAR_FIFO;
}

/*
 * Data behind a member that is not a regular file, where the readers part
 * (libarchive 3.6.2, Python 3.11's tarfile, GNU tar 1.34, each tried):
 *  - tarfile skips data only after regular files and unknown typeflags;
 *  - GNU tar extracting never skips it; GNU tar listing skips it by the
 *    size for every type but '5', for a hardlink only by a pax size;
 *  - libarchive skips it by a pax size, and a hardlink's by the size
 *    field too in a pax archive or before a block that is no header.
 * So a directory ('5') and a hardlink may carry any size field (CPython's
 * testtar.tar has a directory with one: every reader reads on from the
 * next block) but no non-zero pax size; a symlink, a device, a FIFO and
 * a typeflag NUL directory store nothing at all. What libarchive skipped
 * is checked after the member (rd_tarfile_skip).
 */
static bool rd_data_agree(char tf, enum wsnap_raw_type type,
			  const struct wsnap_tar_scan *s)
{
	bool pax_data = s->pax.has_size && s->pax.size;

	switch (type) {
	case WSNAP_RAW_DIR:
		return tf == WSNAP_TAR_DIR ? !pax_data : s->stored == 0;
	case WSNAP_RAW_HARDLINK:
		return !pax_data;
	case WSNAP_RAW_SYMLINK:
		return s->stored == 0;
	case WSNAP_RAW_OTHER:
		return !rd_is_special(tf) || s->stored == 0;
	default:
		return true;
	}
}

/*
 * The data tarfile skips after the member's header: a regular file's
 * stored bytes (but a pax 1.0 map, which libarchive read with the header),
 * the size of an unknown typeflag, nothing for the other types it knows.
 */
static uint64_t rd_tarfile_skip(char tf, enum wsnap_raw_type type,
				const struct wsnap_tar_scan *s)
{
	if (type == WSNAP_RAW_FILE)
		return s->stored - s->map;
	if (type == WSNAP_RAW_OTHER && !rd_is_special(tf))
		return s->stored;
	return 0;
}

/* The only libarchive warning accepted (reader.h): a name it could not
 * convert to the (C) locale (errno EILSEQ: libarchive's
 * ARCHIVE_ERRNO_FILE_FORMAT on Linux), which leaves the raw bytes in the
 * entry. */
bool wsnap_reader_charset_warning(struct archive *a)
{
	static const char mid[] = " can't be converted from ";
	static const char tail[] = " to current locale.";
	const char *msg = archive_error_string(a);
	size_t len;

	if (!msg || archive_errno(a) != EILSEQ)
		return false;
	len = strlen(msg);
	return strstr(msg, mid) && len > sizeof(tail) &&
	       memcmp(msg + len - (sizeof(tail) - 1), tail, sizeof(tail) - 1) ==
		       0;
}

/* A member that libarchive, tarfile and GNU tar would read differently. */
static enum wsnap_status rd_differ(struct wsnap_reader *r, const char *name,
				   const char *what)
{
	return wsnap_reader_invalid(r,
				    "tar readers would read member '%.*s' "
				    "differently: %s",
				    WSNAP_READER_NAME_MAX, name, what);
}

/* What differs for data behind a member that is no regular file. */
static const char *rd_data_what(enum wsnap_raw_type type)
{
	switch (type) {
	case WSNAP_RAW_DIR:
		return "data on a directory";
	case WSNAP_RAW_HARDLINK:
		return "data on a hardlink";
	case WSNAP_RAW_SYMLINK:
		return "data on a symlink";
	default:
		return "data on a device or FIFO, or a size tarfile does not "
		       "skip";
	}
}

enum wsnap_status wsnap_reader_check_member(
	struct wsnap_reader *r, const struct wsnap_tar_scan *s,
	const char *name, int64_t esize, int64_t hp, int64_t fb,
	struct wsnap_raw_member *m, uint64_t *data_end, bool *have_mtime)
{
	uint64_t skip;
	char tf;

	if (!name || esize < 0 ||
	    s->stored > (uint64_t)INT64_MAX - (uint64_t)fb)
		return wsnap_reader_invalid(
			r, "no name or a bad size in the header at byte %lld",
			(long long)hp);

	memset(m, 0, sizeof(*m));
	tf = (char)s->main[WSNAP_TAR_OFF(typeflag)];
	m->name = name;
	m->name_len = strlen(name);
	m->typeflag = tf;
	m->type = rd_classify(tf, s->main);
	/*
	 * A regular file whose name ends in '/' (typeflag '0', '7', 'S', or
	 * NUL with the '/' from a long name, a pax path or the prefix):
	 * libarchive and GNU tar make it a directory, tarfile (which looks
	 * at a NUL typeflag's name field only) a regular file.
	 */
	if (m->type == WSNAP_RAW_FILE && m->name_len &&
	    name[m->name_len - 1] == '/')
		return rd_differ(r, name,
				 "a regular file whose name ends in "
				 "'/'");
	skip = rd_tarfile_skip(tf, m->type, s);
	/*
	 * But for a regular file (whose size is the logical one),
	 * libarchive's size is what it will skip: it must be tarfile's,
	 * known before the policy sees the member. Where it is not the
	 * whole story, the position after the skip tells (data_end).
	 */
	if (!rd_data_agree(tf, m->type, s))
		return rd_differ(r, name, rd_data_what(m->type));
	if (m->type != WSNAP_RAW_FILE && (uint64_t)esize != skip)
		return rd_differ(r, name,
				 "libarchive skips other data than "
				 "tarfile");
	*data_end = (uint64_t)fb + skip;
	*data_end += -*data_end & (WSNAP_TAR_BLOCK - 1);
	m->data_offset = (uint64_t)fb;
	m->ext_bytes = (uint64_t)(fb - hp) - WSNAP_TAR_BLOCK;
	*have_mtime = true;
	if (s->pax.has_mtime) {
		/* our own reading: libarchive's is wrong before 1970 */
		m->mtime_sec = s->pax.mtime_sec;
		m->mtime_nsec = s->pax.mtime_nsec;
	} else if (r->global.has_mtime) {
		/* libarchive ignores global headers; tarfile applies them */
		m->mtime_sec = r->global.mtime_sec;
		m->mtime_nsec = r->global.mtime_nsec;
	} else {
		*have_mtime = false; /* the caller's: the header's */
	}
	if (m->type == WSNAP_RAW_FILE)
		m->size = (uint64_t)esize;
	return WSNAP_OK;
}

enum wsnap_status wsnap_reader_check_link(struct wsnap_reader *r,
					  struct wsnap_raw_member *m,
					  const char *linkname)
{
	m->linkname = linkname ? linkname : "";
	m->linkname_len = strlen(m->linkname);
	/*
	 * A symlink without a target: libarchive reports none at all,
	 * tarfile an empty one, and no filesystem can hold it (symlink(2)
	 * fails with ENOENT): not a readable member.
	 */
	if (m->type == WSNAP_RAW_SYMLINK && !m->linkname_len)
		return rd_differ(r, m->name, "a symlink without a target");
	return WSNAP_OK;
}

enum wsnap_status wsnap_reader_region_invalid(struct wsnap_reader *r,
					      const struct wsnap_tar_scan *s,
					      const char *name, int64_t hp)
{
	if (s->why)
		return wsnap_reader_invalid(
			r, "pax record '%.*s' of member '%.*s' %s",
			s->why_key_len > 64 ? 64 : (int)s->why_key_len,
			(const char *)s->why_key, WSNAP_READER_NAME_MAX,
			name ? name : "", s->why);
	return wsnap_reader_invalid(r,
				    "malformed or ambiguous headers of member "
				    "'%.*s' at byte %lld",
				    WSNAP_READER_NAME_MAX, name ? name : "",
				    (long long)hp);
}

/*
 * Builds the raw member of the entry libarchive just returned, from its
 * header region [hp, fb), and sets *data_end to where tarfile reads the
 * next header. Returns WSNAP_OK, or the error (invalid stream).
 */
static enum wsnap_status rd_member(struct wsnap_reader *r,
				   struct archive *inner,
				   struct archive_entry *e,
				   struct wsnap_raw_member *m,
				   uint64_t *data_end)
{
	int64_t hp = archive_read_header_position(inner);
	int64_t fb = archive_filter_bytes(inner, 0);
	struct wsnap_tar_scan s;
	const char *name = archive_entry_pathname(e);
	enum wsnap_status st;
	bool have_mtime;

	if (hp >= 0)
		hp += r->la_shift;
	if (fb >= 0)
		fb += r->la_shift;
	if (r->region_lost || r->too_big || hp < 0 || fb < hp ||
	    (uint64_t)hp < r->win_off ||
	    (uint64_t)fb > r->win_off + r->win_len ||
	    (uint64_t)(fb - hp) > WSNAP_READER_MAX_HEADER_BYTES)
		return wsnap_reader_invalid(
			r,
			"the headers of the member at byte %lld exceed %u "
			"bytes, or could not be kept",
			(long long)hp, (unsigned)WSNAP_READER_MAX_HEADER_BYTES);
	if (!wsnap_tar_scan_region(r->win + (hp - (int64_t)r->win_off),
				   (size_t)(fb - hp), &r->global, &s))
		return wsnap_reader_region_invalid(r, &s, name, hp);
	st = wsnap_reader_check_member(r, &s, name, archive_entry_size(e), hp,
				       fb, m, data_end, &have_mtime);
	if (st != WSNAP_OK)
		return st;
	m->mode = (uint32_t)archive_entry_perm(e) & 07777;
	if (!have_mtime) {
		m->mtime_sec = archive_entry_mtime(e);
		m->mtime_nsec = (uint32_t)archive_entry_mtime_nsec(e);
	}

	switch (m->type) {
	case WSNAP_RAW_FILE:
		if (!rd_sparse_map(r, e, m->size, s.stored - s.map, &s.runs, m))
			return r->io_failed ? WSNAP_IO
					    : rd_differ(r, name,
							"a sparse map that is "
							"invalid or does not "
							"end at the size");
		break;
	case WSNAP_RAW_SYMLINK:
		return wsnap_reader_check_link(r, m, archive_entry_symlink(e));
	case WSNAP_RAW_HARDLINK:
		return wsnap_reader_check_link(r, m, archive_entry_hardlink(e));
	default:
		break;
	}
	return WSNAP_OK;
}

/* Reads every member and calls fn; the tar part, common to both layouts. */
enum wsnap_status wsnap_reader_members(struct wsnap_reader *r,
				       struct archive *inner,
				       wsnap_reader_fn fn, void *ctx)
{
	bool first = true;
	uint64_t data_end = 0, here = 0; /* members read by this call */

	if (r->handed) {
		/* handed over by the walker: the stream starts with our
		 * own dummy headers (walker.c), no member; the real stream
		 * follows at la_shift + dummy_len */
		struct archive_entry *e;

		r->in_header = true;
		if (archive_read_next_header(inner, &e) != ARCHIVE_OK)
			return wsnap_reader_fail(r, inner);
		r->in_header = false;
		data_end = (uint64_t)(r->la_shift + (int64_t)r->dummy_len);
		first = false;
	}
	for (;;) {
		struct archive_entry *e;
		struct wsnap_raw_member m;
		enum wsnap_status st;
		int ret;

		/* skip the previous member's data outside the header phase,
		 * so the window never keeps it; libarchive must then be
		 * where tarfile reads the next header */
		if (!first) {
			if (archive_read_data_skip(inner) != ARCHIVE_OK)
				return wsnap_reader_fail(r, inner);
			if ((uint64_t)(archive_filter_bytes(inner, 0) +
				       r->la_shift) != data_end)
				return rd_differ(r, r->last_name,
						 "libarchive and tarfile end "
						 "its data at different "
						 "bytes");
			/* the walker takes over again where it can */
			if (r->handed && here &&
			    wsnap_walker_can_resume(r, inner, data_end)) {
				r->back = true;
				r->back_at = data_end;
				return WSNAP_OK;
			}
		}
		first = false;
		r->in_header = true;
		r->region_lost = false;
		ret = archive_read_next_header(inner, &e);
		r->in_header = false;
		if (ret == ARCHIVE_EOF)
			return r->io_failed ? WSNAP_IO : WSNAP_OK;
		if (ret != ARCHIVE_OK && !(ret == ARCHIVE_WARN &&
					   wsnap_reader_charset_warning(inner)))
			return wsnap_reader_fail(r, inner);
		st = rd_member(r, inner, e, &m, &data_end);
		if (st != WSNAP_OK)
			return st;
		r->members++;
		here++;
		r->next_hdr = data_end;
		wsnap_reader_keep_name(r, m.name, m.name_len);
		st = fn(ctx, &m, r->err);
		if (st != WSNAP_OK)
			return st;
	}
}
