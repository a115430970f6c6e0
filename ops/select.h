/* SPDX-License-Identifier: MIT */
/*
 * Part of a snapshot: the PATH operands of 'wsnap ls' and 'wsnap export'
 * (cli.md), each a rel path that selects the node it names and, for a
 * directory, everything below it, like 'tar -xf A PATH'.
 *
 * A PATH is normalized like a configured path (policy.md section 1: empty
 * and '.' components dropped, one leading '/' dropped); a '..' component
 * is a usage error, since no member can be named through it. It is then
 * looked up in the index literally, never resolved: a PATH through a
 * symlink member names nothing (no node lies below a symlink; the policy
 * makes sure of that), and a PATH that is a symlink selects the symlink
 * itself, not its target. A PATH that names no node is an error, after
 * the whole archive was validated.
 */
#ifndef WSNAP_SELECT_H
#define WSNAP_SELECT_H

#include <stddef.h>

#include "error.h"
#include "index.h"

/* What a selection says of one node. */
enum wsnap_select_mark {
	WSNAP_SELECT_NO = 0,	 /* left out */
	WSNAP_SELECT_YES = 1,	 /* selected (named, or below one named) */
	WSNAP_SELECT_PARENT = 2, /* only an ancestor of selected nodes */
};

/* Reason of the error for a PATH that names no node (member: the PATH). */
#define WSNAP_REASON_NO_SUCH_PATH "no such path in the archive:"

/*
 * Normalizes the PATH operand path into *out (malloc'd, the caller
 * frees; "" for the root). Errors: WSNAP_USAGE ("PATH '...' has a '..'
 * component"), WSNAP_IO (out of memory).
 */
enum wsnap_status wsnap_select_normalize(const char *path, char **out,
					 struct wsnap_error *err);

/*
 * The marks of the nodes of idx for the normalized paths[0..n): *out
 * (malloc'd, wsnap_index_count(idx) + 1 bytes indexed by ino, the caller
 * frees) marks YES the nodes within a path and PARENT their other
 * ancestors (the root among them, unless a path is "", which selects
 * everything). Errors: WSNAP_USAGE for the first path (in their order)
 * that names no node, WSNAP_REASON_NO_SUCH_PATH with the path as member;
 * WSNAP_IO (out of memory). *out is NULL on error.
 */
enum wsnap_status wsnap_select_build(const struct wsnap_index *idx,
				     char *const *paths, size_t n,
				     unsigned char **out,
				     struct wsnap_error *err);

#endif
