/* SPDX-License-Identifier: MIT */
/*
 * Shared by the libFuzzer targets: the input layout, the options it
 * selects, and descriptors holding the input.
 *
 * Input layout: without the magic "WSNP" at its start, the whole input is
 * the archive, read under the default policy (total size capped, see
 * FUZZ_MAX_TOTAL). With the magic, the FUZZ_CFG_LEN bytes after it choose
 * the options (fuzz_configure) and the rest is the archive.
 */
#ifndef WSNAP_FUZZ_COMMON_H
#define WSNAP_FUZZ_COMMON_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>

#include "policy.h"

#define FUZZ_MAGIC     "WSNP"
#define FUZZ_MAGIC_LEN 4
#define FUZZ_CFG_LEN   12

/*
 * The default policy's 64 GiB total would let a 30-byte zstd stream keep one
 * run busy for minutes inflating data that is then legitimately skipped; the
 * fuzzers look for crashes, not for that, so they cap the total at 256 MiB.
 * The 64 GiB default itself is tested by tests/e2e/e2e_corpus.sh.
 */
#define FUZZ_MAX_TOTAL (256ULL << 20)

/* Configuration byte 0. */
enum fuzz_flags {
	FUZZ_ALLOW_EXTERNAL = 1 << 0,
	FUZZ_NO_SYMLINKS = 1 << 1,
	FUZZ_ROOT_NAME = 1 << 2,
	FUZZ_STRIP_PREFIX = 1 << 3,
	FUZZ_KEEP_DATA = 1 << 4,
	FUZZ_PIPE = 1 << 5,
	FUZZ_COMPARE = 1 << 6,
	FUZZ_FLAG7 = 1 << 7, /* target-specific */
};

#define FUZZ_CHECK(cond)                                                       \
	do {                                                                   \
		if (!(cond)) {                                                 \
			fprintf(stderr, "%s:%d: check failed: %s\n", __FILE__, \
				__LINE__, #cond);                              \
			abort();                                               \
		}                                                              \
	} while (0)

struct fuzz_input {
	const uint8_t *data; /* the archive */
	size_t size;
	unsigned flags;	 /* enum fuzz_flags; FUZZ_COMPARE when no prefix */
	uint8_t extra;	 /* configuration byte 11, target-specific */
	bool configured; /* the input had the prefix */
};

/*
 * Initializes policy (release it with wsnap_policy_release) from the input:
 * the default policy with FUZZ_MAX_TOTAL, or the configured options.
 * Configuration bytes after the magic:
 *   0      flags (enum fuzz_flags)
 *   1,2,3  --skip, --reject-path, --reject-symlink: bits 0-1 how many
 *          (0-3), bits 2-7 the first fuzz_paths index; each next one 7 on
 *   4, 5   --root-name, --strip-prefix: a fuzz_paths index (when flagged)
 *   6-10   max members, total size, file size, path length, depth: 0 the
 *          default, 1-127 (v - 1) * scale (1, 64, 16, 1, 1), 128-255
 *          2^(v & 63) - 1
 *   11     target-specific
 * A value the policy refuses (a usage error) leaves that option unset.
 */
void fuzz_input_parse(struct fuzz_input *in, struct wsnap_policy *policy,
		      const uint8_t *data, size_t size);

/* The configured paths (normalization cases and the seeds' names). */
extern const char *const fuzz_paths[];
extern const size_t fuzz_npaths;

/* A memfd holding the bytes, at offset 0 (aborts on failure). */
int fuzz_memfd(const uint8_t *data, size_t size);

/* A pipe holding all the bytes, write end closed; -1 when they do not fit
 * its buffer (1 MiB). */
int fuzz_pipe(const uint8_t *data, size_t size);

/* True when reason is one of policy.md's (exact, or prefix + detail). */
bool fuzz_known_reason(const char *reason);

#endif
