/* SPDX-License-Identifier: MIT */
/*
 * Declarative command lines: one table per subcommand drives both the
 * parsing of its argv and its --help (git's parse-options is the model), so
 * that what --help lists and what the command accepts cannot drift apart.
 *
 * A table is an array of struct wsnap_option ended by WSNAP_OPT_END(). An
 * entry names its target by its offset in a struct of the caller's (the
 * base, given to wsnap_options_parse); an included table (the policy
 * options, wsnap_policy_options in opts.h) has its own base at an offset in
 * the outer one. Tables hold no pointers into a running command, so they
 * are static const and --help needs no command state.
 *
 * Parsing follows getopt_long's conventions (GNU): options and operands may
 * be mixed; '--' ends the options; '-' and '' are operands; short flags
 * bundle ('-fv'); a short option's argument is the rest of its word or the
 * next word ('-oro', '-o ro'); a long option's argument follows '=' or is
 * the next word, whatever it looks like ('--skip --json' skips '--json'); a
 * long name may be shortened to any prefix that names one option only.
 * -h and --help are always there (they print the help and return 0). The
 * first bad option is reported as a usage error (opts.h), one line:
 *	wsnap: CMD: option '--x' is not known (see 'wsnap CMD --help')
 * and parsing stops.
 */
#ifndef WSNAP_PARSE_OPTIONS_H
#define WSNAP_PARSE_OPTIONS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

enum wsnap_option_kind {
	WSNAP_OPTION_END,      /* ends a table */
	WSNAP_OPTION_GROUP,    /* --help: heading (help) of the entries after */
	WSNAP_OPTION_NOTE,     /* --help: a paragraph (help) among them */
	WSNAP_OPTION_INCLUDE,  /* the entries of table, base at offset */
	WSNAP_OPTION_BOOL,     /* bool: set to true */
	WSNAP_OPTION_STRING,   /* const char *: the argument, the last given */
	WSNAP_OPTION_LIST,     /* struct wsnap_option_list: every argument */
	WSNAP_OPTION_NUMBER,   /* uint64_t: a whole number from 0 to max */
	WSNAP_OPTION_CALLBACK, /* callback(cmd, target, argument) */
	WSNAP_OPTION_HELP,     /* -h, --help (built in, never in a table) */
};

enum wsnap_option_flags {
	/* NUMBER: also K, M, G, T, P suffixes (powers of 1024; 'KiB' and 'KB'
	 * too) and 'unlimited' (UINT64_MAX, only where max is UINT64_MAX) */
	WSNAP_OPTION_BYTES = 1 << 0,
	/* BOOL: given anywhere before '--', usage errors also go to stdout as
	 * JSON (wsnap_opts_usage_json), those of the parser included */
	WSNAP_OPTION_JSON = 1 << 1,
	/* STRING: must be given (its target starts NULL); shown without
	 * brackets in the usage line */
	WSNAP_OPTION_REQUIRED = 1 << 2,
};

struct wsnap_option {
	enum wsnap_option_kind kind;
	char short_name;       /* 'v' for -v, or 0 */
	const char *long_name; /* "verbose" for --verbose, or NULL */
	/* The argument's name in --help ("P", "BYTES"): an option takes an
	 * argument exactly when it has one. INCLUDE: the group's name in the
	 * usage line ("POLICY"). */
	const char *arg_name;
	const char *help; /* one line of --help; wrapped to fit */
	size_t offset;	  /* of the target in the base */
	unsigned flags;	  /* enum wsnap_option_flags */
	uint64_t max;	  /* NUMBER: the largest value accepted */
	/*
	 * CALLBACK: applies arg (NULL for an option without argument) to
	 * target, the base plus offset; cmd names the subcommand for
	 * messages. Returns 0, or the exit code after reporting the error
	 * (wsnap_usage_error: 2).
	 */
	int (*callback)(const char *cmd, void *target, const char *arg);
	const struct wsnap_option *table; /* INCLUDE */
};

/* The arguments of a LIST option, in order; items point into argv. */
struct wsnap_option_list {
	const char **items;
	size_t count;
	size_t cap;
};

/* Frees what the parser allocated for l; l is empty afterwards. */
void wsnap_option_list_release(struct wsnap_option_list *l);

/*
 * The offset of field in struct type T, checked at compile time to be of
 * type type (a mismatch is a comparison of distinct pointer types).
 */
#define WSNAP_OPTION_TARGET(T, field, type)                                    \
	(offsetof(T, field) + 0 * sizeof((type *)0 == &((T *)0)->field))

/* The entries, for tables (see the kinds above); s 0 or l NULL: none. */
#define WSNAP_OPT_END()                                                        \
	{                                                                      \
		.kind = WSNAP_OPTION_END                                       \
	}
#define WSNAP_OPT_GROUP(text)                                                  \
	{                                                                      \
		.kind = WSNAP_OPTION_GROUP, .help = (text)                     \
	}
#define WSNAP_OPT_NOTE(text)                                                   \
	{                                                                      \
		.kind = WSNAP_OPTION_NOTE, .help = (text)                      \
	}
#define WSNAP_OPT_INCLUDE(name, tbl, T, field, type)                           \
	{                                                                      \
		.kind = WSNAP_OPTION_INCLUDE, .arg_name = (name),              \
		.table = (tbl), .offset = WSNAP_OPTION_TARGET(T, field, type), \
	}
#define WSNAP_OPT_BOOL(s, l, T, field, h)                                      \
	{                                                                      \
		.kind = WSNAP_OPTION_BOOL, .short_name = (s),                  \
		.long_name = (l), .help = (h),                                 \
		.offset = WSNAP_OPTION_TARGET(T, field, bool),                 \
	}
/* --json: a BOOL with WSNAP_OPTION_JSON. */
#define WSNAP_OPT_JSON(T, field, h)                                            \
	{                                                                      \
		.kind = WSNAP_OPTION_BOOL, .long_name = "json", .help = (h),   \
		.flags = WSNAP_OPTION_JSON,                                    \
		.offset = WSNAP_OPTION_TARGET(T, field, bool),                 \
	}
#define WSNAP_OPT_STRING(s, l, a, T, field, h)                                 \
	WSNAP_OPT_STRING_FLAGS(s, l, a, T, field, 0, h)
#define WSNAP_OPT_STRING_FLAGS(s, l, a, T, field, fl, h)                       \
	{                                                                      \
		.kind = WSNAP_OPTION_STRING, .short_name = (s),                \
		.long_name = (l), .arg_name = (a), .help = (h), .flags = (fl), \
		.offset = WSNAP_OPTION_TARGET(T, field, const char *),         \
	}
#define WSNAP_OPT_LIST(s, l, a, T, field, h)                                   \
	{                                                                      \
		.kind = WSNAP_OPTION_LIST, .short_name = (s),                  \
		.long_name = (l), .arg_name = (a), .help = (h),                \
		.offset = WSNAP_OPTION_TARGET(T, field,                        \
					      struct wsnap_option_list),       \
	}
#define WSNAP_OPT_NUMBER(s, l, a, T, field, maximum, fl, h)                    \
	{                                                                      \
		.kind = WSNAP_OPTION_NUMBER, .short_name = (s),                \
		.long_name = (l), .arg_name = (a), .help = (h),                \
		.max = (maximum), .flags = (fl),                               \
		.offset = WSNAP_OPTION_TARGET(T, field, uint64_t),             \
	}
/* a NULL: an option without argument. The target is the base plus off
 * (0: the base itself). */
#define WSNAP_OPT_CALLBACK(s, l, a, off, fn, h)                                \
	{                                                                      \
		.kind = WSNAP_OPTION_CALLBACK, .short_name = (s),              \
		.long_name = (l), .arg_name = (a), .help = (h),                \
		.offset = (off), .callback = (fn),                             \
	}

/* A subcommand's command line and the prose of its --help. */
struct wsnap_cmd_usage {
	const char *name;     /* "check" */
	const char *operands; /* after the options in the usage line */
	/* What the command does: wrapped to fit; '\n' ends a line, and the
	 * next keeps its own indentation ("  A  only in B") */
	const char *description;
	const char *exit_status; /* "0 safe, 2 usage error, ..." */
	const struct wsnap_option *options;
};

/* What wsnap_options_parse returns when the command should run. */
#define WSNAP_OPTIONS_RUN (-1)

/*
 * Parses argv (*argc words; argv[0] is the subcommand's name) by u's table
 * into base: the struct u's offsets point into, already holding the
 * defaults. Returns WSNAP_OPTIONS_RUN with the operands moved to argv[0 ..
 * *argc), in their order (argv[*argc] is then NULL); else the exit code to
 * return at once: 0 after --help (printed on stdout), 2 after a usage error
 * (reported; also when a WSNAP_OPTION_REQUIRED option is missing: '--x is
 * required'), 4 when out of memory (reported). What a callback or a LIST
 * took is in base either way (the caller releases it).
 */
int wsnap_options_parse(const struct wsnap_cmd_usage *u, void *base, int *argc,
			char **argv);

/*
 * Writes u's --help to f: the usage line (generated from the table), the
 * description, every option with its help aligned in a column (the
 * command's own, -h/--help, then each included group under its heading),
 * and the exit status line; all wrapped to 79 columns.
 */
void wsnap_options_help(const struct wsnap_cmd_usage *u, FILE *f);

#endif
