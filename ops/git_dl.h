/* SPDX-License-Identifier: MIT */
/*
 * libgit2, loaded on first use (dynlib.h says why). Include this instead of
 * <git2.h>: the git_* functions the patch writer calls then go through
 * wsnap_git's pointers, and wsnap_git_load must have succeeded before the
 * first of them. A function not listed here does not link (libgit2 is not
 * on the link line): add it to the table, the macros and git_dl.c.
 */
#ifndef WSNAP_GIT_DL_H
#define WSNAP_GIT_DL_H

#include <git2.h>

struct wsnap_git_api {
	__typeof__(git_libgit2_init) *libgit2_init;
	__typeof__(git_libgit2_shutdown) *libgit2_shutdown;
	__typeof__(git_error_last) *error_last;
	__typeof__(git_diff_options_init) *diff_options_init;
	__typeof__(git_patch_from_buffers) *patch_from_buffers;
	__typeof__(git_patch_get_delta) *patch_get_delta;
	__typeof__(git_patch_num_hunks) *patch_num_hunks;
	__typeof__(git_patch_line_stats) *patch_line_stats;
	__typeof__(git_patch_print) *patch_print;
	__typeof__(git_patch_free) *patch_free;
	__typeof__(git_oid_tostr) *oid_tostr;
	__typeof__(git_oid_equal) *oid_equal;
};

extern struct wsnap_git_api wsnap_git;

/* Loads libgit2 once (thread-safe). 0, or -1 with *why a one-line reason
 * (static storage) when it cannot be loaded. */
int wsnap_git_load(const char **why);

#ifndef WSNAP_GIT_DL_SELF
#define git_libgit2_init       wsnap_git.libgit2_init
#define git_libgit2_shutdown   wsnap_git.libgit2_shutdown
#define git_error_last	       wsnap_git.error_last
#define git_diff_options_init  wsnap_git.diff_options_init
#define git_patch_from_buffers wsnap_git.patch_from_buffers
#define git_patch_get_delta    wsnap_git.patch_get_delta
#define git_patch_num_hunks    wsnap_git.patch_num_hunks
#define git_patch_line_stats   wsnap_git.patch_line_stats
#define git_patch_print	       wsnap_git.patch_print
#define git_patch_free	       wsnap_git.patch_free
#define git_oid_tostr	       wsnap_git.oid_tostr
#define git_oid_equal	       wsnap_git.oid_equal
#endif

#endif
