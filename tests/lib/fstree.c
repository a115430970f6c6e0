/* SPDX-License-Identifier: MIT */
/* Test support: small directory trees on disk (fstree.h). */
#include "fstree.h"

#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "support.h"

static void ft_fail(const char *what, const char *path)
{
	fail_msg("fstree: %s '%s': %s", what, path, strerror(errno));
}

char *ft_path(const char *dir, const char *rel)
{
	size_t n = strlen(dir) + strlen(rel) + 2;
	char *p = malloc(n);

	if (!p)
		fail_msg("fstree: out of memory");
	snprintf(p, n, "%s/%s", dir, rel);
	return p;
}

void ft_put(const char *dir, const char *rel, const void *data, size_t len,
	    unsigned mode)
{
	char *p = ft_path(dir, rel);
	int fd = open(p, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);

	if (fd < 0)
		ft_fail("cannot create", p);
	if (write(fd, data, len) != (ssize_t)len)
		ft_fail("cannot write", p);
	if (fchmod(fd, mode) != 0)
		ft_fail("cannot chmod", p);
	close(fd);
	free(p);
}

void ft_put_str(const char *dir, const char *rel, const char *s)
{
	ft_put(dir, rel, s, strlen(s), 0644);
}

void ft_put_mode(const char *dir, const char *rel, const char *s, unsigned mode)
{
	ft_put(dir, rel, s, strlen(s), mode);
}

void ft_mkdir(const char *dir, const char *rel)
{
	char *p = ft_path(dir, rel);

	if (mkdir(p, 0755) != 0)
		ft_fail("cannot mkdir", p);
	free(p);
}

void ft_symlink(const char *dir, const char *rel, const char *target)
{
	char *p = ft_path(dir, rel);

	if (symlink(target, p) != 0)
		ft_fail("cannot symlink", p);
	free(p);
}

void ft_mtime(const char *dir, const char *rel, int64_t sec, long nsec)
{
	char *p = ft_path(dir, rel);
	struct timespec ts[2] = {{(time_t)sec, nsec}, {(time_t)sec, nsec}};

	if (utimensat(AT_FDCWD, p, ts, AT_SYMLINK_NOFOLLOW) != 0)
		ft_fail("cannot set times of", p);
	free(p);
}

void ft_rm(const char *dir, const char *rel)
{
	char *p = ft_path(dir, rel);

	ts_rmtree(p);
	free(p);
}
