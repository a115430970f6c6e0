/* SPDX-License-Identifier: MIT */
#define WSNAP_ARCHIVE_DL_SELF
#include "archive_dl.h"

#include <stddef.h>

#include "array.h"
#include "dynlib.h"

/* the soname of Debian's libarchive-dev (the ABI archive.h describes) */
#define ARCHIVE_SONAME "libarchive.so.13"

#define WSNAP_ARCHIVE_SYM(f) {#f, offsetof(struct wsnap_archive_api, f)},
static const struct wsnap_dynsym archive_syms[] = {
	WSNAP_ARCHIVE_FUNCS(WSNAP_ARCHIVE_SYM)};
#undef WSNAP_ARCHIVE_SYM

_Static_assert(ARRAY_SIZE(archive_syms) * sizeof(void (*)(void)) ==
		       sizeof(struct wsnap_archive_api),
	       "every pointer of wsnap_archive_api has its name");

struct wsnap_archive_api wsnap_archive_table;
atomic_bool wsnap_archive_loaded;

static struct wsnap_dynlib lib =
	WSNAP_DYNLIB_INIT(ARCHIVE_SONAME, archive_syms, &wsnap_archive_table);

void wsnap_archive_load(void)
{
	wsnap_dynlib_require(&lib, &wsnap_archive_loaded);
}
