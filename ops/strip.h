/* SPDX-License-Identifier: MIT */
/*
 * Prefix stripping (policy.md section 8): rewrites an archive so that a
 * snapshot made of 'P/...' becomes root-relative.
 *
 * Steps, each of which can reject the archive before the next one runs:
 *  1. The input is validated by the index builder under a policy that has
 *     the strip prefix and nothing else (symlinks allowed, external targets
 *     allowed, the caller's limits): every input member gets the
 *     single-member rules of section 3 on its original name, and 'member
 *     does not start with prefix: P' unless it is a root entry or within P.
 *     A regular file is read again by step 2 (decompressed a second time
 *     when compressed; it must not change meanwhile); a pipe is
 *     decompressed into an unlinked temporary file on the way (the index's
 *     data file), which step 2 reads back.
 *  2. Every member is copied with libarchive into an uncompressed pax tar
 *     with its new name ('.' for the root, else the rel path below P):
 *     every attribute libarchive models is kept (mode, owner ids and
 *     names, times with nanoseconds, symlink target, xattrs, ACLs, file
 *     flags, sparse map). The pax writer builds each extended header from
 *     the entry as it is, so a stale 'path' of the input never survives; a
 *     new one is written when the new name needs it (long or non-ASCII).
 *  3. The output is read back and must give exactly the index of step 1
 *     (same paths, types, modes, sizes, mtimes, targets): libarchive and
 *     the wsnap reader must agree on what was written.
 *  4. The output is validated again with the caller's policy (where --skip,
 *     --reject-path etc. apply to the new names).
 * Nothing is dropped: members that the caller's policy skips stay in the
 * output (a consumer applying the same policy skips them again).
 */
#ifndef WSNAP_STRIP_H
#define WSNAP_STRIP_H

#include <stdbool.h>
#include <stdint.h>

#include "error.h"
#include "policy.h"

#define WSNAP_REASON_NO_PREFIX "member does not start with prefix"

struct wsnap_strip_stats {
	uint64_t members;	 /* members written */
	uint64_t output_bytes;	 /* size of the tar written */
	uint64_t stream_bytes;	 /* decompressed input */
	const char *compression; /* of the input (static string) */
};

/*
 * Rewrites the archive read from in_fd (a file or a pipe; see
 * wsnap_reader_run) relative to prefix into out_fd, which must be an empty,
 * seekable regular file opened for reading and writing (step 3 reads it
 * back); the caller makes it atomic (temporary file + rename). policy's own
 * strip_prefix is ignored. tmpdir as in struct wsnap_reader_opts (NULL:
 * $TMPDIR or /tmp). stats may be NULL.
 * Errors: WSNAP_USAGE (empty prefix), WSNAP_REJECTED (the input or the
 * result fails the policy), WSNAP_IO (read/write errors, out of memory).
 */
enum wsnap_status wsnap_strip_run(int in_fd, int out_fd,
				  const struct wsnap_policy *policy,
				  const char *prefix, const char *tmpdir,
				  struct wsnap_strip_stats *stats,
				  struct wsnap_error *err);

/*
 * wsnap_strip_run with the input's index (step 1) obtained by load instead
 * of built from in_fd (the tools' index cache): load gets in_fd, the policy
 * of step 1 and whether the data must be kept, and follows
 * wsnap_index_build's contract.
 */
struct wsnap_index;
typedef enum wsnap_status (*wsnap_strip_load_fn)(
	void *ctx, int fd, const struct wsnap_policy *policy, bool keep_data,
	struct wsnap_index **out, struct wsnap_error *err);
enum wsnap_status wsnap_strip_run_with(int in_fd, int out_fd,
				       const struct wsnap_policy *policy,
				       const char *prefix, const char *tmpdir,
				       wsnap_strip_load_fn load, void *ctx,
				       struct wsnap_strip_stats *stats,
				       struct wsnap_error *err);

/*
 * The new rel path of a member name (raw, as the reader reports it) below
 * the normalized prefix (section 8): writes it to out (capacity cap,
 * NUL-terminated; "." for the root) and returns its length; -1 when the
 * name is not within the prefix, -2 when it does not fit. Only components
 * are compared ('workspace2/x' is not within 'workspace').
 */
long wsnap_strip_name(const char *name, size_t len, const char *prefix,
		      char *out, size_t cap);

#endif
