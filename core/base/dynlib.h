/* SPDX-License-Identifier: MIT */
/*
 * Libraries loaded when first needed. libcurl (remote archives) and libgit2
 * (diff -p) bring some forty shared libraries with them (LDAP, Kerberos,
 * GnuTLS, ICU, ...): linked in, every run of wsnap mapped and relocated them
 * all before main, several milliseconds of CPU per command, most of a
 * remount's time. A command that reads no URL and writes no patch now loads
 * neither.
 *
 * A user of such a library includes its wrapper header (curl_dl.h,
 * git_dl.h), which maps the library's function names to a table of pointers,
 * and calls the wrapper's load function before the first call.
 */
#ifndef WSNAP_DYNLIB_H
#define WSNAP_DYNLIB_H

#include <pthread.h>
#include <stdatomic.h>
#include <stddef.h>

/* One function of a library: its name and where its pointer goes in the
 * caller's table. */
struct wsnap_dynsym {
	const char *name;
	size_t offset;
};

#define WSNAP_DYNLIB_WHY 256

/*
 * Opens soname (RTLD_NOW | RTLD_LOCAL) and stores the address of each of
 * the n functions at its offset in table. Returns 0, or -1 with a one-line
 * reason in why (WSNAP_DYNLIB_WHY bytes) and table untouched. Not
 * thread-safe: wsnap_dynlib_use runs it once.
 */
int wsnap_dynlib_load(const char *soname, const struct wsnap_dynsym *syms,
		      size_t n, void *table, char *why);

/* A library loaded at most once per process: WSNAP_DYNLIB_INIT(...). */
struct wsnap_dynlib {
	const char *soname;
	const struct wsnap_dynsym *syms;
	size_t n;
	void *table;
	pthread_mutex_t lock;
	int state; /* 0 not tried yet, 1 loaded, -1 failed (why says why) */
	char why[WSNAP_DYNLIB_WHY];
};

#define WSNAP_DYNLIB_INIT(soname, syms, table)                                 \
	{                                                                      \
		(soname), (syms), sizeof(syms) / sizeof((syms)[0]), (table),   \
			PTHREAD_MUTEX_INITIALIZER, 0, ""                       \
	}

/* Loads lib on the first call (thread-safe); 0, or -1 with *why (if why)
 * the reason, then and on every later call. */
int wsnap_dynlib_use(struct wsnap_dynlib *lib, const char **why);

/*
 * For a library wsnap cannot run without (libarchive, libcrypto), loaded
 * late only to spare the commands that never call it: loads lib once and
 * then sets *loaded (release). If it cannot be loaded, prints why on stderr,
 * as the dynamic loader did when the library was linked, and ends the
 * process with the loader's status 127: the one exit() of core/, for a
 * failure that used to happen before main.
 */
void wsnap_dynlib_require(struct wsnap_dynlib *lib, atomic_bool *loaded);

#endif
