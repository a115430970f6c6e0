/* SPDX-License-Identifier: MIT */
/*
 * The parent cache of the export (policy.md 7.2, 7.3): how every directory
 * under the destination root is reached, and how room is made for a leaf.
 *
 * Invariants (see export.h for the attacks they block):
 *  - The only descriptor trusted by path is the destination root (level 0,
 *    never closed here). Every other directory is opened relative to a
 *    directory descriptor, with O_NOFOLLOW | O_DIRECTORY per component or
 *    openat2 with RESOLVE_BENEATH | RESOLVE_NO_SYMLINKS for several at once
 *    (turned off for good when the kernel refuses it). A symlink among the
 *    parents is 'symlink in parent path', never followed.
 *  - The cache (struct exp_level stack) holds, per depth, the ino of each
 *    directory on the path of the last target and, optionally, an open
 *    descriptor of it; at most WSNAP_EXPORT_MAX_CACHED_FDS of them are
 *    open (the shallowest are closed first, and reopened from a deeper
 *    one's open ancestor on demand). A descriptor names an inode, not a
 *    path: a directory swapped for a symlink after we opened it cannot
 *    redirect a later openat() through the cached descriptor.
 *  - Directories we create are made with mkdirat and fchmod'ed to exactly
 *    WSNAP_DIR_MODE through a descriptor opened O_NOFOLLOW; created[] says
 *    which (pass 3 dates implicit directories only when we made them).
 *  - Every directory opened or made one component at a time goes through
 *    wsnap_export_case_check before it is used (7.7); an archive that
 *    needs the check turns openat2 off, so none is opened otherwise.
 *  - An existing leaf is removed with unlinkat(..., 0), which fails with
 *    EISDIR on a directory instead of removing it, and removes a symlink,
 *    never its target. A leaf that keeps changing under us is given up
 *    after LEAF_RETRIES attempts ('destination keeps changing').
 */
#include "export_private.h"

#include <errno.h>
#include <fcntl.h>
#include <linux/openat2.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

/* ---- rejections ------------------------------------------------------ */

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

/* ---- the cache ------------------------------------------------------- */

int wsnap_export_cache_init(struct exp *x)
{
	x->stack = calloc((size_t)x->maxdepth + 1, sizeof(*x->stack));
	x->chain = calloc((size_t)x->maxdepth + 1, sizeof(*x->chain));
	x->top = 0;
	x->ncached = 0;
	if (!x->stack || !x->chain)
		return -1;
	x->stack[0].ino = WSNAP_ROOT_INO;
	x->stack[0].fd = x->rootfd;
	return 0;
}

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

void wsnap_export_cache_release(struct exp *x)
{
	if (x->stack)
		pop_to(x, 0);
	free(x->stack);
	free(x->chain);
	x->stack = NULL;
	x->chain = NULL;
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

/* ---- reaching a directory ------------------------------------------- */

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
			return wsnap_export_case_check(x, fd, ino);
		if (errno == ENOENT) {
			if (!create) {
				wsnap_export_fail_io(x, ENOENT, n->path,
						     "cannot open directory");
				return -1;
			}
			fd = make_dir(x, dirfd, ino);
			if (fd >= 0)
				return wsnap_export_case_check(x, fd, ino);
			if (errno == EEXIST || errno == ENOENT ||
			    errno == ENOTDIR || errno == ELOOP)
				continue;
			wsnap_export_fail_io(x, errno, n->path,
					     "cannot create directory");
			return -1;
		}
		if (errno != ENOTDIR && errno != ELOOP) {
			wsnap_export_fail_io(x, errno, n->path,
					     "cannot open directory");
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
			wsnap_export_fail_io(x, errno, n->path,
					     "cannot open directory");
			return -1;
		}
		/* a directory or nothing now: it changed, look again */
	}
	wsnap_export_fail_io(x, EAGAIN, n->path, "destination keeps changing");
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

/* Walks up from ino to the deepest level of the cache on its path, then
 * down again opening (or creating) what is missing. */
int wsnap_export_dir_fd(struct exp *x, uint32_t ino,
			const struct wsnap_node *member, bool create)
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

/* POSIX lets unlinking a directory fail with EPERM instead of EISDIR. */
enum wsnap_status wsnap_export_clear_leaf(struct exp *x, int dirfd,
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
	return wsnap_export_fail_io(x, errno, n->path,
				    "cannot remove existing entry");
}

enum wsnap_status wsnap_export_put_dir(struct exp *x, uint32_t ino)
{
	const struct wsnap_node *n = node_of(x, ino);
	const char *name = wsnap_node_name(n);
	int pfd, fd, tries;

	pfd = wsnap_export_dir_fd(x, n->parent, n, true);
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
			return wsnap_export_fail_io(x, errno, n->path,
						    "cannot create directory");
		}
		if (errno != ENOTDIR && errno != ELOOP)
			return wsnap_export_fail_io(x, errno, n->path,
						    "cannot open directory");
		/* a symlink, file, FIFO...: unlink it (never its target) */
		if (unlinkat(pfd, name, 0) == 0)
			x->st->replaced++;
		else if (errno != ENOENT && errno != EISDIR)
			return wsnap_export_fail_io(
				x, errno, n->path,
				"cannot remove existing entry");
	}
	return wsnap_export_fail_io(x, EAGAIN, n->path,
				    "destination keeps changing");
done:
	if (wsnap_export_case_check(x, fd, ino) < 0)
		return x->err->status;
	push(x, ino, fd);
	return WSNAP_OK;
}
