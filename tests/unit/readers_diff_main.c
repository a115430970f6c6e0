/* SPDX-License-Identifier: MIT */
/*
 * The ctest readers_diff: every file of the directories given (the
 * malformed corpus tests/data/malformed, the fuzzers' seeds fuzz/corpus/
 * seed, which fuzz/tarfile_diff.py also reads) through both tar readers,
 * from a memfd and from a pipe (readers_diff.h); a seed's "WSNP"
 * configuration prefix (fuzz_common.h) is dropped. Prints every
 * disagreement and exits 1 if there is one, or if a directory holds no
 * archive at all (a test that compared nothing).
 *
 *   readers_diff DIR...
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "readers_diff.h"

/* Larger files are not compared (the corpus has none). */
#define RD_MAX_INPUT (64u << 20)
/* The fuzzers' configuration prefix: magic and 12 bytes. */
#define CFG_MAGIC "WSNP"
#define CFG_LEN	  (4 + 12)

static unsigned char *read_all(int dirfd, const char *name, size_t *size)
{
	int fd = openat(dirfd, name, O_RDONLY | O_CLOEXEC | O_NOFOLLOW);
	struct stat sb;
	unsigned char *p;
	size_t done = 0;

	if (fd < 0 || fstat(fd, &sb) != 0 || !S_ISREG(sb.st_mode) ||
	    sb.st_size > (off_t)RD_MAX_INPUT) {
		if (fd >= 0)
			close(fd);
		return NULL;
	}
	p = malloc((size_t)sb.st_size + 1);
	if (!p)
		abort();
	while (done < (size_t)sb.st_size) {
		ssize_t n = read(fd, p + done, (size_t)sb.st_size - done);

		if (n <= 0)
			break;
		done += (size_t)n;
	}
	close(fd);
	*size = done;
	return p;
}

int main(int argc, char **argv)
{
	int failed = 0, i;

	if (argc < 2) {
		fprintf(stderr, "usage: readers_diff DIR...\n");
		return 2;
	}
	for (i = 1; i < argc; i++) {
		DIR *d = opendir(argv[i]);
		struct dirent *e;
		unsigned compared = 0;

		if (!d) {
			fprintf(stderr, "readers_diff: cannot open '%s': %s\n",
				argv[i], strerror(errno));
			return 2;
		}
		while ((e = readdir(d)) != NULL) {
			static const enum readers_diff_input how[] = {
				READERS_DIFF_MEMFD, READERS_DIFF_PIPE};
			char why[1024];
			size_t size = 0, k;
			unsigned char *data;
			const unsigned char *a;

			if (e->d_name[0] == '.' ||
			    strcmp(e->d_name, "EXPECTED") == 0)
				continue;
			data = read_all(dirfd(d), e->d_name, &size);
			if (!data)
				continue;
			a = data;
			if (size >= CFG_LEN && memcmp(a, CFG_MAGIC, 4) == 0) {
				a += CFG_LEN;
				size -= CFG_LEN;
			}
			for (k = 0; k < 2; k++) {
				if (readers_diff(a, size, how[k], why,
						 sizeof(why)))
					continue;
				printf("%s/%s (%s): %s\n", argv[i], e->d_name,
				       k ? "pipe" : "memfd", why);
				failed = 1;
			}
			compared++;
			free(data);
		}
		closedir(d);
		printf("readers_diff: %u inputs of '%s' compared\n", compared,
		       argv[i]);
		if (!compared)
			failed = 1;
	}
	return failed;
}
