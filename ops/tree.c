/* SPDX-License-Identifier: MIT */
/*
 * The directory walker and file cursor (tree.h).
 *
 * Invariants (see tree.h for the contract):
 *  - every entry below the root is reached from its parent's descriptor by
 *    one openat()/fstatat() of one component with O_NOFOLLOW or
 *    AT_SYMLINK_NOFOLLOW: no symlink is ever followed, so a tree that a
 *    concurrent process rewires cannot make us read outside it (the attack:
 *    a workspace whose 'src' is swapped for 'src -> /etc' while packing);
 *  - the walker's path buffer holds "./<rel>" and never grows past its max;
 *  - the cursor's descriptor stack fds[0..depth) holds the directories of
 *    the components of dir[0..ends[depth - 1]), fds[i] opened from fds[i-1]
 *    (or the root) with O_DIRECTORY | O_NOFOLLOW.
 */
#include "tree.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "engine.h"
#include "fsutil.h"
#include "grow.h"

/* A path needs room for "./", the rel path limit and one more component. */
#define TREE_PATH_HARD_MAX (1u << 20)
#define TREE_NAME_MAX	   255u

int wsnap_tree_open(const char *path, struct wsnap_error *err)
{
	int fd = open(path, O_RDONLY | O_DIRECTORY | O_CLOEXEC);

	if (fd < 0)
		wsnap_error_io(err, errno, path, "cannot open directory");
	return fd;
}

const char *wsnap_tree_describe(const char *label, const char *rel, char *buf,
				size_t cap)
{
	size_t ll = strlen(label), rl = strlen(rel), n = 0;

	if (!cap)
		return buf;
	while (ll > 1 && label[ll - 1] == '/')
		ll--;
	if (ll > cap - 1)
		ll = cap - 1;
	memcpy(buf, label, ll);
	n = ll;
	if (rl && n < cap - 1)
		buf[n++] = '/';
	if (rl > cap - 1 - n)
		rl = cap - 1 - n;
	memcpy(buf + n, rel, rl);
	buf[n + rl] = '\0';
	return buf;
}

bool wsnap_tree_skipped(const struct wsnap_policy *policy, const char *rel,
			size_t len)
{
	const char *rest = NULL;
	size_t rest_len = 0, i;

	if (policy->root_name) {
		size_t rn = strlen(policy->root_name);

		if (len >= rn && memcmp(rel, policy->root_name, rn) == 0 &&
		    (len == rn || rel[rn] == '/')) {
			rest = len == rn ? rel + len : rel + rn + 1;
			rest_len = len == rn ? 0 : len - rn - 1;
		}
	}
	for (i = 0; i < policy->skip.count; i++) {
		const char *s = policy->skip.items[i];
		size_t sl = strlen(s);

		if (wsnap_path_within(rel, len, s, sl))
			return true;
		if (rest && wsnap_path_within(rest, rest_len, s, sl))
			return true;
	}
	return false;
}

size_t wsnap_tree_path_max(const struct wsnap_policy *policy)
{
	size_t max = policy->max_path_length < TREE_PATH_HARD_MAX
			     ? (size_t)policy->max_path_length
			     : TREE_PATH_HARD_MAX;

	return max + 2 + 1 + TREE_NAME_MAX;
}

uint64_t wsnap_tree_listing_max(const struct wsnap_policy *policy)
{
	return policy->max_members < UINT64_MAX ? policy->max_members + 1
						: policy->max_members;
}

/* ---- the walker ---- */

struct walk {
	const struct wsnap_policy *policy;
	const char *label;
	wsnap_reader_fn fn;
	void *ctx;
	struct wsnap_pathbuf pb; /* "." or "./<rel>" */
	char *target;
	uint64_t max_names; /* most entries of one directory */
};

/* The names of one directory, sorted bytewise. */
struct listing {
	char *bytes; /* names back to back, each NUL-terminated */
	size_t used;
	size_t cap;
	char **names;
	size_t count;
};

static void listing_release(struct listing *l)
{
	free(l->bytes);
	free(l->names);
}

static int cmp_names(const void *a, const void *b)
{
	return strcmp(*(char *const *)a, *(char *const *)b);
}

static enum wsnap_status walk_io(struct walk *w, int errnum, const char *what,
				 struct wsnap_error *err)
{
	char buf[WSNAP_ERROR_TEXT_MAX];
	const char *rel = w->pb.len > 2 ? w->pb.buf + 2 : "";

	return wsnap_error_io(
		err, errnum,
		wsnap_tree_describe(w->label, rel, buf, sizeof(buf)), "%s",
		what);
}

static enum wsnap_status list_dir(struct walk *w, int fd, struct listing *l,
				  struct wsnap_error *err)
{
	struct dirent *de;
	size_t *offs = NULL, ocap = 0, i;
	DIR *d;
	int fd2 = dup(fd);
	enum wsnap_status st = WSNAP_OK;
	size_t saved = w->pb.len;

	memset(l, 0, sizeof(*l));
	if (fd2 < 0)
		return walk_io(w, errno, "cannot read directory", err);
	d = fdopendir(fd2);
	if (!d) {
		close(fd2);
		return walk_io(w, errno, "cannot read directory", err);
	}
	for (;;) {
		size_t nl, k, *no;
		char *nb;

		errno = 0;
		de = readdir(d);
		if (!de) {
			if (errno)
				st = walk_io(w, errno, "cannot read directory",
					     err);
			break;
		}
		if (strcmp(de->d_name, ".") == 0 ||
		    strcmp(de->d_name, "..") == 0)
			continue;
		nl = strlen(de->d_name);
		if (wsnap_pathbuf_push(&w->pb, de->d_name, nl) == 0) {
			bool skip = wsnap_tree_skipped(w->policy, w->pb.buf + 2,
						       w->pb.len - 2);

			wsnap_pathbuf_cut(&w->pb, saved);
			/* more entries than members allowed: the builder
			 * would refuse them, so the listing stops growing;
			 * the directory is named (readdir order is not
			 * stable, the directory is) */
			if (!skip && l->count >= w->max_names)
				st = wsnap_error_reject(
					err, w->pb.buf,
					"archive member count exceeds limit");
			if (st != WSNAP_OK)
				break;
			if (skip)
				continue;
		}
		nl++;
		nb = wsnap_grow(l->bytes, &l->cap, l->used + nl, 1);
		if (nb)
			l->bytes = nb;
		no = wsnap_grow(offs, &ocap, l->count + 1, sizeof(*offs));
		if (no)
			offs = no;
		if (!nb || !no) {
			st = walk_io(w, ENOMEM, "out of memory", err);
			break;
		}
		k = l->count++;
		offs[k] = l->used;
		memcpy(l->bytes + l->used, de->d_name, nl);
		l->used += nl;
	}
	closedir(d);
	if (st == WSNAP_OK && l->count) {
		l->names = malloc(l->count * sizeof(*l->names));
		if (!l->names) {
			st = walk_io(w, ENOMEM, "out of memory", err);
		} else {
			for (i = 0; i < l->count; i++)
				l->names[i] = l->bytes + offs[i];
			qsort(l->names, l->count, sizeof(*l->names), cmp_names);
		}
	}
	free(offs);
	if (st != WSNAP_OK) {
		listing_release(l);
		memset(l, 0, sizeof(*l));
	}
	return st;
}

void wsnap_tree_member(struct wsnap_raw_member *m, const char *name, size_t len,
		       const struct stat *st)
{
	memset(m, 0, sizeof(*m));
	m->name = name;
	m->name_len = len;
	m->mode = st->st_mode & 07777;
	m->mtime_sec = st->st_mtim.tv_sec;
	m->mtime_nsec = (uint32_t)st->st_mtim.tv_nsec;
	if (S_ISREG(st->st_mode)) {
		m->type = WSNAP_RAW_FILE;
		m->typeflag = '0';
		m->size = (uint64_t)st->st_size;
	} else if (S_ISDIR(st->st_mode)) {
		m->type = WSNAP_RAW_DIR;
		m->typeflag = '5';
	} else if (S_ISLNK(st->st_mode)) {
		m->type = WSNAP_RAW_SYMLINK;
		m->typeflag = '2';
	} else {
		m->type = WSNAP_RAW_OTHER;
		m->typeflag = S_ISFIFO(st->st_mode)  ? '6'
			      : S_ISCHR(st->st_mode) ? '3'
			      : S_ISBLK(st->st_mode) ? '4'
						     : '?';
	}
}

static enum wsnap_status walk_dir(struct walk *w, int fd, uint64_t depth,
				  struct wsnap_error *err);

static enum wsnap_status walk_entry(struct walk *w, int dfd, const char *name,
				    uint64_t depth, struct wsnap_error *err)
{
	struct wsnap_raw_member m;
	struct stat st;
	enum wsnap_status s;
	int cfd;

	if (fstatat(dfd, name, &st, AT_SYMLINK_NOFOLLOW) < 0) {
		if (errno == ENOENT)
			return WSNAP_OK; /* removed since listed */
		return walk_io(w, errno, "cannot stat", err);
	}
	if (S_ISSOCK(st.st_mode))
		return WSNAP_OK;
	wsnap_tree_member(&m, w->pb.buf, w->pb.len, &st);
	if (m.type == WSNAP_RAW_SYMLINK) {
		ssize_t n = readlinkat(dfd, name, w->target,
				       WSNAP_TREE_MAX_TARGET + 1);

		if (n < 0) {
			if (errno == ENOENT)
				return WSNAP_OK;
			return walk_io(w, errno, "cannot read symlink", err);
		}
		if (n > WSNAP_TREE_MAX_TARGET)
			return walk_io(w, ENAMETOOLONG, "cannot read symlink",
				       err);
		w->target[n] = '\0';
		m.linkname = w->target;
		m.linkname_len = (size_t)n;
	}
	s = w->fn(w->ctx, &m, err);
	if (s != WSNAP_OK || m.type != WSNAP_RAW_DIR)
		return s;
	/*
	 * Entries deeper than max_depth are rejected by the builder (or were
	 * skipped with their parent): no need to list them.
	 */
	if (depth > w->policy->max_depth)
		return WSNAP_OK;
	cfd = openat(dfd, name,
		     O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	if (cfd < 0) {
		if (errno == ENOENT)
			return WSNAP_OK;
		return walk_io(w, errno, "cannot open directory", err);
	}
	s = walk_dir(w, cfd, depth, err);
	close(cfd);
	return s;
}

static enum wsnap_status walk_dir(struct walk *w, int fd, uint64_t depth,
				  struct wsnap_error *err)
{
	struct listing l;
	enum wsnap_status s;
	size_t i, saved = w->pb.len;

	s = list_dir(w, fd, &l, err);
	if (s != WSNAP_OK)
		return s;
	for (i = 0; i < l.count && s == WSNAP_OK; i++) {
		const char *name = l.names[i];
		int e = wsnap_pathbuf_push(&w->pb, name, strlen(name));

		if (e == ENAMETOOLONG) {
			/* only below a parent the builder let through as
			 * skipped; the limit itself is the builder's */
			s = wsnap_error_reject(err, w->pb.buf, "path too long");
			break;
		}
		if (e) {
			s = walk_io(w, e, "out of memory", err);
			break;
		}
		if (!wsnap_tree_skipped(w->policy, w->pb.buf + 2,
					w->pb.len - 2))
			s = walk_entry(w, fd, name, depth + 1, err);
		wsnap_pathbuf_cut(&w->pb, saved);
	}
	listing_release(&l);
	return s;
}

enum wsnap_status wsnap_tree_walk(int root_fd, const char *label,
				  const struct wsnap_policy *policy,
				  wsnap_reader_fn fn, void *ctx,
				  struct wsnap_error *err)
{
	struct wsnap_raw_member m;
	struct walk w;
	struct stat st;
	enum wsnap_status s;

	memset(&w, 0, sizeof(w));
	w.policy = policy;
	w.label = label;
	w.fn = fn;
	w.ctx = ctx;
	w.max_names = wsnap_tree_listing_max(policy);
	w.target = malloc(WSNAP_TREE_MAX_TARGET + 1);
	if (wsnap_pathbuf_init(&w.pb, ".", wsnap_tree_path_max(policy)) ||
	    !w.target) {
		s = wsnap_error_io(err, ENOMEM, label, "out of memory");
		goto out;
	}
	if (fstat(root_fd, &st) < 0) {
		s = wsnap_error_io(err, errno, label, "cannot stat");
		goto out;
	}
	wsnap_tree_member(&m, w.pb.buf, w.pb.len, &st);
	s = fn(ctx, &m, err);
	if (s == WSNAP_OK)
		s = walk_dir(&w, root_fd, 0, err);
out:
	wsnap_pathbuf_release(&w.pb);
	free(w.target);
	return s;
}

enum wsnap_status wsnap_tree_index(int root_fd, const char *label,
				   const struct wsnap_policy *policy,
				   struct wsnap_index **out,
				   struct wsnap_error *err)
{
	struct wsnap_builder *b = NULL;
	enum wsnap_status s;

	*out = NULL;
	s = wsnap_builder_new(&b, policy, err);
	if (s != WSNAP_OK)
		return s;
	s = wsnap_tree_walk(root_fd, label, policy, wsnap_builder_add, b, err);
	if (s != WSNAP_OK) {
		wsnap_builder_free(b);
		return s;
	}
	return wsnap_builder_finish(b, out, err);
}

/* ---- the cursor ---- */

struct wsnap_tree_cursor {
	int root_fd;
	const char *label;
	int *fds;     /* fds[i]: directory of components 0..i */
	size_t *ends; /* ends[i]: end of component i in dir */
	size_t depth;
	size_t fds_cap;
	size_t ends_cap;
	char *dir; /* rel path of fds[depth - 1] */
	size_t dir_cap;
};

enum wsnap_status wsnap_tree_cursor_new(struct wsnap_tree_cursor **out,
					int root_fd, const char *label,
					struct wsnap_error *err)
{
	struct wsnap_tree_cursor *c = calloc(1, sizeof(*c));

	*out = NULL;
	if (!c)
		return wsnap_error_io(err, ENOMEM, label, "out of memory");
	c->root_fd = root_fd;
	c->label = label;
	*out = c;
	return WSNAP_OK;
}

const char *wsnap_tree_cursor_label(const struct wsnap_tree_cursor *c)
{
	return c->label;
}

static void cursor_pop_to(struct wsnap_tree_cursor *c, size_t depth)
{
	while (c->depth > depth)
		close(c->fds[--c->depth]);
}

void wsnap_tree_cursor_free(struct wsnap_tree_cursor *c)
{
	if (!c)
		return;
	cursor_pop_to(c, 0);
	free(c->fds);
	free(c->ends);
	free(c->dir);
	free(c);
}

static enum wsnap_status cursor_fail(struct wsnap_tree_cursor *c, int errnum,
				     const char *rel, const char *what,
				     struct wsnap_error *err)
{
	char buf[WSNAP_ERROR_TEXT_MAX];

	return wsnap_error_io(
		err, errnum,
		wsnap_tree_describe(c->label, rel, buf, sizeof(buf)), "%s",
		what);
}

/* Makes fds[] hold the directories of rel[0..plen); returns 0 or errno. */
static int cursor_enter(struct wsnap_tree_cursor *c, const char *rel,
			size_t plen)
{
	size_t k = c->depth, start, *ne;
	char *nd;
	int *nf;

	/* keep the longest cached prefix that is a prefix of rel[0..plen) */
	while (k > 0) {
		size_t e = c->ends[k - 1];

		if (e <= plen && memcmp(c->dir, rel, e) == 0 &&
		    (e == plen || rel[e] == '/'))
			break;
		k--;
	}
	cursor_pop_to(c, k);
	nd = wsnap_grow(c->dir, &c->dir_cap, plen + 1, 1);
	if (!nd)
		return ENOMEM;
	c->dir = nd;
	memcpy(c->dir, rel, plen);
	c->dir[plen] = '\0';
	start = k ? c->ends[k - 1] + 1 : 0;
	while (start < plen) {
		char *slash = memchr(c->dir + start, '/', plen - start);
		size_t end = slash ? (size_t)(slash - c->dir) : plen;
		int parent = c->depth ? c->fds[c->depth - 1] : c->root_fd;
		int fd;

		nf = wsnap_grow(c->fds, &c->fds_cap, c->depth + 1,
				sizeof(*c->fds));
		if (!nf)
			return ENOMEM;
		c->fds = nf;
		ne = wsnap_grow(c->ends, &c->ends_cap, c->depth + 1,
				sizeof(*c->ends));
		if (!ne)
			return ENOMEM;
		c->ends = ne;
		c->dir[end] = '\0';
		fd = openat(parent, c->dir + start,
			    O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
		if (end < plen)
			c->dir[end] = '/';
		if (fd < 0)
			return errno;
		c->fds[c->depth] = fd;
		c->ends[c->depth] = end;
		c->depth++;
		start = end + 1;
	}
	return 0;
}

int wsnap_tree_cursor_open(struct wsnap_tree_cursor *c, const char *rel,
			   struct stat *st, struct wsnap_error *err)
{
	const char *slash = strrchr(rel, '/');
	size_t plen = slash ? (size_t)(slash - rel) : 0;
	const char *leaf = slash ? slash + 1 : rel;
	int e, fd;

	e = cursor_enter(c, rel, plen);
	if (e) {
		cursor_fail(c, e, rel, "cannot open", err);
		return -1;
	}
	fd = openat(c->depth ? c->fds[c->depth - 1] : c->root_fd, leaf,
		    O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_NOCTTY | O_CLOEXEC);
	if (fd < 0) {
		cursor_fail(c, errno, rel, "cannot open", err);
		return -1;
	}
	if (!st)
		return fd;
	if (fstat(fd, st) < 0) {
		cursor_fail(c, errno, rel, "cannot stat", err);
		close(fd);
		return -1;
	}
	if (!S_ISREG(st->st_mode)) {
		cursor_fail(c, 0, rel, "not a regular file", err);
		close(fd);
		return -1;
	}
	return fd;
}
