/* SPDX-License-Identifier: MIT */
/*
 * The filesystem's answers (fs.h): pure functions of the index and the
 * request. No reply is sent here; ll.c does that.
 */
#include "fs.h"

#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

/* Block size presented by statfs. */
#define FS_BSIZE 4096u

void wsnap_fs_init(struct wsnap_fs *fs, const struct wsnap_index *idx,
		   uid_t uid, gid_t gid)
{
	memset(fs, 0, sizeof(*fs));
	fs->idx = idx;
	fs->uid = uid;
	fs->gid = gid;
	fs->ready_fd = -1;
	atomic_init(&fs->plus_files, false);
}

/* The node of a FUSE ino, or NULL (out of range, or no index). */
static const struct wsnap_node *node_of(const struct wsnap_fs *fs,
					fuse_ino_t ino)
{
	if (!fs->idx || ino == 0 || ino > UINT32_MAX)
		return NULL;
	return wsnap_index_node(fs->idx, (uint32_t)ino);
}

static void fill_stat(const struct wsnap_fs *fs, uint32_t ino,
		      const struct wsnap_node *n, struct stat *st)
{
	/* sizes from the index fit in off_t (the reader rejects larger) */
	uint64_t size = n->size > INT64_MAX ? INT64_MAX : n->size;

	memset(st, 0, sizeof(*st));
	st->st_ino = ino;
	st->st_uid = fs->uid;
	st->st_gid = fs->gid;
	st->st_size = (off_t)size;
	st->st_blocks = (blkcnt_t)(size / 512 + (size % 512 != 0));
	st->st_blksize = WSNAP_FS_BLKSIZE;
	st->st_mtim.tv_sec = (time_t)n->mtime_sec;
	st->st_mtim.tv_nsec = (long)n->mtime_nsec;
	st->st_atim = st->st_mtim;
	st->st_ctim = st->st_mtim;
	switch (n->type) {
	case WSNAP_TYPE_DIR:
		st->st_mode = S_IFDIR | n->mode;
		st->st_nlink = 2 + (nlink_t)wsnap_index_nsubdirs(fs->idx, ino);
		break;
	case WSNAP_TYPE_SYMLINK:
		st->st_mode = S_IFLNK | n->mode;
		st->st_nlink = 1;
		break;
	default:
		st->st_mode = S_IFREG | n->mode;
		st->st_nlink = 1;
		break;
	}
}

static void fill_entry(const struct wsnap_fs *fs, uint32_t ino,
		       const struct wsnap_node *n, struct fuse_entry_param *e)
{
	memset(e, 0, sizeof(*e));
	e->ino = ino;
	e->entry_timeout = WSNAP_FS_TIMEOUT;
	e->attr_timeout = WSNAP_FS_TIMEOUT;
	fill_stat(fs, ino, n, &e->attr);
}

int wsnap_fs_do_lookup(struct wsnap_fs *fs, fuse_ino_t parent, const char *name,
		       struct fuse_entry_param *e)
{
	const struct wsnap_node *dir = node_of(fs, parent), *n;
	size_t len = strlen(name);
	uint32_t ino;

	/* the negative entry, cached by the kernel as long as a positive */
	memset(e, 0, sizeof(*e));
	e->entry_timeout = WSNAP_FS_TIMEOUT;
	if (!dir)
		return ENOENT;
	if (dir->type != WSNAP_TYPE_DIR)
		return ENOTDIR;
	if (len == 1 && name[0] == '.')
		ino = (uint32_t)parent;
	else if (len == 2 && name[0] == '.' && name[1] == '.')
		ino = dir->parent;
	else if (len > WSNAP_FS_NAME_MAX)
		return ENAMETOOLONG;
	else
		ino = wsnap_index_child(fs->idx, (uint32_t)parent, name, len);
	if (ino == 0)
		return ENOENT;
	n = wsnap_index_node(fs->idx, ino);
	/* a file looked up: from now on listings carry files' entries */
	if (n->type != WSNAP_TYPE_DIR &&
	    !atomic_load_explicit(&fs->plus_files, memory_order_relaxed))
		atomic_store_explicit(&fs->plus_files, true,
				      memory_order_relaxed);
	fill_entry(fs, ino, n, e);
	return 0;
}

int wsnap_fs_do_getattr(const struct wsnap_fs *fs, fuse_ino_t ino,
			struct stat *st)
{
	const struct wsnap_node *n = node_of(fs, ino);

	if (!n)
		return ENOENT;
	fill_stat(fs, (uint32_t)ino, n, st);
	return 0;
}

int wsnap_fs_do_readlink(const struct wsnap_fs *fs, fuse_ino_t ino,
			 const char **target)
{
	const struct wsnap_node *n = node_of(fs, ino);

	*target = NULL;
	if (!n)
		return ENOENT;
	if (n->type != WSNAP_TYPE_SYMLINK || !n->target)
		return EINVAL;
	*target = n->target;
	return 0;
}

int wsnap_fs_do_opendir(const struct wsnap_fs *fs, fuse_ino_t ino)
{
	const struct wsnap_node *n = node_of(fs, ino);

	if (!n)
		return ENOENT;
	return n->type == WSNAP_TYPE_DIR ? 0 : ENOTDIR;
}

int wsnap_fs_do_readdir(const struct wsnap_fs *fs, fuse_ino_t ino, off_t off,
			bool plus, wsnap_fs_dirent_fn fn, void *ctx)
{
	const struct wsnap_node *dir = node_of(fs, ino);
	const uint32_t *children;
	uint64_t pos, end;
	uint32_t count;
	bool files;

	if (!dir)
		return ENOENT;
	if (dir->type != WSNAP_TYPE_DIR)
		return ENOTDIR;
	if (off < 0)
		return EINVAL;
	count = wsnap_index_children(fs->idx, (uint32_t)ino, &children);
	files = plus &&
		(count > WSNAP_FS_PLUS_ENTRIES ||
		 atomic_load_explicit(&fs->plus_files, memory_order_relaxed));
	end = (uint64_t)count + 2;
	for (pos = (uint64_t)off; pos < end; pos++) {
		struct fuse_entry_param e;
		const struct wsnap_node *n;
		const char *name;
		uint32_t eino;

		if (pos == 0) {
			name = ".";
			eino = (uint32_t)ino;
		} else if (pos == 1) {
			name = "..";
			eino = dir->parent;
		} else {
			eino = children[pos - 2];
			name = wsnap_node_name(wsnap_index_node(fs->idx, eino));
		}
		n = wsnap_index_node(fs->idx, eino);
		fill_entry(fs, eino, n, &e);
		if (!plus || pos < 2 || (n->type != WSNAP_TYPE_DIR && !files)) {
			/* no lookup is counted for these (fs.h) */
			e.ino = 0;
			e.entry_timeout = 0;
			e.attr_timeout = 0;
		}
		if (fn(ctx, name, &e, (off_t)(pos + 1)))
			break;
	}
	return 0;
}

/* The regular file at ino: ENOENT, EISDIR, or EINVAL for a symlink. */
static int file_node(const struct wsnap_fs *fs, fuse_ino_t ino,
		     const struct wsnap_node **out)
{
	const struct wsnap_node *n = node_of(fs, ino);

	*out = n;
	if (!n)
		return ENOENT;
	if (n->type == WSNAP_TYPE_DIR)
		return EISDIR;
	return n->type == WSNAP_TYPE_FILE ? 0 : EINVAL;
}

int wsnap_fs_do_open(const struct wsnap_fs *fs, fuse_ino_t ino, int flags)
{
	const struct wsnap_node *n;
	int rc = file_node(fs, ino, &n);

	if (rc)
		return rc;
	if ((flags & O_ACCMODE) != O_RDONLY || (flags & O_TRUNC))
		return EROFS;
	return 0;
}

/* r's data is len bytes at mem; r owns them when owned. */
static void read_set_mem(struct wsnap_fs_read *r, void *mem, size_t len,
			 bool owned)
{
	r->mem = owned ? mem : NULL;
	r->vec = FUSE_BUFVEC_INIT(len);
	r->vec.buf[0].mem = mem;
}

/*
 * Reads served from memory are assembled in a buffer of the calling
 * thread, kept from one request to the next: a fresh block per request
 * (which the daemon's malloc maps for itself, serve.c) cost a page fault
 * per 4 KiB read, several times the copy. WSNAP_FS_MAX_REQUEST bytes per
 * thread that ever served one; a larger read gets a block of its own.
 */
static pthread_key_t read_buf_key;
static pthread_once_t read_buf_once = PTHREAD_ONCE_INIT;
static bool read_buf_ok;

static void read_buf_init(void)
{
	read_buf_ok = pthread_key_create(&read_buf_key, free) == 0;
}

/* The calling thread's buffer, or NULL when there can be none. */
static void *read_buf(void)
{
	void *buf;

	pthread_once(&read_buf_once, read_buf_init);
	if (!read_buf_ok)
		return NULL;
	buf = pthread_getspecific(read_buf_key);
	if (!buf) {
		buf = malloc(WSNAP_FS_MAX_REQUEST);
		if (buf && pthread_setspecific(read_buf_key, buf) != 0) {
			free(buf);
			buf = NULL;
		}
	}
	return buf;
}

/*
 * A spliced reply for a read of len bytes at off that one stored run of
 * the spill file holds: 0 when planned in r, -1 when the read must be
 * assembled in memory, else an errno.
 */
static int read_splice(const struct wsnap_fs *fs, fuse_ino_t ino, off_t off,
		       size_t len, struct wsnap_fs_read *r)
{
	struct wsnap_extent ext;
	uint64_t skip;

	if (wsnap_index_data_check(fs->idx) < 0)
		return EIO;
	if (wsnap_index_extent(fs->idx, (uint32_t)ino, (uint64_t)off, &ext) <
		    0 ||
	    ext.logical > (uint64_t)off)
		return EIO;
	skip = (uint64_t)off - ext.logical;
	if (ext.physical < 0 || skip >= ext.length || ext.length - skip < len ||
	    (uint64_t)ext.physical > (uint64_t)INT64_MAX - skip - len)
		return -1;
	/* an index from a sidecar: its digests first (once per chunk) */
	if (wsnap_index_verify(fs->idx, (uint32_t)ino,
			       (uint64_t)ext.physical + skip, len) < 0)
		return EIO;
	r->vec = FUSE_BUFVEC_INIT(len);
	r->vec.buf[0].flags = FUSE_BUF_IS_FD | FUSE_BUF_FD_SEEK;
	r->vec.buf[0].fd = wsnap_index_data_fd(fs->idx);
	r->vec.buf[0].pos = (off_t)((uint64_t)ext.physical + skip);
	return 0;
}

int wsnap_fs_do_read(const struct wsnap_fs *fs, fuse_ino_t ino, size_t size,
		     off_t off, struct wsnap_fs_read *r)
{
	const struct wsnap_node *n;
	size_t len;
	ssize_t got;
	void *mem;
	bool owned;
	int rc;

	read_set_mem(r, NULL, 0, false);
	rc = file_node(fs, ino, &n);
	if (rc)
		return rc;
	if (off < 0)
		return EINVAL;
	if ((uint64_t)off >= n->size || size == 0)
		return 0; /* end of file: an empty reply */
	len = size;
	if ((uint64_t)len > n->size - (uint64_t)off)
		len = (size_t)(n->size - (uint64_t)off);
	if (!wsnap_index_has_data(fs->idx))
		return EIO;

	/*
	 * A spliced reply carries references to the data file's pages, so
	 * whatever is stored there until the reader copies them is what it
	 * gets: only our own spill file, which nobody else writes, is
	 * spliced. The archive itself is read into memory and checked after
	 * the read (wsnap_index_pread), so that bytes that changed under the
	 * index are never served.
	 */
	if (len >= WSNAP_FS_SPLICE_MIN && wsnap_index_data_spilled(fs->idx)) {
		rc = read_splice(fs, ino, off, len, r);
		if (rc >= 0)
			return rc;
	}

	/* the archive, small reads, holes or several runs: in memory */
	mem = len <= WSNAP_FS_MAX_REQUEST ? read_buf() : NULL;
	owned = !mem;
	if (owned)
		mem = malloc(len);
	if (!mem)
		return ENOMEM;
	got = wsnap_index_pread(fs->idx, (uint32_t)ino, mem, len,
				(uint64_t)off);
	if (got < 0 || (size_t)got != len) {
		if (owned)
			free(mem);
		return got < 0 ? (int)-got : EIO;
	}
	read_set_mem(r, mem, len, owned);
	return 0;
}

void wsnap_fs_read_release(struct wsnap_fs_read *r)
{
	free(r->mem);
	r->mem = NULL;
}

int wsnap_fs_do_statfs(const struct wsnap_fs *fs, struct statvfs *st)
{
	struct wsnap_index_stats s;

	memset(st, 0, sizeof(*st));
	if (!fs->idx)
		return ENOENT;
	wsnap_index_stats(fs->idx, &s);
	st->f_bsize = FS_BSIZE;
	st->f_frsize = FS_BSIZE;
	st->f_blocks = (fsblkcnt_t)(s.total_bytes / FS_BSIZE +
				    (s.total_bytes % FS_BSIZE != 0));
	st->f_files = wsnap_index_count(fs->idx);
	st->f_namemax = WSNAP_FS_NAME_MAX;
	st->f_flag = ST_RDONLY | ST_NOSUID | ST_NODEV;
	return 0;
}

int wsnap_fs_do_getxattr(const struct wsnap_fs *fs, fuse_ino_t ino,
			 const char *name)
{
	return node_of(fs, ino) ? ENOSYS : ENOENT;
}

int wsnap_fs_do_listxattr(const struct wsnap_fs *fs, fuse_ino_t ino,
			  size_t *len)
{
	*len = 0;
	return node_of(fs, ino) ? 0 : ENOENT;
}

int wsnap_fs_do_access(const struct wsnap_fs *fs, fuse_ino_t ino, int mask,
		       uid_t uid, gid_t gid, const gid_t *groups,
		       size_t ngroups)
{
	const struct wsnap_node *n = node_of(fs, ino);
	unsigned bits, want = 0;
	bool in_group = gid == fs->gid;
	size_t i;

	if (!n)
		return ENOENT;
	if (mask & W_OK)
		return EROFS;
	if (mask == F_OK)
		return 0;
	if (mask & R_OK)
		want |= 4;
	if (mask & X_OK)
		want |= 1;
	if (uid == 0) {
		/* root reads anything, executes what anyone may */
		if ((want & 1) && n->type != WSNAP_TYPE_DIR &&
		    !(n->mode & 0111))
			return EACCES;
		return 0;
	}
	for (i = 0; i < ngroups && !in_group; i++)
		in_group = groups[i] == fs->gid;
	if (uid == fs->uid)
		bits = (n->mode >> 6) & 7;
	else if (in_group)
		bits = (n->mode >> 3) & 7;
	else
		bits = n->mode & 7;
	return (bits & want) == want ? 0 : EACCES;
}
