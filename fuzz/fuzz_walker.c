/* SPDX-License-Identifier: MIT */
/*
 * libFuzzer target: arbitrary bytes -> both tar readers (the walker of
 * core/tar/walker.c, and every header through libarchive), which must
 * agree (tests/lib/readers_diff.h: the same status, member and reason,
 * the same members with every field, the same stream length). The input
 * is read from a memfd (the direct layout when it is a plain tar) and,
 * when it fits a pipe's buffer, once more from a pipe (the piped layout).
 * A "WSNP" configuration prefix (fuzz_common.h) is dropped: the readers
 * take no policy options, and the seeds carry it.
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "fuzz_common.h"
#include "readers_diff.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	char why[1024];

	if (size >= FUZZ_MAGIC_LEN + FUZZ_CFG_LEN &&
	    memcmp(data, FUZZ_MAGIC, FUZZ_MAGIC_LEN) == 0) {
		data += FUZZ_MAGIC_LEN + FUZZ_CFG_LEN;
		size -= FUZZ_MAGIC_LEN + FUZZ_CFG_LEN;
	}
	if (!readers_diff(data, size, READERS_DIFF_MEMFD, why, sizeof(why))) {
		fprintf(stderr, "fuzz_walker: memfd: %s\n", why);
		abort();
	}
	if (!readers_diff(data, size, READERS_DIFF_PIPE, why, sizeof(why))) {
		fprintf(stderr, "fuzz_walker: pipe: %s\n", why);
		abort();
	}
	return 0;
}
