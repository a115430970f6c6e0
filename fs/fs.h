/* SPDX-License-Identifier: MIT */
/*
 * The wsnap FUSE filesystem: a validated, immutable index (core/index/index.h)
 * served read-only through the libfuse3 (3.14) lowlevel API.
 *
 * Three parts, like squashfuse's core / front end split:
 *  - fs.c: the filesystem's answers as do_*() functions. Each takes the
 *    request's arguments, fills plain structures and returns 0 or an errno;
 *    nothing there talks to the kernel, so the unit tests call them directly
 *    against an index.
 *  - ll.c: the lowlevel handlers (static const struct fuse_lowlevel_ops).
 *    Each calls one do_*() and then exactly one fuse_reply_*.
 *  - serve.c: the session's life: mount, daemonize, readiness, the
 *    multi-threaded loop, unmount.
 *
 * Invariants:
 *  - FUSE inode numbers are the index's inos, untranslated: 1 is the root
 *    (FUSE_ROOT_ID == WSNAP_ROOT_INO), every ino is 1..wsnap_index_count().
 *    Nothing is ever created or removed, so an ino never changes meaning and
 *    the generation is always 0.
 *  - The index is immutable and struct wsnap_fs is read-only once the loop
 *    runs (but for one atomic hint, plus_files, that only chooses how much
 *    a readdirplus reply carries): handlers on any number of threads
 *    take no locks and keep no per-open state (fh is unused). Lookup
 *    counts need no bookkeeping: forget has nothing to release.
 *  - Because nothing changes, the kernel may cache everything: entries and
 *    attributes for WSNAP_FS_TIMEOUT, negative lookups too (an entry with
 *    ino 0), file pages across opens (keep_cache), directory listings
 *    (cache_readdir) and symlink targets.
 *  - Every write operation answers EROFS; the mount is also made with 'ro'.
 *  - Data is read from the index's data descriptor (the archive itself when
 *    it is uncompressed, else the spill file of its decompressed stream).
 *    Bytes of the archive itself are served only from memory, read between
 *    two checks that the file is still the one judged (device, inode, size,
 *    mtime, ctime: fileid.h), so a truncated or rewritten archive reads as
 *    EIO, never as other bytes; only the spill file, which no one else
 *    writes, is spliced. Pages the kernel keeps (keep_cache) were served
 *    that way, so they are the judged bytes and stay valid after a change.
 */
#ifndef WSNAP_FS_H
#define WSNAP_FS_H

#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>
#include <sys/stat.h>
#include <sys/statvfs.h>
#include <sys/types.h>

#include <fuse_lowlevel.h>

#include "error.h"
#include "index.h"

/* Entry and attribute validity in seconds: effectively forever. */
#define WSNAP_FS_TIMEOUT 1e9

/* st_blksize presented for files: large, so that readers ask for big
 * reads. */
#define WSNAP_FS_BLKSIZE 65536

/*
 * Longest name component presented: what a Linux directory holds, and what
 * policy rule 3.9 allows (a longer component was rejected with the whole
 * archive), so that mount, ls and export agree on every entry. statfs
 * reports it as f_namemax; a longer name looked up is ENAMETOOLONG.
 */
#define WSNAP_FS_NAME_MAX WSNAP_NAME_MAX

/*
 * Reads shorter than this are copied rather than spliced: libfuse splices
 * only from two pages on, and its fallback for a shorter descriptor buffer
 * allocates a page-aligned bounce buffer per reply, which fragments the
 * heap of every worker thread (megabytes each for many small files).
 */
#define WSNAP_FS_SPLICE_MIN 8192

/*
 * Largest request the kernel is allowed (read size): 1 MiB less the pages
 * libfuse reserves around a spliced reply in its pipe.
 */
#define WSNAP_FS_MAX_REQUEST (1024u * 1024u - 4u * 4096u)

/*
 * Directories larger than this list their files with entries even before a
 * file was looked up (wsnap_fs_do_readdir): a wrong guess without costs a
 * round trip per entry (ls -l of 100,000 files right after mounting: 4 s),
 * one with only the kernel's work (0.4 s), so the loss before the first
 * lookup stays bounded at about this many round trips.
 */
#define WSNAP_FS_PLUS_ENTRIES 4096u

/* Most supplementary groups consulted by access(). */
#define WSNAP_FS_MAX_GROUPS 64

struct wsnap_fs {
	const struct wsnap_index *idx; /* not owned; NULL until loaded */
	uid_t uid;		       /* presented owner of every node */
	gid_t gid;
	/*
	 * Readiness: when >= 0, the INIT handler writes the byte
	 * WSNAP_FS_READY here (the mount answers from then on), closes it and
	 * sets -1. Set by the caller, which closes it if it is still open
	 * when wsnap_fs_serve() returns (the mount failed before INIT).
	 */
	int ready_fd;
	/*
	 * Whether readdirplus replies carry the entries of files, not only
	 * of directories: set (for good) by the first lookup of a file, the
	 * sign of a walk that stats what it lists. The one field that
	 * changes while the loop runs; a hint for speed only, so relaxed
	 * atomics are enough: either answer is correct.
	 */
	atomic_bool plus_files;
	/*
	 * Work put off until the mount answers (wsnap mount: the index cache
	 * entry of a first mount): when set, the INIT handler starts
	 * later(later_ctx) on a thread of its own once readiness is
	 * signalled (or runs it there when no thread can be started), and
	 * wsnap_fs_later_join() waits for it. Set by the caller.
	 */
	void (*later)(void *ctx);
	void *later_ctx;
	pthread_t later_thread;
	bool later_started;
};

#define WSNAP_FS_READY 'R'

/* Waits for the work of fs->later if it was started (after the loop). */
void wsnap_fs_later_join(struct wsnap_fs *fs);

/* Fills fs: presented owner uid/gid, no readiness descriptor. */
void wsnap_fs_init(struct wsnap_fs *fs, const struct wsnap_index *idx,
		   uid_t uid, gid_t gid);

/*
 * The answers. All return 0 or a positive errno; ENOENT for an ino that is
 * not in the index (the kernel never sends one, tests do).
 */

/*
 * lookup: fills *e (ino, attributes, timeouts) for the entry name of
 * directory parent. A missing name returns ENOENT with *e still filled as
 * the negative entry to reply (ino 0, WSNAP_FS_TIMEOUT), so the kernel
 * remembers the miss. ENOTDIR when parent is not a directory.
 */
int wsnap_fs_do_lookup(struct wsnap_fs *fs, fuse_ino_t parent, const char *name,
		       struct fuse_entry_param *e);
/* (A file found sets fs->plus_files, see wsnap_fs_do_readdir.) */

/* getattr: the presented attributes (policy.md section 9). */
int wsnap_fs_do_getattr(const struct wsnap_fs *fs, fuse_ino_t ino,
			struct stat *st);

/* readlink: *target points into the index (EINVAL if not a symlink). */
int wsnap_fs_do_readlink(const struct wsnap_fs *fs, fuse_ino_t ino,
			 const char **target);

/* opendir: ENOTDIR for a non-directory. */
int wsnap_fs_do_opendir(const struct wsnap_fs *fs, fuse_ino_t ino);

/*
 * readdir / readdirplus. Entries are ".", "..", then the children sorted
 * bytewise; the offset of an entry's successor is its position + 1, so a
 * listing resumes exactly at any offset. For each entry from position off
 * on, fn is called with its name, its entry (attributes filled; for
 * readdirplus the ino and timeouts too, except for "." and ".." whose ino is
 * 0 so that the kernel does not count a lookup) and the offset to resume
 * after it.
 *
 * Readdirplus and the kernel's cost: an entry with an ino makes the kernel
 * build a dentry and an inode for it (about 2 us each here, more as its
 * hash tables fill: 8.8 s for 'find | wc -l' of 1,000,000 members against
 * 3.6 s without), which a walk that only reads names never uses, while a
 * walk that stats every entry saves a LOOKUP round trip (about 30 us) for
 * each. So files get an ino only once fs->plus_files is set, by the first
 * lookup of a file (find -newer, du, ls -l, git status all stat what they
 * list), or in a directory of more than WSNAP_FS_PLUS_ENTRIES entries;
 * directories always do, since any walk descends into them. fn returns nonzero
 * to stop (buffer full): that entry is not consumed. Returns 0, ENOTDIR,
 * ENOENT.
 */
typedef int (*wsnap_fs_dirent_fn)(void *ctx, const char *name,
				  const struct fuse_entry_param *e, off_t next);
int wsnap_fs_do_readdir(const struct wsnap_fs *fs, fuse_ino_t ino, off_t off,
			bool plus, wsnap_fs_dirent_fn fn, void *ctx);

/*
 * open: flags as open(2) gave them. EISDIR for a directory, EROFS when
 * asked to write or truncate, EINVAL for anything but a regular file.
 */
int wsnap_fs_do_open(const struct wsnap_fs *fs, fuse_ino_t ino, int flags);

/*
 * read: plans the reply to a read of size bytes at off. On success r->vec
 * describes the data, to be passed to fuse_reply_data() (or fuse_buf_copy):
 *  - from a spill file (wsnap_index_data_spilled), a contiguous stored run
 *    of at least WSNAP_FS_SPLICE_MIN bytes: one buffer naming the data
 *    descriptor at the member's physical offset (FUSE_BUF_IS_FD |
 *    FUSE_BUF_FD_SEEK), so that the kernel can splice it without a copy
 *    through this process;
 *  - anything else (the archive itself, a short read, a sparse file's
 *    holes, a read across runs, or at end of file): one memory buffer
 *    filled now, and checked after it was filled. It is the calling
 *    thread's (valid until its next read) or r->mem (owned by r).
 * The size is clipped at the end of the file (0 at or past it). EIO when
 * the data file changed since before the build read it (truncated,
 * rewritten, even with its mtime put back) or reads short. Release r with
 * wsnap_fs_read_release() in every case.
 */
struct wsnap_fs_read {
	struct fuse_bufvec vec;
	void *mem; /* owned, or NULL (nothing, or the thread's buffer) */
};
int wsnap_fs_do_read(const struct wsnap_fs *fs, fuse_ino_t ino, size_t size,
		     off_t off, struct wsnap_fs_read *r);
void wsnap_fs_read_release(struct wsnap_fs_read *r);

/* statfs: the snapshot's totals: blocks of data, nodes, nothing free. */
int wsnap_fs_do_statfs(const struct wsnap_fs *fs, struct statvfs *st);

/*
 * getxattr: there are no attributes: ENOSYS for a valid ino, which the
 * kernel remembers for the whole mount: every later getxattr there fails
 * with EOPNOTSUPP without a round trip (ls -l asks two per entry, for
 * SELinux labels and ACLs, and overlayfs asks for every lower directory).
 */
int wsnap_fs_do_getxattr(const struct wsnap_fs *fs, fuse_ino_t ino,
			 const char *name);

/* listxattr: *len is the size of the (empty) list: 0. */
int wsnap_fs_do_listxattr(const struct wsnap_fs *fs, fuse_ino_t ino,
			  size_t *len);

/*
 * access: mask as access(2) (F_OK, or R_OK|W_OK|X_OK) for a caller with uid,
 * gid and ngroups supplementary groups. W_OK is EROFS; R/X follow the
 * presented mode against the presented owner; uid 0 may read anything and
 * execute what has any x bit (or is a directory). EACCES otherwise.
 */
int wsnap_fs_do_access(const struct wsnap_fs *fs, fuse_ino_t ino, int mask,
		       uid_t uid, gid_t gid, const gid_t *groups,
		       size_t ngroups);

/*
 * The session. wsnap_fs_session_new parses args (libfuse's lowlevel and
 * mount options: "-o ro,allow_other,...", "-d") and creates a session whose
 * handlers answer from fs (which must outlive it; fs->idx may be set later,
 * before serving). args is consumed as fuse_session_new() does. Errors:
 * WSNAP_USAGE for options libfuse refuses (libfuse's own message in the
 * reason), WSNAP_IO.
 */
enum wsnap_status wsnap_fs_session_new(struct fuse_session **out,
				       struct wsnap_fs *fs,
				       struct fuse_args *args,
				       struct wsnap_error *err);

/*
 * Mounts se at mountpoint (an absolute path: the daemon changes directory
 * to "/"), and unless foreground detaches the calling process, which must
 * be a forked child (a session of its own, standard streams on /dev/null,
 * as fuse_daemonize without its fork: workspace/snapshot.c),
 * installs SIGINT/SIGTERM/SIGHUP handlers, runs the multi-threaded loop
 * until the filesystem is unmounted (fusermount3 -u, umount) or a signal
 * arrives, then unmounts and destroys se. fs->ready_fd, if any, gets
 * WSNAP_FS_READY when the mount answers. Returns WSNAP_OK after a clean
 * unmount; WSNAP_IO when the mount or the loop fails (libfuse's message in
 * the reason). se is destroyed in all cases.
 */
enum wsnap_status wsnap_fs_serve(struct fuse_session *se, struct wsnap_fs *fs,
				 const char *mountpoint, bool foreground,
				 struct wsnap_error *err);

#endif
