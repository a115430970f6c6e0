/*
 * Safe export (policy.md section 7). See export.h for the invariants; the
 * ones that shape this file:
 *
 *  - The only descriptor trusted by path is the destination root. Every
 *    other directory is opened relative to a directory descriptor, with
 *    O_NOFOLLOW | O_DIRECTORY per component or openat2 with
 *    RESOLVE_BENEATH | RESOLVE_NO_SYMLINKS for several at once.
 *  - "The parent cache" (struct exp_level stack) holds, per depth, the ino
 *    of each directory on the path of the last target and, optionally, an
 *    open descriptor of it. A descriptor names an inode, not a path: a
 *    directory swapped for a symlink after we opened it cannot redirect a
 *    later openat() through the cached descriptor.
 *  - Leaves are created exclusively (O_EXCL, mkdirat, symlinkat); an
 *    existing leaf is removed with unlinkat(..., 0), which fails with EISDIR
 *    on a directory instead of removing it.
 */
#include "export.h"

#include <archive.h>
#include <archive_entry.h>
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <linux/openat2.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#define DIR_OPEN_FLAGS (O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC)
#define FILE_OPEN_FLAGS                                                        \
	(O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC | O_NOCTTY)

/* Attempts at one leaf while another process keeps changing it. */
#define LEAF_RETRIES 16
/* pread/pwrite fallback buffer. */
#define COPY_BUF_SIZE (256u << 10)
/* Data runs up to SMALL_RUN bytes are written from a window of the data
 * stream read ahead WINDOW_SIZE bytes at a time: pass 1 follows archive
 * order, so one pread serves many small files, and a write from memory is
 * cheaper than a copy_file_range per file. */
#define SMALL_RUN   (64u << 10)
#define WINDOW_SIZE (1u << 20)
/* copy_file_range chunk (keeps a huge file interruptible). */
#define COPY_RANGE_CHUNK (64u << 20)
/* Progress callback at least every so many members or bytes. */
#define PROGRESS_MEMBERS 2048u
#define PROGRESS_BYTES	 (32ull << 20)
/* Pass 1 writes files on up to EXP_MAX_WORKERS threads (one per online
 * CPU) when there are at least EXP_PAR_MIN_FILES of them; a unit of work is
 * a run of consecutive files of one directory, at most EXP_UNIT_FILES. */
#define EXP_MAX_WORKERS	  4
#define EXP_PAR_MIN_FILES 1024u
#define EXP_UNIT_FILES	  4096u
/* Directory levels wsnap_export_remove_tree descends at most. */
#define REMOVE_MAX_DEPTH 1024u

struct exp_level {
	uint32_t ino;
	int fd; /* -1: not open (reopened on demand) */
};

/*
 * A compressed archive decompressed a second time (WSNAP_EXPORT_INPUT):
 * libarchive's raw format behind the decompression filters yields the tar
 * stream itself, block by block, in order. Pass 1 asks for data at
 * increasing offsets, so reading only forward is enough.
 */
struct exp_stream {
	struct archive *a;
	int fd;
	uint64_t in_off; /* next offset to read in the compressed file */
	char *inbuf;
	const char *blk; /* current block of the decompressed stream */
	size_t blk_len;
	uint64_t blk_pos; /* its offset in the decompressed stream */
};

struct exp {
	const struct wsnap_index *idx;
	const struct wsnap_export_opts *opts;
	struct wsnap_export_stats *st;
	struct wsnap_error *err;
	const char *label; /* the destination as the user named it */
	int rootfd;
	int datafd;
	bool use_openat2;
	bool use_copy_range;
	bool fresh; /* the root was created by this export */
	uint32_t count;
	uint32_t *depth;	 /* per ino */
	unsigned char *created;	 /* per ino: directory created by us */
	uint32_t maxdepth;	 /* deepest node's depth */
	struct exp_level *stack; /* levels 0..maxdepth; 0 is the root */
	uint32_t top;		 /* deepest valid level */
	uint32_t ncached;	 /* open descriptors in stack, root excluded */
	uint32_t *chain;	 /* scratch: inos from a target up */
	char *buf;		 /* pread/pwrite fallback */
	char *win;		 /* read-ahead window of the data stream */
	uint64_t win_off;	 /* its offset in the data stream */
	size_t win_len;		 /* bytes valid in it */
	struct exp_stream *stream; /* compressed input, read again */
	struct wsnap_export_progress prog;
	uint64_t next_members;
	uint64_t next_bytes;
};

static const struct wsnap_node *node_of(const struct exp *x, uint32_t ino)
{
	return wsnap_index_node(x->idx, ino);
}

/* ---- errors ---------------------------------------------------------- */

/* An I/O error about DEST/rel (rel "" is DEST itself). */
static enum wsnap_status fail_io(struct exp *x, int errnum, const char *rel,
				 const char *what)
{
	int n;

	wsnap_error_io(x->err, errnum, NULL, "%s", what);
	if (rel && rel[0])
		n = snprintf(x->err->member, sizeof(x->err->member), "%s/%s",
			     x->label, rel);
	else
		n = snprintf(x->err->member, sizeof(x->err->member), "%s",
			     x->label);
	if (n < 0 || (size_t)n >= sizeof(x->err->member))
		x->err->truncated = 1;
	return WSNAP_IO;
}

static enum wsnap_status reject_symlink_parent(struct exp *x,
					       const struct wsnap_node *member)
{
	return wsnap_error_reject(x->err, member->path, "%s",
				  WSNAP_REASON_SYMLINK_PARENT);
}

static enum wsnap_status reject_parent_not_dir(struct exp *x,
					       const struct wsnap_node *member,
					       const struct wsnap_node *parent)
{
	return wsnap_error_reject(x->err, member->path, "%s: %s",
				  WSNAP_REASON_PARENT_NOT_DIR, parent->path);
}

static enum wsnap_status reject_dir_exists(struct exp *x,
					   const struct wsnap_node *member)
{
	return wsnap_error_reject(x->err, member->path, "%s: %s",
				  WSNAP_REASON_DIRECTORY_EXISTS, member->path);
}

/* ---- progress -------------------------------------------------------- */

static void progress_tick(struct exp *x, bool final)
{
	if (!x->opts || !x->opts->progress)
		return;
	if (!final && x->prog.members_done < x->next_members &&
	    x->prog.bytes_done < x->next_bytes)
		return;
	x->next_members = x->prog.members_done + PROGRESS_MEMBERS;
	x->next_bytes = x->prog.bytes_done + PROGRESS_BYTES;
	x->opts->progress(x->opts->ctx, &x->prog);
}

/* Before each member: has the caller asked us to stop? */
static enum wsnap_status check_cancel(struct exp *x)
{
	if (x->opts && x->opts->cancel && *x->opts->cancel)
		return fail_io(x, EINTR, NULL, "interrupted");
	return WSNAP_OK;
}

static void node_done(struct exp *x, const struct wsnap_node *n)
{
	x->prog.members_done++;
	x->st->members++;
	if (x->opts && x->opts->node)
		x->opts->node(x->opts->ctx, n);
	progress_tick(x, false);
}

/* ---- the parent cache ------------------------------------------------ */

static void level_close(struct exp *x, uint32_t level)
{
	if (level > 0 && x->stack[level].fd >= 0) {
		close(x->stack[level].fd);
		x->stack[level].fd = -1;
		x->ncached--;
	}
}

/* Forgets the levels deeper than level. */
static void pop_to(struct exp *x, uint32_t level)
{
	while (x->top > level)
		level_close(x, x->top--);
}

/* Stores fd (may be -1) for ino at level top + 1. */
static void push(struct exp *x, uint32_t ino, int fd)
{
	uint32_t l;

	x->top++;
	x->stack[x->top].ino = ino;
	x->stack[x->top].fd = fd;
	if (fd < 0)
		return;
	/* Keep the number of open descriptors bounded: close the shallowest
	 * ones, which the next members are least likely to need. */
	if (++x->ncached > WSNAP_EXPORT_MAX_CACHED_FDS)
		for (l = 1;
		     l < x->top && x->ncached > WSNAP_EXPORT_MAX_CACHED_FDS / 2;
		     l++)
			level_close(x, l);
}

static long sys_openat2(int dirfd, const char *path, const struct open_how *how)
{
	return syscall(SYS_openat2, dirfd, path, how, sizeof(*how));
}

/*
 * Opens several existing components at once, beneath dirfd, following no
 * symlink. Returns the descriptor or -1; turns openat2 off for good when
 * the kernel (or a seccomp filter) does not offer it.
 */
static int open_beneath(struct exp *x, int dirfd, const char *path)
{
	struct open_how how;
	long fd;

	memset(&how, 0, sizeof(how));
	how.flags = O_RDONLY | O_DIRECTORY | O_CLOEXEC;
	how.resolve =
		RESOLVE_BENEATH | RESOLVE_NO_SYMLINKS | RESOLVE_NO_MAGICLINKS;
	fd = sys_openat2(dirfd, path, &how);
	if (fd < 0 && (errno == ENOSYS || errno == EPERM || errno == E2BIG)) {
		x->use_openat2 = false;
		x->st->openat2 = false;
	}
	return fd < 0 ? -1 : (int)fd;
}

/* What 'name' in dirfd is now: 'l' symlink, 'd' directory, 'n' anything
 * else, 0 nothing; -1 with errno on error. */
static int classify(int dirfd, const char *name)
{
	struct stat st;

	if (fstatat(dirfd, name, &st, AT_SYMLINK_NOFOLLOW) < 0)
		return errno == ENOENT ? 0 : -1;
	if (S_ISLNK(st.st_mode))
		return 'l';
	if (S_ISDIR(st.st_mode))
		return 'd';
	return 'n';
}

/*
 * mkdirat + open of a directory we create: mode 0755 exactly (the umask
 * does not apply to fchmod). Returns the descriptor, -1 with errno when
 * the name is taken (EEXIST) or on error.
 */
static int make_dir(struct exp *x, int dirfd, uint32_t ino)
{
	const char *name = wsnap_node_name(node_of(x, ino));
	int fd;

	if (mkdirat(dirfd, name, WSNAP_DIR_MODE) < 0)
		return -1;
	fd = openat(dirfd, name, DIR_OPEN_FLAGS);
	if (fd < 0)
		return -1; /* replaced meanwhile: the caller looks again */
	if (fchmod(fd, WSNAP_DIR_MODE) < 0) {
		int e = errno;

		close(fd);
		errno = e;
		return -1;
	}
	x->created[ino] = 1;
	x->st->dirs++;
	return fd;
}

/*
 * Opens directory node ino, a parent of member, inside dirfd (its parent's
 * descriptor): creates it when missing and create is set. A symlink there
 * is 'symlink in parent path', anything else that is not a directory
 * 'destination parent is not a directory'.
 */
static int open_parent_step(struct exp *x, int dirfd, uint32_t ino,
			    const struct wsnap_node *member, bool create)
{
	const struct wsnap_node *n = node_of(x, ino);
	const char *name = wsnap_node_name(n);
	int tries, fd, c;

	for (tries = 0; tries < LEAF_RETRIES; tries++) {
		fd = openat(dirfd, name, DIR_OPEN_FLAGS);
		if (fd >= 0)
			return fd;
		if (errno == ENOENT) {
			if (!create) {
				fail_io(x, ENOENT, n->path,
					"cannot open directory");
				return -1;
			}
			fd = make_dir(x, dirfd, ino);
			if (fd >= 0)
				return fd;
			if (errno == EEXIST || errno == ENOENT ||
			    errno == ENOTDIR || errno == ELOOP)
				continue;
			fail_io(x, errno, n->path, "cannot create directory");
			return -1;
		}
		if (errno != ENOTDIR && errno != ELOOP) {
			fail_io(x, errno, n->path, "cannot open directory");
			return -1;
		}
		c = classify(dirfd, name);
		if (c == 'l') {
			reject_symlink_parent(x, member);
			return -1;
		}
		if (c == 'n') {
			reject_parent_not_dir(x, member, n);
			return -1;
		}
		if (c < 0) {
			fail_io(x, errno, n->path, "cannot open directory");
			return -1;
		}
		/* a directory or nothing now: it changed, look again */
	}
	fail_io(x, EAGAIN, n->path, "destination keeps changing");
	return -1;
}

/* The descriptor of stack level 'level', reopened from a shallower open
 * level if it was closed. */
static int level_fd(struct exp *x, uint32_t level,
		    const struct wsnap_node *member, bool create)
{
	uint32_t j, l;
	int fd;

	if (x->stack[level].fd >= 0)
		return x->stack[level].fd;
	for (j = level; x->stack[j].fd < 0; j--)
		;
	if (level - j >= 2 && x->use_openat2) {
		const struct wsnap_node *first =
			node_of(x, x->stack[j + 1].ino);
		const struct wsnap_node *last = node_of(x, x->stack[level].ino);

		fd = open_beneath(x, x->stack[j].fd,
				  last->path + first->name_off);
		if (fd >= 0) {
			x->stack[level].fd = fd;
			x->ncached++;
			return fd;
		}
	}
	for (l = j + 1; l <= level; l++) {
		fd = open_parent_step(x, x->stack[l - 1].fd, x->stack[l].ino,
				      member, create);
		if (fd < 0)
			return -1;
		x->stack[l].fd = fd;
		x->ncached++;
	}
	return x->stack[level].fd;
}

/*
 * The descriptor of directory ino (owned by the cache), reached from the
 * root without following symlinks, creating missing directories when
 * create is set. member names the node being exported, for messages.
 */
static int dir_fd(struct exp *x, uint32_t ino, const struct wsnap_node *member,
		  bool create)
{
	uint32_t n = 0, a = ino, level, i;
	int fd, cur;

	while (!(x->depth[a] <= x->top && x->stack[x->depth[a]].ino == a)) {
		x->chain[n++] = a;
		a = node_of(x, a)->parent;
	}
	level = x->depth[a];
	pop_to(x, level);
	cur = level_fd(x, level, member, create);
	if (cur < 0 || n == 0)
		return cur;
	if (n >= 2 && x->use_openat2) {
		const struct wsnap_node *first = node_of(x, x->chain[n - 1]);

		fd = open_beneath(x, cur,
				  node_of(x, ino)->path + first->name_off);
		if (fd >= 0) {
			for (i = n; i-- > 1;)
				push(x, x->chain[i], -1);
			push(x, ino, fd);
			return fd;
		}
		/* missing, a symlink, not a directory: one at a time */
	}
	for (i = n; i-- > 0;) {
		fd = open_parent_step(x, cur, x->chain[i], member, create);
		if (fd < 0)
			return -1;
		push(x, x->chain[i], fd);
		cur = fd;
	}
	return cur;
}

/* ---- leaves ---------------------------------------------------------- */

/*
 * Makes room for a non-directory leaf: unlinks whatever non-directory is
 * there. Returns WSNAP_OK (also when it vanished meanwhile), the
 * 'destination directory already exists' rejection, or WSNAP_IO.
 */
static enum wsnap_status clear_leaf(struct exp *x, int dirfd,
				    const struct wsnap_node *n)
{
	if (unlinkat(dirfd, wsnap_node_name(n), 0) == 0) {
		x->st->replaced++;
		return WSNAP_OK;
	}
	if (errno == ENOENT)
		return WSNAP_OK;
	if (errno == EISDIR ||
	    (errno == EPERM && classify(dirfd, wsnap_node_name(n)) == 'd'))
		return reject_dir_exists(x, n);
	return fail_io(x, errno, n->path, "cannot remove existing entry");
}

/* Pass 1, a directory member: keep a directory, replace anything else.
 * Leaves its descriptor on top of the cache. */
static enum wsnap_status put_dir(struct exp *x, uint32_t ino)
{
	const struct wsnap_node *n = node_of(x, ino);
	const char *name = wsnap_node_name(n);
	int pfd, fd, tries;

	pfd = dir_fd(x, n->parent, n, true);
	if (pfd < 0)
		return x->err->status;
	for (tries = 0; tries < LEAF_RETRIES; tries++) {
		fd = openat(pfd, name, DIR_OPEN_FLAGS);
		if (fd >= 0) {
			if (!x->created[ino])
				x->st->dirs_kept++;
			goto done;
		}
		if (errno == ENOENT) {
			fd = make_dir(x, pfd, ino);
			if (fd >= 0)
				goto done;
			if (errno == EEXIST || errno == ENOENT ||
			    errno == ENOTDIR || errno == ELOOP)
				continue;
			return fail_io(x, errno, n->path,
				       "cannot create directory");
		}
		if (errno != ENOTDIR && errno != ELOOP)
			return fail_io(x, errno, n->path,
				       "cannot open directory");
		/* a symlink, file, FIFO...: unlink it (never its target) */
		if (unlinkat(pfd, name, 0) == 0)
			x->st->replaced++;
		else if (errno != ENOENT && errno != EISDIR)
			return fail_io(x, errno, n->path,
				       "cannot remove existing entry");
	}
	return fail_io(x, EAGAIN, n->path, "destination keeps changing");
done:
	push(x, ino, fd);
	return WSNAP_OK;
}

/* True when copy_file_range cannot do this pair of descriptors at all. */
static bool copy_range_unsupported(int e)
{
	return e == EXDEV || e == EINVAL || e == ENOSYS || e == EOPNOTSUPP ||
	       e == EBADF || e == ETXTBSY || e == EPERM;
}

static enum wsnap_status write_at(struct exp *x, int fd,
				  const struct wsnap_node *n, const char *p,
				  size_t len, uint64_t off)
{
	while (len > 0) {
		ssize_t w = pwrite(fd, p, len, (off_t)off);

		if (w < 0 && errno == EINTR)
			continue;
		if (w < 0)
			return fail_io(x, errno, n->path, "cannot write");
		p += w;
		len -= (size_t)w;
		off += (uint64_t)w;
	}
	return WSNAP_OK;
}

/* A small run, through the read-ahead window. */
static enum wsnap_status copy_small(struct exp *x, int fd,
				    const struct wsnap_node *n, uint64_t phys,
				    uint64_t off, size_t len)
{
	if (phys < x->win_off || phys - x->win_off > x->win_len ||
	    len > x->win_len - (phys - x->win_off)) {
		ssize_t r;

		do
			r = pread(x->datafd, x->win, WINDOW_SIZE, (off_t)phys);
		while (r < 0 && errno == EINTR);
		if (r < 0)
			return fail_io(x, errno, n->path,
				       "cannot read archive data");
		x->win_off = phys;
		x->win_len = (size_t)r;
		if ((size_t)r < len)
			return fail_io(x, EIO, n->path,
				       "archive changed since it was read");
	}
	return write_at(x, fd, n, x->win + (phys - x->win_off), len, off);
}

/* Copies len bytes from the data stream at phys to fd at off. */
static enum wsnap_status copy_run(struct exp *x, int fd,
				  const struct wsnap_node *n, uint64_t phys,
				  uint64_t off, uint64_t len)
{
	while (len > 0 && x->use_copy_range) {
		loff_t in = (loff_t)phys, out = (loff_t)off;
		size_t chunk = len > COPY_RANGE_CHUNK ? COPY_RANGE_CHUNK : len;
		ssize_t r = copy_file_range(x->datafd, &in, fd, &out, chunk, 0);

		if (r > 0) {
			phys += (uint64_t)r;
			off += (uint64_t)r;
			len -= (uint64_t)r;
			x->st->copy_range = true;
			continue;
		}
		if (r == 0)
			return fail_io(x, EIO, n->path,
				       "archive changed since it was read");
		if (errno == EINTR)
			continue;
		if (!copy_range_unsupported(errno))
			return fail_io(x, errno, n->path, "cannot write");
		x->use_copy_range = false;
		x->st->copy_range = false;
	}
	while (len > 0) {
		size_t chunk = len > COPY_BUF_SIZE ? COPY_BUF_SIZE : len;
		ssize_t r = pread(x->datafd, x->buf, chunk, (off_t)phys);
		enum wsnap_status s;

		if (r < 0 && errno == EINTR)
			continue;
		if (r < 0)
			return fail_io(x, errno, n->path,
				       "cannot read archive data");
		if (r == 0)
			return fail_io(x, EIO, n->path,
				       "archive changed since it was read");
		s = write_at(x, fd, n, x->buf, (size_t)r, off);
		if (s != WSNAP_OK)
			return s;
		phys += (uint64_t)r;
		off += (uint64_t)r;
		len -= (uint64_t)r;
	}
	return WSNAP_OK;
}

/* ---- a compressed input, decompressed again ------------------------- */

#define STREAM_READ_SIZE (256u << 10)

static la_ssize_t stream_read(struct archive *a, void *ctx, const void **buf)
{
	struct exp_stream *s = ctx;
	ssize_t r;

	do
		r = pread(s->fd, s->inbuf, STREAM_READ_SIZE, (off_t)s->in_off);
	while (r < 0 && errno == EINTR);
	if (r < 0) {
		archive_set_error(a, errno, "cannot read the archive");
		return -1;
	}
	s->in_off += (uint64_t)r;
	*buf = s->inbuf;
	return r;
}

static void stream_close(struct exp_stream *s)
{
	if (!s)
		return;
	if (s->a)
		archive_read_free(s->a);
	free(s->inbuf);
	free(s);
}

static enum wsnap_status stream_open(struct exp *x, int fd)
{
	struct exp_stream *s = calloc(1, sizeof(*s));
	struct archive_entry *e;

	if (!s || !(s->inbuf = malloc(STREAM_READ_SIZE)) ||
	    !(s->a = archive_read_new())) {
		stream_close(s);
		return fail_io(x, ENOMEM, NULL, "out of memory");
	}
	s->fd = fd;
	x->stream = s;
	/* the compressions the reader accepts, nothing run as a program */
	archive_read_support_filter_gzip(s->a);
	archive_read_support_filter_bzip2(s->a);
	archive_read_support_filter_xz(s->a);
	archive_read_support_filter_zstd(s->a);
	archive_read_support_filter_lz4(s->a);
	archive_read_support_format_raw(s->a);
	if (archive_read_open2(s->a, s, NULL, stream_read, NULL, NULL) !=
		    ARCHIVE_OK ||
	    archive_read_next_header(s->a, &e) != ARCHIVE_OK)
		return fail_io(x, EIO, NULL, "cannot read the archive again");
	return WSNAP_OK;
}

/* Makes the current block hold stream offset p; only forward. */
static enum wsnap_status stream_seek(struct exp *x, const struct wsnap_node *n,
				     uint64_t p)
{
	struct exp_stream *s = x->stream;

	while (p < s->blk_pos || p - s->blk_pos >= s->blk_len) {
		const void *buf;
		size_t len;
		la_int64_t off;
		int r;

		if (p < s->blk_pos)
			return fail_io(x, EIO, n->path,
				       "archive changed since it was read");
		r = archive_read_data_block(s->a, &buf, &len, &off);
		if (r != ARCHIVE_OK || off < 0)
			return fail_io(
				x, EIO, n->path,
				r == ARCHIVE_EOF
					? "archive changed since it was "
					  "read"
					: "cannot read the archive again");
		s->blk = buf;
		s->blk_len = len;
		s->blk_pos = (uint64_t)off;
	}
	return WSNAP_OK;
}

static enum wsnap_status copy_stream(struct exp *x, int fd,
				     const struct wsnap_node *n, uint64_t phys,
				     uint64_t off, uint64_t len)
{
	struct exp_stream *s = x->stream;
	enum wsnap_status st;

	while (len > 0) {
		size_t avail;

		st = stream_seek(x, n, phys);
		if (st != WSNAP_OK)
			return st;
		avail = s->blk_len - (size_t)(phys - s->blk_pos);
		if (avail > len)
			avail = (size_t)len;
		st = write_at(x, fd, n, s->blk + (phys - s->blk_pos), avail,
			      off);
		if (st != WSNAP_OK)
			return st;
		phys += avail;
		off += avail;
		len -= avail;
	}
	return WSNAP_OK;
}

/* All of a file's data; holes stay holes. */
static enum wsnap_status copy_data(struct exp *x, int fd, uint32_t ino,
				   const struct wsnap_node *n)
{
	uint64_t off = 0;
	bool hole_at_end = false;
	enum wsnap_status s;

	while (off < n->size) {
		struct wsnap_extent ext;
		uint64_t skip, avail;

		if (wsnap_index_extent(x->idx, ino, off, &ext) < 0 ||
		    ext.logical > off || ext.logical + ext.length <= off)
			return fail_io(x, EIO, n->path,
				       "archive changed since it was read");
		skip = off - ext.logical;
		avail = ext.length - skip;
		if (avail > n->size - off)
			avail = n->size - off;
		if (ext.physical < 0) {
			hole_at_end = true;
		} else if (x->stream) {
			hole_at_end = false;
			s = copy_stream(x, fd, n, (uint64_t)ext.physical + skip,
					off, avail);
			if (s != WSNAP_OK)
				return s;
		} else if (avail <= SMALL_RUN) {
			hole_at_end = false;
			s = copy_small(x, fd, n, (uint64_t)ext.physical + skip,
				       off, (size_t)avail);
			if (s != WSNAP_OK)
				return s;
		} else {
			hole_at_end = false;
			s = copy_run(x, fd, n, (uint64_t)ext.physical + skip,
				     off, avail);
			if (s != WSNAP_OK)
				return s;
		}
		off += avail;
		x->prog.bytes_done += avail;
	}
	if (hole_at_end && ftruncate(fd, (off_t)n->size) < 0)
		return fail_io(x, errno, n->path, "cannot write");
	return WSNAP_OK;
}

static void node_times(const struct wsnap_node *n, struct timespec ts[2])
{
	ts[0].tv_sec = 0;
	ts[0].tv_nsec = UTIME_OMIT;
	ts[1].tv_sec = (time_t)n->mtime_sec;
	ts[1].tv_nsec = (long)n->mtime_nsec;
}

/*
 * Pass 1, a regular file: created 0600 with O_EXCL | O_NOFOLLOW, filled,
 * then fchmod to its sanitized mode on the still-open descriptor, then its
 * mtime. A failure before the fchmod leaves the partial file 0600.
 */
static enum wsnap_status put_file(struct exp *x, uint32_t ino)
{
	const struct wsnap_node *n = node_of(x, ino);
	const char *name = wsnap_node_name(n);
	struct timespec ts[2];
	enum wsnap_status s;
	int pfd, fd = -1, tries;

	pfd = dir_fd(x, n->parent, n, true);
	if (pfd < 0)
		return x->err->status;
	for (tries = 0; tries < LEAF_RETRIES; tries++) {
		fd = openat(pfd, name, FILE_OPEN_FLAGS, 0600);
		if (fd >= 0)
			break;
		if (errno != EEXIST)
			return fail_io(x, errno, n->path, "cannot create file");
		s = clear_leaf(x, pfd, n);
		if (s != WSNAP_OK)
			return s;
	}
	if (fd < 0)
		return fail_io(x, EAGAIN, n->path,
			       "destination keeps changing");
	s = copy_data(x, fd, ino, n);
	if (s != WSNAP_OK)
		goto out;
	if (fchmod(fd, n->mode & 07777) < 0) {
		s = fail_io(x, errno, n->path, "cannot set mode");
		goto out;
	}
	node_times(n, ts);
	if (futimens(fd, ts) < 0) {
		s = fail_io(x, errno, n->path, "cannot set mtime");
		goto out;
	}
	x->st->files++;
	x->st->bytes += n->size;
out:
	if (close(fd) < 0 && s == WSNAP_OK)
		s = fail_io(x, errno, n->path, "cannot write");
	return s;
}

/* Pass 2, a symlink with its archived target; its own mtime. */
static enum wsnap_status put_symlink(struct exp *x, uint32_t ino)
{
	const struct wsnap_node *n = node_of(x, ino);
	const char *name = wsnap_node_name(n);
	struct timespec ts[2];
	enum wsnap_status s;
	int pfd, tries;

	pfd = dir_fd(x, n->parent, n, true);
	if (pfd < 0)
		return x->err->status;
	for (tries = 0;; tries++) {
		if (symlinkat(n->target, pfd, name) == 0)
			break;
		if (errno != EEXIST)
			return fail_io(x, errno, n->path,
				       "cannot create symlink");
		if (tries == LEAF_RETRIES)
			return fail_io(x, EAGAIN, n->path,
				       "destination keeps changing");
		s = clear_leaf(x, pfd, n);
		if (s != WSNAP_OK)
			return s;
	}
	node_times(n, ts);
	if (utimensat(pfd, name, ts, AT_SYMLINK_NOFOLLOW) < 0)
		return fail_io(x, errno, n->path, "cannot set mtime");
	x->st->symlinks++;
	return WSNAP_OK;
}

/* Pass 3, one directory's mtime. */
static enum wsnap_status put_dir_mtime(struct exp *x, uint32_t ino)
{
	const struct wsnap_node *n = node_of(x, ino);
	struct timespec ts[2];
	int fd;

	fd = dir_fd(x, ino, n, false);
	if (fd < 0)
		return x->err->status;
	node_times(n, ts);
	if (futimens(fd, ts) < 0)
		return fail_io(x, errno, n->path, "cannot set mtime");
	return WSNAP_OK;
}

/* ---- passes ---------------------------------------------------------- */

struct order_key {
	uint32_t key;
	uint32_t ino;
};

static int order_key_cmp(const void *a, const void *b)
{
	const struct order_key *x = a, *y = b;

	if (x->key != y->key)
		return x->key < y->key ? -1 : 1;
	return x->ino < y->ino ? -1 : x->ino > y->ino;
}

static bool root_is_member(const struct wsnap_node *root)
{
	return !(root->flags & WSNAP_NODE_IMPLICIT);
}

/* The data read is the data validated: the archive has not changed. */
static enum wsnap_status check_data(struct exp *x)
{
	const struct wsnap_export_opts *o = x->opts;
	struct stat now;

	if (o && (o->flags & WSNAP_EXPORT_INPUT)) {
		const struct stat *then = o->input_stat;

		if (!then)
			return WSNAP_OK;
		if (fstat(o->input_fd, &now) < 0)
			return fail_io(x, errno, NULL,
				       "cannot read the archive");
		if (now.st_dev != then->st_dev || now.st_ino != then->st_ino ||
		    now.st_size != then->st_size ||
		    now.st_mtim.tv_sec != then->st_mtim.tv_sec ||
		    now.st_mtim.tv_nsec != then->st_mtim.tv_nsec)
			return fail_io(x, EIO, NULL,
				       "archive changed since it was read");
		return WSNAP_OK;
	}
	if (wsnap_index_data_check(x->idx) < 0)
		return fail_io(x, EIO, NULL,
			       "archive changed since it was read");
	return WSNAP_OK;
}

/* ---- pass 1 on several threads ------------------------------------- */

/*
 * Parallel pass 1: this thread first makes every directory member (in
 * archive order) and the parent of every file, so that the file writers
 * only create leaves; then the files are written by several workers, each a
 * struct exp of its own (parent cache, window, buffers, stats, error) over
 * the shared index, destination root and data descriptor. Each worker takes
 * units in archive order; every file is still created O_EXCL at 0600,
 * filled, fchmod'ed and dated exactly as in the sequential pass, through
 * the same descriptor discipline, so the invariants of export.h hold per
 * operation whatever the interleaving. Files of one directory stay on one
 * worker (ext4 and most filesystems serialize creates in a directory). On
 * failure the workers stop after their current file and the error of the
 * earliest file in archive order is reported; files later in the archive
 * may have been written by then (a fresh destination is removed anyway).
 */
struct exp_unit {
	uint32_t first, end; /* indexes into the file keys */
};

struct exp_pool {
	pthread_mutex_t lock;
	const struct order_key *files;
	const struct exp_unit *units;
	uint32_t nunits, next;
	bool stop;
	_Atomic uint64_t members_done, bytes_done;
};

struct exp_worker {
	struct exp x;
	struct exp_pool *pool;
	struct wsnap_export_stats st;
	struct wsnap_error err;
	enum wsnap_status status;
	uint32_t fail_order; /* archive order of the failing file */
	bool main;	     /* the calling thread: reports progress */
	struct exp *parent;
};

static unsigned exp_workers_wanted(const struct exp *x, uint32_t nfiles)
{
	unsigned want = x->opts ? x->opts->workers : 0;
	long n;

	if (x->stream || (x->opts && x->opts->node) || nfiles < 2)
		return 1;
	if (want)
		return want > EXP_MAX_WORKERS ? EXP_MAX_WORKERS : want;
	n = sysconf(_SC_NPROCESSORS_ONLN);
	if (nfiles < EXP_PAR_MIN_FILES || n < 2)
		return 1;
	return n > EXP_MAX_WORKERS ? EXP_MAX_WORKERS : (unsigned)n;
}

/* A worker's own state over the shared parts of x. */
static enum wsnap_status exp_worker_init(struct exp_worker *w, struct exp *x)
{
	uint32_t maxdepth = x->maxdepth;

	w->x = *x;
	w->x.st = &w->st;
	w->x.err = &w->err;
	w->st.openat2 = x->st->openat2;
	w->x.stack = calloc((size_t)maxdepth + 1, sizeof(*w->x.stack));
	w->x.chain = calloc((size_t)maxdepth + 1, sizeof(*w->x.chain));
	w->x.buf = malloc(COPY_BUF_SIZE);
	w->x.win = malloc(WINDOW_SIZE);
	w->x.win_off = 0;
	w->x.win_len = 0;
	w->x.top = 0;
	w->x.ncached = 0;
	w->parent = x;
	if (!w->x.stack || !w->x.chain || !w->x.buf || !w->x.win)
		return fail_io(x, ENOMEM, NULL, "out of memory");
	w->x.stack[0].ino = WSNAP_ROOT_INO;
	w->x.stack[0].fd = x->rootfd;
	return WSNAP_OK;
}

static void exp_worker_release(struct exp_worker *w)
{
	if (w->x.stack)
		pop_to(&w->x, 0);
	free(w->x.stack);
	free(w->x.chain);
	free(w->x.buf);
	free(w->x.win);
}

static void *exp_worker_run(void *arg)
{
	struct exp_worker *w = arg;
	struct exp_pool *pool = w->pool;
	enum wsnap_status s = WSNAP_OK;

	for (;;) {
		const struct exp_unit *u;
		uint32_t i;

		pthread_mutex_lock(&pool->lock);
		u = pool->stop || pool->next == pool->nunits
			    ? NULL
			    : &pool->units[pool->next++];
		pthread_mutex_unlock(&pool->lock);
		if (!u)
			break;
		for (i = u->first; i < u->end; i++) {
			const struct wsnap_node *n =
				node_of(&w->x, pool->files[i].ino);

			s = check_cancel(&w->x);
			if (s == WSNAP_OK)
				s = put_file(&w->x, pool->files[i].ino);
			if (s != WSNAP_OK) {
				w->fail_order = pool->files[i].key;
				break;
			}
			w->st.members++;
			atomic_fetch_add(&pool->members_done, 1);
			atomic_fetch_add(&pool->bytes_done, n->size);
			if (w->main) {
				struct exp *p = w->parent;

				p->prog.members_done =
					atomic_load(&pool->members_done);
				p->prog.bytes_done =
					atomic_load(&pool->bytes_done);
				progress_tick(p, false);
			}
		}
		if (s != WSNAP_OK) {
			pthread_mutex_lock(&pool->lock);
			pool->stop = true;
			pthread_mutex_unlock(&pool->lock);
			break;
		}
	}
	w->status = s;
	return NULL;
}

static void exp_stats_add(struct wsnap_export_stats *to,
			  const struct wsnap_export_stats *from)
{
	to->members += from->members;
	to->dirs += from->dirs;
	to->dirs_kept += from->dirs_kept;
	to->files += from->files;
	to->symlinks += from->symlinks;
	to->replaced += from->replaced;
	to->bytes += from->bytes;
	to->openat2 = to->openat2 && from->openat2;
	to->copy_range = to->copy_range || from->copy_range;
}

/* Splits the files (archive order) into units: runs of one directory. */
static struct exp_unit *exp_units(const struct exp *x,
				  const struct order_key *files, uint32_t n,
				  uint32_t *nunits)
{
	struct exp_unit *u = calloc(n ? n : 1, sizeof(*u));
	uint32_t i, k = 0;

	if (!u)
		return NULL;
	for (i = 0; i < n; i++) {
		uint32_t parent = node_of(x, files[i].ino)->parent;

		if (i == 0 || u[k - 1].end - u[k - 1].first >= EXP_UNIT_FILES ||
		    node_of(x, files[i - 1].ino)->parent != parent)
			u[k++] = (struct exp_unit){i, i};
		u[k - 1].end = i + 1;
	}
	*nunits = k;
	return u;
}

/* Writes the files on nworkers threads, the calling one included. */
static enum wsnap_status exp_write_files(struct exp *x,
					 const struct order_key *files,
					 uint32_t nfiles, unsigned nworkers)
{
	struct exp_worker *w = calloc(nworkers, sizeof(*w));
	pthread_t tid[EXP_MAX_WORKERS];
	bool started[EXP_MAX_WORKERS] = {false};
	struct exp_pool pool = {.files = files};
	struct exp_worker *first = NULL;
	enum wsnap_status s = WSNAP_OK;
	unsigned i;

	if (!w)
		return fail_io(x, ENOMEM, NULL, "out of memory");
	pool.units = exp_units(x, files, nfiles, &pool.nunits);
	if (!pool.units) {
		free(w);
		return fail_io(x, ENOMEM, NULL, "out of memory");
	}
	pthread_mutex_init(&pool.lock, NULL);
	atomic_init(&pool.members_done, x->prog.members_done);
	atomic_init(&pool.bytes_done, x->prog.bytes_done);
	for (i = 0; i < nworkers && s == WSNAP_OK; i++) {
		w[i].pool = &pool;
		w[i].main = i == 0;
		s = exp_worker_init(&w[i], x);
	}
	for (i = 1; i < nworkers && s == WSNAP_OK; i++)
		started[i] = pthread_create(&tid[i], NULL, exp_worker_run,
					    &w[i]) == 0;
	if (s == WSNAP_OK)
		exp_worker_run(&w[0]); /* with fewer threads, it does more */
	for (i = 1; i < nworkers; i++)
		if (started[i])
			pthread_join(tid[i], NULL);
	for (i = 0; i < nworkers; i++) {
		exp_stats_add(x->st, &w[i].st);
		if (w[i].status != WSNAP_OK &&
		    (!first || w[i].fail_order < first->fail_order))
			first = &w[i];
		exp_worker_release(&w[i]);
	}
	if (s == WSNAP_OK && first) {
		*x->err = first->err;
		s = first->status;
	}
	x->prog.members_done = atomic_load(&pool.members_done);
	x->prog.bytes_done = atomic_load(&pool.bytes_done);
	pthread_mutex_destroy(&pool.lock);
	free((void *)pool.units);
	free(w);
	return s;
}

/*
 * Pass 1 with the files written in parallel (see above): directories and
 * the parents of files first, in archive order, on this thread.
 */
static enum wsnap_status pass1_parallel(struct exp *x, struct order_key *keys,
					uint32_t nkeys, unsigned nworkers)
{
	uint32_t i, nfiles = 0;
	enum wsnap_status s = WSNAP_OK;

	for (i = 0; i < nkeys && s == WSNAP_OK; i++) {
		const struct wsnap_node *n = node_of(x, keys[i].ino);

		s = check_cancel(x);
		if (s != WSNAP_OK)
			break;
		if (n->type == WSNAP_TYPE_DIR) {
			s = put_dir(x, keys[i].ino);
			if (s == WSNAP_OK)
				node_done(x, n);
		} else if (dir_fd(x, n->parent, n, true) < 0) {
			s = x->err->status;
		} else {
			keys[nfiles++] = keys[i]; /* the files, in order */
		}
	}
	if (s != WSNAP_OK)
		return s;
	return exp_write_files(x, keys, nfiles, nworkers);
}

static enum wsnap_status run_passes(struct exp *x)
{
	struct order_key *keys;
	uint32_t ino, nkeys = 0, i, nfiles;
	unsigned nworkers;
	enum wsnap_status s = WSNAP_OK;

	keys = calloc(x->count, sizeof(*keys));
	if (!keys)
		return fail_io(x, ENOMEM, NULL, "out of memory");

	/* Pass 1: directories and regular files in archive order. */
	for (ino = WSNAP_ROOT_INO + 1; ino <= x->count; ino++) {
		const struct wsnap_node *n = node_of(x, ino);

		if (n->type == WSNAP_TYPE_FILE ||
		    (n->type == WSNAP_TYPE_DIR &&
		     !(n->flags & WSNAP_NODE_IMPLICIT)))
			keys[nkeys++] = (struct order_key){n->order, ino};
	}
	qsort(keys, nkeys, sizeof(*keys), order_key_cmp);
	for (i = 0, nfiles = 0; i < nkeys; i++)
		nfiles += node_of(x, keys[i].ino)->type == WSNAP_TYPE_FILE;
	nworkers = exp_workers_wanted(x, nfiles);
	if (nworkers > 1) {
		s = pass1_parallel(x, keys, nkeys, nworkers);
		nkeys = 0; /* done */
	}
	for (i = 0; i < nkeys && s == WSNAP_OK; i++) {
		const struct wsnap_node *n = node_of(x, keys[i].ino);

		s = check_cancel(x);
		if (s != WSNAP_OK)
			break;
		if (n->type == WSNAP_TYPE_DIR)
			s = put_dir(x, keys[i].ino);
		else
			s = put_file(x, keys[i].ino);
		if (s == WSNAP_OK)
			node_done(x, n);
	}
	if (s == WSNAP_OK)
		s = check_data(x);

	/* Pass 2: symlinks, in archive order. */
	nkeys = 0;
	for (ino = WSNAP_ROOT_INO + 1; ino <= x->count && s == WSNAP_OK;
	     ino++) {
		const struct wsnap_node *n = node_of(x, ino);

		if (n->type == WSNAP_TYPE_SYMLINK)
			keys[nkeys++] = (struct order_key){n->order, ino};
	}
	qsort(keys, nkeys, sizeof(*keys), order_key_cmp);
	for (i = 0; i < nkeys && s == WSNAP_OK; i++) {
		s = check_cancel(x);
		if (s != WSNAP_OK)
			break;
		s = put_symlink(x, keys[i].ino);
		if (s == WSNAP_OK)
			node_done(x, node_of(x, keys[i].ino));
	}

	/*
	 * Pass 3: directory mtimes, deepest first, so that writing in a
	 * directory never follows setting its time. Members always; implicit
	 * directories only when we created them; the root when it is a
	 * member or we created it.
	 */
	nkeys = 0;
	for (ino = WSNAP_ROOT_INO; ino <= x->count && s == WSNAP_OK; ino++) {
		const struct wsnap_node *n = node_of(x, ino);
		bool want;

		if (n->type != WSNAP_TYPE_DIR)
			continue;
		if (ino == WSNAP_ROOT_INO)
			want = x->fresh || root_is_member(n);
		else
			want = !(n->flags & WSNAP_NODE_IMPLICIT) ||
			       x->created[ino];
		if (want)
			keys[nkeys++] = (struct order_key){
				UINT32_MAX - x->depth[ino], ino};
	}
	qsort(keys, nkeys, sizeof(*keys), order_key_cmp);
	for (i = 0; i < nkeys && s == WSNAP_OK; i++)
		s = put_dir_mtime(x, keys[i].ino);

	free(keys);
	return s;
}

static enum wsnap_status exp_init(struct exp *x, const struct wsnap_index *idx,
				  int rootfd, const char *label,
				  const struct wsnap_export_opts *opts,
				  struct wsnap_export_stats *st,
				  struct wsnap_error *err)
{
	uint32_t ino, maxdepth = 0;

	memset(x, 0, sizeof(*x));
	memset(st, 0, sizeof(*st));
	x->idx = idx;
	x->opts = opts;
	x->st = st;
	x->err = err;
	x->label = label;
	x->rootfd = rootfd;
	x->datafd = wsnap_index_data_fd(idx);
	x->use_openat2 = !(opts && (opts->flags & WSNAP_EXPORT_NO_OPENAT2));
	x->use_copy_range =
		!(opts && (opts->flags & WSNAP_EXPORT_NO_COPY_RANGE));
	st->openat2 = x->use_openat2;
	x->count = wsnap_index_count(idx);
	x->depth = calloc((size_t)x->count + 1, sizeof(*x->depth));
	x->created = calloc((size_t)x->count + 1, 1);
	x->buf = malloc(COPY_BUF_SIZE);
	x->win = malloc(WINDOW_SIZE);
	if (!x->depth || !x->created || !x->buf || !x->win)
		return fail_io(x, ENOMEM, NULL, "out of memory");
	for (ino = WSNAP_ROOT_INO + 1; ino <= x->count; ino++) {
		const struct wsnap_node *n = node_of(x, ino);
		uint32_t d = 1, p = n->parent, guard = 0;

		/* Inos are sorted by path, so a parent precedes its child;
		 * walk up anyway when it does not (never trust an order). */
		if (p < ino) {
			d = x->depth[p] + 1;
		} else {
			while (p != WSNAP_ROOT_INO && guard++ < x->count) {
				d++;
				p = node_of(x, p)->parent;
			}
		}
		x->depth[ino] = d;
		if (d > maxdepth)
			maxdepth = d;
		if (!(n->flags & WSNAP_NODE_IMPLICIT))
			x->prog.members_total++;
		if (n->type == WSNAP_TYPE_FILE)
			x->prog.bytes_total += n->size;
	}
	x->maxdepth = maxdepth;
	x->stack = calloc((size_t)maxdepth + 1, sizeof(*x->stack));
	x->chain = calloc((size_t)maxdepth + 1, sizeof(*x->chain));
	if (!x->stack || !x->chain)
		return fail_io(x, ENOMEM, NULL, "out of memory");
	x->stack[0].ino = WSNAP_ROOT_INO;
	x->stack[0].fd = rootfd;
	x->top = 0;
	if (opts && (opts->flags & WSNAP_EXPORT_INPUT)) {
		struct wsnap_index_stats is;

		wsnap_index_stats(idx, &is);
		if (!is.compression || strcmp(is.compression, "none") == 0) {
			x->datafd = opts->input_fd; /* in place */
		} else if (x->prog.bytes_total > 0) {
			enum wsnap_status s = stream_open(x, opts->input_fd);

			if (s != WSNAP_OK)
				return s;
		}
	}
	if (x->prog.bytes_total > 0 && x->datafd < 0 && !x->stream)
		return fail_io(x, EBADF, NULL,
			       "index has no data (built without keep_data)");
	return check_data(x);
}

static void exp_release(struct exp *x)
{
	if (x->stack)
		pop_to(x, 0);
	free(x->stack);
	free(x->chain);
	free(x->depth);
	free(x->created);
	free(x->buf);
	free(x->win);
	stream_close(x->stream);
}

static enum wsnap_status export_at(const struct wsnap_index *idx, int rootfd,
				   const char *label, bool fresh,
				   const struct wsnap_export_opts *opts,
				   struct wsnap_export_stats *stats,
				   struct wsnap_error *err)
{
	struct wsnap_export_stats local;
	struct exp x;
	enum wsnap_status s;

	if (!stats)
		stats = &local;
	s = exp_init(&x, idx, rootfd, label, opts, stats, err);
	x.fresh = fresh;
	stats->created = fresh;
	if (s == WSNAP_OK)
		s = run_passes(&x);
	if (s == WSNAP_OK)
		progress_tick(&x, true);
	exp_release(&x);
	return s;
}

/* ---- removing a tree ------------------------------------------------- */

static int remove_tree_depth(int parentfd, const char *name, unsigned depth)
{
	struct dirent *de;
	DIR *d;
	int fd, first = 0, round;

	if (unlinkat(parentfd, name, 0) == 0 || errno == ENOENT)
		return 0;
	if (errno != EISDIR && errno != EPERM)
		return -errno;
	if (depth >= REMOVE_MAX_DEPTH)
		return -ELOOP;
	fd = openat(parentfd, name, DIR_OPEN_FLAGS);
	if (fd < 0)
		return errno == ENOENT ? 0 : -errno;
	d = fdopendir(fd);
	if (!d) {
		first = -errno;
		close(fd);
		return first;
	}
	for (round = 0; round < 4; round++) {
		first = 0;
		while ((de = readdir(d)) != NULL) {
			int r;

			if (strcmp(de->d_name, ".") == 0 ||
			    strcmp(de->d_name, "..") == 0)
				continue;
			r = remove_tree_depth(dirfd(d), de->d_name, depth + 1);
			if (r < 0 && first == 0)
				first = r;
		}
		if (unlinkat(parentfd, name, AT_REMOVEDIR) == 0 ||
		    errno == ENOENT) {
			first = 0;
			break;
		}
		if (errno != ENOTEMPTY && errno != EEXIST) {
			if (first == 0)
				first = -errno;
			break;
		}
		if (first == 0)
			first = -ENOTEMPTY;
		rewinddir(d);
	}
	closedir(d);
	return first;
}

int wsnap_export_remove_tree(int dirfd, const char *name)
{
	return remove_tree_depth(dirfd, name, 0);
}

/* ---- a fresh destination --------------------------------------------- */

static uint32_t random_u32(void)
{
	uint32_t v = 0;

	if (getrandom(&v, sizeof(v), GRND_NONBLOCK) != sizeof(v))
		v = (uint32_t)getpid() * 2654435761u ^ (uint32_t)time(NULL);
	return v;
}

/*
 * Creates a fresh temporary directory beside the destination, named after
 * it: '.<base>.wsnap-<random>'. Returns its name in tmp (capacity cap).
 */
static int make_temp_dir(int parentfd, const char *base, char *tmp, size_t cap)
{
	int tries;

	for (tries = 0; tries < 100; tries++) {
		snprintf(tmp, cap, ".%.200s.wsnap-%08x", base, random_u32());
		if (mkdirat(parentfd, tmp, 0700) == 0)
			return 0;
		if (errno != EEXIST)
			return -1;
	}
	errno = EEXIST;
	return -1;
}

static int rename_noreplace(int dirfd, const char *from, const char *to)
{
	if (renameat2(dirfd, from, dirfd, to, RENAME_NOREPLACE) == 0)
		return 0;
	if (errno != EINVAL && errno != ENOSYS)
		return -1;
	/* No RENAME_NOREPLACE on this filesystem: renameat only replaces an
	 * empty directory, which loses nothing. */
	return renameat(dirfd, from, dirfd, to);
}

static enum wsnap_status export_fresh(const struct wsnap_index *idx,
				      const char *dest, char *path,
				      const struct wsnap_export_opts *opts,
				      struct wsnap_export_stats *stats,
				      struct wsnap_error *err)
{
	char tmp[256];
	const char *base, *parent;
	char *slash;
	int parentfd, tfd;
	enum wsnap_status s;

	slash = strrchr(path, '/');
	if (!slash) {
		parent = ".";
		base = path;
	} else {
		*slash = '\0';
		parent = slash == path ? "/" : path;
		base = slash + 1;
	}
	parentfd = open(parent, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (parentfd < 0)
		return wsnap_error_io(err, errno, parent,
				      "cannot open destination parent");
	if (make_temp_dir(parentfd, base, tmp, sizeof(tmp)) < 0) {
		s = wsnap_error_io(err, errno, dest,
				   "cannot create destination");
		goto out;
	}
	tfd = openat(parentfd, tmp, DIR_OPEN_FLAGS);
	if (tfd < 0) {
		s = wsnap_error_io(err, errno, dest,
				   "cannot create destination");
		goto cleanup;
	}
	if (fchmod(tfd, WSNAP_DIR_MODE) < 0) {
		s = wsnap_error_io(err, errno, dest,
				   "cannot create destination");
		close(tfd);
		goto cleanup;
	}
	s = export_at(idx, tfd, dest, true, opts, stats, err);
	close(tfd);
	if (s != WSNAP_OK)
		goto cleanup;
	if (rename_noreplace(parentfd, tmp, base) == 0)
		goto out;
	s = wsnap_error_io(err, errno, dest,
			   errno == EEXIST || errno == ENOTEMPTY
				   ? "destination appeared during the export"
				   : "cannot rename into place");
cleanup:
	wsnap_export_remove_tree(parentfd, tmp);
out:
	close(parentfd);
	return s;
}

enum wsnap_status wsnap_export_run(const struct wsnap_index *idx,
				   const char *dest,
				   const struct wsnap_export_opts *opts,
				   struct wsnap_export_stats *stats,
				   struct wsnap_error *err)
{
	enum wsnap_status s;
	size_t len;
	char *path;
	int rootfd;

	len = dest ? strlen(dest) : 0;
	if (len == 0)
		return wsnap_error_usage(err, "empty destination");
	path = strdup(dest);
	if (!path)
		return wsnap_error_io(err, ENOMEM, NULL, "out of memory");
	while (len > 1 && path[len - 1] == '/')
		path[--len] = '\0';
	rootfd = open(path, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (rootfd >= 0) {
		s = export_at(idx, rootfd, path, false, opts, stats, err);
		close(rootfd);
	} else if (errno == ENOENT) {
		s = export_fresh(idx, dest, path, opts, stats, err);
	} else if (errno == ENOTDIR) {
		s = wsnap_error_io(err, ENOTDIR, dest,
				   "destination is not a directory");
	} else {
		s = wsnap_error_io(err, errno, dest, "cannot open destination");
	}
	free(path);
	return s;
}
