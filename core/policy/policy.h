/* SPDX-License-Identifier: MIT */
/*
 * The snapshot safety policy (../shared/spec/policy.md sections 1-6 and 8).
 *
 * struct wsnap_policy holds the options every command that reads an archive
 * accepts. Configured paths are stored normalized (section 1: components
 * without empty and '.' ones, one leading '/' dropped, joined with '/'; ""
 * is the root). The rules themselves run in the policy engine (engine.h;
 * rules.c, resolve.c, engine.c), member by member as the reader produces
 * them.
 */
#ifndef WSNAP_POLICY_H
#define WSNAP_POLICY_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "error.h"

#define WSNAP_DEFAULT_MAX_MEMBERS     2000000ULL
#define WSNAP_DEFAULT_MAX_TOTAL_SIZE  (64ULL << 30)
#define WSNAP_DEFAULT_MAX_FILE_SIZE   UINT64_MAX /* unlimited */
#define WSNAP_DEFAULT_MAX_PATH_LENGTH 4096ULL
#define WSNAP_DEFAULT_MAX_DEPTH	      256ULL
/* [wsnap] 1 GiB: the default member count with ~400 bytes of path and
 * target per entry on average (doc/policy.md section 5) */
#define WSNAP_DEFAULT_MAX_INDEX_SIZE (1ULL << 30)

/* Rule 3.9: the longest name component a Linux directory holds (NAME_MAX)
 * and the first symlink target length symlink(2) refuses (PATH_MAX). */
#define WSNAP_NAME_MAX	 255u
#define WSNAP_TARGET_MAX 4096u

/* Most configured paths of each kind (--skip, --reject-path, ...). */
#define WSNAP_POLICY_MAX_PATHS 1024

struct wsnap_pathlist {
	char **items; /* normalized, heap-owned by the policy */
	size_t count;
};

struct wsnap_policy {
	bool allow_external_symlinks;	   /* skip the target checks of 4.5 */
	bool no_symlinks;		   /* rule 3.6 */
	struct wsnap_pathlist skip;	   /* --skip */
	struct wsnap_pathlist reject_path; /* --reject-path */
	struct wsnap_pathlist reject_symlink; /* --reject-symlink */
	char *root_name;      /* --root-name, one component, or NULL */
	char *strip_prefix;   /* section 8 (export --strip-prefix), or NULL */
	uint64_t max_members; /* non-root members */
	uint64_t max_total_size;  /* sum of regular file sizes */
	uint64_t max_file_size;	  /* one regular file; UINT64_MAX unlimited */
	uint64_t max_path_length; /* bytes of the rel path */
	uint64_t max_depth;	  /* components of the rel path */
	/* [wsnap] bytes the index may take: what the engine charges for
	 * entries, paths, targets and sparse maps (doc/policy.md section 5);
	 * UINT64_MAX unlimited */
	uint64_t max_index_size;
};

/* Fills p with the defaults of section 6. Never fails. */
void wsnap_policy_init(struct wsnap_policy *p);

/* Frees what p owns; p may be reused after wsnap_policy_init(). */
void wsnap_policy_release(struct wsnap_policy *p);

/*
 * Adds a configured path, normalized. Fails with WSNAP_USAGE past
 * WSNAP_POLICY_MAX_PATHS, WSNAP_IO when out of memory.
 */
enum wsnap_status wsnap_policy_add_skip(struct wsnap_policy *p,
					const char *path,
					struct wsnap_error *err);
enum wsnap_status wsnap_policy_add_reject_path(struct wsnap_policy *p,
					       const char *path,
					       struct wsnap_error *err);
enum wsnap_status wsnap_policy_add_reject_symlink(struct wsnap_policy *p,
						  const char *path,
						  struct wsnap_error *err);
/* Sets --root-name (normalized; must be one component, else WSNAP_USAGE). */
enum wsnap_status wsnap_policy_set_root_name(struct wsnap_policy *p,
					     const char *name,
					     struct wsnap_error *err);
/* Sets the strip prefix (normalized; empty is WSNAP_USAGE). */
enum wsnap_status wsnap_policy_set_strip_prefix(struct wsnap_policy *p,
						const char *prefix,
						struct wsnap_error *err);

/*
 * Makes dst, fresh from wsnap_policy_init, a deep copy of src (which stays
 * the caller's). Errors: WSNAP_IO when out of memory; dst then holds part
 * of the copy and still needs wsnap_policy_release.
 */
enum wsnap_status wsnap_policy_copy(struct wsnap_policy *dst,
				    const struct wsnap_policy *src,
				    struct wsnap_error *err);

/*
 * The canonical bytes of everything in p that can change an index (the
 * flags, the limits, every configured path in order, the root name and the
 * strip prefix), for keys that must be compared exactly (the index cache):
 * equal policies give equal bytes, different ones different bytes. Writes
 * them to buf when cap is large enough; returns the length either way.
 */
size_t wsnap_policy_encode(const struct wsnap_policy *p, unsigned char *buf,
			   size_t cap);

/*
 * Normalizes a configured path (section 1) into out (capacity cap, always
 * NUL-terminated): returns the length, or -1 if it does not fit.
 */
long wsnap_policy_normalize(const char *path, char *out, size_t cap);

/*
 * within(P, Q) of section 1 on normalized rel paths: P equals Q, Q's
 * components are a prefix of P's, or Q is empty. Component-wise.
 */
bool wsnap_path_within(const char *p, size_t plen, const char *q, size_t qlen);

/*
 * Sanitized mode of a regular file (section 7.6) from header mode bits;
 * returns permission bits only.
 */
unsigned wsnap_policy_file_mode(unsigned mode);

#define WSNAP_DIR_MODE 0755u

#endif
