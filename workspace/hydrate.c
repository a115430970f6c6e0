/* SPDX-License-Identifier: MIT */
/*
 * Hydrated workspaces: overlay mounts, teardown, diff from the upper
 * directory (hydrate.h); the state itself is hydrate_state.c.
 *
 * Which overlay: the kernel's overlayfs where this process may mount it
 * (root, CAP_SYS_ADMIN), fuse-overlayfs otherwise. The kernel overlay is
 * mounted with
 *	redirect_dir=on   renaming a directory of the snapshot is one rename
 *			  (recorded as a redirect xattr in the upper
 *			  directory), not EXDEV and a copy of its tree;
 *	index=off	  hard links are not tracked across layers: the
 *			  snapshot's inodes (FUSE) have no stable handles to
 *			  index by;
 *	metacopy=off	  a copied-up file holds its data in the upper
 *			  directory, so that the upper directory alone tells
 *			  what changed and pack/diff read plain files.
 * These are written out rather than left to the module's defaults, which
 * differ between kernels.
 */
#include "hydrate_impl.h"

#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "hash.h"
#include "mounts.h"
#include "remote.h"

/* mount(2) takes its options in one page. */
#define OVERLAY_OPTS_MAX   4096
#define OVERLAY_FIXED_OPTS "redirect_dir=on,index=off,metacopy=off"

/* How long the snapshot may stay busy after fuse-overlayfs was unmounted
 * (its process leaving): LOWER_RETRIES times LOWER_RETRY_NS. */
#define LOWER_RETRIES  100
#define LOWER_RETRY_NS 50000000L

/* The mount types the two kinds show in mountinfo. */
static const char *overlay_fstype(enum wsnap_overlay kind)
{
	return kind == WSNAP_OVERLAY_KERNEL ? "overlay" : "fuse.fuse-overlayfs";
}

/* ---- policy fingerprint, archive identity ---- */

static void hash_field(struct wsnap_hasher *h, char tag, const void *data,
		       size_t len)
{
	uint64_t l = len;

	wsnap_hasher_update(h, &tag, 1);
	wsnap_hasher_update(h, &l, sizeof(l));
	wsnap_hasher_update(h, data, len);
}

static void hash_str(struct wsnap_hasher *h, char tag, const char *s)
{
	if (s)
		hash_field(h, tag, s, strlen(s));
	else
		hash_field(h, (char)(tag | 0x80), "", 0);
}

static void hash_list(struct wsnap_hasher *h, char tag,
		      const struct wsnap_pathlist *l)
{
	size_t i;

	hash_field(h, tag, &l->count, sizeof(l->count));
	for (i = 0; i < l->count; i++)
		hash_str(h, tag, l->items[i]);
}

static uint64_t policy_hash(const struct wsnap_policy *p,
			    const struct wsnap_hash_key *key)
{
	const uint64_t limits[] = {p->max_members, p->max_total_size,
				   p->max_file_size, p->max_path_length,
				   p->max_depth};
	const unsigned char flags[] = {p->allow_external_symlinks,
				       p->no_symlinks};
	struct wsnap_hasher h;

	wsnap_hasher_init(&h, key);
	hash_field(&h, 'f', flags, sizeof(flags));
	hash_field(&h, 'l', limits, sizeof(limits));
	hash_list(&h, 's', &p->skip);
	hash_list(&h, 'r', &p->reject_path);
	hash_list(&h, 'y', &p->reject_symlink);
	hash_str(&h, 'n', p->root_name);
	hash_str(&h, 'p', p->strip_prefix);
	/* --max-index-size came later: hashed only when not the default, so
	 * that states written before it keep their fingerprints */
	if (p->max_index_size != WSNAP_DEFAULT_MAX_INDEX_SIZE)
		hash_field(&h, 'i', &p->max_index_size,
			   sizeof(p->max_index_size));
	return wsnap_hasher_final(&h);
}

void wsnap_hydrate_policy_id(const struct wsnap_policy *p,
			     char out[WSNAP_HYDRATE_POLICY_ID_LEN + 1])
{
	/* fixed keys: the fingerprint must be the same in every process */
	static const struct wsnap_hash_key k1 = {0x77736e6170687964ULL,
						 0x7261746531000000ULL};
	static const struct wsnap_hash_key k2 = {0x706f6c6963792d69ULL,
						 0x6432000000000000ULL};

	snprintf(out, WSNAP_HYDRATE_POLICY_ID_LEN + 1,
		 "%016" PRIx64 "%016" PRIx64, policy_hash(p, &k1),
		 policy_hash(p, &k2));
}

enum wsnap_status wsnap_hydrate_archive_id(const char *path,
					   struct wsnap_hydrate_archive_id *id,
					   struct wsnap_error *err)
{
	struct stat st;

	memset(id, 0, sizeof(*id));
	/* a remote archive is pinned by its source itself (remote.h) */
	if (strcmp(path, "-") == 0 || wsnap_remote_is_url(path))
		return WSNAP_OK;
	if (stat(path, &st) != 0)
		return wsnap_error_io(err, errno, path, "cannot stat");
	id->valid = true;
	id->dev = (uint64_t)st.st_dev;
	id->ino = (uint64_t)st.st_ino;
	id->size = (uint64_t)st.st_size;
	id->mtime_sec = st.st_mtim.tv_sec;
	id->mtime_nsec = st.st_mtim.tv_nsec;
	id->ctime_sec = st.st_ctim.tv_sec;
	id->ctime_nsec = st.st_ctim.tv_nsec;
	return WSNAP_OK;
}

bool wsnap_hydrate_archive_same(const struct wsnap_hydrate_archive_id *a,
				const struct wsnap_hydrate_archive_id *b)
{
	return a->valid && b->valid && a->dev == b->dev && a->ino == b->ino &&
	       a->size == b->size && a->mtime_sec == b->mtime_sec &&
	       a->mtime_nsec == b->mtime_nsec && a->ctime_sec == b->ctime_sec &&
	       a->ctime_nsec == b->ctime_nsec;
}

/* ---- making what the state names ---- */

/* mkdirat(dfd, name, 0700), then its identity, checked to be the
 * caller's own directory (not one put there since). */
static enum wsnap_status make_owned_dir(int dfd, const char *name,
					const char *path, mode_t mode,
					struct wsnap_fs_id *id, int *fdout,
					struct wsnap_error *err)
{
	struct stat sb;
	int fd;

	if (mkdirat(dfd, name, mode) != 0)
		return wsnap_error_io(err, errno, path,
				      "cannot make directory");
	fd = openat(dfd, name, WSNAP_HYDRATE_DIR_FLAGS);
	if (fd < 0 || fstat(fd, &sb) != 0) {
		if (fd >= 0)
			close(fd);
		return wsnap_error_io(err, errno, path,
				      "cannot make directory");
	}
	if (sb.st_uid != geteuid() || (sb.st_mode & (S_IWGRP | S_IWOTH))) {
		close(fd);
		return wsnap_error_io(err, EPERM, path,
				      "cannot make directory (replaced while "
				      "being made)");
	}
	wsnap_fs_id_set(id, &sb);
	if (fdout)
		*fdout = fd;
	else
		close(fd);
	return WSNAP_OK;
}

/* Makes the directory path (absolute), its parent opened without
 * following a symlink; its identity in *id. */
static enum wsnap_status make_dir_nofollow(const char *path,
					   struct wsnap_fs_id *id,
					   struct wsnap_error *err)
{
	char *parent = wsnap_hydrate_parent(path);
	enum wsnap_status s;
	int pfd, e;

	if (!parent)
		return wsnap_error_io(err, ENOMEM, path, "out of memory");
	e = wsnap_fs_open_dir_nofollow(parent, &pfd);
	free(parent);
	if (e)
		return wsnap_error_io(err, e, path, "cannot make directory");
	s = make_owned_dir(pfd, wsnap_hydrate_base(path), path, 0700, id, NULL,
			   err);
	close(pfd);
	return s;
}

enum wsnap_status wsnap_hydrate_state_create(struct wsnap_hydrate_state *st,
					     struct wsnap_error *err)
{
	enum wsnap_status s = make_dir_nofollow(st->dir, &st->dir_id, err);

	st->dir_id_valid = s == WSNAP_OK;
	return s;
}

enum wsnap_status wsnap_hydrate_make_in(const struct wsnap_hydrate_state *st,
					const char *name, mode_t mode, int *fd,
					struct wsnap_error *err)
{
	struct wsnap_fs_id id;
	enum wsnap_status s;
	int pfd, sfd;
	char *path = wsnap_path_join(st->dir, name);

	if (!path)
		return wsnap_error_io(err, ENOMEM, st->dir, "out of memory");
	s = wsnap_hydrate_dir_open_made(st, &pfd, &sfd, err);
	if (s == WSNAP_OK) {
		s = make_owned_dir(sfd, name, path, mode, &id, fd, err);
		close(sfd);
		close(pfd);
	}
	free(path);
	return s;
}

enum wsnap_status wsnap_hydrate_make_work(struct wsnap_hydrate_state *st,
					  struct wsnap_error *err)
{
	struct wsnap_fs_id id;
	enum wsnap_status s;

	if (wsnap_hydrate_work_inside(st))
		return wsnap_hydrate_make_in(st, WSNAP_HYDRATE_WORK, 0700, NULL,
					     err);
	s = make_dir_nofollow(st->work, &id, err);
	if (s != WSNAP_OK)
		return s;
	/* from here on the work directory is ours to remove */
	st->work_id = id;
	st->work_id_valid = true;
	return wsnap_hydrate_state_save(st, err);
}

/* ---- mounting the overlay ---- */

/*
 * Appends "key=" and path to buf (length *len, capacity cap), escaping
 * with '\' the bytes the option parser gives a meaning: '\\', ',' and,
 * for the kernel's lowerdir list, ':'. Returns false when it does not fit.
 */
static bool add_path_opt(char *buf, size_t *len, size_t cap, const char *key,
			 const char *path)
{
	size_t n = *len;
	const char *p;

	if (n && n < cap)
		buf[n++] = ',';
	for (p = key; *p && n < cap; p++)
		buf[n++] = *p;
	for (p = path; *p && n + 1 < cap; p++) {
		if (*p == '\\' || *p == ',' || *p == ':')
			buf[n++] = '\\';
		buf[n++] = *p;
	}
	if (*p || n >= cap)
		return false;
	buf[n] = '\0';
	*len = n;
	return true;
}

/* The layer options lowerdir=,upperdir=,workdir= into buf. */
static bool layer_opts(const struct wsnap_hydrate_state *st, char *buf,
		       size_t cap)
{
	size_t len = 0;

	buf[0] = '\0';
	return add_path_opt(buf, &len, cap, "lowerdir=", st->lower) &&
	       add_path_opt(buf, &len, cap, "upperdir=", st->upper) &&
	       add_path_opt(buf, &len, cap, "workdir=", st->work);
}

static enum wsnap_status mount_kernel(const struct wsnap_hydrate_state *st,
				      struct wsnap_error *err)
{
	char opts[OVERLAY_OPTS_MAX];
	size_t len;

	if (!layer_opts(st, opts, sizeof(opts)))
		return wsnap_error_io(err, ENAMETOOLONG, st->workspace,
				      "cannot mount overlay (paths too long) "
				      "on");
	len = strlen(opts);
	if (len + 1 + sizeof(OVERLAY_FIXED_OPTS) > sizeof(opts))
		return wsnap_error_io(err, ENAMETOOLONG, st->workspace,
				      "cannot mount overlay (paths too long) "
				      "on");
	opts[len] = ',';
	memcpy(opts + len + 1, OVERLAY_FIXED_OPTS, sizeof(OVERLAY_FIXED_OPTS));
	if (mount("wsnap-hydrate", st->workspace, "overlay", 0, opts) != 0)
		return wsnap_error_io(err, errno, st->workspace,
				      "cannot mount overlay on");
	return WSNAP_OK;
}

static enum wsnap_status mount_fuse(const struct wsnap_hydrate_state *st,
				    struct wsnap_error *err)
{
	char opts[OVERLAY_OPTS_MAX], msg[WSNAP_RUN_MSG_MAX];
	/* no "--": fuse-overlayfs takes it for an option (the workspace is
	 * an absolute path anyway) */
	char *argv[] = {"fuse-overlayfs", "-o", opts, st->workspace, NULL};
	int rc;

	/* it would show the snapshot otherwise than it is (upper.h) */
	if (st->fuse_hidden)
		return wsnap_error_io(err, 0, NULL,
				      "fuse-overlayfs cannot present member "
				      "'%s' (it takes names that start with "
				      "'.wh.' for whiteouts; --overlay kernel "
				      "can)",
				      st->fuse_hidden);

	/* fuse-overlayfs splits lowerdir at every ':', escaped or not */
	if (strchr(st->lower, ':'))
		return wsnap_error_io(err, EINVAL, st->lower,
				      "fuse-overlayfs cannot take a ':' in "
				      "the lower directory");
	if (!layer_opts(st, opts, sizeof(opts)))
		return wsnap_error_io(err, ENAMETOOLONG, st->workspace,
				      "cannot mount fuse-overlayfs (paths "
				      "too long) on");
	rc = wsnap_run(argv, msg, sizeof(msg), err);
	if (rc < 0)
		return err->status;
	if (rc == 127)
		return wsnap_error_io(err, ENOENT, st->workspace,
				      "cannot mount fuse-overlayfs (%s; "
				      "install the fuse-overlayfs package) on",
				      msg);
	if (rc != 0)
		return wsnap_error_io(err, 0, st->workspace,
				      "cannot mount fuse-overlayfs (%s) on",
				      msg[0] ? msg : "it failed");
	return WSNAP_OK;
}

enum wsnap_status wsnap_hydrate_mount_overlay(struct wsnap_hydrate_state *st,
					      struct wsnap_error *err)
{
	static struct wsnap_error kerr; /* large: not on the stack */
	enum wsnap_status status;
	struct stat sb;

	if (st->kind == WSNAP_OVERLAY_FUSE) {
		status = mount_fuse(st, err);
	} else {
		status = mount_kernel(st, st->kind == WSNAP_OVERLAY_AUTO ? &kerr
									 : err);
		if (status == WSNAP_OK) {
			st->kind = WSNAP_OVERLAY_KERNEL;
		} else if (st->kind == WSNAP_OVERLAY_AUTO) {
			status = mount_fuse(st, err);
			if (status == WSNAP_OK)
				st->kind = WSNAP_OVERLAY_FUSE;
			else
				wsnap_error_io(err, err->errnum, st->workspace,
					       "cannot mount an overlay "
					       "(kernel: %s; %s) on",
					       strerror(kerr.errnum),
					       err->reason);
		}
	}
	if (status != WSNAP_OK)
		return status;
	/* the kernel's is ready at once; a FUSE one answers from here */
	if (stat(st->workspace, &sb) != 0 || !S_ISDIR(sb.st_mode))
		return wsnap_error_io(err, errno, st->workspace,
				      "overlay does not answer at");
	return WSNAP_OK;
}

/* ---- teardown ---- */

static enum wsnap_status stale_work(const struct wsnap_hydrate_state *st,
				    struct wsnap_error *err)
{
	return wsnap_error_io(err, 0, st->work,
			      "untrusted state of a hydrated workspace (not "
			      "the work directory hydrate made)");
}

/* Number of mounts at abs whose type is fstype; -1 with err set. */
static int count_mounts(const char *abs, const char *fstype,
			struct wsnap_error *err)
{
	char top[WSNAP_FSTYPE_MAX];
	int found = wsnap_mounts_type_at(abs, top, sizeof(top), err);

	if (found <= 0)
		return found;
	return strcmp(top, fstype) == 0 ? 1 : 2;
}

static enum wsnap_status unmount_overlay(const struct wsnap_hydrate_state *st,
					 bool lazy, struct wsnap_error *err)
{
	const char *want = overlay_fstype(st->kind);
	char top[WSNAP_FSTYPE_MAX] = "";
	int found;

	found = wsnap_mounts_type_at(st->workspace, top, sizeof(top), err);
	if (found < 0)
		return err->status;
	if (!found)
		return WSNAP_OK; /* already down */
	if (strcmp(top, want) != 0)
		return wsnap_error_io(err, 0, st->workspace,
				      "not the overlay of a hydrated "
				      "workspace (%s) at",
				      top);
	if (st->kind == WSNAP_OVERLAY_FUSE)
		return wsnap_mounts_fusermount(st->workspace, lazy, err);
	if (umount2(st->workspace, UMOUNT_NOFOLLOW | (lazy ? MNT_DETACH : 0)) !=
	    0)
		return wsnap_error_io(err, errno, st->workspace,
				      "cannot unmount");
	return WSNAP_OK;
}

/*
 * The snapshot under the overlay. fuse-overlayfs leaves once unmounted,
 * but not at once: until its process is gone it holds the lower directory
 * open, and the snapshot answers EBUSY for a while.
 */
static enum wsnap_status unmount_lower(const struct wsnap_hydrate_state *st,
				       bool lazy, struct wsnap_error *err)
{
	const struct timespec pause = {0, LOWER_RETRY_NS};
	enum wsnap_status status;
	int tries = 0;

	for (;;) {
		status = wsnap_mounts_fusermount(st->lower, lazy, err);
		if (status == WSNAP_OK || err->errnum != EBUSY ||
		    st->kind != WSNAP_OVERLAY_FUSE || ++tries > LOWER_RETRIES)
			return status;
		nanosleep(&pause, NULL);
	}
}

/*
 * The work directory outside the state directory, checked before anything
 * changes: *wpfd is its parent when there is one to remove, -1 when it is
 * missing or was never recorded as made (then it is not ours).
 */
static enum wsnap_status outside_work(const struct wsnap_hydrate_state *st,
				      int *wpfd, struct wsnap_error *err)
{
	char *parent;
	struct stat sb;
	int fd, e;

	*wpfd = -1;
	if (wsnap_hydrate_work_inside(st))
		return WSNAP_OK;
	parent = wsnap_hydrate_parent(st->work);
	if (!parent)
		return wsnap_error_io(err, ENOMEM, st->work, "out of memory");
	e = wsnap_fs_open_dir_nofollow(parent, &fd);
	free(parent);
	if (e == ENOENT)
		return WSNAP_OK;
	if (e)
		return wsnap_error_io(err, e, st->work,
				      "untrusted state of a hydrated "
				      "workspace (cannot reach)");
	if (fstatat(fd, wsnap_hydrate_base(st->work), &sb,
		    AT_SYMLINK_NOFOLLOW) != 0) {
		e = errno;
		close(fd);
		return e == ENOENT ? WSNAP_OK
				   : wsnap_error_io(err, e, st->work,
						    "cannot stat");
	}
	if (!st->work_id_valid) {
		close(fd);
		return WSNAP_OK;
	}
	if (!S_ISDIR(sb.st_mode) || !wsnap_fs_id_same(&sb, &st->work_id)) {
		close(fd);
		return stale_work(st, err);
	}
	*wpfd = fd;
	return WSNAP_OK;
}

/* Removes what hydrate made in the trusted state directory sfd (parent
 * pfd) and the work directory beside the upper one (parent wpfd, or -1). */
static enum wsnap_status remove_made(const struct wsnap_hydrate_state *st,
				     int pfd, int sfd, int wpfd,
				     struct wsnap_error *err)
{
	static const char *const files[] = {WSNAP_HYDRATE_STATE_TMP,
					    WSNAP_HYDRATE_STATE_FILE};
	size_t i;
	int e = 0;

	if (wsnap_hydrate_work_inside(st))
		e = wsnap_fs_remove_tree(sfd, WSNAP_HYDRATE_WORK,
					 WSNAP_FS_REMOVE_CHMOD, NULL);
	else if (wpfd >= 0)
		e = wsnap_fs_remove_tree(wpfd, wsnap_hydrate_base(st->work),
					 WSNAP_FS_REMOVE_CHMOD, &st->work_id);
	if (e == ESTALE)
		return stale_work(st, err);
	if (e)
		return wsnap_error_io(err, e, st->work, "cannot remove");
	if (st->own_upper)
		e = wsnap_fs_remove_tree(sfd, WSNAP_HYDRATE_UPPER,
					 WSNAP_FS_REMOVE_CHMOD, NULL);
	if (e)
		return wsnap_error_io(err, e, st->upper, "cannot remove");
	if (unlinkat(sfd, WSNAP_HYDRATE_LOWER, AT_REMOVEDIR) != 0 &&
	    errno != ENOENT)
		return wsnap_error_io(err, errno, st->lower, "cannot remove");
	/* a leftover temporary state file first, the state file last */
	for (i = 0; i < 2; i++)
		if (unlinkat(sfd, files[i], 0) != 0 && errno != ENOENT)
			return wsnap_error_io(err, errno, st->dir,
					      "cannot remove the state in");
	if (unlinkat(pfd, wsnap_hydrate_base(st->dir), AT_REMOVEDIR) != 0 &&
	    errno != ENOENT)
		return wsnap_error_io(err, errno, st->dir, "cannot remove");
	return WSNAP_OK;
}

enum wsnap_status wsnap_hydrate_teardown(const struct wsnap_hydrate_state *st,
					 bool lazy, struct wsnap_error *err)
{
	enum wsnap_status status;
	int pfd = -1, sfd = -1, wpfd = -1, n;

	/* every check first: a refusal changes nothing */
	status = wsnap_hydrate_dir_open_made(st, &pfd, &sfd, err);
	if (status != WSNAP_OK)
		return status;
	status = wsnap_hydrate_paths_ok(st, err) ? WSNAP_OK : WSNAP_IO;
	if (status == WSNAP_OK)
		status = outside_work(st, &wpfd, err);
	if (status == WSNAP_OK)
		status = unmount_overlay(st, lazy, err);
	if (status != WSNAP_OK)
		goto out;
	n = count_mounts(st->lower, "fuse.wsnap", err);
	if (n < 0)
		status = err->status;
	else if (n == 2)
		status = wsnap_error_io(err, 0, st->lower,
					"not a wsnap mount at");
	else if (n == 1)
		status = unmount_lower(st, lazy, err);
	if (status == WSNAP_OK)
		status = remove_made(st, pfd, sfd, wpfd, err);
out:
	if (wpfd >= 0)
		close(wpfd);
	close(sfd);
	close(pfd);
	return status;
}

int wsnap_hydrate_unmount(const char *abs, unsigned flags,
			  enum wsnap_status *status, struct wsnap_error *err)
{
	struct wsnap_hydrate_state st;
	int rc = wsnap_hydrate_state_load(&st, abs, err);

	if (rc == 0)
		return 0;
	if (rc < 0) {
		*status = err->status;
		return 1;
	}
	*status = flags & WSNAP_HYDRATE_DISCARD
			  ? WSNAP_OK
			  : wsnap_hydrate_keep_changes(&st, err);
	if (*status == WSNAP_OK)
		*status = wsnap_hydrate_teardown(
			&st, (flags & WSNAP_HYDRATE_LAZY) != 0, err);
	wsnap_hydrate_state_release(&st);
	return 1;
}

/* ---- diff from the upper directory ---- */

/* True when the topmost mount at path has type fstype. */
static bool mounted_as(const char *path, const char *fstype)
{
	static struct wsnap_error ignored; /* large: not on the stack */
	char top[WSNAP_FSTYPE_MAX];

	return wsnap_mounts_type_at(path, top, sizeof(top), &ignored) == 1 &&
	       strcmp(top, fstype) == 0;
}

int wsnap_hydrate_diff_check(struct wsnap_hydrate_diff *hd, const char *archive,
			     const char *path,
			     const struct wsnap_policy *policy)
{
	static struct wsnap_error ignored; /* large: not on the stack */
	char pid[WSNAP_HYDRATE_POLICY_ID_LEN + 1];
	struct wsnap_hydrate_archive_id now;
	struct wsnap_hydrate_state st;
	char *abs;
	int rc;

	hd->upper_fd = -1;
	hd->merged_fd = -1;
	hd->view = NULL;
	hd->declined = NULL;
	if (strcmp(archive, "-") == 0 || wsnap_remote_is_url(archive))
		return 0;
	abs = realpath(path, NULL);
	if (!abs)
		return 0; /* the full comparison reports it */
	rc = wsnap_hydrate_state_load(&st, abs, &ignored);
	free(abs);
	if (rc != 1)
		return 0;
	wsnap_hydrate_policy_id(policy, pid);
	if (strcmp(pid, st.policy) == 0 &&
	    wsnap_hydrate_archive_id(archive, &now, &ignored) == WSNAP_OK &&
	    wsnap_hydrate_archive_same(&st.arc, &now) &&
	    mounted_as(st.workspace, overlay_fstype(st.kind)) &&
	    mounted_as(st.lower, "fuse.wsnap")) {
		hd->fmt = st.kind == WSNAP_OVERLAY_KERNEL
				  ? WSNAP_UPPER_OVERLAYFS
				  : WSNAP_UPPER_FUSE_OVERLAYFS;
		hd->upper_fd =
			open(st.upper, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
		if (st.kind != WSNAP_OVERLAY_KERNEL)
			hd->merged_fd =
				open(st.workspace,
				     O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	}
	wsnap_hydrate_state_release(&st);
	return hd->upper_fd >= 0;
}

enum wsnap_status wsnap_hydrate_diff_side(struct wsnap_hydrate_diff *hd,
					  const struct wsnap_index *idx,
					  const char *label,
					  const char *archive_label,
					  const struct wsnap_policy *policy,
					  struct wsnap_diff_side *side,
					  struct wsnap_error *err)
{
	enum wsnap_status s;

	const char *declined;

	s = wsnap_upper_new(&hd->view, idx, hd->upper_fd, hd->merged_fd,
			    hd->fmt, label, archive_label, policy, &declined,
			    err);
	if (s == WSNAP_OK && hd->view) {
		wsnap_upper_diff_side(hd->view, side);
	} else if (s == WSNAP_OK) {
		wsnap_hydrate_diff_release(hd);
		hd->declined = declined;
	}
	return s;
}

void wsnap_hydrate_diff_release(struct wsnap_hydrate_diff *hd)
{
	wsnap_upper_free(hd->view);
	hd->view = NULL;
	if (hd->upper_fd >= 0)
		close(hd->upper_fd);
	hd->upper_fd = -1;
	if (hd->merged_fd >= 0)
		close(hd->merged_fd);
	hd->merged_fd = -1;
}
