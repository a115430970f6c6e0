/*
 * libFuzzer target: arbitrary bytes -> wsnap_index_build.
 *
 * Input layout:
 *  - without the magic "WSNP" at its start, the whole input is the archive,
 *    built under the default policy (see FUZZ_MAX_TOTAL) from a memfd and,
 *    when it fits a pipe, once more from a pipe: both must agree;
 *  - with the magic, the next FUZZ_CFG_LEN bytes choose the options (struct
 *    fuzz_cfg below: every policy option, limits, keep_data, memfd or pipe)
 *    and the rest is the archive.
 *
 * Oracles (a violation aborts, so libFuzzer records the input):
 *  - a failure is WSNAP_REJECTED with one of the reasons of policy.md, and
 *    'invalid tar stream' only for the member '<tar>' (never WSNAP_IO: the
 *    input is a memfd or a pipe, the spill goes to /tmp);
 *  - a success gives an index that keeps every invariant of index.h and
 *    the policy: sorted unique paths, parents before children, lookup and
 *    children consistent, no '..', '.', empty component, backslash or
 *    leading '/', limits held, skipped and protected paths absent, modes
 *    sanitized, every data extent inside the decompressed stream (so data
 *    that was skipped by seeking really exists);
 *  - the memfd and the pipe give the same outcome, member and reason, the
 *    same nodes and, with keep_data, the same bytes.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "error.h"
#include "index.h"
#include "policy.h"
#include "reader.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

#define FUZZ_MAGIC     "WSNP"
#define FUZZ_MAGIC_LEN 4
#define FUZZ_CFG_LEN   12
/*
 * The default policy's 64 GiB total would let a 30-byte zstd stream keep one
 * run busy for minutes inflating data that is then legitimately skipped; the
 * fuzzer looks for crashes, not for that, so the default run caps the total
 * at 256 MiB. The 64 GiB default itself is tested by tests/e2e_corpus.sh.
 */
#define FUZZ_MAX_TOTAL (256ULL << 20)
#define FUZZ_PIPE_SIZE (1 << 20)
/* bytes of each file compared between the memfd and the pipe build */
#define FUZZ_READ_MAX (64u << 10)

enum fuzz_flags {
	FUZZ_ALLOW_EXTERNAL = 1 << 0,
	FUZZ_NO_SYMLINKS = 1 << 1,
	FUZZ_ROOT_NAME = 1 << 2,
	FUZZ_STRIP_PREFIX = 1 << 3,
	FUZZ_KEEP_DATA = 1 << 4,
	FUZZ_PIPE = 1 << 5,
	FUZZ_COMPARE = 1 << 6,
};

/* The configured paths the options pick from: every normalization case and
 * the names the seed corpus uses. */
static const char *const fuzz_paths[] = {
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
#define FUZZ_NPATHS (sizeof(fuzz_paths) / sizeof(fuzz_paths[0]))

/* Reasons of policy.md: exact, or a prefix followed by a detail. */
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

#define FUZZ_CHECK(cond)                                                       \
	do {                                                                   \
		if (!(cond)) {                                                 \
			fprintf(stderr,                                        \
				"fuzz_index: %s:%d: check failed: %s\n",       \
				__FILE__, __LINE__, #cond);                    \
			abort();                                               \
		}                                                              \
	} while (0)

struct fuzz_run {
	enum wsnap_status status;
	struct wsnap_error err;
	struct wsnap_index *idx;
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
		(void)add(p, fuzz_paths[((sel >> 2) + 7 * i) % FUZZ_NPATHS],
			  &err);
}

/* Applies the configuration bytes; returns the flags. */
static unsigned fuzz_configure(struct wsnap_policy *p, const uint8_t *c)
{
	struct wsnap_error err;

	if (c[0] & FUZZ_ALLOW_EXTERNAL)
		p->allow_external_symlinks = true;
	if (c[0] & FUZZ_NO_SYMLINKS)
		p->no_symlinks = true;
	fuzz_add_paths(p, c[1], wsnap_policy_add_skip);
	fuzz_add_paths(p, c[2], wsnap_policy_add_reject_path);
	fuzz_add_paths(p, c[3], wsnap_policy_add_reject_symlink);
	/* a value the API refuses (usage error) leaves the option unset */
	if (c[0] & FUZZ_ROOT_NAME)
		(void)wsnap_policy_set_root_name(
			p, fuzz_paths[c[4] % FUZZ_NPATHS], &err);
	if (c[0] & FUZZ_STRIP_PREFIX)
		(void)wsnap_policy_set_strip_prefix(
			p, fuzz_paths[c[5] % FUZZ_NPATHS], &err);
	p->max_members = fuzz_limit(c[6], p->max_members, 1);
	p->max_total_size = fuzz_limit(c[7], FUZZ_MAX_TOTAL, 64);
	p->max_file_size = fuzz_limit(c[8], p->max_file_size, 16);
	p->max_path_length = fuzz_limit(c[9], p->max_path_length, 1);
	p->max_depth = fuzz_limit(c[10], p->max_depth, 1);
	return c[0];
}

static int fuzz_memfd(const uint8_t *data, size_t size)
{
	int fd = memfd_create("fuzz_index", MFD_CLOEXEC);
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

/* A pipe already holding all the bytes, write end closed; -1 if they do
 * not fit the pipe buffer. */
static int fuzz_pipe(const uint8_t *data, size_t size)
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

static bool fuzz_has_prefix(const char *s, const char *prefix)
{
	return strncmp(s, prefix, strlen(prefix)) == 0;
}

static void fuzz_check_failure(const struct fuzz_run *r)
{
	size_t i;

	FUZZ_CHECK(r->idx == NULL);
	if (r->status != WSNAP_REJECTED) {
		fprintf(stderr, "fuzz_index: status %d errno %d: %s: %s\n",
			r->status, r->err.errnum, r->err.member, r->err.reason);
		abort();
	}
	FUZZ_CHECK(r->err.status == WSNAP_REJECTED);
	if (strcmp(r->err.reason, WSNAP_REASON_INVALID_STREAM) == 0) {
		FUZZ_CHECK(strcmp(r->err.member, WSNAP_TAR_MEMBER) == 0);
		return;
	}
	for (i = 0; i < sizeof(fuzz_reasons) / sizeof(fuzz_reasons[0]); i++)
		if (strcmp(r->err.reason, fuzz_reasons[i]) == 0)
			return;
	for (i = 0;
	     i < sizeof(fuzz_reason_prefixes) / sizeof(fuzz_reason_prefixes[0]);
	     i++)
		if (fuzz_has_prefix(r->err.reason, fuzz_reason_prefixes[i]))
			return;
	fprintf(stderr, "fuzz_index: unknown reason '%s' for '%s'\n",
		r->err.reason, r->err.member);
	abort();
}

/* A rel path as the index must hold it: components neither empty, '.' nor
 * '..', no backslash; returns the number of components. */
static uint64_t fuzz_check_rel_path(const char *path)
{
	const char *p = path, *slash;
	uint64_t depth = 0;
	size_t len;

	FUZZ_CHECK(strchr(path, '\\') == NULL);
	while (*p) {
		slash = strchr(p, '/');
		len = slash ? (size_t)(slash - p) : strlen(p);
		FUZZ_CHECK(len > 0);
		FUZZ_CHECK(!(len == 1 && p[0] == '.'));
		FUZZ_CHECK(!(len == 2 && p[0] == '.' && p[1] == '.'));
		depth++;
		if (!slash)
			break;
		p = slash + 1;
		FUZZ_CHECK(*p != '\0');
	}
	return depth;
}

static bool fuzz_within_any(const char *path, const struct wsnap_pathlist *l)
{
	size_t i;

	for (i = 0; i < l->count; i++)
		if (wsnap_path_within(path, strlen(path), l->items[i],
				      strlen(l->items[i])))
			return true;
	return false;
}

/* Every extent of a file: contiguous from 0 to size, data inside the
 * stream. Bounded: at most 4096 extents are walked. */
static void fuzz_check_extents(const struct wsnap_index *idx, uint32_t ino,
			       const struct wsnap_node *n, uint64_t stream)
{
	struct wsnap_extent ext;
	uint64_t off = 0;
	unsigned steps = 0;

	while (off < n->size && steps++ < 4096) {
		FUZZ_CHECK(wsnap_index_extent(idx, ino, off, &ext) == 0);
		FUZZ_CHECK(ext.logical <= off);
		FUZZ_CHECK(ext.length > 0);
		FUZZ_CHECK(ext.logical + ext.length > off);
		FUZZ_CHECK(ext.logical + ext.length <= n->size);
		if (ext.physical >= 0)
			FUZZ_CHECK((uint64_t)ext.physical + ext.length <=
				   stream);
		off = ext.logical + ext.length;
	}
	if (n->size > 0)
		FUZZ_CHECK(wsnap_index_extent(idx, ino, n->size, &ext) ==
			   -EINVAL);
}

static void fuzz_check_index(const struct wsnap_index *idx,
			     const struct wsnap_policy *p, bool keep_data)
{
	struct wsnap_index_stats st;
	const struct wsnap_node *n, *prev = NULL, *parent;
	const uint32_t *kids;
	uint32_t count = wsnap_index_count(idx), ino, k, nk;
	uint64_t total = 0, files = 0, dirs = 0, links = 0, members = 0;
	bool stripped = p->strip_prefix != NULL;

	wsnap_index_stats(idx, &st);
	FUZZ_CHECK(count >= 1);
	FUZZ_CHECK(wsnap_index_node(idx, 0) == NULL);
	FUZZ_CHECK(wsnap_index_node(idx, count + 1) == NULL);
	n = wsnap_index_node(idx, WSNAP_ROOT_INO);
	FUZZ_CHECK(n && n->path[0] == '\0' && n->type == WSNAP_TYPE_DIR);
	FUZZ_CHECK(n->parent == WSNAP_ROOT_INO);
	FUZZ_CHECK(wsnap_index_lookup(idx, "", 0) == WSNAP_ROOT_INO);
	for (ino = 2; ino <= count; ino++) {
		size_t len;

		n = wsnap_index_node(idx, ino);
		FUZZ_CHECK(n != NULL);
		len = strlen(n->path);
		FUZZ_CHECK(len > 0 && len <= p->max_path_length);
		FUZZ_CHECK(fuzz_check_rel_path(n->path) <= p->max_depth);
		if (prev && prev->path[0])
			FUZZ_CHECK(strcmp(prev->path, n->path) < 0);
		prev = n;
		FUZZ_CHECK(wsnap_index_lookup(idx, n->path, len) == ino);
		FUZZ_CHECK(n->parent >= 1 && n->parent < ino);
		parent = wsnap_index_node(idx, n->parent);
		FUZZ_CHECK(parent->type == WSNAP_TYPE_DIR);
		FUZZ_CHECK(n->name_off <= len);
		FUZZ_CHECK(strchr(wsnap_node_name(n), '/') == NULL);
		FUZZ_CHECK(wsnap_index_child(idx, n->parent, wsnap_node_name(n),
					     strlen(wsnap_node_name(n))) ==
			   ino);
		if (!(n->flags & WSNAP_NODE_IMPLICIT))
			members++;
		if (!stripped) {
			FUZZ_CHECK(!fuzz_within_any(n->path, &p->skip));
			FUZZ_CHECK(!fuzz_within_any(n->path, &p->reject_path));
		}
		switch (n->type) {
		case WSNAP_TYPE_DIR:
			dirs++;
			FUZZ_CHECK(n->mode == WSNAP_DIR_MODE);
			FUZZ_CHECK(n->target == NULL);
			break;
		case WSNAP_TYPE_FILE:
			files++;
			FUZZ_CHECK((n->mode & ~0755u) == 0);
			FUZZ_CHECK((n->mode & 0600u) == 0600u);
			FUZZ_CHECK(n->size <= p->max_file_size);
			FUZZ_CHECK(!(n->flags & WSNAP_NODE_IMPLICIT));
			total += n->size;
			if (keep_data)
				fuzz_check_extents(idx, ino, n,
						   st.stream_bytes);
			break;
		case WSNAP_TYPE_SYMLINK:
			links++;
			FUZZ_CHECK(!p->no_symlinks);
			FUZZ_CHECK(n->target != NULL);
			FUZZ_CHECK(n->size == strlen(n->target));
			if (!p->allow_external_symlinks)
				FUZZ_CHECK(n->target[0] != '/');
			for (k = 0; k < p->reject_symlink.count && !stripped;
			     k++)
				FUZZ_CHECK(strcmp(n->path,
						  p->reject_symlink.items[k]));
			break;
		default:
			FUZZ_CHECK(!"node type");
		}
	}
	FUZZ_CHECK(total <= p->max_total_size);
	FUZZ_CHECK(members <= p->max_members);
	FUZZ_CHECK(st.files == files && st.symlinks == links);
	FUZZ_CHECK(st.dirs == dirs && st.members == members);
	FUZZ_CHECK(st.total_bytes == total);
	for (ino = 1; ino <= count; ino++) {
		n = wsnap_index_node(idx, ino);
		nk = wsnap_index_children(idx, ino, &kids);
		FUZZ_CHECK(nk ==
			   (n->type == WSNAP_TYPE_DIR ? n->nchildren : 0));
		for (k = 0; k < nk; k++) {
			const struct wsnap_node *c =
				wsnap_index_node(idx, kids[k]);

			FUZZ_CHECK(c && c->parent == ino && kids[k] != ino);
			if (k > 0)
				FUZZ_CHECK(
					strcmp(wsnap_node_name(wsnap_index_node(
						       idx, kids[k - 1])),
					       wsnap_node_name(c)) < 0);
		}
	}
}

static void fuzz_build(struct fuzz_run *r, int fd, const struct wsnap_policy *p,
		       bool keep_data)
{
	struct wsnap_reader_opts opts = {.keep_data = keep_data};

	r->idx = NULL;
	wsnap_error_clear(&r->err);
	r->status = wsnap_index_build(&r->idx, fd, p, &opts, &r->err);
	close(fd);
	if (r->status == WSNAP_OK) {
		FUZZ_CHECK(r->idx != NULL);
		fuzz_check_index(r->idx, p, keep_data);
	} else {
		fuzz_check_failure(r);
	}
}

static void fuzz_compare_bytes(const struct wsnap_index *a,
			       const struct wsnap_index *b, uint32_t ino,
			       uint64_t size)
{
	static unsigned char ba[FUZZ_READ_MAX], bb[FUZZ_READ_MAX];
	size_t want = size < FUZZ_READ_MAX ? (size_t)size : FUZZ_READ_MAX;
	ssize_t na = wsnap_index_pread(a, ino, ba, want, 0);
	ssize_t nb = wsnap_index_pread(b, ino, bb, want, 0);

	FUZZ_CHECK(na == (ssize_t)want && nb == (ssize_t)want);
	FUZZ_CHECK(memcmp(ba, bb, want) == 0);
	FUZZ_CHECK(wsnap_index_pread(a, ino, ba, 1, size) == 0);
}

/* The same archive from a memfd and from a pipe: same outcome. */
static void fuzz_compare(const struct fuzz_run *a, const struct fuzz_run *b,
			 bool keep_data)
{
	uint32_t ino, count;

	if (a->status != b->status || strcmp(a->err.member, b->err.member) ||
	    strcmp(a->err.reason, b->err.reason)) {
		fprintf(stderr,
			"fuzz_index: memfd gives %d '%s': %s, pipe gives %d "
			"'%s': %s\n",
			a->status, a->err.member, a->err.reason, b->status,
			b->err.member, b->err.reason);
		abort();
	}
	if (a->status != WSNAP_OK)
		return;
	count = wsnap_index_count(a->idx);
	FUZZ_CHECK(count == wsnap_index_count(b->idx));
	for (ino = 1; ino <= count; ino++) {
		const struct wsnap_node *x = wsnap_index_node(a->idx, ino);
		const struct wsnap_node *y = wsnap_index_node(b->idx, ino);

		FUZZ_CHECK(strcmp(x->path, y->path) == 0);
		FUZZ_CHECK(x->type == y->type && x->mode == y->mode);
		FUZZ_CHECK(x->size == y->size && x->flags == y->flags);
		FUZZ_CHECK(x->mtime_sec == y->mtime_sec &&
			   x->mtime_nsec == y->mtime_nsec);
		FUZZ_CHECK((x->target == NULL) == (y->target == NULL));
		if (x->target)
			FUZZ_CHECK(strcmp(x->target, y->target) == 0);
		if (keep_data && x->type == WSNAP_TYPE_FILE)
			fuzz_compare_bytes(a->idx, b->idx, ino, x->size);
	}
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct wsnap_policy policy;
	struct fuzz_run a, b;
	unsigned flags = FUZZ_COMPARE;
	int fd;

	wsnap_policy_init(&policy);
	policy.max_total_size = FUZZ_MAX_TOTAL;
	if (size >= FUZZ_MAGIC_LEN + FUZZ_CFG_LEN &&
	    memcmp(data, FUZZ_MAGIC, FUZZ_MAGIC_LEN) == 0) {
		flags = fuzz_configure(&policy, data + FUZZ_MAGIC_LEN);
		data += FUZZ_MAGIC_LEN + FUZZ_CFG_LEN;
		size -= FUZZ_MAGIC_LEN + FUZZ_CFG_LEN;
	}
	a.idx = b.idx = NULL;
	fd = -1;
	if (flags & FUZZ_PIPE)
		fd = fuzz_pipe(data, size);
	if (fd < 0)
		fd = fuzz_memfd(data, size);
	fuzz_build(&a, fd, &policy, flags & FUZZ_KEEP_DATA);
	if ((flags & FUZZ_COMPARE) && !(flags & FUZZ_PIPE)) {
		fd = fuzz_pipe(data, size);
		if (fd >= 0) {
			fuzz_build(&b, fd, &policy, flags & FUZZ_KEEP_DATA);
			fuzz_compare(&a, &b, flags & FUZZ_KEEP_DATA);
		}
	}
	wsnap_index_free(a.idx);
	wsnap_index_free(b.idx);
	wsnap_policy_release(&policy);
	return 0;
}
