/* SPDX-License-Identifier: MIT */
/*
 * Internal to the patch writer (patch.c, patch_stat.c): a growing text
 * buffer and the --stat records.
 */
#ifndef WSNAP_PATCH_PRIVATE_H
#define WSNAP_PATCH_PRIVATE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "error.h"
#include "patch.h"

/* Bytes, always NUL-terminated once something was put. */
struct wsnap_patch_buf {
	char *p;
	size_t len;
	size_t cap;
};

/* Each appends to b; errors: out of memory (b unchanged). */
enum wsnap_status wsnap_patch_buf_put(struct wsnap_patch_buf *b, const void *s,
				      size_t len, struct wsnap_error *err);
enum wsnap_status wsnap_patch_buf_str(struct wsnap_patch_buf *b, const char *s,
				      struct wsnap_error *err);
/* prefix and path quoted as git quotes them (wsnap_patch_quote). */
enum wsnap_status wsnap_patch_buf_quote(struct wsnap_patch_buf *b,
					const char *prefix, const char *path,
					struct wsnap_error *err);
void wsnap_patch_buf_release(struct wsnap_patch_buf *b);

/* One file of --stat: what git's diffstat keeps of it. */
struct wsnap_patch_file {
	char *name; /* the path quoted as git quotes it (owned) */
	size_t name_len;
	uint64_t added;	  /* lines; unused when binary */
	uint64_t deleted; /* lines; unused when binary */
	uint64_t old_size;
	uint64_t new_size;
	bool binary;
	bool shown; /* the file has a part in the patch */
};

/*
 * Writes git's --stat of files[0 .. n) fitted into width columns (see
 * wsnap_patch_stat). Errors: the write callback's status, out of memory.
 */
enum wsnap_status wsnap_patch_stat_write(const struct wsnap_patch_file *files,
					 size_t n, int width,
					 wsnap_patch_write_fn write, void *wctx,
					 struct wsnap_error *err);

#endif
