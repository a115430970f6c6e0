/* SPDX-License-Identifier: MIT */
/*
 * Unit tests of tools/parse_options.c, on a table of every kind: unknown
 * and ambiguous options, missing and unwanted arguments, '--opt=value' and
 * '--opt value', bundled short flags, repeated list options, numbers at
 * and past their bounds, operands ('-', '--', mixed with options),
 * callbacks, included tables, required options, the common options, and
 * the --help generated from the table.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>

#include "capture.h"
#include "opts.h"
#include "parse_options.h"
#include "array.h"

struct inner {
	bool deep;
	uint64_t level;
};

struct toy {
	bool all, brief, color;
	const char *out;
	struct wsnap_option_list inc;
	uint64_t count, size, big;
	const char *seen[4]; /* what the callback got */
	int calls;
	struct inner in;
	bool json;
};

/* Records its argument; fails on "bad" as a command's callback would. */
static int record(const char *cmd, void *target, const char *arg)
{
	struct toy *t = target;

	if (arg && strcmp(arg, "bad") == 0)
		return wsnap_usage_error(cmd, "bad --call");
	if (t->calls < 4)
		t->seen[t->calls] = arg;
	t->calls++;
	return 0;
}

#define I struct inner
/* clang-format off */
static const struct wsnap_option inner_options[] = {
	WSNAP_OPT_GROUP("inner options:"),
	WSNAP_OPT_BOOL(0, "deep", I, deep, "go deep"),
	WSNAP_OPT_NUMBER(0, "level", "N", I, level, 9, 0, "how deep, 0 to 9"),
	WSNAP_OPT_NOTE("N: a small number."),
	WSNAP_OPT_END(),
};
/* clang-format on */
#undef I

#define T struct toy
/* clang-format off */
static const struct wsnap_option toy_options[] = {
	WSNAP_OPT_INCLUDE("INNER", inner_options, T, in, struct inner),
	WSNAP_OPT_BOOL('a', "all", T, all, "everything"),
	WSNAP_OPT_BOOL('b', "brief", T, brief, "less"),
	WSNAP_OPT_BOOL(0, "color", T, color, "in color"),
	WSNAP_OPT_BOOL(0, "colorize", T, color, "in color, spelled longer"),
	WSNAP_OPT_STRING('o', "out", "FILE", T, out, "write to FILE"),
	WSNAP_OPT_LIST('I', "inc", "DIR", T, inc, "add DIR (repeatable)"),
	WSNAP_OPT_NUMBER('n', "count", "N", T, count, 100, 0,
			 "how many, 0 to 100"),
	WSNAP_OPT_NUMBER(0, "size", "BYTES", T, size, UINT64_MAX,
			 WSNAP_OPTION_BYTES, "how much"),
	WSNAP_OPT_NUMBER(0, "big", "N", T, big, UINT64_MAX, 0,
			 "a plain 64-bit number"),
	WSNAP_OPT_CALLBACK('c', "call", "X", 0, record, "call back with X"),
	WSNAP_OPT_CALLBACK(0, "ping", NULL, 0, record,
			   "call back without argument"),
	WSNAP_OPT_JSON(T, json, "JSON, and JSON usage errors"),
	WSNAP_OPT_END(),
};

static const struct wsnap_cmd_usage toy_usage = {
	.name = "toy",
	.operands = "IN [OUT...]",
	.description = "Plays with options. This description is long enough "
		       "to need a second line when it is wrapped at the "
		       "width of a terminal.\n"
		       "  indented  kept as it is",
	.exit_status = "0 ok, 2 usage",
	.options = toy_options,
};
/* clang-format on */
#undef T

/* Parses argv (NULL-terminated) into t; output in c; *n gets the count of
 * operands, which are then in argv[0 .. *n). */
static int parse(struct toy *t, char **argv, int *n, struct ts_capture *c)
{
	int argc = 0, rc;

	while (argv[argc])
		argc++;
	memset(t, 0, sizeof(*t));
	ts_capture_begin(c);
	rc = wsnap_options_parse(&toy_usage, t, &argc, argv);
	ts_capture_end(c);
	*n = argc;
	wsnap_opts_usage_json(false);
	return rc;
}

/* Parses argv, expects a usage error with exactly message msg. */
static void expect_usage(char **argv, const char *msg)
{
	char want[512];
	struct ts_capture c;
	struct toy t;
	int n;

	assert_int_equal(parse(&t, argv, &n, &c), 2);
	snprintf(want, sizeof(want),
		 "wsnap: toy: %s (see 'wsnap toy --help')\n", msg);
	assert_string_equal(c.stderr_text, want);
	assert_string_equal(c.stdout_text, "");
	wsnap_option_list_release(&t.inc);
}

static void test_parse_options_unknown(void **state)
{
	char *a1[] = {"toy", "--nope", NULL};
	char *a2[] = {"toy", "--nope=3", "x", NULL};
	char *a3[] = {"toy", "-x", NULL};
	char *a4[] = {"toy", "-abx", NULL};
	char *a5[] = {"toy", "x", "-", "--al", "--", "--nope", NULL};
	char *a6[] = {"toy", "-a-", NULL};

	expect_usage(a1, "option '--nope' is not known");
	expect_usage(a2, "option '--nope' is not known");
	expect_usage(a3, "option '-x' is not known");
	expect_usage(a4, "option '-x' is not known");
	expect_usage(a6, "option '--' is not known");
	/* after '--', '--nope' is an operand; '--al' is short for --all */
	{
		struct ts_capture c;
		struct toy t;
		int n;

		assert_int_equal(parse(&t, a5, &n, &c), WSNAP_OPTIONS_RUN);
		assert_true(t.all);
		assert_int_equal(n, 3);
		assert_string_equal(a5[0], "x");
		assert_string_equal(a5[1], "-");
		assert_string_equal(a5[2], "--nope");
		assert_null(a5[3]);
		assert_string_equal(c.stderr_text, "");
	}
}

static void test_parse_options_abbreviations(void **state)
{
	char *a1[] = {"toy", "--c", NULL};
	char *a2[] = {"toy", "--colo", NULL};
	char *a3[] = {"toy", "--color", "--br", "--dee", "--he", NULL};
	struct ts_capture c;
	struct toy t;
	int n;

	/* --c: --color, --colorize, --count, --call */
	expect_usage(a1, "option '--c' is ambiguous");
	expect_usage(a2, "option '--colo' is ambiguous");
	/* an exact name wins over the longer ones it is a prefix of; an
	 * included table and the built-in --help are searched too */
	assert_int_equal(parse(&t, a3, &n, &c), 0);
	assert_true(t.color && t.brief && t.in.deep);
	assert_true(strncmp(c.stdout_text, "usage: wsnap toy ", 17) == 0);
}

static void test_parse_options_missing_argument(void **state)
{
	char *a1[] = {"toy", "--out", NULL};
	char *a2[] = {"toy", "x", "-o", NULL};
	char *a3[] = {"toy", "-abo", NULL};
	char *a4[] = {"toy", "--level", NULL};
	char *a5[] = {"toy", "--all=yes", NULL};
	char *a6[] = {"toy", "--ping=1", NULL};
	char *a7[] = {"toy", "--ou", NULL};

	expect_usage(a1, "option '--out' needs an argument");
	expect_usage(a2, "option '-o' needs an argument");
	expect_usage(a3, "option '-o' needs an argument");
	expect_usage(a4, "option '--level' needs an argument");
	expect_usage(a5, "option '--all' takes no argument");
	expect_usage(a6, "option '--ping' takes no argument");
	/* named as typed */
	expect_usage(a7, "option '--ou' needs an argument");
}

static void test_parse_options_argument_forms(void **state)
{
	char *a1[] = {"toy", "--out=a", NULL};
	char *a2[] = {"toy", "--out", "b", NULL};
	char *a3[] = {"toy", "-oc", NULL};
	char *a4[] = {"toy", "-o", "d", NULL};
	char *a5[] = {"toy", "--out=", NULL};
	char *a6[] = {"toy", "--out", "--all", NULL};
	char *a7[] = {"toy", "--out=x=y", "-o", "-", "--out", "last", NULL};
	struct {
		char **argv;
		const char *want;
	} cases[] = {
		{a1, "a"}, {a2, "b"},	  {a3, "c"},	{a4, "d"},
		{a5, ""},  {a6, "--all"}, {a7, "last"},
	};
	struct ts_capture c;
	struct toy t;
	size_t i;
	int n;

	for (i = 0; i < ARRAY_SIZE(cases); i++) {
		assert_int_equal(parse(&t, cases[i].argv, &n, &c),
				 WSNAP_OPTIONS_RUN);
		assert_non_null(t.out);
		assert_string_equal(t.out, cases[i].want);
		assert_int_equal(n, 0);
		/* '--out --all' takes '--all' as the argument */
		assert_false(t.all);
	}
	assert_string_equal(c.stderr_text, "");
}

static void test_parse_options_bundled_flags(void **state)
{
	char *a1[] = {"toy", "-ab", NULL};
	char *a2[] = {"toy", "-bao", "f", "-n7", "x", NULL};
	char *a3[] = {"toy", "-baofile", NULL};
	char *a4[] = {"toy", "-ah", "--nope", NULL};
	struct ts_capture c;
	struct toy t;
	int n;

	assert_int_equal(parse(&t, a1, &n, &c), WSNAP_OPTIONS_RUN);
	assert_true(t.all && t.brief);
	assert_false(t.color);

	assert_int_equal(parse(&t, a2, &n, &c), WSNAP_OPTIONS_RUN);
	assert_true(t.all && t.brief);
	assert_string_equal(t.out, "f");
	assert_int_equal(t.count, 7);
	assert_int_equal(n, 1);
	assert_string_equal(a2[0], "x");

	assert_int_equal(parse(&t, a3, &n, &c), WSNAP_OPTIONS_RUN);
	assert_string_equal(t.out, "file");

	/* -h in a bundle: the help, before the later unknown option */
	assert_int_equal(parse(&t, a4, &n, &c), 0);
	assert_true(t.all);
	assert_string_equal(c.stderr_text, "");
	assert_true(strncmp(c.stdout_text, "usage: wsnap toy ", 17) == 0);
}

static void test_parse_options_repeated_list(void **state)
{
	char *a1[] = {"toy", "-I", "a", "x",  "-Ib", "--inc=c", "--in",
		      "d",   "-I", "",	"-I", "-a",  NULL};
	char *a2[] = {"toy", "y", NULL};
	struct ts_capture c;
	struct toy t;
	int n;

	assert_int_equal(parse(&t, a1, &n, &c), WSNAP_OPTIONS_RUN);
	assert_int_equal(t.inc.count, 6);
	assert_string_equal(t.inc.items[0], "a");
	assert_string_equal(t.inc.items[1], "b");
	assert_string_equal(t.inc.items[2], "c");
	assert_string_equal(t.inc.items[3], "d");
	assert_string_equal(t.inc.items[4], "");
	assert_string_equal(t.inc.items[5], "-a");
	assert_false(t.all);
	assert_int_equal(n, 1);
	assert_string_equal(a1[0], "x");
	wsnap_option_list_release(&t.inc);
	assert_null(t.inc.items);
	assert_int_equal(t.inc.count, 0);

	/* never given: empty, nothing to free */
	assert_int_equal(parse(&t, a2, &n, &c), WSNAP_OPTIONS_RUN);
	assert_int_equal(t.inc.count, 0);
	assert_null(t.inc.items);
	wsnap_option_list_release(&t.inc);
}

/* Parses 'toy OPT VALUE'; returns the parser's result. */
static int number(struct toy *t, const char *opt, const char *value,
		  struct ts_capture *c)
{
	char *argv[] = {"toy", (char *)opt, (char *)value, NULL};
	int n;

	return parse(t, argv, &n, c);
}

static void test_parse_options_number_bounds(void **state)
{
	static const char *const bad[] = {
		"",
		"-1",
		"+1",
		" 1",
		"1 ",
		"0x10",
		"1e2",
		"1.0",
		"1K",
		"x",
		"101",
		"18446744073709551616",
		"99999999999999999999999",
	};
	struct ts_capture c;
	struct toy t;
	size_t i;

	assert_int_equal(number(&t, "--count", "0", &c), WSNAP_OPTIONS_RUN);
	assert_int_equal(t.count, 0);
	assert_int_equal(number(&t, "--count", "100", &c), WSNAP_OPTIONS_RUN);
	assert_int_equal(t.count, 100);
	assert_int_equal(number(&t, "-n", "0099", &c), WSNAP_OPTIONS_RUN);
	assert_int_equal(t.count, 99);
	for (i = 0; i < ARRAY_SIZE(bad); i++) {
		assert_int_equal(number(&t, "--count", bad[i], &c), 2);
		assert_int_equal(t.count, 0);
		assert_true(strncmp(c.stderr_text,
				    "wsnap: toy: invalid --count '", 29) == 0);
		assert_non_null(strstr(c.stderr_text,
				       "': want a whole number from 0 to 100 "
				       "(see 'wsnap toy --help')\n"));
	}
	/* the value escaped; an included table's number */
	assert_int_equal(number(&t, "--level", "1\n\x1b", &c), 2);
	assert_string_equal(c.stderr_text,
			    "wsnap: toy: invalid --level '1\\n\\x1b': want a "
			    "whole number from 0 to 9 (see 'wsnap toy "
			    "--help')\n");
	assert_int_equal(number(&t, "--level", "9", &c), WSNAP_OPTIONS_RUN);
	assert_int_equal(t.in.level, 9);

	/* 64 bits: the largest, and one more (overflow) */
	assert_int_equal(number(&t, "--big", "18446744073709551615", &c),
			 WSNAP_OPTIONS_RUN);
	assert_true(t.big == UINT64_MAX);
	assert_int_equal(number(&t, "--big", "18446744073709551616", &c), 2);
	assert_int_equal(number(&t, "--big", "unlimited", &c), 2);
}

static void test_parse_options_byte_sizes(void **state)
{
	static const struct {
		const char *arg;
		uint64_t want;
	} ok[] = {
		{"0", 0},
		{"1k", 1024},
		{"1KiB", 1024},
		{"1KB", 1024},
		{"2M", 2 << 20},
		{"3G", 3ULL << 30},
		{"4T", 4ULL << 40},
		{"16383P", 16383ULL << 50},
		{"18446744073709551615", UINT64_MAX},
		{"unlimited", UINT64_MAX},
	};
	static const char *const bad[] = {
		"16384P",
		"17179869184G",
		"1Q",
		"1Kib",
		"1KiBB",
		"1 K",
		"K",
		"1.5G",
		"unlimited2",
		"-1",
		"18446744073709551616",
	};
	struct ts_capture c;
	struct toy t;
	size_t i;

	for (i = 0; i < ARRAY_SIZE(ok); i++) {
		assert_int_equal(number(&t, "--size", ok[i].arg, &c),
				 WSNAP_OPTIONS_RUN);
		assert_true(t.size == ok[i].want);
	}
	for (i = 0; i < ARRAY_SIZE(bad); i++) {
		assert_int_equal(number(&t, "--size", bad[i], &c), 2);
		assert_true(t.size == 0);
		assert_non_null(strstr(c.stderr_text,
				       "want a number of bytes such as 1000, "
				       "64K, 1M, 64G, or 'unlimited'"));
	}
}

static void test_parse_options_callback(void **state)
{
	char *a1[] = {"toy", "--call", "x", "-cy", "--ping", "z", NULL};
	char *a2[] = {"toy", "--call=bad", "--nope", NULL};
	struct ts_capture c;
	struct toy t;
	int n;

	assert_int_equal(parse(&t, a1, &n, &c), WSNAP_OPTIONS_RUN);
	assert_int_equal(t.calls, 3);
	assert_string_equal(t.seen[0], "x");
	assert_string_equal(t.seen[1], "y");
	assert_null(t.seen[2]);
	assert_int_equal(n, 1);
	/* the callback's error stops the parse: --nope is never seen */
	expect_usage(a2, "bad --call");
}

static void test_parse_options_json_usage_errors(void **state)
{
	char *a1[] = {"toy", "--nope", "--json", NULL};
	char *a2[] = {"toy", "--nope", "--", "--json", NULL};
	char *a3[] = {"toy", "--json", "in", NULL};
	struct ts_capture c;
	struct toy t;
	int n;

	assert_int_equal(parse(&t, a1, &n, &c), 2);
	assert_string_equal(c.stdout_text,
			    "{\"ok\":false,\"error\":\"usage\",\"message\":"
			    "\"option '--nope' is not known\"}\n");
	assert_int_equal(parse(&t, a2, &n, &c), 2);
	assert_string_equal(c.stdout_text, "");
	assert_int_equal(parse(&t, a3, &n, &c), WSNAP_OPTIONS_RUN);
	assert_true(t.json);
}

/* Every option of table t (and of the tables it includes) is in help, with
 * its argument and its help text. */
static void expect_all_listed(const struct wsnap_option *t, const char *help)
{
	char name[128];

	for (; t->kind != WSNAP_OPTION_END; t++) {
		if (t->kind == WSNAP_OPTION_INCLUDE) {
			expect_all_listed(t->table, help);
			continue;
		}
		if (t->kind == WSNAP_OPTION_GROUP) {
			assert_non_null(strstr(help, t->help));
			continue;
		}
		if (t->kind < WSNAP_OPTION_BOOL)
			continue;
		if (t->long_name)
			snprintf(name, sizeof(name), "--%s%s%s", t->long_name,
				 t->arg_name ? " " : "",
				 t->arg_name ? t->arg_name : "");
		else
			snprintf(name, sizeof(name), "-%c %s", t->short_name,
				 t->arg_name);
		assert_non_null(strstr(help, name));
		if (t->short_name && t->long_name) {
			snprintf(name, sizeof(name), "-%c, --%s", t->short_name,
				 t->long_name);
			assert_non_null(strstr(help, name));
		}
		/* the help's first words are on the option's line */
		snprintf(name, sizeof(name), "%.12s", t->help);
		assert_non_null(strstr(help, name));
	}
}

/* Every line at most 79 columns, none ending in a space. */
static void expect_fits(const char *help)
{
	const char *p = help, *nl;

	while ((nl = strchr(p, '\n')) != NULL) {
		assert_in_range(nl - p, 0, 79);
		assert_true(nl == p || nl[-1] != ' ');
		p = nl + 1;
	}
	assert_string_equal(p, "");
}

/* u's --help, malloc'd. */
static char *help_text(const struct wsnap_cmd_usage *u)
{
	char *text = NULL;
	size_t len = 0;
	FILE *f = open_memstream(&text, &len);

	assert_non_null(f);
	wsnap_options_help(u, f);
	fclose(f);
	assert_non_null(text);
	return text;
}

static void test_parse_options_help_lists_every_option(void **state)
{
	char *text = help_text(&toy_usage);
	const char *usage;

	expect_all_listed(toy_options, text);
	expect_fits(text);
	assert_non_null(strstr(text, "  -h, --help "));
	assert_non_null(strstr(text, "show this help\n"));
	assert_non_null(strstr(text, "\n  N: a small number.\n"));
	assert_non_null(strstr(text, "\n  indented  kept as it is\n"));
	assert_non_null(strstr(text, "\nexit status: 0 ok, 2 usage\n"));
	/* the usage line: the group's name, short names where there are
	 * ones, arguments, then the operands; wrapped under the first word */
	usage = "usage: wsnap toy [INNER] [-a] [-b] [--color] [--colorize] "
		"[-o FILE] [-I DIR]\n"
		"                 [-n N] [--size BYTES] [--big N] [-c X] "
		"[--ping] [--json] IN\n"
		"                 [OUT...]\n\n";
	assert_true(strncmp(text, usage, strlen(usage)) == 0);
	/* own options, -h, then the included group under its heading */
	assert_true(strstr(text, "--json") < strstr(text, "-h, --help"));
	assert_true(strstr(text, "-h, --help") <
		    strstr(text, "inner options:"));
	assert_true(strstr(text, "inner options:") < strstr(text, "--deep"));
	free(text);
}

/* The policy group, as every archive-reading subcommand shows it. */
static void test_parse_options_help_policy_group(void **state)
{
	struct policy_cmd {
		struct wsnap_policy policy;
	};
	static const struct wsnap_option options[] = {
		WSNAP_OPT_POLICY(struct policy_cmd, policy),
		WSNAP_OPT_END(),
	};
	static const struct wsnap_cmd_usage u = {
		.name = "p",
		.operands = "ARCHIVE",
		.description = "d",
		.exit_status = "0",
		.options = options,
	};
	char *text = help_text(&u);

	assert_true(strncmp(text, "usage: wsnap p [POLICY] ARCHIVE\n", 32) ==
		    0);
	expect_all_listed(options, text);
	expect_fits(text);
	/* one column for all: the longest name and two spaces */
	assert_non_null(strstr(text, "\n  --allow-external-symlinks  accept "));
	assert_non_null(strstr(text, "\n  --skip P                   ignore "));
	assert_non_null(strstr(text, "\n  -h, --help                 show "));
	free(text);
}

/* The common options, as every subcommand shows them: before the policy
 * group; their --json makes usage errors JSON from inside the include. */
static void test_parse_options_common_group(void **state)
{
	struct common_cmd {
		struct wsnap_common common;
		struct wsnap_policy policy;
	};
	static const struct wsnap_option options[] = {
		WSNAP_OPT_COMMON(struct common_cmd, common),
		WSNAP_OPT_POLICY(struct common_cmd, policy),
		WSNAP_OPT_END(),
	};
	static const struct wsnap_cmd_usage u = {
		.name = "c",
		.operands = "ARCHIVE",
		.description = "d",
		.exit_status = "0",
		.options = options,
	};
	char *a1[] = {"c", "--progress=yes", "--json", "x", NULL};
	char *a2[] = {"c", "-qv", "--no-prog", "x", NULL};
	struct common_cmd cc;
	struct ts_capture c;
	char *text = help_text(&u);
	int argc;

	assert_true(strncmp(text, "usage: wsnap c [OPTIONS] [POLICY] ARCHIVE\n",
			    42) == 0);
	expect_all_listed(options, text);
	expect_fits(text);
	assert_true(strstr(text, "\ncommon options:\n") <
		    strstr(text, "\npolicy options"));
	assert_non_null(strstr(text, "\n  -q, --quiet "));
	free(text);

	memset(&cc, 0, sizeof(cc));
	wsnap_policy_init(&cc.policy);
	argc = 4;
	ts_capture_begin(&c);
	assert_int_equal(wsnap_options_parse(&u, &cc, &argc, a1), 2);
	ts_capture_end(&c);
	assert_string_equal(c.stdout_text,
			    "{\"ok\":false,\"error\":\"usage\",\"message\":"
			    "\"option '--progress' takes no argument\"}\n");
	wsnap_opts_usage_json(false);
	/* bundled, and a long name shortened */
	argc = 4;
	assert_int_equal(wsnap_options_parse(&u, &cc, &argc, a2),
			 WSNAP_OPTIONS_RUN);
	assert_true(cc.common.quiet && cc.common.verbose);
	assert_int_equal(cc.common.progress, WSNAP_PROGRESS_OFF);
	assert_int_equal(argc, 1);
	wsnap_policy_release(&cc.policy);
}

/* A required option: enforced after the parse, unbracketed in the usage. */
static void test_parse_options_required(void **state)
{
	struct req {
		const char *name;
		bool quiet;
	};
	static const struct wsnap_option options[] = {
		WSNAP_OPT_STRING_FLAGS(0, "name", "N", struct req, name,
				       WSNAP_OPTION_REQUIRED, "the name"),
		WSNAP_OPT_BOOL('q', NULL, struct req, quiet, "quiet"),
		WSNAP_OPT_END(),
	};
	static const struct wsnap_cmd_usage u = {
		.name = "req",
		.operands = "X",
		.description = "d",
		.exit_status = "0",
		.options = options,
	};
	char *a1[] = {"req", "-q", "x", NULL};
	char *a2[] = {"req", "x", "--name=", NULL};
	struct ts_capture c;
	struct req r = {0};
	char *text;
	int argc = 3;

	ts_capture_begin(&c);
	assert_int_equal(wsnap_options_parse(&u, &r, &argc, a1), 2);
	ts_capture_end(&c);
	assert_string_equal(c.stderr_text, "wsnap: req: --name is required "
					   "(see 'wsnap req --help')\n");
	argc = 3;
	assert_int_equal(wsnap_options_parse(&u, &r, &argc, a2),
			 WSNAP_OPTIONS_RUN);
	assert_string_equal(r.name, "");
	text = help_text(&u);
	assert_true(strncmp(text, "usage: wsnap req --name N [-q] X\n", 33) ==
		    0);
	free(text);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_parse_options_unknown),
		cmocka_unit_test(test_parse_options_abbreviations),
		cmocka_unit_test(test_parse_options_missing_argument),
		cmocka_unit_test(test_parse_options_argument_forms),
		cmocka_unit_test(test_parse_options_bundled_flags),
		cmocka_unit_test(test_parse_options_repeated_list),
		cmocka_unit_test(test_parse_options_number_bounds),
		cmocka_unit_test(test_parse_options_byte_sizes),
		cmocka_unit_test(test_parse_options_callback),
		cmocka_unit_test(test_parse_options_json_usage_errors),
		cmocka_unit_test(test_parse_options_help_lists_every_option),
		cmocka_unit_test(test_parse_options_help_policy_group),
		cmocka_unit_test(test_parse_options_required),
		cmocka_unit_test(test_parse_options_common_group),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
