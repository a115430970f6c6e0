/* SPDX-License-Identifier: MIT */
/*
 * A live directory read "under the policy": the directory side of 'wsnap
 * diff' and the input of 'wsnap pack'.
 *
 * The walker reads a directory tree one component at a time through openat()
 * with O_NOFOLLOW, never following a symlink, and hands every entry to a
 * callback as a struct wsnap_raw_member, exactly as the tar reader does for
 * an archive member. So the index builder (engine.h) turns a directory into
 * an index with the very rules, reasons and limits it applies to archives:
 * a directory side is checked like an archive side, and what pack writes has
 * been checked before a byte of it is written.
 *
 * Invariants:
 *  - member names are "." for the root and "./<rel>" below it;
 *  - entries of each directory are visited sorted bytewise by name, a
 *    directory before its contents, so the callback order (and the first
 *    rejection reported) only depends on the tree;
 *  - symlinks are reported with their target (readlinkat), never followed;
 *    a directory is entered through openat(O_DIRECTORY | O_NOFOLLOW) from its
 *    parent's descriptor, so a directory swapped for a symlink while walking
 *    is an error, not an escape;
 *  - sockets are left out (they cannot be snapshotted nor restored); FIFOs
 *    and devices are reported as WSNAP_RAW_OTHER (the builder rejects them:
 *    'unsupported member type');
 *  - paths within a --skip path (policy.md 4.1, with the --root-name
 *    variant) are pruned: neither reported nor entered;
 *  - memory is bounded: a directory listing holds at most
 *    policy->max_members + 1 names, a path at most max_path_length plus one
 *    component, and recursion stops where the builder's depth limit would.
 *
 * File content is read later through a cursor (struct wsnap_tree_cursor)
 * that opens files by rel path without following links, in the sorted
 * order the index gives, keeping the descriptors of the current directory
 * path open so that each directory is opened once.
 */
#ifndef WSNAP_TREE_H
#define WSNAP_TREE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/stat.h>

#include "error.h"
#include "index.h"
#include "policy.h"
#include "reader.h"

/* Longest symlink target the walker reads (Linux allows PATH_MAX - 1). */
#define WSNAP_TREE_MAX_TARGET 65536

/*
 * Opens the directory named by the user (DIR of pack, a side of diff) for
 * walking: the path itself may be reached through symlinks, as the user
 * chose it; everything below it is not. Returns a descriptor (O_CLOEXEC)
 * owned by the caller, or -1 with err set (WSNAP_IO: 'cannot open
 * directory').
 */
int wsnap_tree_open(const char *path, struct wsnap_error *err);

/*
 * Walks the tree under root_fd (not closed) and calls fn per entry, root
 * first (see the invariants above). label is the directory as the user named
 * it, used in I/O error messages ("DIR/rel"). A non-OK return of fn stops
 * the walk and is returned unchanged. Errors: WSNAP_IO (a directory or entry
 * that cannot be read), WSNAP_REJECTED from fn, or 'path too long' for a
 * path longer than the policy's limit plus one component.
 */
enum wsnap_status wsnap_tree_walk(int root_fd, const char *label,
				  const struct wsnap_policy *policy,
				  wsnap_reader_fn fn, void *ctx,
				  struct wsnap_error *err);

/*
 * Walks the tree into the index builder and returns the index (no data
 * descriptor: content is read through a cursor). On success *out is owned
 * by the caller (wsnap_index_free). Errors as wsnap_tree_walk and
 * wsnap_builder_finish.
 */
enum wsnap_status wsnap_tree_index(int root_fd, const char *label,
				   const struct wsnap_policy *policy,
				   struct wsnap_index **out,
				   struct wsnap_error *err);

/*
 * Fills m as the walker reports an entry named name (len bytes, "./<rel>")
 * whose lstat is st: type and typeflag, permission bits, size of a regular
 * file, mtime; a symlink's target is left for the caller. Also for a view
 * that must report entries exactly as the walker does (upper.h).
 */
void wsnap_tree_member(struct wsnap_raw_member *m, const char *name, size_t len,
		       const struct stat *st);

/*
 * The walker's bounds under policy: the most bytes of a "./<rel>" path it
 * builds (a longer one is 'path too long'), and the most entries of one
 * directory it lists (one more is 'archive member count exceeds limit',
 * naming the directory).
 */
size_t wsnap_tree_path_max(const struct wsnap_policy *policy);
uint64_t wsnap_tree_listing_max(const struct wsnap_policy *policy);

/* True when the rel path (normalized) lies within a --skip path. */
bool wsnap_tree_skipped(const struct wsnap_policy *policy, const char *rel,
			size_t len);

/*
 * Writes "label/rel" (or label alone for the root) into buf, cut to cap;
 * for messages naming a file of the tree. Returns buf.
 */
const char *wsnap_tree_describe(const char *label, const char *rel, char *buf,
				size_t cap);

struct wsnap_tree_cursor;

/* A cursor over root_fd (not owned; must outlive the cursor). */
enum wsnap_status wsnap_tree_cursor_new(struct wsnap_tree_cursor **out,
					int root_fd, const char *label,
					struct wsnap_error *err);

/*
 * Opens the regular file at rel (a normalized rel path, as an index node's
 * path) for reading: each directory component with O_DIRECTORY|O_NOFOLLOW,
 * the file with O_NOFOLLOW|O_NONBLOCK (a FIFO swapped in cannot block), then
 * fstat into *st unless st is NULL. Returns a descriptor the caller closes,
 * or -1 with err set: WSNAP_IO 'cannot open' (errno), 'not a regular file'
 * when the entry is no longer one (checked only with st: without it, the
 * caller must notice from reading, as pack does from the size). Paths opened
 * in bytewise order open each directory once.
 */
int wsnap_tree_cursor_open(struct wsnap_tree_cursor *c, const char *rel,
			   struct stat *st, struct wsnap_error *err);

/* The label and root of the cursor (for messages). */
const char *wsnap_tree_cursor_label(const struct wsnap_tree_cursor *c);

/* Closes the cached directories and frees the cursor. NULL does nothing. */
void wsnap_tree_cursor_free(struct wsnap_tree_cursor *c);

#endif
