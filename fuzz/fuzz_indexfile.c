/* SPDX-License-Identifier: MIT */
/*
 * libFuzzer target: mutated index files -> the loaders of cache entries
 * (wsnap_indexfile_load) and sidecars (wsnap_sidecar_read, _index).
 *
 * Two kinds of input:
 *  - one that starts with the index file magic "WSNAPIDX" is an index file
 *    itself: its checksums are redone (so that the structural checks
 *    behind them are what is fuzzed, not XXH3) and it is loaded as a cache
 *    entry, under the key its own META claims and the default policy
 *    (total size capped at FUZZ_MAX_TOTAL), and as a sidecar under that
 *    policy;
 *  - anything else is an archive (fuzz_common.h layout): when it builds,
 *    its cache entry and sidecar are written, loaded back (oracle: the
 *    same nodes as the index they were written from), then copies of them
 *    with bytes changed where the input's hash says are resealed and
 *    loaded.
 * Oracles: no crash, leak or sanitizer report; whatever loads can be
 * walked (names, targets, lookups, children, extents) without leaving its
 * memory; a sidecar's index never holds a path with a '..', '.' or empty
 * component nor one starting with '/', whatever the sidecar said.
 */
#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "fsutil.h"
#include "indexfile.h"
#include "ixf.h"

#include "fuzz_common.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

#define MUTATIONS 8

/* Every node of idx, touched the way the readers touch it. */
static void walk(const struct wsnap_index *idx, bool judged)
{
	uint32_t ino, n = wsnap_index_count(idx);

	for (ino = 1; ino <= n; ino++) {
		const struct wsnap_node *nd = wsnap_index_node(idx, ino);
		const uint32_t *ch;
		uint32_t k, nc = wsnap_index_children(idx, ino, &ch);
		struct wsnap_extent ext;
		size_t len = strlen(nd->path);

		FUZZ_CHECK(nd != NULL);
		(void)strlen(wsnap_node_name(nd));
		if (nd->target)
			(void)strlen(nd->target);
		(void)wsnap_index_lookup(idx, nd->path, len);
		for (k = 0; k < nc; k++)
			FUZZ_CHECK(wsnap_index_node(idx, ch[k]) != NULL);
		if (nd->type == WSNAP_TYPE_FILE && nd->size) {
			(void)wsnap_index_extent(idx, ino, 0, &ext);
			(void)wsnap_index_extent(idx, ino, nd->size - 1, &ext);
		}
		if (judged && ino > 1) {
			FUZZ_CHECK(nd->path[0] != '/' && len > 0);
			FUZZ_CHECK(strstr(nd->path, "//") == NULL);
			FUZZ_CHECK(nd->path[len - 1] != '/');
			FUZZ_CHECK(strcmp(wsnap_node_name(nd), "..") != 0);
			FUZZ_CHECK(strcmp(wsnap_node_name(nd), ".") != 0);
		}
	}
}

/* The key an entry's META claims (fields 0-6, indexfile.c). */
static bool claimed_id(const uint8_t *b, size_t len, struct wsnap_fileid *id)
{
	struct ixf_view v;
	const struct ixf_section *m;
	const char *why;

	if (!ixf_parse(&v, b, len, IXF_KIND_ENTRY, &why))
		return false;
	m = ixf_find(&v, IXF_META);
	if (!m || m->length < 56)
		return false;
	memset(id, 0, sizeof(*id));
	id->dev = ixf_get64(b + m->offset);
	id->ino = ixf_get64(b + m->offset + 8);
	id->size = (int64_t)ixf_get64(b + m->offset + 16);
	id->mtime.tv_sec = (time_t)ixf_get64(b + m->offset + 24);
	id->mtime.tv_nsec = (long)ixf_get64(b + m->offset + 32);
	id->ctime.tv_sec = (time_t)ixf_get64(b + m->offset + 40);
	id->ctime.tv_nsec = (long)ixf_get64(b + m->offset + 48);
	return true;
}

/* Loads b as a cache entry and as a sidecar, walking what loads. */
static void load_both(const uint8_t *b, size_t len,
		      const struct wsnap_fileid *id,
		      const struct wsnap_policy *p)
{
	static struct wsnap_error err;
	struct wsnap_index *idx = NULL;
	struct wsnap_sidecar *sc = NULL;
	int fd = fuzz_memfd(b, len);

	if (wsnap_indexfile_load(&idx, fd, id, p, &err) == WSNAP_OK) {
		walk(idx, false);
		wsnap_index_free(idx);
		idx = NULL;
	}
	if (lseek(fd, 0, SEEK_SET) == 0 &&
	    wsnap_sidecar_read(&sc, fd, "fuzz", &err) == WSNAP_OK) {
		if (wsnap_sidecar_index(sc, p, wsnap_sidecar_stream_bytes(sc),
					&idx, &err) == WSNAP_OK) {
			walk(idx, true);
			wsnap_index_free(idx);
		}
		wsnap_sidecar_free(sc);
	}
	close(fd);
}

/* The bytes of fd. */
static uint8_t *slurp(int fd, size_t *len)
{
	struct stat sb;
	uint8_t *b;
	size_t got;

	FUZZ_CHECK(fstat(fd, &sb) == 0);
	*len = (size_t)sb.st_size;
	b = malloc(*len ? *len : 1);
	FUZZ_CHECK(b != NULL);
	FUZZ_CHECK(wsnap_pread_full(fd, b, *len, 0, &got) == 0 && got == *len);
	return b;
}

/* Copies of file with bytes changed at places drawn from seed, resealed,
 * loaded. */
static void mutate_load(const uint8_t *file, size_t len, uint64_t seed,
			const struct wsnap_fileid *id,
			const struct wsnap_policy *p)
{
	uint8_t *c = malloc(len);
	int i, k;

	FUZZ_CHECK(c != NULL);
	for (i = 0; i < MUTATIONS; i++) {
		memcpy(c, file, len);
		for (k = 0; k <= i % 3; k++) {
			seed = seed * 6364136223846793005ULL +
			       1442695040888963407ULL;
			c[(seed >> 33) % len] ^= (uint8_t)(1u << (seed >> 61));
		}
		ixf_seal(c, len);
		load_both(c, len, id, p);
	}
	free(c);
}

static uint64_t input_hash(const uint8_t *data, size_t size)
{
	uint64_t h = 1469598103934665603ULL;
	size_t i;

	for (i = 0; i < size; i++)
		h = (h ^ data[i]) * 1099511628211ULL;
	return h;
}

/* An archive: its entry and sidecar round trip, then mutated copies. */
static void from_archive(const uint8_t *data, size_t size)
{
	static struct wsnap_error err;
	struct wsnap_reader_opts ro = {.keep_data = true, .sequential = true};
	struct wsnap_index *idx = NULL, *back = NULL;
	struct wsnap_fileid id = {.dev = 1, .ino = 2, .size = (int64_t)size};
	struct fuzz_input in;
	struct wsnap_policy p;
	uint8_t *ent, *side;
	size_t elen, slen;
	int afd, efd, sfd;

	fuzz_input_parse(&in, &p, data, size);
	afd = fuzz_memfd(in.data, in.size);
	if (wsnap_index_build(&idx, afd, &p, &ro, &err) != WSNAP_OK) {
		close(afd);
		wsnap_policy_release(&p);
		return;
	}
	efd = fuzz_memfd(NULL, 0);
	FUZZ_CHECK(wsnap_indexfile_write(efd, idx, &id, &p, &err) == WSNAP_OK);
	FUZZ_CHECK(wsnap_indexfile_load(&back, efd, &id, &p, &err) == WSNAP_OK);
	FUZZ_CHECK(wsnap_index_count(back) == wsnap_index_count(idx));
	walk(back, false);
	wsnap_index_free(back);
	ent = slurp(efd, &elen);
	close(efd);
	sfd = fuzz_memfd(NULL, 0);
	FUZZ_CHECK(wsnap_sidecar_write(sfd, afd, &p, &ro, &err) == WSNAP_OK);
	side = slurp(sfd, &slen);
	close(sfd);
	mutate_load(ent, elen, input_hash(data, size), &id, &p);
	mutate_load(side, slen, input_hash(data, size) ^ 1, &id, &p);
	free(ent);
	free(side);
	wsnap_index_free(idx);
	close(afd);
	wsnap_policy_release(&p);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct wsnap_fileid id;
	struct wsnap_policy p;
	uint8_t *c;

	if (size < 8 || memcmp(data, IXF_MAGIC, 8) != 0) {
		from_archive(data, size);
		return 0;
	}
	c = malloc(size);
	FUZZ_CHECK(c != NULL);
	memcpy(c, data, size);
	ixf_seal(c, size);
	wsnap_policy_init(&p);
	p.max_total_size = FUZZ_MAX_TOTAL;
	if (!claimed_id(c, size, &id))
		memset(&id, 0, sizeof(id));
	load_both(c, size, &id, &p);
	wsnap_policy_release(&p);
	free(c);
	return 0;
}
