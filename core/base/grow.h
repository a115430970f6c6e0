/* SPDX-License-Identifier: MIT */
/*
 * Growing an array by doubling, for the walker and pack (internal to core).
 */
#ifndef WSNAP_GROW_H
#define WSNAP_GROW_H

#include <stdint.h>
#include <stdlib.h>

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

#endif
