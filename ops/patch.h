/* SPDX-License-Identifier: MIT */
/*
 * The changes of a diff as a patch in git's format (cli.md 'wsnap diff -p').
 *
 * The patch writer is a wsnap_diff_fn: the diff engine (diff.h) calls it
 * once per change, in bytewise path order, and it writes that change's
 * part of the patch at once through a write callback, so the order of the
 * patch is the engine's and nothing accumulates but what --stat needs.
 *
 * Who writes what. The text of each file's diff is libgit2's
 * (git_patch_from_buffers over the two contents): the hunks, their
 * context, '\ No newline at end of file', the decision that a file is
 * binary (a NUL in its first 8000 bytes, as git decides) and the git
 * binary patch of --binary. libgit2's buffer API takes no modes and no
 * repository, so the lines around it are written here, as git writes
 * them: 'diff --git a/X b/X', 'new file mode', 'deleted file mode', 'old
 * mode' / 'new mode', 'index OLD..NEW[ MODE]' (the blob ids are those
 * libgit2 computed: SHA-1 of 'blob N\0' and the content; 7 hex digits, all
 * 40 for a binary file under --binary, as git apply needs), '--- a/X' and
 * '+++ b/X' (with git's TAB after a name holding a space), and paths
 * quoted as git quotes them (wsnap_patch_quote).
 *
 * How nodes map to git's entries. A regular file is mode 100755 when its
 * owner may execute it, else 100644 (git keeps no other bits); a symlink
 * is mode 120000 with its target as content; a directory is nothing of
 * its own (git does not track directories: its files are their own
 * changes, and an empty directory or a directory's mode cannot be
 * expressed). A change of type is a deletion followed by an addition, as
 * git writes it. A change git cannot see (a mode bit other than the
 * owner's x, an mtime) writes nothing.
 *
 * Memory. Both contents of one file are held while its diff is made, in
 * two buffers that are reused; a file larger than opts->max_size is never
 * read: its diff is 'Binary files a/X and b/X differ' with no index line
 * (git apply refuses to apply it, rather than leave the file as it was).
 * With opts->stat, one small record per file shown is kept for
 * wsnap_patch_stat.
 */
#ifndef WSNAP_PATCH_H
#define WSNAP_PATCH_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "diff.h"
#include "error.h"

#define WSNAP_PATCH_CONTEXT    3	   /* -U default, as git's */
#define WSNAP_PATCH_MAX_SIZE   (16u << 20) /* --max-diff-size default */
#define WSNAP_PATCH_STAT_WIDTH 80	   /* git's --stat width off a tty */

struct wsnap_patch_opts {
	uint32_t context;  /* lines of context around each change */
	bool binary;	   /* binary files as git binary patches */
	uint64_t max_size; /* a larger file is not read (shown as binary) */
	bool stat;	   /* keep what wsnap_patch_stat prints */
};

/*
 * Receives the patch, piece after piece in order. A non-OK return stops
 * the diff and is returned by it unchanged.
 */
typedef enum wsnap_status (*wsnap_patch_write_fn)(void *ctx, const void *buf,
						  size_t len,
						  struct wsnap_error *err);

/* What was written, for -v. */
struct wsnap_patch_counts {
	uint64_t files;	      /* files with a part in the patch */
	uint64_t binary;      /* of which binary */
	uint64_t sized_out;   /* of which not read: over max_size */
	uint64_t unexpressed; /* changes that wrote nothing (see above) */
	uint64_t bytes_read;
};

struct wsnap_patch;

/*
 * A patch writer for the changes from side a to side b (the sides of the
 * diff; their content is read through them), writing through write(wctx).
 * The sides must outlive the writer. Errors: out of memory.
 */
enum wsnap_status wsnap_patch_new(struct wsnap_patch **out,
				  const struct wsnap_diff_side *a,
				  const struct wsnap_diff_side *b,
				  const struct wsnap_patch_opts *opts,
				  wsnap_patch_write_fn write, void *wctx,
				  struct wsnap_error *err);

/*
 * The wsnap_diff_fn to give wsnap_diff_run, with the writer as its ctx:
 * writes c's part of the patch. Errors: WSNAP_IO from reading a side
 * (the message names the file) or from libgit2, out of memory, or the
 * write callback's status, libgit2 failing to start (it is started for the
 * first diff: WSNAP_IO).
 */
enum wsnap_status wsnap_patch_change(void *ctx,
				     const struct wsnap_diff_change *c,
				     struct wsnap_error *err);

/*
 * Writes git's --stat of every file written so far (the writer must have
 * been made with opts->stat) through write(wctx): one line per file,
 * 'path | N ++--' or 'path | Bin OLD -> NEW bytes', names and bars fitted
 * into WSNAP_PATCH_STAT_WIDTH columns as git fits them, then ' N files
 * changed, N insertions(+), N deletions(-)'. Nothing when no file was
 * written. Errors: the write callback's status.
 */
enum wsnap_status wsnap_patch_stat(const struct wsnap_patch *p,
				   wsnap_patch_write_fn write, void *wctx,
				   struct wsnap_error *err);

void wsnap_patch_get_counts(const struct wsnap_patch *p,
			    struct wsnap_patch_counts *counts);

/* Frees p; NULL does nothing. */
void wsnap_patch_free(struct wsnap_patch *p);

/*
 * Writes prefix and path as git writes a path (quote_c_style, with
 * core.quotePath on, its default): unchanged when no byte needs quoting,
 * else inside double quotes with \a \b \t \n \v \f \r \" \\ for those
 * bytes and \ooo (three octal digits) for other control bytes, DEL and
 * every byte from 0x80 up. Writes at most cap bytes into dst, always
 * NUL-terminated when cap > 0; returns the length of the whole result
 * (not counting the NUL), as snprintf does: a result of cap or more was
 * cut.
 */
size_t wsnap_patch_quote(char *dst, size_t cap, const char *prefix,
			 const char *path);

#endif
