/* SPDX-License-Identifier: MIT */
/*
 * Cache entries (indexfile.h): the frozen index on disk, in the layout
 * described in doc/index-format.md.
 *
 * Sections: META (the key and the counts, little-endian u64 fields), POLICY
 * (wsnap_policy_encode bytes), then the index's own tables as they are in
 * memory: NODES (struct wsnap_node, their path and target pointers those
 * of the file mapped at META's base address, 0 for no target), CHILDREN,
 * BUCKETS (u32), PATHS, TARGETS, RUNS, SPARSE. The header's abi field
 * names the layout (record sizes, pointer size, byte order), so an entry
 * of another build or machine is a key mismatch, never misread.
 *
 * Invariants of a loaded entry:
 *  - every table points into one private, read-only mapping of the file;
 *    mapped at its base address, the node records are the nodes, used in
 *    place; mapped elsewhere (the address was taken), they are copied out
 *    and their pointers moved by the difference (nodes_own, fix_node);
 *  - nothing is used before the container checksums and the whole key
 *    matched and every node's pointers were checked (see fix_node), so an
 *    entry that lies can at worst present wrong names, never make a read
 *    leave the mapping;
 *  - an entry is never modified in place by wsnap (only replaced by
 *    rename), so the mapping stays what was checked.
 */
#include "indexfile.h"

#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include "array.h"
#include "engine.h"
#include "index_impl.h"
#include "ixf.h"
#include "seek.h"

_Static_assert(sizeof(char *) == sizeof(uint64_t), "64-bit pointers");

/*
 * Where a cache entry asks to be mapped (META's M_BASE): its node records
 * hold the pointers of that mapping, so that mapped there they serve in
 * place, without a copy or a pass that writes (measured: the copy into
 * fresh memory was most of a remount, 2-25 ms for 100,000 files and 40-95
 * ms for 1,000,000 members under load, the kernel zeroing the pages it
 * gives). The address is one of ENTRY_SLOTS slots of 1 GiB between 32 and
 * 64 TiB, picked by the entry's key: above what the kernel hands out near
 * the binary (85 TiB for PIE) or under it (mmap, from 127 TiB down), above
 * ASan's shadow (up to 16 TiB). MAP_FIXED_NOREPLACE never replaces a
 * mapping: when the range is taken (another entry there, TSan's shadow) or
 * the kernel ignores the flag, the entry is mapped anywhere and its nodes
 * copied and moved as before. Either way every pointer is checked against
 * the mapping's tables.
 */
#define ENTRY_BASE_LO	(UINT64_C(32) << 40)
#define ENTRY_BASE_HI	(UINT64_C(64) << 40)
#define ENTRY_BASE_SLOT (UINT64_C(1) << 30)
#define ENTRY_SLOTS	((ENTRY_BASE_HI - ENTRY_BASE_LO) / ENTRY_BASE_SLOT)

/* The META fields, each a little-endian u64 at 8 * index. */
enum meta_field {
	M_DEV,
	M_INO,
	M_SIZE,
	M_MTIME_SEC,
	M_MTIME_NSEC,
	M_CTIME_SEC,
	M_CTIME_NSEC,
	M_POLICY_LEN,
	M_COUNT,
	M_MASK,
	M_PATHS_BYTES,
	M_TARGETS_BYTES,
	M_NRUNS,
	M_NSPARSE,
	M_KEY0,
	M_KEY1,
	M_MEMBERS,
	M_DIRS,
	M_IMPLICIT,
	M_FILES,
	M_SYMLINKS,
	M_TOTAL_BYTES,
	M_STREAM_BYTES,
	M_INPUT_BYTES,
	M_COMPRESSION, /* index in ixf_compressions[] */
	M_NCASE_DEPS,
	M_BASE, /* the address the node records' pointers assume */
	M_NFIELDS
};

/*
 * The revision of a cache entry beyond its record sizes: of the node
 * record's layout, and of what the reader accepts, since an entry is a
 * verdict that is never judged again. A cache entry of another revision is
 * a miss (rebuilt); sidecars do not hold records and their members are
 * judged again. 1: the union of nchildren and sparse, nsubdirs removed.
 * 2: xz stream padding before another stream refused (an older wsnap's
 * entry holds such an archive as accepted). 3: node records hold the
 * pointers of a mapping at M_BASE, 0 for no target. 4: a directory's offset
 * counts its subdirectories. At most 15.
 */
#define ENTRY_REVISION 4u

static uint32_t entry_abi(void)
{
	const uint16_t one = 1;
	uint8_t little;

	memcpy(&little, &one, 1);
	return (uint32_t)sizeof(struct wsnap_node) |
	       (uint32_t)sizeof(struct wsnap_index_run) << 8 |
	       (uint32_t)sizeof(struct wsnap_index_sparse) << 16 |
	       (uint32_t)(little ? 1 : 2) << 24 |
	       (uint32_t)ENTRY_REVISION << 28;
}

static void id_fields(const struct wsnap_fileid *id, uint64_t f[7])
{
	f[M_DEV] = id->dev;
	f[M_INO] = id->ino;
	f[M_SIZE] = (uint64_t)id->size;
	f[M_MTIME_SEC] = (uint64_t)id->mtime.tv_sec;
	f[M_MTIME_NSEC] = (uint64_t)id->mtime.tv_nsec;
	f[M_CTIME_SEC] = (uint64_t)id->ctime.tv_sec;
	f[M_CTIME_NSEC] = (uint64_t)id->ctime.tv_nsec;
}

void wsnap_indexfile_name(const struct wsnap_fileid *id,
			  const struct wsnap_policy *policy,
			  char out[WSNAP_INDEXFILE_NAME_LEN + 1])
{
	/* fixed keys: the name must be the same in every process; it only
	 * spreads entries, the key inside decides */
	static const struct wsnap_hash_key k1 = {0x77736e6170696478ULL,
						 0x63616368652d3031ULL};
	static const struct wsnap_hash_key k2 = {0x656e7472792d6e61ULL,
						 0x6d652d3032000000ULL};
	unsigned char pb[256], idb[7 * 8 + 8];
	unsigned char *heap = NULL, *p = pb;
	uint64_t f[7], h1, h2;
	struct wsnap_hasher h;
	size_t n = wsnap_policy_encode(policy, pb, sizeof(pb)), i;

	if (n > sizeof(pb)) {
		heap = malloc(n);
		if (heap)
			wsnap_policy_encode(policy, heap, n);
		/* out of memory: the name of the policy's start; the key in
		 * the entry still decides */
		p = heap ? heap : pb;
		if (!heap)
			n = sizeof(pb);
	}
	id_fields(id, f);
	for (i = 0; i < 7; i++)
		ixf_put64(idb + 8 * i, f[i]);
	ixf_put64(idb + 56, (uint64_t)IXF_VERSION << 32 | entry_abi());
	wsnap_hasher_init(&h, &k1);
	wsnap_hasher_update(&h, idb, sizeof(idb));
	wsnap_hasher_update(&h, p, n);
	h1 = wsnap_hasher_final(&h);
	wsnap_hasher_init(&h, &k2);
	wsnap_hasher_update(&h, idb, sizeof(idb));
	wsnap_hasher_update(&h, p, n);
	h2 = wsnap_hasher_final(&h);
	free(heap);
	snprintf(out, WSNAP_INDEXFILE_NAME_LEN + 1,
		 "%016" PRIx64 "%016" PRIx64 ".idx", h1, h2);
}

/* Writing */

/* The size of the TARGETS section: each symlink's target and its NUL, in
 * ino order (in memory they are in an arena, in no order). */
static uint64_t targets_bytes(const struct wsnap_index *idx)
{
	uint64_t total = 0;
	uint32_t i;

	for (i = 0; i < idx->count; i++)
		if (idx->nodes[i].target)
			total += idx->nodes[i].size + 1;
	return total;
}

/* The base address of the entry of (id, policy): one of ENTRY_SLOTS, by
 * the same hash that names it. */
static uint64_t entry_base(const struct wsnap_fileid *id,
			   const struct wsnap_policy *policy)
{
	char name[WSNAP_INDEXFILE_NAME_LEN + 1];

	wsnap_indexfile_name(id, policy, name);
	name[16] = '\0';
	return ENTRY_BASE_LO +
	       strtoull(name, NULL, 16) % ENTRY_SLOTS * ENTRY_BASE_SLOT;
}

static void put_meta(struct ixf_writer *w, const struct wsnap_index *idx,
		     const struct wsnap_fileid *id, size_t policy_len,
		     uint64_t base)
{
	const struct wsnap_index_stats *st = &idx->stats;
	uint64_t f[M_NFIELDS];

	id_fields(id, f);
	f[M_POLICY_LEN] = policy_len;
	f[M_COUNT] = idx->count;
	f[M_MASK] = idx->mask;
	f[M_PATHS_BYTES] = idx->paths_bytes;
	f[M_TARGETS_BYTES] = targets_bytes(idx);
	f[M_NRUNS] = idx->nruns;
	f[M_NSPARSE] = idx->nsparse;
	f[M_KEY0] = idx->key.k0;
	f[M_KEY1] = idx->key.k1;
	f[M_MEMBERS] = st->members;
	f[M_DIRS] = st->dirs;
	f[M_IMPLICIT] = st->implicit;
	f[M_FILES] = st->files;
	f[M_SYMLINKS] = st->symlinks;
	f[M_TOTAL_BYTES] = st->total_bytes;
	f[M_STREAM_BYTES] = st->stream_bytes;
	f[M_INPUT_BYTES] = st->input_bytes;
	f[M_COMPRESSION] = ixf_compression_code(st->compression);
	f[M_NCASE_DEPS] = idx->ncase_deps;
	f[M_BASE] = base;
	ixf_writer_u64s(w, IXF_META, f, M_NFIELDS);
}

static uint64_t pad8(uint64_t n)
{
	return (n + 7) & ~(uint64_t)7;
}

/*
 * The node records: nodes with the pointers they have in the file mapped
 * at base. PATHS and TARGETS follow NODES, CHILDREN and BUCKETS back to
 * back (wsnap_indexfile_write's order), each padded to 8 bytes.
 */
static void put_nodes(struct ixf_writer *w, const struct wsnap_index *idx,
		      uint64_t base)
{
	struct wsnap_node rec[256];
	uint64_t next = 0, paths, targets;
	uint32_t i, k = 0;

	ixf_writer_begin(w, IXF_NODES);
	paths = base + w->sec[w->n].offset +
		(uint64_t)idx->count * sizeof(rec[0]) +
		pad8((uint64_t)(idx->count - 1) * sizeof(uint32_t)) +
		pad8(((uint64_t)idx->mask + 1) * sizeof(uint32_t));
	targets = paths + pad8(idx->paths_bytes);
	for (i = 0; i < idx->count; i++) {
		const struct wsnap_node *n = &idx->nodes[i];
		uint64_t po = paths + (uint64_t)(n->path - idx->paths);
		uint64_t to = n->target ? targets + next : 0;

		if (n->target)
			next += n->size + 1;

		rec[k] = *n;
		memcpy(&rec[k].path, &po, sizeof(po));
		memcpy(&rec[k].target, &to, sizeof(to));
		if (++k == ARRAY_SIZE(rec) || i + 1 == idx->count) {
			ixf_writer_put(w, rec, k * sizeof(rec[0]));
			k = 0;
		}
	}
	ixf_writer_end(w);
}

/* The TARGETS section, in the order put_nodes gave their offsets. */
static void put_targets(struct ixf_writer *w, const struct wsnap_index *idx)
{
	uint32_t i;

	ixf_writer_begin(w, IXF_TARGETS);
	for (i = 0; i < idx->count; i++)
		if (idx->nodes[i].target)
			ixf_writer_put(w, idx->nodes[i].target,
				       idx->nodes[i].size + 1);
	ixf_writer_end(w);
}

enum wsnap_status wsnap_indexfile_write(int fd, const struct wsnap_index *idx,
					const struct wsnap_fileid *id,
					const struct wsnap_policy *policy,
					struct wsnap_error *err)
{
	const struct wsnap_seek_table *seek = wsnap_index_seek_table(idx);
	unsigned char *seek_bytes = NULL;
	size_t seek_len = 0;
	struct ixf_writer w;
	unsigned char *pol;
	uint64_t base;
	size_t plen;
	int e;

	pol = ixf_policy_bytes(policy, &plen);
	if (seek) {
		seek_bytes = wsnap_seek_table_encode(seek, &seek_len);
		if (!seek_bytes) {
			free(pol);
			pol = NULL;
		}
	}
	if (!pol || ixf_writer_init(&w, fd, seek ? 12 : 10) != 0) {
		free(pol);
		free(seek_bytes);
		return wsnap_error_io(err, ENOMEM, NULL, "out of memory");
	}
	base = entry_base(id, policy);
	put_meta(&w, idx, id, plen, base);
	ixf_writer_section(&w, IXF_POLICY, pol, plen);
	put_nodes(&w, idx, base);
	ixf_writer_section(&w, IXF_CHILDREN, idx->children,
			   (size_t)(idx->count - 1) * sizeof(uint32_t));
	ixf_writer_section(&w, IXF_BUCKETS, idx->buckets,
			   ((size_t)idx->mask + 1) * sizeof(uint32_t));
	ixf_writer_section(&w, IXF_PATHS, idx->paths, idx->paths_bytes);
	put_targets(&w, idx);
	ixf_writer_section(&w, IXF_RUNS, idx->runs,
			   idx->nruns * sizeof(struct wsnap_index_run));
	ixf_writer_section(&w, IXF_SPARSE, idx->sparse,
			   idx->nsparse * sizeof(struct wsnap_index_sparse));
	ixf_writer_section(&w, IXF_CASE_DEPS, idx->case_deps,
			   idx->ncase_deps * sizeof(*idx->case_deps));
	if (seek) {
		ixf_writer_section(&w, IXF_SEEK, seek_bytes, seek_len);
		ixf_writer_section(&w, IXF_SEEK_WINDOWS, seek->windows,
				   seek->windows_len);
	}
	free(seek_bytes);
	free(pol);
	e = ixf_writer_finish(&w, IXF_KIND_ENTRY, entry_abi());
	if (e)
		return wsnap_error_io(err, e, NULL,
				      e == ENOSPC ? "no space left writing "
						    "index cache entry"
						  : "cannot write index cache "
						    "entry");
	return WSNAP_OK;
}

/* Loading */

static enum wsnap_status unusable(struct wsnap_error *err, const char *why)
{
	return wsnap_error_io(err, 0, NULL, "%s", why);
}

/*
 * One node record checked, so that every pointer and range a reader derives
 * from it stays inside the tables: path and target strings end inside their
 * sections (both end with a NUL), parent and chain links point to valid
 * inos in the only direction freezing gives them (so no chain loops),
 * children ranges and sparse references fit their tables. The record's
 * pointers are those of the file mapped at its base; delta is where it is
 * mapped minus that (0: the records are the nodes, read in place, never
 * written), and own says that the records were copied out (nodes_own) and
 * get pointers moved by delta.
 */
static bool fix_node(struct wsnap_index *idx, uint32_t ino,
		     uint64_t nchildren_total, uint64_t delta, bool own)
{
	struct wsnap_node *n = &idx->nodes[ino - 1];
	uint64_t pp, tp, po, to = 0;

	memcpy(&pp, &n->path, sizeof(pp));
	memcpy(&tp, &n->target, sizeof(tp));
	/* unsigned: a pointer below the section wraps to far past it */
	po = pp + delta - (uint64_t)(uintptr_t)idx->paths;
	if (po >= idx->paths_bytes || n->name_off > idx->paths_bytes - 1 - po)
		return false;
	if (ino == 1 ? n->parent != 1 || n->type != WSNAP_TYPE_DIR
		     : n->parent < 1 || n->parent >= ino)
		return false;
	if (n->hash_next && (n->hash_next <= ino || n->hash_next > idx->count))
		return false;
	switch (n->type) {
	case WSNAP_TYPE_DIR:
		/* (a directory's offset counts its subdirectories) */
		if (n->first_child > nchildren_total ||
		    n->nchildren > nchildren_total - n->first_child ||
		    n->offset > n->nchildren || tp)
			return false;
		break;
	case WSNAP_TYPE_SYMLINK:
		to = tp + delta - (uint64_t)(uintptr_t)idx->map_targets;
		if (!tp || to >= idx->map_targets_bytes ||
		    n->size > idx->map_targets_bytes - 1 - to ||
		    idx->map_targets[to + n->size] != '\0' || n->nchildren)
			return false;
		break;
	case WSNAP_TYPE_FILE:
		/* (a file's nchildren is its sparse reference) */
		if (tp || n->size > INT64_MAX)
			return false;
		if (n->flags & WSNAP_NODE_SPARSE
			    ? n->sparse < 1 || n->sparse > idx->nsparse ||
				      n->offset > INT64_MAX
			    : n->sparse != 0 || n->offset > INT64_MAX - n->size)
			return false;
		break;
	default:
		return false;
	}
	if (own) {
		n->path = idx->paths + po;
		n->target = tp ? idx->map_targets + to : NULL;
	}
	return true;
}

/* The checks of the tables that are only read. */
static bool check_tables(const struct wsnap_index *idx, uint64_t nchildren)
{
	uint64_t i;

	for (i = 0; i < nchildren; i++)
		if (idx->children[i] < 2 || idx->children[i] > idx->count)
			return false;
	for (i = 0; i <= idx->mask; i++)
		if (idx->buckets[i] == 1 || idx->buckets[i] > idx->count)
			return false;
	for (i = 0; i < idx->nsparse; i++)
		if (idx->sparse[i].first > idx->nruns ||
		    idx->sparse[i].count > idx->nruns - idx->sparse[i].first)
			return false;
	return true;
}

/* The META counts into idx; false when they cannot describe an index. */
static bool set_counts(struct wsnap_index *idx, const uint64_t *f)
{
	struct wsnap_index_stats *st = &idx->stats;

	if (f[M_COUNT] < 1 || f[M_COUNT] > UINT32_MAX ||
	    f[M_MASK] >= UINT32_MAX || ((f[M_MASK] + 1) & f[M_MASK]) ||
	    f[M_PATHS_BYTES] < 1 || f[M_COMPRESSION] >= IXF_NCOMPRESSIONS)
		return false;
	idx->count = (uint32_t)f[M_COUNT];
	idx->mask = (uint32_t)f[M_MASK];
	idx->paths_bytes = f[M_PATHS_BYTES];
	idx->map_targets_bytes = f[M_TARGETS_BYTES];
	idx->nruns = f[M_NRUNS];
	idx->nsparse = f[M_NSPARSE];
	idx->key.k0 = f[M_KEY0];
	idx->key.k1 = f[M_KEY1];
	st->members = f[M_MEMBERS];
	st->dirs = f[M_DIRS];
	st->implicit = f[M_IMPLICIT];
	st->files = f[M_FILES];
	st->symlinks = f[M_SYMLINKS];
	st->total_bytes = f[M_TOTAL_BYTES];
	st->stream_bytes = f[M_STREAM_BYTES];
	st->input_bytes = f[M_INPUT_BYTES];
	st->compression = ixf_compressions[f[M_COMPRESSION]];
	return true;
}

/* The start of the section of type t in the mapping when it holds at
 * least n elements of elem bytes, else NULL. */
static void *table(struct wsnap_index *idx, const struct ixf_view *v,
		   uint32_t t, uint64_t n, uint64_t elem)
{
	const struct ixf_section *s = ixf_find(v, t);

	if (!s || n > s->length / elem)
		return NULL;
	return (unsigned char *)idx->map + s->offset;
}

/* Points idx's tables into the mapping; false when one is missing or too
 * short. */
static bool set_tables(struct wsnap_index *idx, const struct ixf_view *v)
{
	idx->nodes =
		table(idx, v, IXF_NODES, idx->count, sizeof(struct wsnap_node));
	idx->children =
		table(idx, v, IXF_CHILDREN, idx->count - 1, sizeof(uint32_t));
	idx->buckets = table(idx, v, IXF_BUCKETS, (uint64_t)idx->mask + 1,
			     sizeof(uint32_t));
	idx->paths = table(idx, v, IXF_PATHS, idx->paths_bytes, 1);
	idx->map_targets =
		table(idx, v, IXF_TARGETS, idx->map_targets_bytes, 1);
	idx->runs = table(idx, v, IXF_RUNS, idx->nruns,
			  sizeof(struct wsnap_index_run));
	idx->sparse = table(idx, v, IXF_SPARSE, idx->nsparse,
			    sizeof(struct wsnap_index_sparse));
	if (!idx->nodes || !idx->children || !idx->buckets || !idx->paths ||
	    !idx->map_targets || !idx->runs || !idx->sparse)
		return false;
	return idx->paths[idx->paths_bytes - 1] == '\0';
}

/*
 * When the entry could not be mapped at its base: the node records, copied
 * out of the mapping into memory of their own where their pointers are
 * moved: a private anonymous mapping, asked for
 * huge pages and prefaulted, so that the copy costs a few faults instead of
 * one copy-on-write fault per 4 KiB of records (measured: the faults were
 * most of a load). The copy goes NODES_CHUNK bytes at a time, each chunk
 * prefaulted just before and the records' pages of the file mapping dropped
 * just after it, so that they are never resident twice: with the whole copy
 * prefaulted first and the file's pages dropped at the end, the remount of
 * the 1,000,000-member snapshot peaked at 187 MiB (the whole entry and the
 * whole copy at once), now at the entry's size.
 */
#define NODES_CHUNK (2u << 20)

static bool nodes_own(struct wsnap_index *idx)
{
	size_t len = (size_t)idx->count * sizeof(struct wsnap_node), off, n;
	uintptr_t page = (uintptr_t)sysconf(_SC_PAGESIZE), a, e, done;
	const char *from = (const char *)idx->nodes;
	char *mem;

	mem = mmap(NULL, len, PROT_READ | PROT_WRITE,
		   MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if (mem == MAP_FAILED)
		return false;
	madvise(mem, len, MADV_HUGEPAGE);
	/* whole pages of the file mapping that hold only records */
	a = ((uintptr_t)from + page - 1) & ~(page - 1);
	e = ((uintptr_t)from + len) & ~(page - 1);
	for (off = 0; off < len; off += n) {
		n = len - off < NODES_CHUNK ? len - off : NODES_CHUNK;
		madvise(mem + off, n, MADV_POPULATE_WRITE); /* best effort */
		memcpy(mem + off, from + off, n);
		/* the records' pages copied so far, but for the last one's */
		done = ((uintptr_t)from + off + n) & ~(page - 1);
		if (done > e)
			done = e;
		if (done > a) {
			madvise((void *)a, done - a, MADV_DONTNEED);
			a = done;
		}
	}
	idx->nodes = (struct wsnap_node *)(void *)mem;
	idx->nodes_map_len = len;
	return true;
}

/*
 * The CASE_DEPS section copied into idx (export refuses what they name on
 * a folding destination, so an entry without them would export what a
 * fresh build refuses): n of them, each a symlink and a valid ino. False
 * when the section is short or one of them is not.
 */
static bool set_case_deps(struct wsnap_index *idx, const struct ixf_view *v,
			  uint64_t n)
{
	const struct wsnap_index_case_dep *in;
	struct wsnap_index_case_dep *deps;
	uint64_t i;

	if (n == 0)
		return true;
	if (n > idx->count)
		return false;
	in = table(idx, v, IXF_CASE_DEPS, n, sizeof(*in));
	if (!in)
		return false;
	for (i = 0; i < n; i++)
		if (in[i].link < 1 || in[i].link > idx->count ||
		    idx->nodes[in[i].link - 1].type != WSNAP_TYPE_SYMLINK ||
		    in[i].member < 1 || in[i].member > idx->count)
			return false;
	deps = malloc((size_t)n * sizeof(*deps));
	if (!deps)
		return false;
	memcpy(deps, in, (size_t)n * sizeof(*deps));
	idx->case_deps = deps;
	idx->ncase_deps = (size_t)n;
	return true;
}

/*
 * The base address an entry asks for (M_BASE), read before it is mapped,
 * or 0 when it names none that could be used. Unchecked bytes: they only
 * choose where the file is mapped (never over another mapping); the
 * checked META decides later whether the records are used in place.
 */
static uint64_t peek_base(int fd, uint64_t size)
{
	unsigned char h[IXF_HEADER_SIZE + IXF_MAX_SECTIONS * IXF_SECTION_SIZE];
	uint64_t n, i, off, len, base;
	unsigned char b[8];

	if (pread(fd, h, sizeof(h) < size ? sizeof(h) : size, 0) <
	    IXF_HEADER_SIZE)
		return 0;
	n = ixf_get64(h + 32);
	if (n > IXF_MAX_SECTIONS ||
	    IXF_HEADER_SIZE + n * IXF_SECTION_SIZE > size)
		return 0;
	for (i = 0; i < n; i++) {
		const unsigned char *e =
			h + IXF_HEADER_SIZE + i * IXF_SECTION_SIZE;

		if (ixf_get64(e) != IXF_META)
			continue;
		off = ixf_get64(e + 8);
		len = ixf_get64(e + 16);
		if (len < 8 * (uint64_t)M_NFIELDS || len > size ||
		    off > size - len ||
		    pread(fd, b, 8, (off_t)(off + 8 * M_BASE)) != 8)
			return 0;
		base = ixf_get64(b);
		if (base < ENTRY_BASE_LO || base >= ENTRY_BASE_HI ||
		    base % ENTRY_BASE_SLOT || size > ENTRY_BASE_HI - base)
			return 0;
		return base;
	}
	return 0;
}

/*
 * ThreadSanitizer keeps its shadow where the slots are and ends the
 * process on a mapping placed there (it does not fail the call): under it
 * every entry takes the copy-and-move path.
 */
#if defined(__SANITIZE_THREAD__)
#define ENTRY_MAP_FIXED 0
#elif defined(__has_feature)
#if __has_feature(thread_sanitizer)
#define ENTRY_MAP_FIXED 0
#endif
#endif
#ifndef ENTRY_MAP_FIXED
#define ENTRY_MAP_FIXED 1
#endif

/* The entry's file mapped read-only and prefaulted: at base when that
 * range is free, else anywhere. */
static void *map_entry(int fd, size_t size)
{
	uint64_t base = ENTRY_MAP_FIXED ? peek_base(fd, size) : 0;
	void *map;

	if (base) {
		map = mmap((void *)(uintptr_t)base, size, PROT_READ,
			   MAP_PRIVATE | MAP_POPULATE | MAP_FIXED_NOREPLACE, fd,
			   0);
		if (map != MAP_FAILED && (uintptr_t)map == base)
			return map;
		/* a kernel before 4.17 takes the flag for a hint */
		if (map != MAP_FAILED)
			munmap(map, size);
	}
	return mmap(NULL, size, PROT_READ, MAP_PRIVATE | MAP_POPULATE, fd, 0);
}

/* Whether the entry's key is (id, policy). */
static bool same_key(const struct ixf_view *v, const uint64_t *f,
		     const struct wsnap_fileid *id,
		     const struct wsnap_policy *policy)
{
	const struct ixf_section *ps = ixf_find(v, IXF_POLICY);
	uint64_t want[7];
	unsigned char *pol;
	size_t plen;
	bool same;
	int i;

	id_fields(id, want);
	for (i = 0; i < 7; i++)
		if (f[i] != want[i])
			return false;
	if (!ps || f[M_POLICY_LEN] > ps->length)
		return false;
	pol = ixf_policy_bytes(policy, &plen);
	same = pol && plen == f[M_POLICY_LEN] &&
	       memcmp(pol, ixf_data(v, ps), plen) == 0;
	free(pol);
	return same;
}

enum wsnap_status wsnap_indexfile_load(struct wsnap_index **out, int fd,
				       const struct wsnap_fileid *id,
				       const struct wsnap_policy *policy,
				       struct wsnap_error *err)
{
	const struct ixf_section *ms;
	struct wsnap_index *idx = NULL;
	uint64_t f[M_NFIELDS], nch;
	struct ixf_view v;
	const char *why = "truncated";
	struct stat sb;
	uint64_t delta;
	void *map;
	uint32_t ino;
	bool own;
	int i;

	*out = NULL;
	if (fstat(fd, &sb) != 0)
		return wsnap_error_io(err, errno, NULL, "cannot stat");
	if (!S_ISREG(sb.st_mode) || sb.st_size < IXF_HEADER_SIZE ||
	    (uint64_t)sb.st_size > SIZE_MAX)
		return unusable(err, S_ISREG(sb.st_mode) ? "truncated"
							 : "not a file");
	map = map_entry(fd, (size_t)sb.st_size);
	if (map == MAP_FAILED)
		return wsnap_error_io(err, errno, NULL, "cannot map");
	if (!ixf_parse(&v, map, (uint64_t)sb.st_size, IXF_KIND_ENTRY, &why))
		goto bad;
	why = "key mismatch";
	ms = ixf_find(&v, IXF_META);
	if (v.abi != entry_abi() || !ms || ms->length < sizeof(f))
		goto bad;
	for (i = 0; i < M_NFIELDS; i++)
		f[i] = ixf_get64(ixf_data(&v, ms) + 8 * i);
	if (!same_key(&v, f, id, policy))
		goto bad;
	why = "out of memory";
	idx = calloc(1, sizeof(*idx));
	if (!idx)
		goto bad;
	idx->data_fd = -1;
	idx->map = map;
	idx->map_len = (size_t)sb.st_size;
	why = "inconsistent tables";
	if (!set_counts(idx, f) || !set_tables(idx, &v))
		goto bad;
	/* mapped where its pointers assume: the records are the nodes */
	delta = (uint64_t)(uintptr_t)map - f[M_BASE];
	own = delta != 0;
	why = "out of memory";
	if (own && !nodes_own(idx))
		goto bad;
	why = "inconsistent tables";
	nch = idx->count - 1;
	for (ino = 1; ino <= idx->count; ino++)
		if (!fix_node(idx, ino, nch, delta, own))
			goto bad;
	if (!check_tables(idx, nch) || !set_case_deps(idx, &v, f[M_NCASE_DEPS]))
		goto bad;
	/* windows borrowed from map, PROT_READ and file-backed, which the
	 * table may drop pages of (seek.h) */
	if (wsnap_ixf_seek_map(&v, (uint64_t)id->size, idx->stats.stream_bytes,
			       &idx->seek, &why) != 0)
		goto bad;
	idx->stats.memory_bytes = sizeof(*idx) + idx->map_len;
	*out = idx;
	return WSNAP_OK;
bad:
	if (idx) {
		idx->map = map;
		wsnap_index_free(idx);
	} else {
		munmap(map, (size_t)sb.st_size);
	}
	return unusable(err, why);
}

/* Attaching the archive */

static enum wsnap_status ignore_member(void *ctx,
				       const struct wsnap_raw_member *m,
				       struct wsnap_error *err)
{
	return WSNAP_OK;
}

enum wsnap_status
wsnap_index_attach_archive(struct wsnap_index *idx, int archive_fd,
			   const struct wsnap_reader_opts *opts,
			   struct wsnap_error *err)
{
	struct wsnap_reader_opts ro = *opts;
	struct wsnap_reader_result res = {.data_fd = -1};
	enum wsnap_status st;
	int fd;

	if (strcmp(idx->stats.compression, "none") == 0) {
		fd = fcntl(archive_fd, F_DUPFD_CLOEXEC, 0);
		if (fd < 0)
			return wsnap_error_io(err, errno, NULL,
					      "cannot dup archive");
		wsnap_index_attach_data(idx, fd, NULL);
		return WSNAP_OK;
	}
	if (idx->seek && !opts->no_seek) {
		/* read in place from the stored seek points: nothing decoded */
		struct wsnap_seek_table *t = idx->seek;
		int rc;

		fd = fcntl(archive_fd, F_DUPFD_CLOEXEC, 0);
		if (fd < 0)
			return wsnap_error_io(err, errno, NULL,
					      "cannot dup archive");
		idx->seek = NULL;
		rc = wsnap_index_attach_seekable(idx, fd, t,
						 opts->span_cache_bytes);
		return wsnap_index_seek_status(rc, err);
	}
	ro.keep_data = true;
	ro.no_seek = true; /* a table now could not be kept anywhere */
	st = wsnap_reader_run(archive_fd, &ro, ignore_member, NULL, &res, err);
	if (st != WSNAP_OK)
		return st;
	if (res.stream_bytes != idx->stats.stream_bytes ||
	    strcmp(res.compression, idx->stats.compression) != 0) {
		if (res.data_fd >= 0)
			close(res.data_fd);
		return wsnap_error_io(err, EIO, NULL,
				      "archive changed since it was indexed");
	}
	wsnap_index_attach_data(idx, res.data_fd, NULL);
	return WSNAP_OK;
}
