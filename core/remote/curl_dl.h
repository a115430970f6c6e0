/* SPDX-License-Identifier: MIT */
/*
 * libcurl, loaded on first use (dynlib.h says why). Include this instead of
 * <curl/curl.h>: the curl_* functions wsnap calls then go through
 * wsnap_curl's pointers, and wsnap_curl_load must have succeeded before the
 * first of them. A function not listed here does not link (libcurl is not
 * on the link line): add it to the table, the macros and curl_dl.c.
 */
#ifndef WSNAP_CURL_DL_H
#define WSNAP_CURL_DL_H

#include <curl/curl.h>

struct wsnap_curl_api {
	__typeof__(curl_global_init) *global_init;
	__typeof__(curl_easy_init) *easy_init;
	__typeof__(curl_easy_setopt) *easy_setopt;
	__typeof__(curl_easy_perform) *easy_perform;
	__typeof__(curl_easy_reset) *easy_reset;
	__typeof__(curl_easy_cleanup) *easy_cleanup;
	__typeof__(curl_easy_strerror) *easy_strerror;
	__typeof__(curl_slist_append) *slist_append;
	__typeof__(curl_slist_free_all) *slist_free_all;
	__typeof__(curl_url) *url;
	__typeof__(curl_url_set) *url_set;
	__typeof__(curl_url_get) *url_get;
	__typeof__(curl_url_cleanup) *url_cleanup;
	__typeof__(curl_free) *free;
};

extern struct wsnap_curl_api wsnap_curl;

/* Loads libcurl once (thread-safe). 0, or -1 with *why a one-line reason
 * (static storage) when it cannot be loaded. */
int wsnap_curl_load(const char **why);

#ifndef WSNAP_CURL_DL_SELF
/* (curl.h's type-checking wrapper of curl_easy_setopt gives way) */
#undef curl_easy_setopt
#define curl_global_init    wsnap_curl.global_init
#define curl_easy_init	    wsnap_curl.easy_init
#define curl_easy_setopt    wsnap_curl.easy_setopt
#define curl_easy_perform   wsnap_curl.easy_perform
#define curl_easy_reset	    wsnap_curl.easy_reset
#define curl_easy_cleanup   wsnap_curl.easy_cleanup
#define curl_easy_strerror  wsnap_curl.easy_strerror
#define curl_slist_append   wsnap_curl.slist_append
#define curl_slist_free_all wsnap_curl.slist_free_all
#define curl_url	    wsnap_curl.url
#define curl_url_set	    wsnap_curl.url_set
#define curl_url_get	    wsnap_curl.url_get
#define curl_url_cleanup    wsnap_curl.url_cleanup
#define curl_free	    wsnap_curl.free
#endif

#endif
