/* SPDX-License-Identifier: MIT */
/*
 * Test support: small directory trees on disk (for the walker, pack and
 * diff tests). Every function aborts the test (cmocka fail) on an error.
 */
#ifndef WSNAP_TEST_FSTREE_H
#define WSNAP_TEST_FSTREE_H

#include <stddef.h>
#include <stdint.h>

/* "dir/rel", malloc'd (caller frees). */
char *ft_path(const char *dir, const char *rel);
/* Writes dir/rel (created or truncated) with the bytes, then chmod mode. */
void ft_put(const char *dir, const char *rel, const void *data, size_t len,
	    unsigned mode);
/* The same with a string, mode 0644 or mode. */
void ft_put_str(const char *dir, const char *rel, const char *s);
void ft_put_mode(const char *dir, const char *rel, const char *s,
		 unsigned mode);
void ft_mkdir(const char *dir, const char *rel);
void ft_symlink(const char *dir, const char *rel, const char *target);
/* Sets atime and mtime of dir/rel (not following a symlink). */
void ft_mtime(const char *dir, const char *rel, int64_t sec, long nsec);
/* Removes dir/rel and everything under it (never following symlinks). */
void ft_rm(const char *dir, const char *rel);

#endif
