/*
 * Option parsing and reporting shared by the subcommands.
 *
 * Each subcommand parses its argv with getopt_long, includes
 * WSNAP_POLICY_LONGOPTS in its option table when it reads archives, and
 * passes every option it does not know itself to wsnap_opts_policy().
 * Each returns an exit code (cli.md): 0, 1 (diff), 2, 3, 4.
 */
#ifndef WSNAP_OPTS_H
#define WSNAP_OPTS_H

#include <stdbool.h>
#include <getopt.h>
#include <stdio.h>

#include "error.h"
#include "index.h"
#include "policy.h"

enum wsnap_policy_opt {
	WSNAP_OPT_ALLOW_EXTERNAL_SYMLINKS = 0x1000,
	WSNAP_OPT_NO_SYMLINKS,
	WSNAP_OPT_SKIP,
	WSNAP_OPT_ROOT_NAME,
	WSNAP_OPT_REJECT_PATH,
	WSNAP_OPT_REJECT_SYMLINK,
	WSNAP_OPT_MAX_MEMBERS,
	WSNAP_OPT_MAX_TOTAL_SIZE,
	WSNAP_OPT_MAX_FILE_SIZE,
	WSNAP_OPT_MAX_PATH_LENGTH,
	WSNAP_OPT_MAX_DEPTH,
	WSNAP_OPT_MAX_INDEX_SIZE,
	WSNAP_OPT_JSON,
	WSNAP_OPT_HELP,
	WSNAP_OPT_FIRST_PRIVATE = 0x1100, /* subcommands number theirs here */
};

/* The policy options of policy.md section 6, for a getopt_long table. */
#define WSNAP_POLICY_LONGOPTS                                                  \
	{"allow-external-symlinks", no_argument, NULL,                         \
	 WSNAP_OPT_ALLOW_EXTERNAL_SYMLINKS},                                   \
		{"no-symlinks", no_argument, NULL, WSNAP_OPT_NO_SYMLINKS},     \
		{"skip", required_argument, NULL, WSNAP_OPT_SKIP},             \
		{"root-name", required_argument, NULL, WSNAP_OPT_ROOT_NAME},   \
		{"reject-path", required_argument, NULL,                       \
		 WSNAP_OPT_REJECT_PATH},                                       \
		{"reject-symlink", required_argument, NULL,                    \
		 WSNAP_OPT_REJECT_SYMLINK},                                    \
		{"max-members", required_argument, NULL,                       \
		 WSNAP_OPT_MAX_MEMBERS},                                       \
		{"max-total-size", required_argument, NULL,                    \
		 WSNAP_OPT_MAX_TOTAL_SIZE},                                    \
		{"max-file-size", required_argument, NULL,                     \
		 WSNAP_OPT_MAX_FILE_SIZE},                                     \
		{"max-path-length", required_argument, NULL,                   \
		 WSNAP_OPT_MAX_PATH_LENGTH},                                   \
		{"max-index-size", required_argument, NULL,                    \
		 WSNAP_OPT_MAX_INDEX_SIZE},                                    \
	{                                                                      \
		"max-depth", required_argument, NULL, WSNAP_OPT_MAX_DEPTH      \
	}

/* Help text lines for the policy options (for each subcommand's --help). */
extern const char wsnap_policy_help[];

/*
 * Applies one policy option (opt as getopt_long returned it, arg its
 * argument). Returns 1 when it was a policy option and applied, 0 when opt
 * is not a policy option, -1 on a bad value (message already printed; the
 * caller exits 2).
 */
int wsnap_opts_policy(struct wsnap_policy *p, int opt, const char *arg);

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
 * For getopt_long run with opterr = 0 and an optstring starting with ':':
 * reports the '?' (unknown option) or ':' (missing argument) it returned as
 * a usage error naming the option; returns 2.
 */
int wsnap_opts_bad_option(const char *cmd, int c, char *const argv[]);

/*
 * The end of a subcommand's option switch: opt (as getopt_long returned it)
 * was not one of the subcommand's own, so it is a policy option, or an
 * unknown one, or one missing its argument. Returns 1 when it was a policy
 * option and applied (parsing goes on), else 2 with the usage error
 * reported.
 */
int wsnap_opts_rest(const char *cmd, struct wsnap_policy *p, int opt,
		    const char *arg, char *const argv[]);

/*
 * The command line of a subcommand of the form
 *	wsnap CMD [POLICY] [--json] [-v] OPERAND...
 * (check, ls): wsnap_opts_parse_simple() fills it.
 */
struct wsnap_cmdline {
	struct wsnap_policy policy; /* initialized by the parser; the caller
				       releases it in every case */
	bool json;
	bool verbose;
	char **operands; /* into argv */
	int noperands;
};

enum wsnap_cmdline_flags {
	WSNAP_CMDLINE_VERBOSE = 1 << 0, /* accepts -v, --verbose */
};

/*
 * Parses argv (argv[0] is the subcommand name) with the policy options,
 * --json, -h/--help (calls help()) and, with WSNAP_CMDLINE_VERBOSE, -v.
 * operand_names names the operands expected, space-separated ("ARCHIVE"),
 * for the message when some are missing. Returns -1 when the command should
 * run, else the exit code to return at once: 0 after --help, 2 after a
 * usage error (already reported).
 */
int wsnap_opts_parse_simple(struct wsnap_cmdline *cl, int argc, char **argv,
			    unsigned flags, const char *operand_names,
			    void (*help)(void));

/*
 * With on, usage errors (wsnap_usage_error, wsnap_opts_bad_option, bad
 * policy option values) also print {"ok":false,"error":"usage",
 * "message":"..."} on stdout (cli.md). wsnap_opts_parse_simple turns it on
 * when --json is anywhere on the command line.
 */
void wsnap_opts_usage_json(bool on);

/* Names the running subcommand in messages of wsnap_opts_policy (main.c
 * sets it before dispatching). */
void wsnap_opts_set_command(const char *name);

/* Opens ARCHIVE for reading ("-" is standard input): returns an fd or -1
 * with err set (WSNAP_IO). */
int wsnap_open_archive(const char *path, struct wsnap_error *err);

/*
 * Opens ARCHIVE ("-" is standard input) and builds its index under policy
 * (wsnap_index_build), showing a progress line on stderr when it is a
 * terminal and the input is large. keep_data as in struct wsnap_reader_opts.
 * Returns the status; on failure err is set and *out is NULL.
 */
enum wsnap_status wsnap_load_index(const char *path,
				   const struct wsnap_policy *policy,
				   bool keep_data, struct wsnap_index **out,
				   struct wsnap_error *err);

/*
 * wsnap_load_index on an archive the caller opened (wsnap_open_archive) and
 * keeps: fd is read (see wsnap_index_build) but not closed; path names it in
 * the progress line. For a caller that reads the archive again afterwards
 * (export re-reads a compressed file instead of spilling it).
 */
enum wsnap_status wsnap_build_index(int fd, const char *path,
				    const struct wsnap_policy *policy,
				    bool keep_data, struct wsnap_index **out,
				    struct wsnap_error *err);

/*
 * Flushes f and reports a write error on it ("cannot write 'standard
 * output'") as wsnap_report would. Returns 0, or 4 (WSNAP_IO) on error.
 * An EPIPE (reader went away, as with 'wsnap ls x | head') is an error too.
 */
int wsnap_out_finish(FILE *f, const char *what);

#endif
