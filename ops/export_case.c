/* SPDX-License-Identifier: MIT */
/*
 * Destinations that fold case (policy.md 7.7): an archive is written onto
 * a case-folding or normalization-insensitive directory only where that
 * changes nothing.
 *
 * Invariants:
 *  - a directory of the archive is a hazard when two of its entries fold
 *    alike (they would be one entry there: one file overwrites the other,
 *    a directory merges into another's) or when the strict walk resolved a
 *    symlink target through it differently folded
 *    (wsnap_index_case_deps). Hazards are found once, before anything is
 *    written; an archive without any (the usual case) costs no probe;
 *  - with hazards, every descriptor export takes of a hazard directory is
 *    probed when it is opened or created, and one that folds (or that
 *    cannot be told not to) is 'destination folds case' before anything is
 *    written into it. The destination root is probed first, and when it
 *    folds any hazard is refused at once, as the directories made in it
 *    inherit its folding. openat2 is not used then, so that every
 *    directory on a path is opened, and probed, on its own;
 *  - a probe only reads (fstatfs, FS_IOC_GETFLAGS, the XFS geometry): a
 *    type not known to compare names byte for byte folds.
 */
#include "export_private.h"

#include <errno.h>
#include <linux/fs.h>
#include <linux/magic.h>
#include <stdlib.h>
#include <sys/ioctl.h>
#include <sys/vfs.h>
#include <unistd.h>

#include "fold.h"

/* The XFS geometry, version 1 (the kernel's struct xfs_fsop_geom_v1): only
 * its flags are read, for the ASCII case-insensitive directory format. */
struct xfs_geometry_v1 {
	uint32_t sizes[8];
	uint64_t blocks[4];
	unsigned char uuid[16];
	uint32_t sunit, swidth;
	int32_t version;
	uint32_t flags;
	uint32_t tail[3];
};
_Static_assert(sizeof(struct xfs_geometry_v1) == 112, "xfs_fsop_geom_v1");

#define XFS_GEOMETRY_V1	 _IOR('X', 100, struct xfs_geometry_v1)
#define XFS_GEOM_DIRV2CI (1u << 12)

#ifndef FS_CASEFOLD_FL
#define FS_CASEFOLD_FL 0x40000000
#endif

/* Whether the inode flags of fd say it folds (ext4, f2fs, tmpfs: per
 * directory). A filesystem without the ioctl has no such flag. */
static int casefold_flag(int fd)
{
	int flags = 0;

	if (ioctl(fd, FS_IOC_GETFLAGS, &flags) == 0)
		return (flags & FS_CASEFOLD_FL) != 0;
	return !(errno == ENOTTY || errno == EOPNOTSUPP || errno == EINVAL ||
		 errno == ENOSYS);
}

static int xfs_folds(int fd)
{
	struct xfs_geometry_v1 g;

	if (ioctl(fd, XFS_GEOMETRY_V1, &g) < 0)
		return 1;
	return (g.flags & XFS_GEOM_DIRV2CI) != 0;
}

int wsnap_export_dir_folds(int fd)
{
	struct statfs sf;

	if (fstatfs(fd, &sf) < 0)
		return 1;
	switch ((uint32_t)sf.f_type) {
	case EXT4_SUPER_MAGIC: /* ext2 and ext3 too */
	case F2FS_SUPER_MAGIC:
	case TMPFS_MAGIC:
	case BTRFS_SUPER_MAGIC:
	case RAMFS_MAGIC:
	case OVERLAYFS_SUPER_MAGIC: /* the flags are its layers' */
		return casefold_flag(fd);
	case XFS_SUPER_MAGIC:
		return xfs_folds(fd) || casefold_flag(fd);
	default:
		/* FAT, exFAT, NTFS, HFS+, FUSE, network filesystems...:
		 * folding, or no way to tell */
		return 1;
	}
}

static int dir_folds(const struct exp *x, int fd)
{
	if (x->opts && x->opts->dir_folds)
		return x->opts->dir_folds(fd);
	return wsnap_export_dir_folds(fd);
}

static enum wsnap_status reject_folds(struct exp *x, const struct exp_case *c)
{
	return wsnap_error_reject(x->err, node_of(x, c->member)->path, "%s: %s",
				  WSNAP_REASON_FOLDS_CASE,
				  node_of(x, c->other)->path);
}

/* The hazard of directory dir: a is the member to name, b the other. */
static void hazard(struct exp *x, uint32_t dir, uint32_t a, uint32_t b)
{
	if (!x->cases[dir].member) {
		x->cases[dir].member = a;
		x->cases[dir].other = b;
	}
}

/* The hazards of every directory; false when there is none. */
static enum wsnap_status find_hazards(struct exp *x, bool *any)
{
	const struct wsnap_index_case_dep *deps;
	size_t ndeps = wsnap_index_case_deps(x->idx, &deps), i;
	struct wsnap_fold *f;
	struct wsnap_error ferr;
	uint32_t ino;

	*any = false;
	x->cases = calloc((size_t)x->count + 1, sizeof(*x->cases));
	if (!x->cases || wsnap_fold_new(&f, x->idx, &ferr) != WSNAP_OK)
		return wsnap_export_fail_io(x, ENOMEM, NULL, "out of memory");
	for (ino = WSNAP_ROOT_INO; ino <= x->count; ino++) {
		uint32_t other, c = wsnap_fold_collision(f, ino, &other);

		if (!c)
			continue;
		/* name the later member of the archive */
		if (node_of(x, other)->order > node_of(x, c)->order)
			hazard(x, ino, other, c);
		else
			hazard(x, ino, c, other);
		*any = true;
	}
	wsnap_fold_free(f);
	for (i = 0; i < ndeps; i++) {
		hazard(x, node_of(x, deps[i].member)->parent, deps[i].link,
		       deps[i].member);
		*any = true;
	}
	return WSNAP_OK;
}

enum wsnap_status wsnap_export_case_init(struct exp *x)
{
	enum wsnap_status s;
	uint32_t ino;
	bool any;

	s = find_hazards(x, &any);
	if (s != WSNAP_OK || !any) {
		free(x->cases);
		x->cases = NULL;
		return s;
	}
	x->use_openat2 = false;
	x->st->openat2 = false;
	if (!dir_folds(x, x->rootfd))
		return WSNAP_OK;
	for (ino = WSNAP_ROOT_INO; ino <= x->count; ino++)
		if (x->cases[ino].member)
			return reject_folds(x, &x->cases[ino]);
	return WSNAP_OK;
}

int wsnap_export_case_check(struct exp *x, int fd, uint32_t ino)
{
	if (!x->cases || !x->cases[ino].member || !dir_folds(x, fd))
		return fd;
	reject_folds(x, &x->cases[ino]);
	close(fd);
	return -1;
}
