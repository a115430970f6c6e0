/* SPDX-License-Identifier: MIT */
/* Shared by the libFuzzer targets: see fuzz_common.h. */
#include "fuzz_common.h"

#include <fcntl.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "error.h"
#include "array.h"

#define FUZZ_PIPE_SIZE (1 << 20)

/* make_corpus.py reads this table to encode the seeds' options. */
const char *const fuzz_paths[] = {
	"",
	".",
	"/",
	"./",
	"a",
	"a/b",
	"/a",
	"./a/",
	"a//b/./c",
	"d",
	"d/link",
	"d/pax-short",
	"link",
	"x",
	"workspace",
	"workspace/x",
	"remote",
	"remote/nested",
	"..",
	"a/..",
	"b",
	"sub",
	"sub/file",
	"bin",
	"bin/python3",
	"nested",
	"dir",
	"dir/sub",
	"file",
	"f1",
	"same",
	"evil",
};
const size_t fuzz_npaths = ARRAY_SIZE(fuzz_paths);

static const char *const fuzz_reasons[] = {
	"archive root symlink",
	"archive root hardlink",
	"archive root member must be directory",
	"windows drive path",
	"windows path separator",
	"absolute path",
	"parent traversal",
	"symlink member not allowed",
	"hardlink member not allowed",
	"unsupported member type",
	"archive member count exceeds limit",
	"archive extracted size exceeds limit",
	"file size exceeds limit",
	"path too long",
	"path too deep",
	WSNAP_REASON_INVALID_STREAM,
};
static const char *const fuzz_reason_prefixes[] = {
	"symlink member not allowed: ",
	"archive member overlaps protected path: ",
	"duplicate archive path: ",
	"absolute symlink target not allowed: ",
	"symlink target escapes archive root: ",
	"archive path descends through symlink: ",
	"archive path descends through non-directory: ",
	"member does not start with prefix: ",
};

static uint64_t fuzz_limit(uint8_t v, uint64_t def, uint64_t scale)
{
	if (v == 0)
		return def;
	if (v < 128)
		return (uint64_t)(v - 1) * scale;
	return (1ULL << (v & 63)) - 1;
}

static void fuzz_add_paths(struct wsnap_policy *p, uint8_t sel,
			   enum wsnap_status (*add)(struct wsnap_policy *,
						    const char *,
						    struct wsnap_error *))
{
	struct wsnap_error err;
	unsigned i, n = sel & 3;

	for (i = 0; i < n; i++)
		(void)add(p, fuzz_paths[((sel >> 2) + 7 * i) % fuzz_npaths],
			  &err);
}

void fuzz_input_parse(struct fuzz_input *in, struct wsnap_policy *p,
		      const uint8_t *data, size_t size)
{
	const uint8_t *c = data + FUZZ_MAGIC_LEN;
	struct wsnap_error err;

	wsnap_policy_init(p);
	p->max_total_size = FUZZ_MAX_TOTAL;
	in->data = data;
	in->size = size;
	in->flags = FUZZ_COMPARE;
	in->extra = 0;
	in->configured = false;
	if (size < FUZZ_MAGIC_LEN + FUZZ_CFG_LEN ||
	    memcmp(data, FUZZ_MAGIC, FUZZ_MAGIC_LEN) != 0)
		return;
	in->configured = true;
	in->data = data + FUZZ_MAGIC_LEN + FUZZ_CFG_LEN;
	in->size = size - FUZZ_MAGIC_LEN - FUZZ_CFG_LEN;
	in->flags = c[0];
	in->extra = c[11];
	p->allow_external_symlinks = c[0] & FUZZ_ALLOW_EXTERNAL;
	p->no_symlinks = c[0] & FUZZ_NO_SYMLINKS;
	fuzz_add_paths(p, c[1], wsnap_policy_add_skip);
	fuzz_add_paths(p, c[2], wsnap_policy_add_reject_path);
	fuzz_add_paths(p, c[3], wsnap_policy_add_reject_symlink);
	if (c[0] & FUZZ_ROOT_NAME)
		(void)wsnap_policy_set_root_name(
			p, fuzz_paths[c[4] % fuzz_npaths], &err);
	if (c[0] & FUZZ_STRIP_PREFIX)
		(void)wsnap_policy_set_strip_prefix(
			p, fuzz_paths[c[5] % fuzz_npaths], &err);
	p->max_members = fuzz_limit(c[6], p->max_members, 1);
	p->max_total_size = fuzz_limit(c[7], FUZZ_MAX_TOTAL, 64);
	p->max_file_size = fuzz_limit(c[8], p->max_file_size, 16);
	p->max_path_length = fuzz_limit(c[9], p->max_path_length, 1);
	p->max_depth = fuzz_limit(c[10], p->max_depth, 1);
}

int fuzz_memfd(const uint8_t *data, size_t size)
{
	int fd = memfd_create("fuzz", MFD_CLOEXEC);
	size_t done = 0;

	FUZZ_CHECK(fd >= 0);
	while (done < size) {
		ssize_t n = write(fd, data + done, size - done);

		FUZZ_CHECK(n > 0);
		done += (size_t)n;
	}
	FUZZ_CHECK(lseek(fd, 0, SEEK_SET) == 0);
	return fd;
}

int fuzz_pipe(const uint8_t *data, size_t size)
{
	int fds[2];
	size_t done = 0;

	FUZZ_CHECK(pipe2(fds, O_CLOEXEC) == 0);
	if (fcntl(fds[1], F_SETPIPE_SZ, FUZZ_PIPE_SIZE) < (int)size) {
		close(fds[0]);
		close(fds[1]);
		return -1;
	}
	while (done < size) {
		ssize_t n = write(fds[1], data + done, size - done);

		FUZZ_CHECK(n > 0);
		done += (size_t)n;
	}
	close(fds[1]);
	return fds[0];
}

bool fuzz_known_reason(const char *reason)
{
	size_t i;

	for (i = 0; i < ARRAY_SIZE(fuzz_reasons); i++)
		if (strcmp(reason, fuzz_reasons[i]) == 0)
			return true;
	for (i = 0; i < ARRAY_SIZE(fuzz_reason_prefixes); i++)
		if (strncmp(reason, fuzz_reason_prefixes[i],
			    strlen(fuzz_reason_prefixes[i])) == 0)
			return true;
	return false;
}
