/* SPDX-License-Identifier: MIT */
/*
 * A source over bytes in memory (stream.h, wsnap_source_memory): what the
 * tests and fuzz targets read a compressed stream from.
 */
#include "stream.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

struct mem_source {
	struct wsnap_source base;
	const unsigned char *data;
};

static ssize_t mem_pread(struct wsnap_source *src, void *buf, size_t len,
			 uint64_t off)
{
	struct mem_source *m = (struct mem_source *)src;

	if (off >= src->size)
		return 0;
	if (len > src->size - off)
		len = (size_t)(src->size - off);
	memcpy(buf, m->data + off, len);
	return (ssize_t)len;
}

static int mem_check(struct wsnap_source *src)
{
	return 0;
}

static void mem_destroy(struct wsnap_source *src)
{
	free(src);
}

static const struct wsnap_source_ops mem_ops = {
	.pread = mem_pread,
	.check = mem_check,
	.destroy = mem_destroy,
};

int wsnap_source_memory(const void *data, size_t len, struct wsnap_source **out)
{
	struct mem_source *m = calloc(1, sizeof(*m));

	*out = NULL;
	if (!m)
		return -ENOMEM;
	m->base.ops = &mem_ops;
	m->base.size = len;
	m->base.label = "memory";
	m->data = data;
	*out = &m->base;
	return 0;
}
