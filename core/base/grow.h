/* SPDX-License-Identifier: MIT */
/*
 * Growing an array by doubling, for the walker and pack, and the zeroed
 * hash tables of the builder and the index (internal to core).
 */
#ifndef WSNAP_GROW_H
#define WSNAP_GROW_H

#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>

/*
 * Returns the array buf (elements of elem bytes, *cap of them allocated)
 * grown to hold at least need elements, doubling from 16, and updates *cap;
 * buf itself when it is large enough. NULL when out of memory: buf is then
 * unchanged and still the caller's. The caller bounds need.
 */
static inline void *wsnap_grow(void *buf, size_t *cap, size_t need, size_t elem)
{
	size_t nc = *cap ? *cap : 16;
	void *nb;

	if (need <= *cap)
		return buf;
	while (nc < need) {
		if (nc > SIZE_MAX / 2)
			return NULL;
		nc *= 2;
	}
	if (nc > SIZE_MAX / elem)
		return NULL;
	nb = realloc(buf, nc * elem);
	if (nb)
		*cap = nc;
	return nb;
}

/* The size of a transparent huge page on the machines we run on. */
#define WSNAP_HUGE_PAGE ((size_t)2 << 20)

/*
 * A zeroed array of n elements of elem bytes, freed with free(): calloc,
 * but a table of whole huge pages (2 MiB and up, a power of two of slots)
 * is aligned to them and asks the kernel for huge pages (where it gives
 * them on request only), so random probes into it do not miss the TLB on
 * every access. NULL when out of memory.
 */
static inline void *wsnap_table_calloc(size_t n, size_t elem)
{
	size_t bytes;
	void *p;

	if (elem && n > SIZE_MAX / elem)
		return NULL;
	bytes = n * elem;
	if (bytes < WSNAP_HUGE_PAGE || bytes % WSNAP_HUGE_PAGE)
		return calloc(n, elem);
	p = aligned_alloc(WSNAP_HUGE_PAGE, bytes);
	if (!p)
		return NULL;
	/* advice only: without it the table is just on small pages */
	(void)madvise(p, bytes, MADV_HUGEPAGE);
	memset(p, 0, bytes);
	return p;
}

#endif
