/* SPDX-License-Identifier: MIT */
#include "dynlib.h"

#include <dlfcn.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "array.h"

#define MAX_SYMS 96

int wsnap_dynlib_load(const char *soname, const struct wsnap_dynsym *syms,
		      size_t n, void *table, char *why)
{
	void *addr[MAX_SYMS];
	void *h;
	size_t i;

	if (n > ARRAY_SIZE(addr)) {
		snprintf(why, WSNAP_DYNLIB_WHY, "%s: too many functions",
			 soname);
		return -1;
	}
	h = dlopen(soname, RTLD_NOW | RTLD_LOCAL);
	if (!h) {
		/* dlerror names the library and the loader's reason */
		snprintf(why, WSNAP_DYNLIB_WHY, "%s", dlerror());
		return -1;
	}
	for (i = 0; i < n; i++) {
		(void)dlerror();
		addr[i] = dlsym(h, syms[i].name);
		if (!addr[i]) {
			snprintf(why, WSNAP_DYNLIB_WHY, "%s has no %s", soname,
				 syms[i].name);
			dlclose(h);
			return -1;
		}
	}
	/* POSIX: a function's address from dlsym fits in a function pointer
	 * of the same size */
	for (i = 0; i < n; i++)
		memcpy((char *)table + syms[i].offset, &addr[i],
		       sizeof(addr[i]));
	/* kept open for the life of the process */
	return 0;
}

int wsnap_dynlib_use(struct wsnap_dynlib *lib, const char **why)
{
	int state;

	pthread_mutex_lock(&lib->lock);
	if (lib->state == 0)
		lib->state = wsnap_dynlib_load(lib->soname, lib->syms, lib->n,
					       lib->table, lib->why) == 0
				     ? 1
				     : -1;
	state = lib->state;
	pthread_mutex_unlock(&lib->lock);
	if (state < 0 && why)
		*why = lib->why;
	return state > 0 ? 0 : -1;
}

void wsnap_dynlib_require(struct wsnap_dynlib *lib, atomic_bool *loaded)
{
	const char *why = NULL;

	if (wsnap_dynlib_use(lib, &why) != 0) {
		fprintf(stderr,
			"wsnap: error while loading shared libraries: %s\n",
			why);
		exit(127);
	}
	atomic_store_explicit(loaded, true, memory_order_release);
}
