/* SPDX-License-Identifier: MIT */
#define WSNAP_CURL_DL_SELF
#include "curl_dl.h"

#include <stddef.h>

#include "array.h"
#include "dynlib.h"

/* the soname of Debian's libcurl4-openssl-dev (the ABI curl.h describes) */
#define CURL_SONAME "libcurl.so.4"

#define SYM(f, field)                                                          \
	{                                                                      \
		f, offsetof(struct wsnap_curl_api, field)                      \
	}

static const struct wsnap_dynsym curl_syms[] = {
	SYM("curl_global_init", global_init),
	SYM("curl_easy_init", easy_init),
	SYM("curl_easy_setopt", easy_setopt),
	SYM("curl_easy_perform", easy_perform),
	SYM("curl_easy_reset", easy_reset),
	SYM("curl_easy_cleanup", easy_cleanup),
	SYM("curl_easy_strerror", easy_strerror),
	SYM("curl_slist_append", slist_append),
	SYM("curl_slist_free_all", slist_free_all),
	SYM("curl_url", url),
	SYM("curl_url_set", url_set),
	SYM("curl_url_get", url_get),
	SYM("curl_url_cleanup", url_cleanup),
	SYM("curl_free", free),
};

_Static_assert(ARRAY_SIZE(curl_syms) * sizeof(void (*)(void)) ==
		       sizeof(struct wsnap_curl_api),
	       "every pointer of wsnap_curl_api has its name in curl_syms");
_Static_assert(sizeof(void *) == sizeof(void (*)(void)),
	       "dlsym's result fits a function pointer");

struct wsnap_curl_api wsnap_curl;

static struct wsnap_dynlib lib =
	WSNAP_DYNLIB_INIT(CURL_SONAME, curl_syms, &wsnap_curl);

int wsnap_curl_load(const char **why)
{
	return wsnap_dynlib_use(&lib, why);
}
