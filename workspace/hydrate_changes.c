/* SPDX-License-Identifier: MIT */
/*
 * What 'wsnap unmount' of a hydrated workspace would lose (hydrate.h): the
 * changes its own upper directory holds.
 *
 * A change is what 'wsnap diff ARCHIVE WORKSPACE' lists for the workspace:
 * a path added, removed, of another type, or with other content,
 * presented mode or symlink target than in the snapshot. An mtime alone is
 * not one (diff without --mtime), nor ownership, xattrs or the attributes
 * of the workspace root itself (diff compares no roots). So what overlayfs
 * copies up without a change leaves nothing to lose: a directory whose
 * mode was changed and changed back, or that got a file made and removed
 * again; a file rewritten with its own bytes.
 *
 * How: the merged view of the two layers (upper.h), compared with the
 * lower layer by the diff engine (diff.h), without the archive or the
 * policy hydrate was given (the state has neither: an archive read from
 * standard input cannot be read again). The lower layer is the snapshot
 * mount itself, walked like a directory (tree.h); it and the merged view
 * are built under a policy that only refuses what no snapshot can hold
 * (FIFOs, devices): no limits, no skips, external symlinks allowed, so
 * that a path the workspace's own policy skipped still counts. A merged
 * node that comes whole from the lower layer is the same node, never
 * read (both sides give it one identity); a file of the upper directory
 * is read, against the snapshot's through the mount, only when the sizes
 * are equal. An upper directory without entries holds no change, and the
 * mount is not walked at all then.
 */
#include "hydrate_impl.h"

#include <dirent.h>
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "mounts.h"
#include "reader.h"
#include "tree.h"

struct count {
	struct wsnap_diff_side lower; /* the walked mount, read by path */
	struct wsnap_diff_side view;  /* the merged view's own side */
	const struct wsnap_index *lower_idx;
	struct wsnap_upper *u;
	uint64_t dev; /* of the mount: the identity of its nodes */
};

/* A file being read on the merged side, through one of the two sides. */
struct handle {
	const struct wsnap_diff_side *side;
	void *h;
};

/* ---- side A: the lower layer ---- */

static enum wsnap_status lower_open(void *ctx, uint32_t ino,
				    const struct wsnap_node *n, void **h,
				    struct wsnap_error *err)
{
	struct count *c = ctx;

	return c->lower.content->open(c->lower.ctx, ino, n, h, err);
}

static enum wsnap_status lower_read(void *ctx, void *h, void *buf, size_t len,
				    uint64_t off, struct wsnap_error *err)
{
	struct count *c = ctx;

	return c->lower.content->read(c->lower.ctx, h, buf, len, off, err);
}

static void lower_close(void *ctx, void *h)
{
	struct count *c = ctx;

	c->lower.content->close(c->lower.ctx, h);
}

static void node_ident(const struct count *c, uint32_t ino,
		       struct wsnap_diff_ident *id)
{
	memset(id, 0, sizeof(*id));
	id->valid = ino != 0;
	id->dev = c->dev;
	id->ino = ino;
}

static void lower_ident(void *ctx, uint32_t ino, const struct wsnap_node *n,
			struct wsnap_diff_ident *id)
{
	node_ident(ctx, ino, id);
}

static const struct wsnap_diff_content lower_content = {
	.open = lower_open,
	.read = lower_read,
	.close = lower_close,
	.ident = lower_ident,
};

/* ---- side B: the merged view ---- */

static enum wsnap_status merged_open(void *ctx, uint32_t ino,
				     const struct wsnap_node *n, void **h,
				     struct wsnap_error *err)
{
	struct count *c = ctx;
	uint32_t src = wsnap_upper_source(c->u, n);
	struct handle *mh = malloc(sizeof(*mh));
	enum wsnap_status s;

	*h = NULL;
	if (!mh)
		return wsnap_error_io(err, ENOMEM, NULL, "out of memory");
	/* a node of the lower layer is read there: the view's own side
	 * would read it from an archive, and there is none */
	mh->side = src ? &c->lower : &c->view;
	mh->h = NULL;
	s = mh->side->content->open(
		mh->side->ctx, src ? src : ino,
		src ? wsnap_index_node(c->lower_idx, src) : n, &mh->h, err);
	if (s != WSNAP_OK) {
		free(mh);
		return s;
	}
	*h = mh;
	return WSNAP_OK;
}

static enum wsnap_status merged_read(void *ctx, void *h, void *buf, size_t len,
				     uint64_t off, struct wsnap_error *err)
{
	struct handle *mh = h;

	return mh->side->content->read(mh->side->ctx, mh->h, buf, len, off,
				       err);
}

static void merged_close(void *ctx, void *h)
{
	struct handle *mh = h;

	if (!mh)
		return;
	mh->side->content->close(mh->side->ctx, mh->h);
	free(mh);
}

static void merged_ident(void *ctx, uint32_t ino, const struct wsnap_node *n,
			 struct wsnap_diff_ident *id)
{
	struct count *c = ctx;

	node_ident(c, wsnap_upper_source(c->u, n), id);
}

static const struct wsnap_diff_content merged_content = {
	.open = merged_open,
	.read = merged_read,
	.close = merged_close,
	.ident = merged_ident,
};

/* ---- counting ---- */

/* The policy of the comparison: see the top of the file. */
static void count_policy(struct wsnap_policy *p)
{
	wsnap_policy_init(p);
	p->allow_external_symlinks = true;
	p->max_members = UINT32_MAX - 1;
	p->max_total_size = UINT64_MAX;
	p->max_file_size = UINT64_MAX;
	p->max_path_length = WSNAP_READER_MAX_HEADER_BYTES;
	p->max_depth = WSNAP_READER_MAX_HEADER_BYTES / 2;
}

/* 1 when the directory fd has an entry, 0 when it has none, or -errno. */
static int has_entries(int fd)
{
	struct dirent *de;
	int dfd = openat(fd, ".", O_RDONLY | O_DIRECTORY | O_CLOEXEC), rc = 0;
	DIR *d;

	if (dfd < 0)
		return -errno;
	d = fdopendir(dfd);
	if (!d) {
		rc = -errno;
		close(dfd);
		return rc;
	}
	errno = 0;
	while (!rc && (de = readdir(d)) != NULL)
		rc = strcmp(de->d_name, ".") != 0 &&
		     strcmp(de->d_name, "..") != 0;
	if (!rc && errno)
		rc = -errno;
	closedir(d);
	return rc;
}

enum wsnap_status
wsnap_hydrate_count_changes(int lower_fd, const char *lower_label, int upper_fd,
			    int merged_fd, enum wsnap_upper_format fmt,
			    const char *label, uint64_t *count,
			    struct wsnap_error *err)
{
	struct wsnap_diff_side a = {.content = &lower_content};
	struct wsnap_diff_side b = {.content = &merged_content};
	struct wsnap_tree_cursor *cursor = NULL;
	struct wsnap_index *idx = NULL;
	struct wsnap_diff_stats stats;
	struct wsnap_policy policy;
	const char *declined = NULL;
	struct count c = {0};
	enum wsnap_status s;
	struct stat sb;
	int e;

	*count = 0;
	e = has_entries(upper_fd);
	if (e <= 0)
		return e < 0 ? wsnap_error_io(err, -e, label,
					      "cannot read the upper "
					      "directory of")
			     : WSNAP_OK;
	if (fstat(lower_fd, &sb) != 0)
		return wsnap_error_io(err, errno, lower_label, "cannot stat");
	count_policy(&policy);
	s = wsnap_tree_index(lower_fd, lower_label, &policy, &idx, err);
	if (s == WSNAP_OK)
		s = wsnap_tree_cursor_new(&cursor, lower_fd, lower_label, err);
	/* where the layers cannot say it (fuse-overlayfs '.wh.' names the
	 * workspace does not confirm), the count is refused, never guessed */
	if (s == WSNAP_OK)
		s = wsnap_upper_new(&c.u, idx, upper_fd, merged_fd, fmt, label,
				    lower_label, &policy, &declined, err);
	if (s == WSNAP_OK && declined)
		s = wsnap_error_io(err, 0, label,
				   "cannot count the changes (%s) of",
				   declined);
	if (s != WSNAP_OK)
		goto out;
	c.dev = (uint64_t)sb.st_dev;
	c.lower_idx = idx;
	wsnap_diff_side_tree(&c.lower, idx, cursor);
	wsnap_upper_diff_side(c.u, &c.view);
	a.idx = idx;
	a.ctx = &c;
	b.idx = wsnap_upper_index(c.u);
	b.ctx = &c;
	s = wsnap_diff_run(&a, &b, NULL, NULL, NULL, &stats, err);
	if (s == WSNAP_OK)
		*count = wsnap_diff_total(&stats);
out:
	wsnap_upper_free(c.u);
	wsnap_tree_cursor_free(cursor);
	wsnap_index_free(idx);
	wsnap_policy_release(&policy);
	return s;
}

/* An error's line as the tools print it, but its errno, into buf
 * (capacity cap; cut to fit). */
static const char *error_text(const struct wsnap_error *e, char *buf,
			      size_t cap)
{
	bool path = e->member[0] != '\0';
	int n;

	if (e->status == WSNAP_REJECTED)
		n = snprintf(buf, cap, "unsafe tar member '%s': %s", e->member,
			     e->reason);
	else
		n = snprintf(buf, cap, "%s%s%s%s", e->reason, path ? " '" : "",
			     e->member, path ? "'" : "");
	if (n < 0)
		buf[0] = '\0';
	return buf;
}

/* The changes of st counted into *count; errors as the count's. */
static enum wsnap_status count_of(const struct wsnap_hydrate_state *st,
				  uint64_t *count, struct wsnap_error *err)
{
	enum wsnap_upper_format fmt = st->kind == WSNAP_OVERLAY_KERNEL
					      ? WSNAP_UPPER_OVERLAYFS
					      : WSNAP_UPPER_FUSE_OVERLAYFS;
	char fstype[WSNAP_FSTYPE_MAX] = "";
	enum wsnap_status s;
	int pfd, sfd, ufd, lfd = -1, mfd = -1, found;

	*count = 0;
	s = wsnap_hydrate_dir_open_made(st, &pfd, &sfd, err);
	if (s != WSNAP_OK)
		return s;
	ufd = openat(sfd, WSNAP_HYDRATE_UPPER, WSNAP_HYDRATE_DIR_FLAGS);
	if (ufd < 0) {
		/* no upper directory: nothing to lose */
		s = errno == ENOENT ? WSNAP_OK
				    : wsnap_error_io(err, errno, st->upper,
						     "cannot open");
		goto out;
	}
	if (has_entries(ufd) == 0)
		goto out;
	found = wsnap_mounts_type_at(st->lower, fstype, sizeof(fstype), err);
	if (found < 0) {
		s = err->status;
		goto out;
	}
	if (!found || strcmp(fstype, "fuse.wsnap") != 0) {
		s = wsnap_error_io(err, 0, st->lower,
				   "the snapshot is not mounted at");
		goto out;
	}
	lfd = openat(sfd, WSNAP_HYDRATE_LOWER, WSNAP_HYDRATE_DIR_FLAGS);
	if (lfd < 0) {
		s = wsnap_error_io(err, errno, st->lower, "cannot open");
		goto out;
	}
	/* fuse-overlayfs keeps whiteouts as '.wh.' files: the workspace
	 * itself, when it is that overlay, says which are its markers */
	if (fmt == WSNAP_UPPER_FUSE_OVERLAYFS &&
	    wsnap_mounts_type_at(st->workspace, fstype, sizeof(fstype), err) >
		    0 &&
	    strcmp(fstype, "fuse.fuse-overlayfs") == 0)
		mfd = open(st->workspace, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	s = wsnap_hydrate_count_changes(lfd, st->lower, ufd, mfd, fmt,
					st->workspace, count, err);
out:
	if (mfd >= 0)
		close(mfd);
	if (lfd >= 0)
		close(lfd);
	if (ufd >= 0)
		close(ufd);
	close(sfd);
	close(pfd);
	return s;
}

enum wsnap_status
wsnap_hydrate_keep_changes(const struct wsnap_hydrate_state *st,
			   struct wsnap_error *err)
{
	static struct wsnap_error why; /* large: not on the stack */
	static char text[WSNAP_ERROR_TEXT_MAX];
	uint64_t n = 0;

	if (!st->own_upper)
		return WSNAP_OK; /* --upper DIR: never removed */
	if (!wsnap_hydrate_paths_ok(st, err))
		return WSNAP_IO;
	wsnap_error_clear(&why);
	if (count_of(st, &n, &why) != WSNAP_OK)
		return wsnap_error_io(err, why.errnum, st->workspace,
				      "not unmounted: cannot tell what "
				      "changed (%s; --discard drops the "
				      "changes) in workspace",
				      error_text(&why, text, sizeof(text)));
	if (n == 0)
		return WSNAP_OK;
	return wsnap_error_io(err, 0, st->workspace,
			      "not unmounted: %" PRIu64
			      " %s changed (keep %s with 'wsnap pack WORKSPACE "
			      "OUT', or drop %s with --discard) in workspace",
			      n, n == 1 ? "path" : "paths",
			      n == 1 ? "it" : "them", n == 1 ? "it" : "them");
}
