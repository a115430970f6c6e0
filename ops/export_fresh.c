/* SPDX-License-Identifier: MIT */
/*
 * A destination that does not exist yet (policy.md 7.9), and removing a
 * tree (its cleanup on failure; tests use it too).
 *
 * Invariants:
 *  - The destination is built in a new directory beside it, named after it
 *    ('.<base>.wsnap-<random>', created 0700 with mkdirat, so never one
 *    that already existed), then fchmod'ed to WSNAP_DIR_MODE and exported
 *    into through its descriptor as the root.
 *  - It is renamed into place only when the whole export succeeded, with
 *    RENAME_NOREPLACE: a destination that appeared meanwhile is never
 *    replaced ('destination appeared during the export'). Where the
 *    filesystem lacks RENAME_NOREPLACE, renameat replaces at most an empty
 *    directory, which loses nothing.
 *  - On any failure the temporary tree is removed, so a failed export
 *    leaves nothing behind.
 *  - Removing a tree follows no symlink: unlinkat(0) first (a symlink, file
 *    or FIFO goes, never its target); only what then proves a directory is
 *    opened O_NOFOLLOW | O_DIRECTORY and emptied, at most REMOVE_MAX_DEPTH
 *    levels down, and a few rounds when another process keeps adding to it.
 */
#include "export_private.h"
#include "fsutil.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <sys/random.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

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

enum wsnap_status wsnap_export_fresh(const struct wsnap_index *idx,
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
	s = wsnap_export_at(idx, tfd, dest, true, opts, stats, err);
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
	/* never through a symlink, never into a mount: what we made only */
	wsnap_fs_remove_tree(parentfd, tmp, 0, NULL);
out:
	close(parentfd);
	return s;
}
