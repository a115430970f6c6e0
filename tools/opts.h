/*
 * What the subcommands share: the policy options (a table for
 * parse_options.h), usage errors, reporting and loading an archive.
 * Each returns an exit code (cli.md): 0, 1 (diff), 2, 3, 4.
 */
#ifndef WSNAP_OPTS_H
#define WSNAP_OPTS_H

#include <stdbool.h>
#include <stdio.h>

#include "error.h"
#include "index.h"
#include "parse_options.h"
#include "policy.h"

/*
 * The policy options of policy.md section 6, a table whose base is a
 * struct wsnap_policy (initialized by the caller): every subcommand that
 * reads an archive includes it, with WSNAP_OPT_POLICY.
 */
extern const struct wsnap_option wsnap_policy_options[];

/* The policy options in a table of T, into its struct wsnap_policy field. */
#define WSNAP_OPT_POLICY(T, field)                                             \
	WSNAP_OPT_INCLUDE("POLICY", wsnap_policy_options, T, field,            \
			  struct wsnap_policy)

/*
 * Prints err to stderr as one line 'wsnap: ...' (a rejection in the policy
 * format 'unsafe tar member '<member>': <reason>', member repr-quoted, reason
 * escaped), plus the hint line where an option would let the archive
 * through; with json also the JSON object of cli.md on stdout. Returns the
 * exit code for err->status.
 */
int wsnap_report(const struct wsnap_error *err, bool json);

/* Prints 'wsnap: <cmd>: <msg> (see 'wsnap <cmd> --help')' as one line,
 * <msg> escaped like a bare name (arguments in it may hold anything);
 * returns 2. */
int wsnap_usage_error(const char *cmd, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));

/*
 * With on, usage errors (wsnap_usage_error, and so those of
 * wsnap_options_parse) also print {"ok":false,"error":"usage",
 * "message":"..."} on stdout (cli.md). wsnap_options_parse turns it on when
 * a command's --json (WSNAP_OPTION_JSON) is anywhere on its command line.
 */
void wsnap_opts_usage_json(bool on);

/* Opens ARCHIVE for reading ("-" is standard input): returns an fd or -1
 * with err set (WSNAP_IO). */
int wsnap_open_archive(const char *path, struct wsnap_error *err);

/*
 * How an archive's index is obtained (load.c): the options of the index
 * cache and of sidecars, a group for parse_options.h.
 */
struct wsnap_load_opts {
	bool no_cache;	   /* --no-cache: neither read nor write the cache */
	const char *index; /* --index FILE: a sidecar, or NULL */
	bool verbose;	   /* -v: a line on stderr about the cache */
	bool no_progress;  /* never a progress line */
};

/* --no-cache and --index FILE, into a struct wsnap_load_opts. */
extern const struct wsnap_option wsnap_load_options[];
/* --no-cache only (commands that take no sidecar). */
extern const struct wsnap_option wsnap_cache_options[];

#define WSNAP_OPT_LOAD(T, field)                                               \
	WSNAP_OPT_INCLUDE("INDEX", wsnap_load_options, T, field,               \
			  struct wsnap_load_opts)
#define WSNAP_OPT_CACHE(T, field)                                              \
	WSNAP_OPT_INCLUDE("INDEX", wsnap_cache_options, T, field,              \
			  struct wsnap_load_opts)

/*
 * Opens ARCHIVE ("-" is standard input) and gets its index under policy:
 * from the index cache, from the sidecar lo->index, or built
 * (wsnap_index_build) and then stored in the cache, as lo says (NULL: the
 * cache is used). A build shows a progress line on stderr when it is a
 * terminal and the input is large. keep_data as in struct
 * wsnap_reader_opts (a compressed archive is then decompressed again even
 * when its index comes from a file). Returns the status; on failure err is
 * set and *out is NULL.
 */
enum wsnap_status
wsnap_load_index(const char *path, const struct wsnap_policy *policy,
		 bool keep_data, const struct wsnap_load_opts *lo,
		 struct wsnap_index **out, struct wsnap_error *err);

/*
 * wsnap_load_index on an archive the caller opened (wsnap_open_archive) and
 * keeps: fd is read (see wsnap_index_build) but not closed; path names it in
 * the progress line. For a caller that reads the archive again afterwards
 * (export re-reads a compressed file instead of spilling it).
 */
enum wsnap_status
wsnap_build_index(int fd, const char *path, const struct wsnap_policy *policy,
		  bool keep_data, const struct wsnap_load_opts *lo,
		  struct wsnap_index **out, struct wsnap_error *err);

/*
 * wsnap index without -o: makes sure the index cache holds an intact entry
 * for the archive file at path under policy, building and storing it when
 * it does not. Errors: those of the build, WSNAP_USAGE for standard input,
 * WSNAP_IO when the cache cannot be used or written (the reason says why).
 */
enum wsnap_status wsnap_cache_index(const char *path,
				    const struct wsnap_policy *policy,
				    const struct wsnap_load_opts *lo,
				    struct wsnap_error *err);

/*
 * Flushes f and reports a write error on it ("cannot write 'standard
 * output'") as wsnap_report would. Returns 0, or 4 (WSNAP_IO) on error.
 * An EPIPE (reader went away, as with 'wsnap ls x | head') is an error too.
 */
int wsnap_out_finish(FILE *f, const char *what);

#endif
