/* SPDX-License-Identifier: MIT */
/*
 * Part of a snapshot (select.h). Inos are in bytewise order of the rel
 * path (index.h), so a node's parent, a prefix of its path, always has a
 * smaller ino: one forward pass hands a selection down to every
 * descendant.
 */
#include "select.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "policy.h"

enum wsnap_status wsnap_select_normalize(const char *path, char **out,
					 struct wsnap_error *err)
{
	size_t cap = strlen(path) + 1;
	const char *c;
	char *norm;

	*out = NULL;
	norm = malloc(cap);
	if (!norm)
		return wsnap_error_io(err, ENOMEM, NULL, "out of memory");
	/* never longer than the input, so it always fits */
	wsnap_policy_normalize(path, norm, cap);
	for (c = norm; *c; c += strcspn(c, "/"), c += *c == '/') {
		if (strncmp(c, "..", 2) == 0 && (c[2] == '/' || !c[2])) {
			free(norm);
			return wsnap_error_usage(err,
						 "PATH '%s' has a '..' "
						 "component",
						 path);
		}
	}
	*out = norm;
	return WSNAP_OK;
}

/* The error for a path that names no node: the path as the member. */
static enum wsnap_status no_such_path(const char *path, struct wsnap_error *err)
{
	size_t len = strlen(path);

	wsnap_error_usage(err, WSNAP_REASON_NO_SUCH_PATH);
	if (len >= sizeof(err->member)) {
		len = sizeof(err->member) - 1;
		err->truncated = 1;
	}
	memcpy(err->member, path, len);
	err->member[len] = '\0';
	return WSNAP_USAGE;
}

enum wsnap_status wsnap_select_build(const struct wsnap_index *idx,
				     char *const *paths, size_t n,
				     unsigned char **out,
				     struct wsnap_error *err)
{
	uint32_t count = wsnap_index_count(idx), ino, a;
	unsigned char *mark;
	size_t i;

	*out = NULL;
	mark = calloc((size_t)count + 1, 1);
	if (!mark)
		return wsnap_error_io(err, ENOMEM, NULL, "out of memory");
	for (i = 0; i < n; i++) {
		ino = wsnap_index_lookup(idx, paths[i], strlen(paths[i]));
		if (ino == 0) {
			free(mark);
			return no_such_path(paths[i], err);
		}
		mark[ino] = WSNAP_SELECT_YES;
	}
	/* down: below a selected node, everything is selected */
	for (ino = WSNAP_ROOT_INO + 1; ino <= count; ino++)
		if (mark[wsnap_index_node(idx, ino)->parent] ==
		    WSNAP_SELECT_YES)
			mark[ino] = WSNAP_SELECT_YES;
	/* up: the ancestors of a selected node are its parents */
	for (ino = count; ino > WSNAP_ROOT_INO; ino--) {
		if (mark[ino] == WSNAP_SELECT_NO)
			continue;
		a = wsnap_index_node(idx, ino)->parent;
		if (mark[a] == WSNAP_SELECT_NO)
			mark[a] = WSNAP_SELECT_PARENT;
	}
	*out = mark;
	return WSNAP_OK;
}
