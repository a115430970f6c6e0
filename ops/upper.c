/* SPDX-License-Identifier: MIT */
/*
 * The merged view of a hydrated workspace (upper.h).
 *
 * Invariants:
 *  - members go to the builder in the walker's order (tree.c): the root,
 *    then each directory's merged entries sorted bytewise, a directory
 *    before its contents; so positions, limits and the first rejection are
 *    the walker's;
 *  - src[p] says where the member at builder position p (1-based, the
 *    node's 'order') lives: 0 in the upper directory, else the ino of the
 *    lower index node it is;
 *  - only the upper directory is listed; a subtree that is in the lower
 *    layer alone is taken from the index without a system call;
 *  - an upper directory is entered from its parent's descriptor with
 *    O_DIRECTORY | O_NOFOLLOW, never following a symlink;
 *  - memory per directory level: its merged listing; levels are bounded by
 *    the policy's depth, as in the walker.
 *
 * Over 800 lines: the walk, the listings and the diff side share the
 * view's state (struct wsnap_upper); fuse-overlayfs' '.wh.' names are in
 * upper_fuse.c.
 */
#include "upper.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <sys/xattr.h>
#include <unistd.h>

#include "engine.h"
#include "fsutil.h"
#include "grow.h"
#include "tree.h"
#include "upper_fuse.h"

/* Longest redirect xattr value read (the kernel's own limit is lower). */
#define UPPER_REDIRECT_MAX 4096

struct wsnap_upper {
	const struct wsnap_index *lower;
	int upper_fd;
	int merged_fd; /* the workspace (upper_fuse.h); -1: none */
	enum wsnap_upper_format fmt;
	const char *declined; /* why the layers cannot say it, or NULL */
	const char *label;
	const struct wsnap_policy *policy;
	struct wsnap_index *merged;
	uint32_t *src; /* by builder position, see the invariants */
	size_t src_cap;
	uint64_t position;
	struct wsnap_upper_stats stats;
	/* the walk */
	struct wsnap_builder *b;
	struct wsnap_pathbuf pb; /* "." or "./<rel>" */
	uint64_t max_names;
	char *target;	/* WSNAP_TREE_MAX_TARGET + 1 bytes */
	char *redirect; /* UPPER_REDIRECT_MAX + 1 bytes */
	/* content */
	struct wsnap_tree_cursor *cursor;
	struct wsnap_diff_archive arc;
	struct wsnap_diff_side arc_side;
	struct wsnap_diff_side tree_side;
};

/* One entry of a merged directory: an upper entry (lower == 0, its name
 * and lstat in the listing's upper arrays) or a lower node. */
struct entry {
	const char *name;
	uint32_t lower; /* lower node shown, or 0 */
	uint32_t up;	/* index into the upper arrays when lower == 0 */
};

/* The entries of one merged directory that has an upper directory. */
struct listing {
	char *bytes; /* names of the upper directory, back to back */
	size_t used;
	size_t bcap;
	size_t *uoff; /* upper entries: name offsets and lstat */
	struct stat *ust;
	size_t nup;
	size_t ucap;
	size_t scap;
	size_t *goff; /* whited-out names: offsets, then sorted pointers */
	char **gone;
	size_t ngone;
	size_t gcap;
	struct entry *e; /* the merged entries, sorted */
	size_t count;
	bool opaque; /* fuse-overlayfs' '.wh..wh..opq' was seen */
	int live;    /* this directory in the workspace (upper_fuse.h) */
};

static void listing_init(struct listing *l)
{
	memset(l, 0, sizeof(*l));
	l->live = WSNAP_UPPER_LIVE_UNOPENED;
}

static void listing_release(struct listing *l)
{
	if (l->live >= 0)
		close(l->live);
	free(l->bytes);
	free(l->uoff);
	free(l->ust);
	free(l->goff);
	free(l->gone);
	free(l->e);
}

static enum wsnap_status upper_io(struct wsnap_upper *u, int errnum,
				  const char *what, struct wsnap_error *err)
{
	char buf[WSNAP_ERROR_TEXT_MAX];
	const char *rel = u->pb.len > 2 ? u->pb.buf + 2 : "";

	return wsnap_error_io(
		err, errnum,
		wsnap_tree_describe(u->label, rel, buf, sizeof(buf)), "%s",
		what);
}

/* Hands one member to the builder, recording where it lives. */
static enum wsnap_status emit(struct wsnap_upper *u,
			      const struct wsnap_raw_member *m, uint32_t lower,
			      struct wsnap_error *err)
{
	uint32_t *s;

	if (u->position >= UINT32_MAX)
		return wsnap_error_reject(err, m->name,
					  "archive member count exceeds "
					  "limit");
	s = wsnap_grow(u->src, &u->src_cap, (size_t)u->position + 2,
		       sizeof(*s));
	if (!s)
		return wsnap_error_io(err, ENOMEM, u->label, "out of memory");
	u->src = s;
	u->position++;
	u->src[u->position] = lower;
	if (lower)
		u->stats.lower_nodes++;
	return wsnap_builder_add(u->b, m, err);
}

static bool fuse_fmt(const struct wsnap_upper *u)
{
	return u->fmt == WSNAP_UPPER_FUSE_OVERLAYFS;
}

/* fuse-overlayfs takes a name that starts with '.wh.' for a marker. */
static bool hidden_name(const struct wsnap_upper *u, const char *name)
{
	return fuse_fmt(u) && strncmp(name, WH_PREFIX, WH_PREFIX_LEN) == 0;
}

/*
 * Gives up on the view: the layers alone cannot say what the workspace
 * shows. The walk unwinds as on an error; wsnap_upper_new turns it into
 * no view and the reason.
 */
static enum wsnap_status decline(struct wsnap_upper *u, const char *why,
				 struct wsnap_error *err)
{
	u->declined = why;
	return wsnap_error_io(err, 0, u->label, "%s", why);
}

static int cmp_name_ptr(const void *a, const void *b)
{
	return strcmp(*(char *const *)a, *(char *const *)b);
}

static int cmp_entry(const void *a, const void *b)
{
	return strcmp(((const struct entry *)a)->name,
		      ((const struct entry *)b)->name);
}

static bool is_gone(const struct listing *l, const char *name)
{
	return l->ngone && bsearch(&name, l->gone, l->ngone, sizeof(*l->gone),
				   cmp_name_ptr) != NULL;
}

/* Keeps a copy of name (nl bytes, then a NUL); *off is where it went. */
static bool keep_name(struct listing *l, const char *name, size_t nl,
		      size_t *off)
{
	char *nb = wsnap_grow(l->bytes, &l->bcap, l->used + nl + 1, 1);

	if (!nb)
		return false;
	l->bytes = nb;
	memcpy(l->bytes + l->used, name, nl);
	l->bytes[l->used + nl] = '\0';
	*off = l->used;
	l->used += nl + 1;
	return true;
}

static bool add_gone(struct listing *l, size_t off)
{
	size_t *g = wsnap_grow(l->goff, &l->gcap, l->ngone + 1, sizeof(*g));

	if (!g)
		return false;
	l->goff = g;
	l->goff[l->ngone++] = off;
	return true;
}

static bool add_upper(struct listing *l, size_t off, const struct stat *sb)
{
	size_t ucap = l->ucap;
	size_t *o = wsnap_grow(l->uoff, &ucap, l->nup + 1, sizeof(*o));
	struct stat *s;

	if (!o)
		return false;
	l->uoff = o;
	l->ucap = ucap;
	s = wsnap_grow(l->ust, &l->scap, l->nup + 1, sizeof(*s));
	if (!s)
		return false;
	l->ust = s;
	l->uoff[l->nup] = off;
	l->ust[l->nup++] = *sb;
	return true;
}

/*
 * Whether the walker would list name in the directory at u->pb.buf: not when
 * it lies within a --skip path (checked only where the path fits, as the
 * walker does). Counts what it lists in *listed and refuses, naming the
 * directory, past its bound.
 */
static enum wsnap_status listed_by_walker(struct wsnap_upper *u,
					  const char *name, size_t nl,
					  bool *listed, uint64_t *count,
					  struct wsnap_error *err)
{
	size_t saved = u->pb.len;
	bool skip;

	*listed = true;
	if (wsnap_pathbuf_push(&u->pb, name, nl) != 0)
		return WSNAP_OK;
	skip = wsnap_tree_skipped(u->policy, u->pb.buf + 2, u->pb.len - 2);
	wsnap_pathbuf_cut(&u->pb, saved);
	if (skip) {
		*listed = false;
		return WSNAP_OK;
	}
	if (++*count > u->max_names)
		return wsnap_error_reject(err, u->pb.buf,
					  "archive member count exceeds limit");
	return WSNAP_OK;
}

/*
 * Classifies one name of an upper directory into l. lower is the lower
 * directory it may merge with (0: none): a whiteout is kept only when it
 * hides one of its entries, so that what l holds is bounded by the lower
 * directory and the walker's listing bound (count).
 */
static enum wsnap_status list_one(struct wsnap_upper *u, int fd,
				  const char *name, uint32_t lower,
				  struct listing *l, uint64_t *count,
				  struct wsnap_error *err)
{
	size_t nl = strlen(name), off;
	bool whiteout = false, listed;
	enum wsnap_status st;
	struct stat sb;

	u->stats.upper_entries++;
	if (hidden_name(u, name)) {
		const char *why = wsnap_upper_fuse_check(fd, name, u->merged_fd,
							 u->pb.buf, &l->live);

		if (why)
			return decline(u, why, err);
		if (strcmp(name, WH_OPAQUE) == 0) {
			l->opaque = true;
			return WSNAP_OK;
		}
		/* '.wh.NAME' hides NAME */
		name += WH_PREFIX_LEN;
		nl -= WH_PREFIX_LEN;
		whiteout = true;
	} else if (fstatat(fd, name, &sb, AT_SYMLINK_NOFOLLOW) != 0) {
		if (errno == ENOENT)
			return WSNAP_OK; /* removed since listed */
		return upper_io(u, errno, "cannot stat", err);
	} else if (S_ISCHR(sb.st_mode) && major(sb.st_rdev) == 0 &&
		   minor(sb.st_rdev) == 0) {
		whiteout = true;
	}
	if (whiteout) {
		u->stats.whiteouts++;
		if (!lower || !wsnap_index_child(u->lower, lower, name, nl))
			return WSNAP_OK; /* hides nothing */
	} else {
		st = listed_by_walker(u, name, nl, &listed, count, err);
		if (st != WSNAP_OK || !listed)
			return st;
	}
	if (!keep_name(l, name, nl, &off))
		return upper_io(u, ENOMEM, "out of memory", err);
	if (whiteout)
		return add_gone(l, off)
			       ? WSNAP_OK
			       : upper_io(u, ENOMEM, "out of memory", err);
	return add_upper(l, off, &sb)
		       ? WSNAP_OK
		       : upper_io(u, ENOMEM, "out of memory", err);
}

/* Lists the upper directory fd into l (names, lstat, whiteouts of entries
 * of the lower directory lower). */
static enum wsnap_status list_upper(struct wsnap_upper *u, int fd,
				    uint32_t lower, struct listing *l,
				    struct wsnap_error *err)
{
	enum wsnap_status st = WSNAP_OK;
	uint64_t count = 0;
	struct dirent *de;
	int fd2 = dup(fd);
	size_t i;
	DIR *d;

	if (fd2 < 0)
		return upper_io(u, errno, "cannot read directory", err);
	d = fdopendir(fd2);
	if (!d) {
		close(fd2);
		return upper_io(u, errno, "cannot read directory", err);
	}
	while (st == WSNAP_OK) {
		errno = 0;
		de = readdir(d);
		if (!de) {
			if (errno)
				st = upper_io(u, errno, "cannot read directory",
					      err);
			break;
		}
		if (strcmp(de->d_name, ".") != 0 &&
		    strcmp(de->d_name, "..") != 0)
			st = list_one(u, fd, de->d_name, lower, l, &count, err);
	}
	closedir(d);
	if (st != WSNAP_OK || !l->ngone)
		return st;
	/* the bytes stop moving here: offsets become names */
	l->gone = malloc(l->ngone * sizeof(*l->gone));
	if (!l->gone)
		return upper_io(u, ENOMEM, "out of memory", err);
	for (i = 0; i < l->ngone; i++)
		l->gone[i] = l->bytes + l->goff[i];
	qsort(l->gone, l->ngone, sizeof(*l->gone), cmp_name_ptr);
	return WSNAP_OK;
}

/*
 * The merged entries of l into l->e, sorted: the upper entries, and the
 * children of the lower directory (0: none) that no upper entry or
 * whiteout hides.
 */
static enum wsnap_status merge(struct wsnap_upper *u, struct listing *l,
			       uint32_t lower, struct wsnap_error *err)
{
	const uint32_t *kids = NULL;
	uint32_t nk = lower ? wsnap_index_children(u->lower, lower, &kids) : 0;
	struct entry *up;
	size_t i, j = 0, n = 0;

	if (l->nup > SIZE_MAX / sizeof(*up) / 2 - nk)
		return upper_io(u, ENOMEM, "out of memory", err);
	up = malloc((l->nup + 1) * sizeof(*up));
	l->e = malloc((l->nup + nk + 1) * sizeof(*l->e));
	if (!up || !l->e) {
		free(up);
		return upper_io(u, ENOMEM, "out of memory", err);
	}
	for (i = 0; i < l->nup; i++) {
		up[i].name = l->bytes + l->uoff[i];
		up[i].lower = 0;
		up[i].up = (uint32_t)i;
	}
	qsort(up, l->nup, sizeof(*up), cmp_entry);
	for (i = 0; i < nk; i++) {
		const struct wsnap_node *c =
			wsnap_index_node(u->lower, kids[i]);
		const char *name = wsnap_node_name(c);
		int cmp = 1;

		while (j < l->nup && (cmp = strcmp(up[j].name, name)) < 0)
			l->e[n++] = up[j++];
		if (j < l->nup && cmp == 0)
			continue; /* the upper entry of that name wins */
		if (is_gone(l, name))
			continue;
		l->e[n].name = name;
		l->e[n].lower = kids[i];
		l->e[n].up = 0;
		n++;
	}
	while (j < l->nup)
		l->e[n++] = up[j++];
	l->count = n;
	free(up);
	return WSNAP_OK;
}

/* The value of xattr name on fd into buf (cap bytes, NUL added), or -1. */
static ssize_t get_xattr(int fd, const char *name, char *buf, size_t cap)
{
	ssize_t n = fgetxattr(fd, name, buf, cap - 1);

	if (n >= 0)
		buf[n] = '\0';
	return n;
}

static bool is_opaque(struct wsnap_upper *u, int fd)
{
	static const char *const kernel[] = {"trusted.overlay.opaque", NULL};
	static const char *const user[] = {"user.overlay.opaque", NULL};
	static const char *const fuse[] = {"user.fuseoverlayfs.opaque",
					   "trusted.overlay.opaque",
					   "user.overlay.opaque", NULL};
	const char *const *names = u->fmt == WSNAP_UPPER_OVERLAYFS ? kernel
				   : u->fmt == WSNAP_UPPER_OVERLAYFS_USER
					   ? user
					   : fuse;
	char v[8];

	for (; *names; names++)
		if (get_xattr(fd, *names, v, sizeof(v)) == 1 && v[0] == 'y')
			return true;
	return false;
}

/*
 * The lower directory that the upper directory fd (the entry name of a
 * merged directory whose lower directory is parent, 0 for none) merges
 * with: none when it is opaque; the target of its redirect; else the
 * parent's lower entry of the same name. 0 when that is not a directory.
 */
static uint32_t lower_of(struct wsnap_upper *u, int fd, uint32_t parent,
			 const char *name)
{
	const char *rname = u->fmt == WSNAP_UPPER_OVERLAYFS
				    ? "trusted.overlay.redirect"
				    : "user.overlay.redirect";
	const struct wsnap_node *n;
	uint32_t ino = 0;
	ssize_t len;

	if (is_opaque(u, fd)) {
		u->stats.opaque_dirs++;
		return 0;
	}
	len = fuse_fmt(u) ? -1
			  : get_xattr(fd, rname, u->redirect,
				      UPPER_REDIRECT_MAX + 1);
	if (len > 0 && u->redirect[0] == '/') {
		const char *p = u->redirect;

		u->stats.redirects++;
		while (*p == '/')
			p++;
		ino = wsnap_index_lookup(u->lower, p, strlen(p));
	} else if (len > 0) {
		u->stats.redirects++;
		ino = parent ? wsnap_index_child(u->lower, parent, u->redirect,
						 (size_t)len)
			     : 0;
	} else if (parent) {
		ino = wsnap_index_child(u->lower, parent, name, strlen(name));
	}
	n = ino ? wsnap_index_node(u->lower, ino) : NULL;
	return n && n->type == WSNAP_TYPE_DIR ? ino : 0;
}

/* A lower node as the walker would report it through the mounts. */
static void lower_member(struct wsnap_raw_member *m, const char *path,
			 size_t len, const struct wsnap_node *n)
{
	memset(m, 0, sizeof(*m));
	m->name = path;
	m->name_len = len;
	m->mode = n->mode;
	m->mtime_sec = n->mtime_sec;
	m->mtime_nsec = n->mtime_nsec;
	switch (n->type) {
	case WSNAP_TYPE_DIR:
		m->type = WSNAP_RAW_DIR;
		m->typeflag = '5';
		break;
	case WSNAP_TYPE_SYMLINK:
		m->type = WSNAP_RAW_SYMLINK;
		m->typeflag = '2';
		m->linkname = n->target;
		m->linkname_len = (size_t)n->size;
		break;
	default:
		m->type = WSNAP_RAW_FILE;
		m->typeflag = '0';
		m->size = n->size;
		break;
	}
}

static enum wsnap_status walk_dir(struct wsnap_upper *u, int fd, uint32_t lower,
				  uint64_t depth, struct wsnap_error *err);

/* A subtree of the lower layer alone: the index, no system call. */
static enum wsnap_status walk_lower(struct wsnap_upper *u, uint32_t ino,
				    uint64_t depth, struct wsnap_error *err)
{
	const struct wsnap_node *n = wsnap_index_node(u->lower, ino);
	struct wsnap_raw_member m;
	const uint32_t *kids;
	enum wsnap_status s;
	size_t saved = u->pb.len;
	uint32_t nk, i;

	lower_member(&m, u->pb.buf, u->pb.len, n);
	s = emit(u, &m, ino, err);
	if (s != WSNAP_OK || n->type != WSNAP_TYPE_DIR ||
	    depth > u->policy->max_depth)
		return s;
	nk = wsnap_index_children(u->lower, ino, &kids);
	for (i = 0; i < nk && s == WSNAP_OK; i++) {
		const char *name =
			wsnap_node_name(wsnap_index_node(u->lower, kids[i]));
		int e = wsnap_pathbuf_push(&u->pb, name, strlen(name));

		if (e == ENAMETOOLONG)
			return wsnap_error_reject(err, u->pb.buf,
						  "path too long");
		if (e)
			return upper_io(u, e, "out of memory", err);
		if (!wsnap_tree_skipped(u->policy, u->pb.buf + 2,
					u->pb.len - 2))
			s = walk_lower(u, kids[i], depth + 1, err);
		wsnap_pathbuf_cut(&u->pb, saved);
	}
	return s;
}

/* An entry of the upper directory dfd, at u->pb.buf. */
static enum wsnap_status walk_upper(struct wsnap_upper *u, int dfd,
				    const char *name, const struct stat *sb,
				    uint32_t parent_lower, uint64_t depth,
				    struct wsnap_error *err)
{
	struct wsnap_raw_member m;
	enum wsnap_status s;
	int cfd;

	if (S_ISSOCK(sb->st_mode))
		return WSNAP_OK;
	wsnap_tree_member(&m, u->pb.buf, u->pb.len, sb);
	if (m.type == WSNAP_RAW_SYMLINK) {
		ssize_t n = readlinkat(dfd, name, u->target,
				       WSNAP_TREE_MAX_TARGET + 1);

		if (n < 0) {
			if (errno == ENOENT)
				return WSNAP_OK;
			return upper_io(u, errno, "cannot read symlink", err);
		}
		if (n > WSNAP_TREE_MAX_TARGET)
			return upper_io(u, ENAMETOOLONG, "cannot read symlink",
					err);
		u->target[n] = '\0';
		m.linkname = u->target;
		m.linkname_len = (size_t)n;
	}
	s = emit(u, &m, 0, err);
	if (s != WSNAP_OK || m.type != WSNAP_RAW_DIR ||
	    depth > u->policy->max_depth)
		return s;
	cfd = openat(dfd, name,
		     O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	if (cfd < 0) {
		if (errno == ENOENT)
			return WSNAP_OK;
		return upper_io(u, errno, "cannot open directory", err);
	}
	s = walk_dir(u, cfd, lower_of(u, cfd, parent_lower, name), depth, err);
	close(cfd);
	return s;
}

/* The entries of a merged directory whose upper directory is fd and
 * lower directory is lower (0: none), at u->pb.buf. */
static enum wsnap_status walk_dir(struct wsnap_upper *u, int fd, uint32_t lower,
				  uint64_t depth, struct wsnap_error *err)
{
	struct listing l;
	enum wsnap_status s;
	size_t saved = u->pb.len, i;
	uint64_t count = 0;
	bool listed;

	listing_init(&l);
	s = list_upper(u, fd, lower, &l, err);
	if (s == WSNAP_OK)
		s = merge(u, &l, l.opaque ? 0 : lower, err);
	/* the walker's listing bound over the whole merged listing */
	for (i = 0; i < l.count && s == WSNAP_OK; i++)
		s = listed_by_walker(u, l.e[i].name, strlen(l.e[i].name),
				     &listed, &count, err);
	for (i = 0; i < l.count && s == WSNAP_OK; i++) {
		const struct entry *e = &l.e[i];
		int pe = wsnap_pathbuf_push(&u->pb, e->name, strlen(e->name));

		if (pe == ENAMETOOLONG) {
			s = wsnap_error_reject(err, u->pb.buf, "path too long");
			break;
		}
		if (pe) {
			s = upper_io(u, pe, "out of memory", err);
			break;
		}
		if (!wsnap_tree_skipped(u->policy, u->pb.buf + 2,
					u->pb.len - 2))
			s = e->lower ? walk_lower(u, e->lower, depth + 1, err)
				     : walk_upper(u, fd, e->name, &l.ust[e->up],
						  lower, depth + 1, err);
		wsnap_pathbuf_cut(&u->pb, saved);
	}
	listing_release(&l);
	return s;
}

static enum wsnap_status walk_root(struct wsnap_upper *u,
				   struct wsnap_error *err)
{
	struct wsnap_raw_member m;
	struct stat sb;
	enum wsnap_status s;

	if (fstat(u->upper_fd, &sb) != 0)
		return wsnap_error_io(err, errno, u->label, "cannot stat");
	wsnap_pathbuf_cut(&u->pb, 1);
	wsnap_tree_member(&m, u->pb.buf, u->pb.len, &sb);
	s = emit(u, &m, 0, err);
	if (s != WSNAP_OK)
		return s;
	return walk_dir(u, u->upper_fd,
			is_opaque(u, u->upper_fd) ? 0 : WSNAP_ROOT_INO, 0, err);
}

/* ---- the diff side ---- */

struct upper_handle {
	const struct wsnap_diff_side *side; /* the one reading the bytes */
	void *h;
};

/* The lower node a merged node is, or 0 when it lives in the upper
 * directory. */
static uint32_t source_of(const struct wsnap_upper *u,
			  const struct wsnap_node *n)
{
	if (n->order == 0 || n->order > u->position)
		return 0;
	return u->src[n->order];
}

static enum wsnap_status upper_open(void *ctx, uint32_t ino,
				    const struct wsnap_node *n, void **h,
				    struct wsnap_error *err)
{
	struct wsnap_upper *u = ctx;
	uint32_t src = source_of(u, n);
	struct upper_handle *uh = malloc(sizeof(*uh));
	enum wsnap_status s;

	*h = NULL;
	if (!uh)
		return wsnap_error_io(err, ENOMEM, NULL, "out of memory");
	uh->side = src ? &u->arc_side : &u->tree_side;
	uh->h = NULL;
	s = uh->side->content->open(uh->side->ctx, src ? src : ino,
				    src ? wsnap_index_node(u->lower, src) : n,
				    &uh->h, err);
	if (s != WSNAP_OK) {
		free(uh);
		return s;
	}
	*h = uh;
	return WSNAP_OK;
}

static enum wsnap_status upper_read(void *ctx, void *h, void *buf, size_t len,
				    uint64_t off, struct wsnap_error *err)
{
	struct upper_handle *uh = h;

	return uh->side->content->read(uh->side->ctx, uh->h, buf, len, off,
				       err);
}

static void upper_close(void *ctx, void *h)
{
	struct upper_handle *uh = h;

	if (!uh)
		return;
	uh->side->content->close(uh->side->ctx, uh->h);
	free(uh);
}

static void upper_ident(void *ctx, uint32_t ino, const struct wsnap_node *n,
			struct wsnap_diff_ident *id)
{
	struct wsnap_upper *u = ctx;
	uint32_t src = source_of(u, n);

	memset(id, 0, sizeof(*id));
	if (src)
		u->arc_side.content->ident(u->arc_side.ctx, src,
					   wsnap_index_node(u->lower, src), id);
}

static enum wsnap_status upper_finish(void *ctx, struct wsnap_error *err)
{
	struct wsnap_upper *u = ctx;

	return u->arc_side.content->finish(u->arc_side.ctx, err);
}

static const struct wsnap_diff_content upper_content = {
	.open = upper_open,
	.read = upper_read,
	.close = upper_close,
	.ident = upper_ident,
	.finish = upper_finish,
};

void wsnap_upper_diff_side(struct wsnap_upper *u, struct wsnap_diff_side *side)
{
	side->idx = u->merged;
	side->content = &upper_content;
	side->ctx = u;
}

/* ---- life ---- */

enum wsnap_status wsnap_upper_new(struct wsnap_upper **out,
				  const struct wsnap_index *lower, int upper_fd,
				  int merged_fd, enum wsnap_upper_format fmt,
				  const char *label, const char *lower_label,
				  const struct wsnap_policy *policy,
				  const char **declined,
				  struct wsnap_error *err)
{
	struct wsnap_upper *u = calloc(1, sizeof(*u));
	enum wsnap_status s;

	*out = NULL;
	*declined = NULL;
	if (!u)
		return wsnap_error_io(err, ENOMEM, label, "out of memory");
	u->lower = lower;
	u->upper_fd = upper_fd;
	u->merged_fd = merged_fd;
	u->fmt = fmt;
	u->label = label;
	u->policy = policy;
	u->max_names = wsnap_tree_listing_max(policy);
	u->target = malloc(WSNAP_TREE_MAX_TARGET + 1);
	u->redirect = malloc(UPPER_REDIRECT_MAX + 1);
	if (wsnap_pathbuf_init(&u->pb, ".", wsnap_tree_path_max(policy)) ||
	    !u->target || !u->redirect) {
		s = wsnap_error_io(err, ENOMEM, label, "out of memory");
		goto fail;
	}
	s = wsnap_builder_new(&u->b, policy, err);
	if (s == WSNAP_OK && fuse_fmt(u) && wsnap_upper_fuse_hidden(lower))
		s = decline(u, "a '.wh.' name in the archive", err);
	if (s == WSNAP_OK)
		s = walk_root(u, err);
	if (s == WSNAP_OK) {
		s = wsnap_builder_finish(u->b, &u->merged, err);
		u->b = NULL; /* freed by finish */
	}
	if (s == WSNAP_OK)
		s = wsnap_tree_cursor_new(&u->cursor, upper_fd, label, err);
	if (s != WSNAP_OK)
		goto fail;
	wsnap_diff_side_tree(&u->tree_side, u->merged, u->cursor);
	wsnap_diff_side_archive(&u->arc_side, &u->arc, lower, lower_label);
	free(u->target);
	free(u->redirect);
	u->target = u->redirect = NULL;
	*out = u;
	return WSNAP_OK;
fail:
	if (u->declined) {
		*declined = u->declined;
		wsnap_error_clear(err);
		s = WSNAP_OK;
	}
	wsnap_upper_free(u);
	return s;
}

const struct wsnap_index *wsnap_upper_index(const struct wsnap_upper *u)
{
	return u->merged;
}

void wsnap_upper_stats(const struct wsnap_upper *u,
		       struct wsnap_upper_stats *st)
{
	*st = u->stats;
}

uint32_t wsnap_upper_source(const struct wsnap_upper *u,
			    const struct wsnap_node *n)
{
	return source_of(u, n);
}

void wsnap_upper_free(struct wsnap_upper *u)
{
	if (!u)
		return;
	wsnap_builder_free(u->b);
	wsnap_diff_archive_release(&u->arc);
	wsnap_tree_cursor_free(u->cursor);
	wsnap_index_free(u->merged);
	free(u->src);
	wsnap_pathbuf_release(&u->pb);
	free(u->target);
	free(u->redirect);
	free(u);
}
