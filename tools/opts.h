/* SPDX-License-Identifier: MIT */
/*
 * What the subcommands share: the policy options (a table for
 * parse_options.h), usage errors, reporting and loading an archive.
 * Each returns an exit code (cli.md): 0, 1 (diff), 2, 3, 4.
 */
#ifndef WSNAP_OPTS_H
#define WSNAP_OPTS_H

#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>

#include "error.h"
#include "index.h"
#include "parse_options.h"
#include "policy.h"
#include "progress.h"
#include "remote.h"

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
 * The options every subcommand takes (cli.md 'Common options'): --json,
 * -v, -q, --progress, --no-progress. A table whose base is a struct
 * wsnap_common (zeroed by the caller), included by every subcommand with
 * WSNAP_OPT_COMMON; the command calls wsnap_common_apply once parsed.
 */
struct wsnap_common {
	bool json;    /* JSON lines on stdout (doc/json.md) */
	bool verbose; /* -v: details on stderr */
	bool quiet;   /* -q: nothing on stderr but errors */
	enum wsnap_progress_mode progress;
};

extern const struct wsnap_option wsnap_common_options[];

#define WSNAP_OPT_COMMON(T, field)                                             \
	WSNAP_OPT_INCLUDE("OPTIONS", wsnap_common_options, T, field,           \
			  struct wsnap_common)

/*
 * Applies the common options to the process once parsed: -q wins over -v
 * and --progress (verbose and progress are changed in c), and the progress
 * mode is set (progress.h).
 */
void wsnap_common_apply(struct wsnap_common *c);

/* one when n is 1, else many: "1 member", "2 members". */
const char *wsnap_plural(uint64_t n, const char *one, const char *many);

/*
 * Prints err to stderr as one line 'wsnap: ...' (a rejection in the policy
 * format 'unsafe tar member '<member>': <reason>', member repr-quoted, reason
 * escaped), plus the hint line where an option would let the archive
 * through; with json also the JSON object of cli.md on stdout. Returns the
 * exit code for err->status.
 */
int wsnap_report(const struct wsnap_error *err, bool json);

/*
 * wsnap_report with the hint a command knows for err (NULL: the policy's
 * hint for a rejection, if any): printed as a second line 'wsnap: hint:
 * ...' and as "hint" in the JSON object.
 */
int wsnap_report_hint(const struct wsnap_error *err, bool json,
		      const char *hint);

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
	/* a remote archive's (mount -o timeout=, cacert=, cache_size=) */
	struct wsnap_remote_opts remote;
	/*
	 * Not an option: set by a caller that can write the index cache entry
	 * later, off its critical path (wsnap mount, once the mount answers).
	 * The entry a build of a plain local archive would write is then
	 * handed back here instead (wsnap_store_later_run writes it), unless
	 * -v asks for the cache's lines. Left NULL otherwise.
	 */
	struct wsnap_store_later **later;
};

/*
 * An index cache entry put off (struct wsnap_load_opts, later): the cache
 * directory, the entry's name and key, and the index it stores (borrowed,
 * as the policy is: both must outlive it). Written as the load would have
 * written it (a temporary file renamed over the name), nothing printed.
 */
struct wsnap_store_later;

/* Writes the entry (ctx is the struct wsnap_store_later); failures are
 * not reported: the cache is an optimisation. It stays to be freed. */
void wsnap_store_later_run(void *ctx);

/* Closes its cache directory and frees it. NULL does nothing. */
void wsnap_store_later_free(struct wsnap_store_later *s);

/*
 * Tables whose base is a struct wsnap_load_opts:
 *  - wsnap_load_options: --no-cache, --index FILE, and the settings of a
 *    remote ARCHIVE (cli.md "Remote snapshots") --timeout S and --cacert
 *    FILE, into its remote (check, ls);
 *  - wsnap_load_read_options: the same and --cache-size N, for commands
 *    that read members' data (mount, export, hydrate);
 *  - wsnap_cache_options: --no-cache only (commands that take no sidecar
 *    nor URL: strip-prefix); wsnap_cache_read_options: --no-cache and the
 *    remote settings with --cache-size (diff).
 * wsnap_remote_options: --timeout and --cacert alone, base a struct
 * wsnap_remote_opts (index). mount's -o timeout=, cacert= and cache_size=
 * set the same.
 */
extern const struct wsnap_option wsnap_load_options[];
extern const struct wsnap_option wsnap_load_read_options[];
extern const struct wsnap_option wsnap_cache_options[];
extern const struct wsnap_option wsnap_cache_read_options[];
extern const struct wsnap_option wsnap_remote_options[];

#define WSNAP_OPT_LOAD(T, field)                                               \
	WSNAP_OPT_INCLUDE("INDEX", wsnap_load_options, T, field,               \
			  struct wsnap_load_opts)
#define WSNAP_OPT_LOAD_READ(T, field)                                          \
	WSNAP_OPT_INCLUDE("INDEX", wsnap_load_read_options, T, field,          \
			  struct wsnap_load_opts)
#define WSNAP_OPT_CACHE(T, field)                                              \
	WSNAP_OPT_INCLUDE("INDEX", wsnap_cache_options, T, field,              \
			  struct wsnap_load_opts)
#define WSNAP_OPT_CACHE_READ(T, field)                                         \
	WSNAP_OPT_INCLUDE("INDEX", wsnap_cache_read_options, T, field,         \
			  struct wsnap_load_opts)
#define WSNAP_OPT_REMOTE(T, field)                                             \
	WSNAP_OPT_INCLUDE("REMOTE", wsnap_remote_options, T, field,            \
			  struct wsnap_remote_opts)

/*
 * A remote setting's value: with size, bytes with an optional K, M or G
 * (powers of 1024), at least a chunk (WSNAP_CHUNK) and at most 1T; else
 * whole seconds from 1 to 3600. Returns 0 with *out, or -1.
 * wsnap_remote_amount_want: what a usage error says is wanted.
 */
int wsnap_remote_amount(const char *s, bool size, uint64_t *out);
const char *wsnap_remote_amount_want(bool size);

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
 * The whole of the remote archive at url in an unlinked temporary file in
 * $TMPDIR (wsnap index URL -o FILE, whose sidecar describes the object
 * byte for byte): its descriptor, or -1 with err set.
 */
int wsnap_download_archive(const char *url, const struct wsnap_remote_opts *ro,
			   struct wsnap_error *err);

/*
 * wsnap index -o and wsnap pack --index: validates the archive file (or
 * the remote archive, downloaded whole with the settings remote, NULL the
 * defaults) at archive under policy and writes
 * its sidecar (indexfile.h) to out, under a temporary name beside it
 * renamed into place (mode 0666 less the umask). Errors: those of the
 * build, WSNAP_USAGE for standard input or a pipe, WSNAP_IO writing out.
 */
enum wsnap_status wsnap_write_sidecar(const char *archive, const char *out,
				      const struct wsnap_policy *policy,
				      const struct wsnap_remote_opts *remote,
				      struct wsnap_error *err);

struct wsnap_json;

/*
 * The summary of a snapshot (doc/json.md): members, directories,
 * implicit_directories, files, symlinks, bytes, compression, as keys of the
 * JSON object j (summary.c).
 */
void wsnap_json_summary(struct wsnap_json *j,
			const struct wsnap_index_stats *st);

/*
 * -v: the same as one line on stderr, 'wsnap: CMD: 'ARCHIVE': 7 members: 3
 * files (1234 bytes), 3 directories, 1 symlink; 1 implicit directory;
 * gzip' (ARCHIVE quoted like a name).
 */
void wsnap_say_summary(const char *cmd, const char *archive,
		       const struct wsnap_index_stats *st);

/* The start of such a line, up to the symlinks, without its end: for
 * commands that add what is theirs (pack). */
void wsnap_say_counts(const char *cmd, const char *path, uint64_t members,
		      uint64_t files, uint64_t bytes, uint64_t dirs,
		      uint64_t symlinks);

/*
 * The PATH operands of ls and export (select.h): paths[0..n) normalized
 * into *out (an array of n strings, freed with wsnap_paths_free; NULL when
 * n is 0). Returns 0, or the exit code after reporting the error (2 for a
 * '..' component, as a usage error of cmd).
 */
int wsnap_paths_parse(const char *cmd, char *const *paths, size_t n,
		      char ***out);
void wsnap_paths_free(char **paths, size_t n);

/*
 * Flushes f and reports a write error on it ("cannot write 'standard
 * output'") as wsnap_report would. Returns 0, or 4 (WSNAP_IO) on error.
 * An EPIPE (reader went away, as with 'wsnap ls x | head') is an error too.
 */
int wsnap_out_finish(FILE *f, const char *what);

#endif
