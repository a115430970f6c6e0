/* SPDX-License-Identifier: MIT */
#define WSNAP_GIT_DL_SELF
#include "git_dl.h"

#include <stddef.h>

#include "array.h"
#include "dynlib.h"

/* the soname of the libgit2 whose git2.h we were built with (CMake: its
 * minor version is part of it) */
#ifndef WSNAP_GIT_SONAME
#error "WSNAP_GIT_SONAME is set by ops/CMakeLists.txt"
#endif
#define GIT_SONAME WSNAP_GIT_SONAME

#define SYM(f, field)                                                          \
	{                                                                      \
		f, offsetof(struct wsnap_git_api, field)                       \
	}

static const struct wsnap_dynsym git_syms[] = {
	SYM("git_libgit2_init", libgit2_init),
	SYM("git_libgit2_shutdown", libgit2_shutdown),
	SYM("git_error_last", error_last),
	SYM("git_diff_options_init", diff_options_init),
	SYM("git_patch_from_buffers", patch_from_buffers),
	SYM("git_patch_get_delta", patch_get_delta),
	SYM("git_patch_num_hunks", patch_num_hunks),
	SYM("git_patch_line_stats", patch_line_stats),
	SYM("git_patch_print", patch_print),
	SYM("git_patch_free", patch_free),
	SYM("git_oid_tostr", oid_tostr),
	SYM("git_oid_equal", oid_equal),
};

_Static_assert(ARRAY_SIZE(git_syms) * sizeof(void (*)(void)) ==
		       sizeof(struct wsnap_git_api),
	       "every pointer of wsnap_git_api has its name in git_syms");

struct wsnap_git_api wsnap_git;

static struct wsnap_dynlib lib =
	WSNAP_DYNLIB_INIT(GIT_SONAME, git_syms, &wsnap_git);

int wsnap_git_load(const char **why)
{
	return wsnap_dynlib_use(&lib, why);
}
