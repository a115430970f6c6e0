/* SPDX-License-Identifier: MIT */
/*
 * Policy options (policy.md sections 1, 6 and 7.6).
 *
 * Invariants: every configured path held by a struct wsnap_policy is
 * normalized (section 1): no empty or '.' components, no leading or
 * trailing '/', '..' kept, "" for the root. The root name, when set, is
 * exactly one component. The strip prefix, when set, is not empty.
 */
#include "policy.h"

#include <errno.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>

void wsnap_policy_init(struct wsnap_policy *p)
{
	memset(p, 0, sizeof(*p));
	p->allow_external_symlinks = false;
	p->no_symlinks = false;
	p->root_name = NULL;
	p->strip_prefix = NULL;
	p->max_members = WSNAP_DEFAULT_MAX_MEMBERS;
	p->max_total_size = WSNAP_DEFAULT_MAX_TOTAL_SIZE;
	p->max_file_size = WSNAP_DEFAULT_MAX_FILE_SIZE;
	p->max_path_length = WSNAP_DEFAULT_MAX_PATH_LENGTH;
	p->max_depth = WSNAP_DEFAULT_MAX_DEPTH;
	p->max_index_size = WSNAP_DEFAULT_MAX_INDEX_SIZE;
}

static void pathlist_release(struct wsnap_pathlist *l)
{
	size_t i;

	for (i = 0; i < l->count; i++)
		free(l->items[i]);
	free(l->items);
	l->items = NULL;
	l->count = 0;
}

void wsnap_policy_release(struct wsnap_policy *p)
{
	pathlist_release(&p->skip);
	pathlist_release(&p->reject_path);
	pathlist_release(&p->reject_symlink);
	free(p->root_name);
	p->root_name = NULL;
	free(p->strip_prefix);
	p->strip_prefix = NULL;
}

long wsnap_policy_normalize(const char *path, char *out, size_t cap)
{
	const char *s = path;
	size_t len = 0;

	if (cap == 0)
		return -1;
	if (*s == '/')
		s++;
	while (*s) {
		const char *c = s;
		size_t n;

		while (*s && *s != '/')
			s++;
		n = (size_t)(s - c);
		if (*s == '/')
			s++;
		if (n == 0 || (n == 1 && c[0] == '.'))
			continue;
		/* room for an optional '/', the component and the NUL */
		if ((len ? len + 1 : 0) + n >= cap) {
			out[0] = '\0';
			return -1;
		}
		if (len)
			out[len++] = '/';
		memcpy(out + len, c, n);
		len += n;
	}
	out[len] = '\0';
	return (long)len;
}

bool wsnap_path_within(const char *p, size_t plen, const char *q, size_t qlen)
{
	if (qlen == 0)
		return true;
	if (plen < qlen || memcmp(p, q, qlen) != 0)
		return false;
	return plen == qlen || p[qlen] == '/';
}

unsigned wsnap_policy_file_mode(unsigned mode)
{
	unsigned m = mode & 0755u;

	if (!(m & 0100u))
		m &= ~0111u;
	return m | 0600u;
}

/* A heap copy of path, normalized; NULL when out of memory. */
static char *normalize_dup(const char *path)
{
	size_t cap = strlen(path) + 1;
	char *out = malloc(cap);

	/* the normal form is never longer than the input */
	if (out && wsnap_policy_normalize(path, out, cap) < 0) {
		free(out);
		out = NULL;
	}
	return out;
}

static enum wsnap_status pathlist_add(struct wsnap_pathlist *l,
				      const char *option, const char *path,
				      struct wsnap_error *err)
{
	char **items;
	char *norm;

	if (l->count >= WSNAP_POLICY_MAX_PATHS)
		return wsnap_error_usage(err, "too many %s paths (at most %d)",
					 option, WSNAP_POLICY_MAX_PATHS);
	norm = normalize_dup(path);
	if (!norm)
		return wsnap_error_io(err, ENOMEM, NULL, "out of memory");
	items = realloc(l->items, (l->count + 1) * sizeof(*items));
	if (!items) {
		free(norm);
		return wsnap_error_io(err, ENOMEM, NULL, "out of memory");
	}
	items[l->count++] = norm;
	l->items = items;
	return WSNAP_OK;
}

enum wsnap_status wsnap_policy_add_skip(struct wsnap_policy *p,
					const char *path,
					struct wsnap_error *err)
{
	return pathlist_add(&p->skip, "--skip", path, err);
}

enum wsnap_status wsnap_policy_add_reject_path(struct wsnap_policy *p,
					       const char *path,
					       struct wsnap_error *err)
{
	return pathlist_add(&p->reject_path, "--reject-path", path, err);
}

enum wsnap_status wsnap_policy_add_reject_symlink(struct wsnap_policy *p,
						  const char *path,
						  struct wsnap_error *err)
{
	return pathlist_add(&p->reject_symlink, "--reject-symlink", path, err);
}

/* Replaces *slot by the normalized path; a usage error when it is empty or,
 * with one_component, not exactly one component. */
static enum wsnap_status set_path(char **slot, const char *option,
				  const char *path, bool one_component,
				  struct wsnap_error *err)
{
	char *norm = normalize_dup(path);

	if (!norm)
		return wsnap_error_io(err, ENOMEM, NULL, "out of memory");
	if (norm[0] == '\0') {
		free(norm);
		return wsnap_error_usage(err, "%s must not be empty", option);
	}
	if (one_component && strchr(norm, '/')) {
		free(norm);
		return wsnap_error_usage(
			err, "%s must be a single path component", option);
	}
	free(*slot);
	*slot = norm;
	return WSNAP_OK;
}

enum wsnap_status wsnap_policy_set_root_name(struct wsnap_policy *p,
					     const char *name,
					     struct wsnap_error *err)
{
	return set_path(&p->root_name, "--root-name", name, true, err);
}

enum wsnap_status wsnap_policy_set_strip_prefix(struct wsnap_policy *p,
						const char *prefix,
						struct wsnap_error *err)
{
	return set_path(&p->strip_prefix, "the strip prefix", prefix, false,
			err);
}

static enum wsnap_status pathlist_copy(struct wsnap_pathlist *dst,
				       const char *option,
				       const struct wsnap_pathlist *src,
				       struct wsnap_error *err)
{
	enum wsnap_status st = WSNAP_OK;
	size_t i;

	for (i = 0; i < src->count && st == WSNAP_OK; i++)
		st = pathlist_add(dst, option, src->items[i], err);
	return st;
}

/* Paths are re-normalized, which leaves normalized paths as they are. */
enum wsnap_status wsnap_policy_copy(struct wsnap_policy *dst,
				    const struct wsnap_policy *src,
				    struct wsnap_error *err)
{
	enum wsnap_status st;

	dst->allow_external_symlinks = src->allow_external_symlinks;
	dst->no_symlinks = src->no_symlinks;
	dst->max_members = src->max_members;
	dst->max_total_size = src->max_total_size;
	dst->max_file_size = src->max_file_size;
	dst->max_path_length = src->max_path_length;
	dst->max_depth = src->max_depth;
	dst->max_index_size = src->max_index_size;
	st = pathlist_copy(&dst->skip, "--skip", &src->skip, err);
	if (st == WSNAP_OK)
		st = pathlist_copy(&dst->reject_path, "--reject-path",
				   &src->reject_path, err);
	if (st == WSNAP_OK)
		st = pathlist_copy(&dst->reject_symlink, "--reject-symlink",
				   &src->reject_symlink, err);
	if (st == WSNAP_OK && src->root_name)
		st = wsnap_policy_set_root_name(dst, src->root_name, err);
	if (st == WSNAP_OK && src->strip_prefix)
		st = wsnap_policy_set_strip_prefix(dst, src->strip_prefix, err);
	return st;
}

/* The encoding of wsnap_policy_encode: little-endian integers; a string as
 * its length + 1 (0 for NULL) in 8 bytes, then its bytes; a list as its
 * count in 8 bytes, then its strings. */
struct enc {
	unsigned char *buf;
	size_t cap;
	size_t len;
};

static void enc_bytes(struct enc *e, const void *p, size_t n)
{
	if (n && e->len <= e->cap && n <= e->cap - e->len)
		memcpy(e->buf + e->len, p, n);
	e->len += n;
}

static void enc_u64(struct enc *e, uint64_t v)
{
	unsigned char b[8];
	int i;

	for (i = 0; i < 8; i++)
		b[i] = (unsigned char)(v >> (8 * i));
	enc_bytes(e, b, sizeof(b));
}

static void enc_str(struct enc *e, const char *s)
{
	size_t n = s ? strlen(s) : 0;

	enc_u64(e, s ? (uint64_t)n + 1 : 0);
	enc_bytes(e, s, n);
}

static void enc_list(struct enc *e, const struct wsnap_pathlist *l)
{
	size_t i;

	enc_u64(e, l->count);
	for (i = 0; i < l->count; i++)
		enc_str(e, l->items[i]);
}

/* Every field is encoded: one added after max_index_size trips this, so
 * that it is added below too (else cached indexes would ignore it). */
_Static_assert(offsetof(struct wsnap_policy, max_index_size) +
			       sizeof(uint64_t) ==
		       sizeof(struct wsnap_policy),
	       "a new policy field must be in wsnap_policy_encode");

size_t wsnap_policy_encode(const struct wsnap_policy *p, unsigned char *buf,
			   size_t cap)
{
	struct enc e = {.buf = buf, .cap = buf ? cap : 0};

	enc_u64(&e, (uint64_t)p->allow_external_symlinks |
			    (uint64_t)p->no_symlinks << 1);
	enc_u64(&e, p->max_members);
	enc_u64(&e, p->max_total_size);
	enc_u64(&e, p->max_file_size);
	enc_u64(&e, p->max_path_length);
	enc_u64(&e, p->max_depth);
	enc_u64(&e, p->max_index_size);
	enc_list(&e, &p->skip);
	enc_list(&e, &p->reject_path);
	enc_list(&e, &p->reject_symlink);
	enc_str(&e, p->root_name);
	enc_str(&e, p->strip_prefix);
	return e.len;
}
