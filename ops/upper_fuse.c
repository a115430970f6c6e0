/* SPDX-License-Identifier: MIT */
/* fuse-overlayfs' '.wh.' names (upper_fuse.h, upper.h). */
#include "upper_fuse.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdbool.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "upper.h"

const struct wsnap_node *wsnap_upper_fuse_hidden(const struct wsnap_index *idx)
{
	uint32_t ino, count = wsnap_index_count(idx);

	for (ino = WSNAP_ROOT_INO + 1; ino <= count; ino++) {
		const struct wsnap_node *n = wsnap_index_node(idx, ino);

		if (strncmp(wsnap_node_name(n), WH_PREFIX, WH_PREFIX_LEN) == 0)
			return n;
	}
	return NULL;
}

/* Directory rel of merged_fd, one component at a time without following
 * a symlink: a descriptor, or -1. */
static int open_live(int merged_fd, const char *rel)
{
	const char *p = rel + 1; /* past "." */
	char comp[NAME_MAX + 1];
	int fd, nfd;

	if (merged_fd < 0)
		return -1;
	fd = openat(merged_fd, ".", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	while (fd >= 0 && *p == '/') {
		size_t n = strcspn(++p, "/");

		if (n > NAME_MAX) {
			close(fd);
			return -1;
		}
		memcpy(comp, p, n);
		comp[n] = '\0';
		p += n;
		nfd = openat(fd, comp,
			     O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
		close(fd);
		fd = nfd;
	}
	return fd;
}

/* 1 when name is in directory fd, 0 when it is not, -1 when unknown. */
static int present_at(int fd, const char *name)
{
	struct stat sb;

	if (fstatat(fd, name, &sb, AT_SYMLINK_NOFOLLOW) == 0)
		return 1;
	return errno == ENOENT ? 0 : -1;
}

const char *wsnap_upper_fuse_check(int fd, const char *name, int merged_fd,
				   const char *rel, int *live)
{
	const char *target = name + WH_PREFIX_LEN;
	bool opaque = strcmp(name, WH_OPAQUE) == 0;

	if (!*target)
		return "a bare '.wh.' in the upper directory";
	if (!opaque && present_at(fd, target) != 0)
		return "a whiteout beside what it names";
	if (*live == WSNAP_UPPER_LIVE_UNOPENED)
		*live = open_live(merged_fd, rel);
	if (*live < 0 || present_at(*live, name) != 0 ||
	    (!opaque && present_at(*live, target) != 0))
		return "a '.wh.' name the workspace shows as it is";
	return NULL;
}
