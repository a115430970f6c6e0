/* SPDX-License-Identifier: MIT */
/*
 * The policy engine (policy.md sections 3, 4, 5 and 8), which is also the
 * index builder: it receives raw members in archive order (from the reader,
 * the directory walker, or directly in unit tests), runs phase one per
 * member as it arrives (skip, single-member rules, limits, protected paths,
 * duplicates, lexical symlink targets, named symlinks), then at finish the
 * [wsnap] symlink resolution walk and phase two, synthesizes implicit
 * directories and produces the immutable index. Internal to core and ops.
 */
#ifndef WSNAP_ENGINE_H
#define WSNAP_ENGINE_H

#include "error.h"
#include "index.h"
#include "policy.h"
#include "reader.h"

struct wsnap_builder;

/* The policy is copied (the caller's may be released afterwards).
 * Errors: WSNAP_IO when out of memory. */
enum wsnap_status wsnap_builder_new(struct wsnap_builder **out,
				    const struct wsnap_policy *policy,
				    struct wsnap_error *err);

/* Phase one for one member. Same signature as wsnap_reader_fn with the
 * builder as ctx, so it can be passed to wsnap_reader_run directly.
 * Errors: WSNAP_REJECTED with the member and reason of the rule that
 * failed ('<tar>' 'invalid tar stream' for a member that breaks the
 * reader's contract), WSNAP_IO when out of memory. After an error the
 * builder may only be freed. */
enum wsnap_status wsnap_builder_add(void *builder,
				    const struct wsnap_raw_member *m,
				    struct wsnap_error *err);

/*
 * A hint, no more: asks the CPU to fetch the lookup-table slot that
 * wsnap_builder_add of m will probe when m is a plain name in the same
 * directory as the latest member (its parent is then known). Called a few
 * members ahead (core/index/build.c), it hides the one cache miss of each
 * new member. Changes nothing; m need not be valid for the builder.
 */
void wsnap_builder_prefetch(const struct wsnap_builder *b,
			    const struct wsnap_raw_member *m);

/*
 * The rest of the policy; on success *out is the index (with no data
 * descriptor: see wsnap_index_attach_data). The builder is freed in all
 * cases. Errors: WSNAP_REJECTED (symlink walk, phase two), WSNAP_IO.
 */
enum wsnap_status wsnap_builder_finish(struct wsnap_builder *b,
				       struct wsnap_index **out,
				       struct wsnap_error *err);

/* Frees an unfinished builder. NULL does nothing. */
void wsnap_builder_free(struct wsnap_builder *b);

/* Gives the index its data descriptor (taken over) and the reader's
 * figures; records fstat of fd for wsnap_index_data_check. */
void wsnap_index_attach_data(struct wsnap_index *idx, int fd,
			     const struct wsnap_reader_result *res);

#endif
