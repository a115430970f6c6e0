/* SPDX-License-Identifier: MIT */
/*
 * Unit tests of tools/opts.c: the policy options (strict numbers, size
 * suffixes, ranges, configured paths) as the parser applies them, error
 * reporting (the policy format, hint lines, I/O messages, the --json
 * objects) and usage errors, also those of a subcommand's command line;
 * the common options; did-you-mean and the version lines.
 *
 * Over 800 lines: one test program per unit (the style guide); the cases
 * share the in-process runner and output capture here.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include <cmocka.h>

#include "capture.h"
#include "support.h"
#include "commands.h"
#include "json.h"
#include "opts.h"
#include "suggest.h"
#include "array.h"

/*
 * Parses 'cmd opt arg' (arg NULL: 'cmd opt') with the policy options alone,
 * into p; stderr in c. Returns 1 when the option was applied, -1 after a
 * usage error.
 */
static int apply_cmd(const char *cmd, struct wsnap_policy *p, const char *opt,
		     const char *arg, struct ts_capture *c)
{
	const struct wsnap_cmd_usage u = {
		.name = cmd,
		.operands = "",
		.description = "",
		.exit_status = "",
		.options = wsnap_policy_options,
	};
	char *argv[] = {(char *)cmd, (char *)opt, (char *)arg, NULL};
	int argc = arg ? 3 : 2, r;

	ts_capture_begin(c);
	r = wsnap_options_parse(&u, p, &argc, argv);
	ts_capture_end(c);
	if (r == WSNAP_OPTIONS_RUN) {
		assert_int_equal(argc, 0);
		return 1;
	}
	assert_int_equal(r, 2);
	return -1;
}

static int apply(struct wsnap_policy *p, const char *opt, const char *arg,
		 struct ts_capture *c)
{
	return apply_cmd("check", p, opt, arg, c);
}

static void test_cli_limits_plain_numbers(void **state)
{
	struct wsnap_policy p;
	struct ts_capture c;

	wsnap_policy_init(&p);
	assert_int_equal(apply(&p, "--max-members", "0", &c), 1);
	assert_int_equal(p.max_members, 0);
	assert_int_equal(apply(&p, "--max-members", "4294967294", &c), 1);
	assert_int_equal(p.max_members, 4294967294ULL);
	assert_int_equal(
		apply(&p, "--max-total-size", "18446744073709551615", &c), 1);
	assert_true(p.max_total_size == UINT64_MAX);
	assert_int_equal(apply(&p, "--max-file-size", "1000", &c), 1);
	assert_int_equal(p.max_file_size, 1000);
	assert_int_equal(apply(&p, "--max-path-length", "4097", &c), 1);
	assert_int_equal(p.max_path_length, 4097);
	assert_int_equal(apply(&p, "--max-depth", "007", &c), 1);
	assert_int_equal(p.max_depth, 7);
	assert_string_equal(c.stderr_text, "");
	wsnap_policy_release(&p);
}

static void test_cli_limits_size_suffixes(void **state)
{
	static const struct {
		const char *arg;
		uint64_t want;
	} ok[] = {
		{"1K", 1024},
		{"1k", 1024},
		{"64G", 64ULL << 30},
		{"64GiB", 64ULL << 30},
		{"64GB", 64ULL << 30},
		{"1M", 1 << 20},
		{"3T", 3ULL << 40},
		{"2P", 2ULL << 50},
		{"0G", 0},
		{"16383P", 16383ULL << 50},
		{"unlimited", UINT64_MAX},
	};
	struct wsnap_policy p;
	struct ts_capture c;
	size_t i;

	wsnap_policy_init(&p);
	for (i = 0; i < ARRAY_SIZE(ok); i++) {
		assert_int_equal(apply(&p, "--max-total-size", ok[i].arg, &c),
				 1);
		assert_true(p.max_total_size == ok[i].want);
		assert_int_equal(apply(&p, "--max-file-size", ok[i].arg, &c),
				 1);
		assert_true(p.max_file_size == ok[i].want);
	}
	wsnap_policy_release(&p);
}

static void test_cli_limits_rejects_bad_numbers(void **state)
{
	static const char *const bad_count[] = {
		"",
		"abc",
		"-1",
		"+1",
		" 1",
		"1 ",
		"1x",
		"0x10",
		"1e3",
		"1.0",
		"1K",
		"4294967295",
		"18446744073709551616",
		"99999999999999999999999999",
	};
	static const char *const bad_bytes[] = {
		"",
		"-5",
		"1Q",
		"16E",
		"16384P",
		"17179869184G",
		"1.5G",
		"1GG",
		"1Gi B",
		"unlim",
		"G",
		"1KiBs",
		"18446744073709551616",
	};
	struct wsnap_policy p;
	struct ts_capture c;
	size_t i;

	wsnap_policy_init(&p);
	for (i = 0; i < ARRAY_SIZE(bad_count); i++) {
		assert_int_equal(apply(&p, "--max-members", bad_count[i], &c),
				 -1);
		assert_true(strncmp(c.stderr_text,
				    "wsnap: check: invalid --max-members ",
				    36) == 0);
		/* one line, ending in the pointer to --help */
		assert_non_null(
			strstr(c.stderr_text, " (see 'wsnap check --help')\n"));
		assert_int_equal(strchr(c.stderr_text, '\n') - c.stderr_text +
					 1,
				 strlen(c.stderr_text));
		assert_int_equal(p.max_members, WSNAP_DEFAULT_MAX_MEMBERS);
		/* counts take no 'unlimited' either */
		assert_int_equal(apply(&p, "--max-depth", bad_count[i], &c),
				 -1);
	}
	assert_int_equal(apply(&p, "--max-depth", "unlimited", &c), -1);
	for (i = 0; i < ARRAY_SIZE(bad_bytes); i++) {
		assert_int_equal(
			apply(&p, "--max-total-size", bad_bytes[i], &c), -1);
		assert_true(p.max_total_size == WSNAP_DEFAULT_MAX_TOTAL_SIZE);
	}
	/* the value is quoted and escaped in the message */
	apply(&p, "--max-members", "1\x1b[2J", &c);
	assert_string_equal(c.stderr_text,
			    "wsnap: check: invalid --max-members '1\\x1b[2J': "
			    "want a whole number from 0 to 4294967294 (see "
			    "'wsnap check --help')\n");
	wsnap_policy_release(&p);
}

static void test_cli_flags_and_paths(void **state)
{
	struct wsnap_policy p;
	struct ts_capture c;

	wsnap_policy_init(&p);
	assert_int_equal(apply(&p, "--allow-external-symlinks", NULL, &c), 1);
	assert_true(p.allow_external_symlinks);
	assert_int_equal(apply(&p, "--no-symlinks", NULL, &c), 1);
	assert_true(p.no_symlinks);
	assert_int_equal(apply(&p, "--skip", "./a//b/", &c), 1);
	assert_int_equal(apply(&p, "--skip", "/c", &c), 1);
	assert_int_equal(p.skip.count, 2);
	assert_string_equal(p.skip.items[0], "a/b");
	assert_string_equal(p.skip.items[1], "c");
	assert_int_equal(apply(&p, "--reject-path", "remote/nested", &c), 1);
	assert_string_equal(p.reject_path.items[0], "remote/nested");
	assert_int_equal(apply(&p, "--reject-symlink", "x/", &c), 1);
	assert_string_equal(p.reject_symlink.items[0], "x");
	assert_int_equal(apply(&p, "--root-name", "workspace/", &c), 1);
	assert_string_equal(p.root_name, "workspace");
	assert_string_equal(c.stderr_text, "");
	/* not policy options */
	assert_int_equal(apply(&p, "--json", NULL, &c), -1);
	assert_string_equal(c.stderr_text, "wsnap: check: option '--json' is "
					   "not known (see 'wsnap check "
					   "--help')\n");
	assert_int_equal(apply(&p, "-v", NULL, &c), -1);
	wsnap_policy_release(&p);
}

static void test_cli_root_name_must_be_one_component(void **state)
{
	struct wsnap_policy p;
	struct ts_capture c;

	wsnap_policy_init(&p);
	assert_int_equal(apply_cmd("ls", &p, "--root-name", "a/b", &c), -1);
	assert_string_equal(c.stderr_text,
			    "wsnap: ls: --root-name must be a single path "
			    "component (see 'wsnap ls --help')\n");
	assert_null(p.root_name);
	wsnap_policy_release(&p);
}

/* Reports err with json on or off; returns the exit code. */
static int report(const struct wsnap_error *err, bool json,
		  struct ts_capture *c)
{
	int rc;

	ts_capture_begin(c);
	rc = wsnap_report(err, json);
	ts_capture_end(c);
	return rc;
}

static void test_cli_report_rejection(void **state)
{
	struct wsnap_error err;
	struct ts_capture c;

	wsnap_error_reject(&err, "/etc/passwd", "absolute path");
	assert_int_equal(report(&err, false, &c), 3);
	assert_string_equal(c.stderr_text,
			    "wsnap: unsafe tar member '/etc/passwd': "
			    "absolute path\n");
	assert_string_equal(c.stdout_text, "");

	/* hostile name and target: one line each, nothing raw */
	wsnap_error_reject(&err, "it's\n\x1b[2J\xff",
			   "symlink target escapes archive root: %s",
			   "../\r\x9b\\x");
	assert_int_equal(report(&err, false, &c), 3);
	assert_string_equal(
		c.stderr_text,
		"wsnap: unsafe tar member \"it's\\n\\x1b[2J\\xff\": symlink "
		"target escapes archive root: ../\\r\\x9b\\\\x\n"
		"wsnap: hint: --allow-external-symlinks accepts symlinks whose "
		"targets leave the snapshot\n");
}

static void test_cli_report_rejection_json(void **state)
{
	struct wsnap_error err;
	struct ts_capture c;

	wsnap_error_reject(&err, "venv/bin/\xffpython3",
			   "absolute symlink target not allowed: %s",
			   "/usr/bin/python3");
	assert_int_equal(report(&err, true, &c), 3);
	assert_string_equal(
		c.stdout_text,
		"{\"ok\":false,\"error\":\"rejected\",\"member\":"
		"\"venv/bin/\\udcffpython3\",\"reason\":\"absolute "
		"symlink target not allowed: /usr/bin/python3\",\"hint\":"
		"\"--allow-external-symlinks accepts symlinks whose targets "
		"leave the snapshot\"}\n");
	assert_string_equal(
		c.stderr_text,
		"wsnap: unsafe tar member 'venv/bin/\\xffpython3': absolute "
		"symlink target not allowed: /usr/bin/python3\n"
		"wsnap: hint: --allow-external-symlinks accepts symlinks whose "
		"targets leave the snapshot\n");
}

static void test_cli_report_stream(void **state)
{
	struct wsnap_error err;
	struct ts_capture c;

	wsnap_error_stream(&err);
	assert_int_equal(report(&err, false, &c), 3);
	assert_string_equal(c.stderr_text, "wsnap: unsafe tar member '<tar>': "
					   "invalid tar stream\n");
}

/* Every limit's reason gets a hint naming its option; others none. */
static void test_cli_report_limit_hints(void **state)
{
	static const struct {
		const char *reason, *option;
	} limits[] = {
		{"archive member count exceeds limit", "--max-members N "},
		{"archive extracted size exceeds limit",
		 "--max-total-size BYTES "},
		{"file size exceeds limit", "--max-file-size BYTES "},
		{"path too long", "--max-path-length BYTES "},
		{"path too deep", "--max-depth N "},
	};
	static const char *const no_hint[] = {
		"absolute path",
		"parent traversal",
		"hardlink member not allowed",
		"symlink member not allowed",
		"archive path descends through symlink: a",
		"duplicate archive path: a",
		"path too long x",
		"symlink target escapes archive root",
	};
	struct wsnap_error err;
	struct ts_capture c;
	char want[512];
	size_t i;

	for (i = 0; i < ARRAY_SIZE(limits); i++) {
		wsnap_error_reject(&err, "m", "%s", limits[i].reason);
		assert_int_equal(report(&err, false, &c), 3);
		snprintf(want, sizeof(want),
			 "wsnap: unsafe tar member 'm': %s\nwsnap: hint: %s",
			 limits[i].reason, limits[i].option);
		assert_true(strncmp(c.stderr_text, want, strlen(want)) == 0);
	}
	for (i = 0; i < ARRAY_SIZE(no_hint); i++) {
		wsnap_error_reject(&err, "m", "%s", no_hint[i]);
		report(&err, false, &c);
		assert_null(strstr(c.stderr_text, "hint"));
	}
}

static void test_cli_report_io(void **state)
{
	struct wsnap_error err;
	struct ts_capture c;

	wsnap_error_io(&err, 2, "x.tar", "cannot open");
	assert_int_equal(report(&err, false, &c), 4);
	assert_string_equal(c.stderr_text, "wsnap: cannot open 'x.tar': No "
					   "such file or directory\n");
	assert_int_equal(report(&err, true, &c), 4);
	assert_string_equal(c.stdout_text,
			    "{\"ok\":false,\"error\":\"io\",\"message\":"
			    "\"cannot open 'x.tar': No such file or "
			    "directory\",\"file\":\"x.tar\",\"errno\":"
			    "\"ENOENT\"}\n");

	/* a hostile path: escaped on stderr, exact in JSON */
	wsnap_error_io(&err, 28, "d/\n\xfe", "cannot write");
	assert_int_equal(report(&err, true, &c), 4);
	assert_string_equal(c.stderr_text, "wsnap: cannot write 'd/\\n\\xfe': "
					   "No space left on device\n");
	assert_string_equal(c.stdout_text,
			    "{\"ok\":false,\"error\":\"io\",\"message\":"
			    "\"cannot write 'd/\\u000a\\udcfe': No space left "
			    "on device\",\"file\":\"d/\\u000a\\udcfe\","
			    "\"errno\":\"ENOSPC\"}\n");

	/* no path, no errno */
	wsnap_error_io(&err, 0, NULL, "mount failed");
	assert_int_equal(report(&err, false, &c), 4);
	assert_string_equal(c.stderr_text, "wsnap: mount failed\n");
}

static void test_cli_report_usage_and_ok(void **state)
{
	struct wsnap_error err;
	struct ts_capture c;

	wsnap_error_usage(&err, "an empty prefix");
	assert_int_equal(report(&err, true, &c), 2);
	assert_string_equal(c.stderr_text, "wsnap: an empty prefix\n");
	assert_string_equal(c.stdout_text,
			    "{\"ok\":false,\"error\":\"usage\","
			    "\"message\":\"an empty prefix\"}\n");
	wsnap_error_clear(&err);
	assert_int_equal(report(&err, true, &c), 0);
	assert_string_equal(c.stderr_text, "");
	assert_string_equal(c.stdout_text, "");
}

static void test_cli_usage_error_one_line(void **state)
{
	struct ts_capture c;
	int rc;

	ts_capture_begin(&c);
	rc = wsnap_usage_error("ls", "missing %s", "ARCHIVE");
	ts_capture_end(&c);
	assert_int_equal(rc, 2);
	assert_string_equal(c.stderr_text, "wsnap: ls: missing ARCHIVE (see "
					   "'wsnap ls --help')\n");
}

/* A command line like check's: the policy options, --json, -v, -o. */
struct cmdline {
	struct wsnap_policy policy;
	bool json;
	bool verbose;
	const char *o;
};

#define T struct cmdline
/* clang-format off */
static const struct wsnap_option cmdline_options[] = {
	WSNAP_OPT_POLICY(T, policy),
	WSNAP_OPT_JSON(T, json, "JSON"),
	WSNAP_OPT_BOOL('v', "verbose", T, verbose, "verbose"),
	WSNAP_OPT_STRING('o', NULL, "OPT", T, o, "an option"),
	WSNAP_OPT_END(),
};
/* clang-format on */
#undef T

/*
 * Parses argv (argc words, argv[0] the command's name) like a subcommand
 * into cl (released by the caller); output in c. Returns the parser's
 * result; the operands are then in argv[0 .. *nops).
 */
static int parse(struct cmdline *cl, int argc, char **argv, int *nops,
		 struct ts_capture *c)
{
	const struct wsnap_cmd_usage u = {
		.name = argv[0],
		.operands = "ARCHIVE",
		.description = "",
		.exit_status = "",
		.options = cmdline_options,
	};
	int rc;

	memset(cl, 0, sizeof(*cl));
	wsnap_policy_init(&cl->policy);
	ts_capture_begin(c);
	rc = wsnap_options_parse(&u, cl, &argc, argv);
	ts_capture_end(c);
	*nops = argc;
	return rc;
}

static void test_cli_bad_options_named(void **state)
{
	char *a1[] = {"check", "--bogus", "x", NULL};
	char *a2[] = {"check", "--bogus=1", NULL};
	char *a3[] = {"check", "x", "--skip", NULL};
	char *a4[] = {"check", "-vq", NULL};
	char *a5[] = {"check", "-o", NULL};
	char *a6[] = {"check", "--json=yes", NULL};
	char *a7[] = {"check", "--json", "-v", "x", NULL};
	struct cmdline cl;
	struct ts_capture c;
	int n;

	assert_int_equal(parse(&cl, 3, a1, &n, &c), 2);
	assert_string_equal(c.stderr_text, "wsnap: check: option '--bogus' is "
					   "not known (see 'wsnap check "
					   "--help')\n");
	wsnap_policy_release(&cl.policy);
	assert_int_equal(parse(&cl, 2, a2, &n, &c), 2);
	assert_string_equal(c.stderr_text, "wsnap: check: option '--bogus' is "
					   "not known (see 'wsnap check "
					   "--help')\n");
	wsnap_policy_release(&cl.policy);
	assert_int_equal(parse(&cl, 3, a3, &n, &c), 2);
	assert_string_equal(c.stderr_text,
			    "wsnap: check: option '--skip' needs an argument "
			    "(see 'wsnap check --help')\n");
	wsnap_policy_release(&cl.policy);
	assert_int_equal(parse(&cl, 2, a4, &n, &c), 2);
	assert_string_equal(c.stderr_text, "wsnap: check: option '-q' is not "
					   "known (see 'wsnap check "
					   "--help')\n");
	wsnap_policy_release(&cl.policy);
	assert_int_equal(parse(&cl, 2, a5, &n, &c), 2);
	assert_string_equal(c.stderr_text, "wsnap: check: option '-o' needs "
					   "an argument (see 'wsnap check "
					   "--help')\n");
	wsnap_policy_release(&cl.policy);
	assert_int_equal(parse(&cl, 2, a6, &n, &c), 2);
	assert_string_equal(c.stderr_text,
			    "wsnap: check: option '--json' takes no argument "
			    "(see 'wsnap check --help')\n");
	wsnap_policy_release(&cl.policy);
	wsnap_opts_usage_json(false);
	assert_int_equal(parse(&cl, 4, a7, &n, &c), WSNAP_OPTIONS_RUN);
	assert_string_equal(c.stderr_text, "");
	wsnap_policy_release(&cl.policy);
	wsnap_opts_usage_json(false);
}

/* Runs a subcommand (its argv as words); output in c. */
static int run_cmd(int (*cmd)(int, char **), int argc, char **argv,
		   struct ts_capture *c)
{
	int rc;

	ts_capture_begin(c);
	rc = cmd(argc, argv);
	ts_capture_end(c);
	return rc;
}

static void test_cli_parse_command_line(void **state)
{
	char *a1[] = {"check", "--json",      "x.tar", "-v", "--skip",
		      "a/",    "--max-depth", "3",     NULL};
	char *a2[] = {"check", "-Q", "x.tar", NULL};
	char *a3[] = {"check", "x.tar", "--help", NULL};
	char *a4[] = {"check", NULL};
	char *a5[] = {"check", "a", "b", NULL};
	char *a6[] = {"check", "--max-depth", "x", "a", NULL};
	char *a7[] = {"check", "--", "-", NULL};
	struct cmdline cl;
	struct ts_capture c;
	int n;

	assert_int_equal(parse(&cl, 8, a1, &n, &c), WSNAP_OPTIONS_RUN);
	assert_true(cl.json && cl.verbose);
	assert_int_equal(n, 1);
	assert_string_equal(a1[0], "x.tar");
	assert_null(a1[1]);
	assert_string_equal(cl.policy.skip.items[0], "a");
	assert_int_equal(cl.policy.max_depth, 3);
	wsnap_policy_release(&cl.policy);
	wsnap_opts_usage_json(false);

	/* the commands themselves: nothing is read before these errors */
	assert_int_equal(run_cmd(wsnap_cmd_check, 3, a2, &c), 2);
	assert_string_equal(c.stderr_text,
			    "wsnap: check: option '-Q' is not "
			    "known (see 'wsnap check --help')\n");
	assert_int_equal(run_cmd(wsnap_cmd_check, 3, a3, &c), 0);
	assert_true(strncmp(c.stdout_text, "usage: wsnap check ", 19) == 0);
	assert_string_equal(c.stderr_text, "");
	assert_int_equal(run_cmd(wsnap_cmd_check, 1, a4, &c), 2);
	assert_string_equal(c.stderr_text, "wsnap: check: missing ARCHIVE (see "
					   "'wsnap check --help')\n");
	assert_int_equal(run_cmd(wsnap_cmd_check, 3, a5, &c), 2);
	assert_string_equal(c.stderr_text, "wsnap: check: too many arguments "
					   "(see 'wsnap check --help')\n");
	assert_int_equal(run_cmd(wsnap_cmd_check, 4, a6, &c), 2);
	assert_string_equal(c.stdout_text, "");

	assert_int_equal(parse(&cl, 3, a7, &n, &c), WSNAP_OPTIONS_RUN);
	assert_int_equal(n, 1);
	assert_string_equal(a7[0], "-");
	wsnap_policy_release(&cl.policy);
	assert_string_equal(c.stdout_text, "");
}

/* With --json anywhere, a usage error is a JSON object on stdout too. */
static void test_cli_usage_error_json(void **state)
{
	char *a1[] = {"check", "--bogus", "x.tar", "--json", NULL};
	char *a2[] = {"check", "--max-depth", "1x", "--json", "x.tar", NULL};
	char *a3[] = {"check", "--", "--json", NULL};
	struct cmdline cl;
	struct ts_capture c;
	int n;

	assert_int_equal(parse(&cl, 4, a1, &n, &c), 2);
	assert_string_equal(c.stdout_text,
			    "{\"ok\":false,\"error\":\"usage\",\"message\":"
			    "\"option '--bogus' is not known\"}\n");
	assert_string_equal(c.stderr_text,
			    "wsnap: check: option '--bogus' is not known (see "
			    "'wsnap check --help')\n");
	wsnap_policy_release(&cl.policy);
	wsnap_opts_usage_json(false);

	assert_int_equal(parse(&cl, 5, a2, &n, &c), 2);
	assert_string_equal(c.stdout_text,
			    "{\"ok\":false,\"error\":\"usage\",\"message\":"
			    "\"invalid --max-depth '1x': want a whole number "
			    "from 0 to 2097152\"}\n");
	wsnap_policy_release(&cl.policy);
	wsnap_opts_usage_json(false);

	/* after '--' it is an operand, not the option */
	assert_int_equal(parse(&cl, 3, a3, &n, &c), WSNAP_OPTIONS_RUN);
	assert_string_equal(a3[0], "--json");
	assert_false(cl.json);
	wsnap_policy_release(&cl.policy);
	ts_capture_begin(&c);
	wsnap_usage_error("check", "x");
	ts_capture_end(&c);
	assert_string_equal(c.stdout_text, "");
}

/* The hints a command knows go to stderr and into the JSON object. */
static void test_cli_report_hint(void **state)
{
	struct wsnap_error err;
	struct ts_capture c;
	int rc;

	wsnap_error_io(&err, 16, "/m", "cannot unmount");
	ts_capture_begin(&c);
	rc = wsnap_report_hint(&err, true, "--lazy detaches a busy mount");
	ts_capture_end(&c);
	assert_int_equal(rc, 4);
	assert_string_equal(
		c.stderr_text,
		"wsnap: cannot unmount '/m': Device or resource "
		"busy\nwsnap: hint: --lazy detaches a busy mount\n");
	assert_string_equal(c.stdout_text,
			    "{\"ok\":false,\"error\":\"io\",\"message\":"
			    "\"cannot unmount '/m': Device or resource busy\","
			    "\"file\":\"/m\",\"errno\":\"EBUSY\",\"hint\":"
			    "\"--lazy detaches a busy mount\"}\n");

	/* a usage error about an archive path names it as the member; no
	 * errno where there is none */
	wsnap_error_usage(&err, "no such path in the archive:");
	snprintf(err.member, sizeof(err.member), "%s", "src/\xff");
	assert_int_equal(report(&err, true, &c), 2);
	assert_string_equal(c.stderr_text, "wsnap: no such path in the "
					   "archive: 'src/\\xff'\n");
	assert_string_equal(c.stdout_text,
			    "{\"ok\":false,\"error\":\"usage\",\"message\":"
			    "\"no such path in the archive: 'src/\\udcff'\","
			    "\"member\":\"src/\\udcff\"}\n");
}

/* A command line with the common options, as every subcommand has. */
struct common_line {
	struct wsnap_common common;
	struct wsnap_policy policy;
};

#define T struct common_line
/* clang-format off */
static const struct wsnap_option common_line_options[] = {
	WSNAP_OPT_COMMON(T, common),
	WSNAP_OPT_POLICY(T, policy),
	WSNAP_OPT_END(),
};
/* clang-format on */
#undef T

static int parse_common(struct common_line *cl, int argc, char **argv)
{
	const struct wsnap_cmd_usage u = {
		.name = "ls",
		.operands = "ARCHIVE",
		.description = "",
		.exit_status = "",
		.options = common_line_options,
	};
	struct ts_capture c;
	int rc;

	memset(cl, 0, sizeof(*cl));
	wsnap_policy_init(&cl->policy);
	ts_capture_begin(&c);
	rc = wsnap_options_parse(&u, cl, &argc, argv);
	ts_capture_end(&c);
	wsnap_policy_release(&cl->policy);
	wsnap_opts_usage_json(false);
	return rc;
}

static void test_cli_common_options(void **state)
{
	char *a1[] = {"ls", "-v", "--json", "--progress", "x", NULL};
	char *a2[] = {"ls", "-vq", "--progress", "x", NULL};
	char *a3[] = {"ls", "--progress", "--no-progress", "x", NULL};
	char *a4[] = {"ls", "--no-progress", "--progress", "x", NULL};
	char *a5[] = {"ls", "--quiet", "--verbose", "x", NULL};
	struct common_line cl;

	assert_int_equal(parse_common(&cl, 5, a1), WSNAP_OPTIONS_RUN);
	assert_true(cl.common.verbose && cl.common.json);
	assert_int_equal(cl.common.progress, WSNAP_PROGRESS_ON);
	wsnap_common_apply(&cl.common);
	assert_true(cl.common.verbose);
	assert_int_equal(cl.common.progress, WSNAP_PROGRESS_ON);

	/* -q wins over -v and --progress, in any order */
	assert_int_equal(parse_common(&cl, 4, a2), WSNAP_OPTIONS_RUN);
	assert_true(cl.common.quiet);
	wsnap_common_apply(&cl.common);
	assert_false(cl.common.verbose);
	assert_int_equal(cl.common.progress, WSNAP_PROGRESS_OFF);
	assert_int_equal(parse_common(&cl, 4, a5), WSNAP_OPTIONS_RUN);
	wsnap_common_apply(&cl.common);
	assert_false(cl.common.verbose);

	/* of --progress and --no-progress the last one counts */
	assert_int_equal(parse_common(&cl, 4, a3), WSNAP_OPTIONS_RUN);
	assert_int_equal(cl.common.progress, WSNAP_PROGRESS_OFF);
	assert_int_equal(parse_common(&cl, 4, a4), WSNAP_OPTIONS_RUN);
	assert_int_equal(cl.common.progress, WSNAP_PROGRESS_ON);
	wsnap_progress_mode_set(WSNAP_PROGRESS_AUTO);
}

/* Every subcommand takes the common options, and --json makes its usage
 * errors JSON. */
static void test_cli_every_command_common(void **state)
{
	static int (*const cmds[])(int, char **) = {
		wsnap_cmd_check,  wsnap_cmd_ls,		  wsnap_cmd_mount,
		wsnap_cmd_export, wsnap_cmd_strip_prefix, wsnap_cmd_diff,
		wsnap_cmd_pack,	  wsnap_cmd_hydrate,	  wsnap_cmd_unmount,
	};
	static const char *const names[] = {
		"check", "ls",	 "mount",   "export",  "strip-prefix",
		"diff",	 "pack", "hydrate", "unmount",
	};
	struct ts_capture c;
	size_t i;

	for (i = 0; i < ARRAY_SIZE(cmds); i++) {
		char *help[] = {(char *)names[i], "--help", NULL};
		char *bad[] = {(char *)names[i], "-q",	    "-v", "--json",
			       "--no-progress",	 "--bogus", NULL};

		assert_int_equal(run_cmd(cmds[i], 2, help, &c), 0);
		assert_non_null(strstr(c.stdout_text, "\ncommon options:\n"));
		assert_non_null(strstr(c.stdout_text, "\n  -q, --quiet "));
		assert_non_null(strstr(c.stdout_text, "\n  --progress "));
		assert_int_equal(run_cmd(cmds[i], 6, bad, &c), 2);
		assert_true(strncmp(c.stdout_text,
				    "{\"ok\":false,\"error\":\"usage\","
				    "\"message\":\"option '--bogus' is not "
				    "known\"}\n",
				    200) == 0);
		wsnap_opts_usage_json(false);
	}
}

static void test_cli_plural(void **state)
{
	assert_string_equal(wsnap_plural(0, "member", "members"), "members");
	assert_string_equal(wsnap_plural(1, "member", "members"), "member");
	assert_string_equal(wsnap_plural(2, "entry", "entries"), "entries");
}

/* The -v summary line counts in the singular where a count is 1. */
static void test_cli_say_summary(void **state)
{
	struct wsnap_index_stats st = {
		.members = 1,
		.dirs = 2,
		.implicit = 2,
		.files = 1,
		.total_bytes = 1,
		.compression = "gzip",
	};
	struct ts_capture c;

	ts_capture_begin(&c);
	wsnap_say_summary("check", "a\n.tar", &st);
	ts_capture_end(&c);
	assert_string_equal(c.stderr_text,
			    "wsnap: check: 'a\\n.tar': 1 member: 1 file (1 "
			    "byte), 0 directories, 0 symlinks; 2 implicit "
			    "directories; gzip\n");
	st.members = 3;
	st.implicit = 1;
	st.symlinks = 1;
	st.total_bytes = 7;
	ts_capture_begin(&c);
	wsnap_say_summary("ls", "-", &st);
	ts_capture_end(&c);
	assert_string_equal(c.stderr_text,
			    "wsnap: ls: '-': 3 members: 1 file (7 bytes), 1 "
			    "directory, 1 symlink; 1 implicit directory; "
			    "gzip\n");
}

static void test_cli_edit_distance(void **state)
{
	assert_int_equal(wsnap_edit_distance("ls", 2, "ls", 2), 0);
	assert_int_equal(wsnap_edit_distance("", 0, "ls", 2), 2);
	assert_int_equal(wsnap_edit_distance("lss", 3, "ls", 2), 1);
	assert_int_equal(wsnap_edit_distance("chekc", 5, "check", 5), 1);
	assert_int_equal(wsnap_edit_distance("mnt", 3, "mount", 5), 2);
	assert_int_equal(wsnap_edit_distance("kitten", 6, "sitting", 7), 3);
	assert_true(wsnap_edit_distance("x", 65, "y", 1) == SIZE_MAX);
}

static void test_cli_did_you_mean(void **state)
{
	static const char *const names[] = {
		"check", "ls",	 "mount",   "export",  "strip-prefix",
		"diff",	 "pack", "hydrate", "unmount", "help",
	};
	static const struct {
		const char *typed, *want;
	} one[] = {
		{"umount", "unmount"},
		{"list", "ls"},
		{"extract", "export"},
		{"chekc", "check"},
		{"lss", "ls"},
		{"mnt", "mount"},
		{"unmout", "unmount"},
		{"hyd", "hydrate"},
		{"pak", "pack"},
		{"strip", "strip-prefix"},
		{"version", "--version"},
		{"dif", "diff"},
	};
	static const char *const none[] = {
		"x", "l", "rm", "cat", "zzzzzz", "no-such-command", ""};
	const char *out[WSNAP_SUGGEST_MAX];
	size_t i, n = ARRAY_SIZE(names);
	char big[200];

	for (i = 0; i < ARRAY_SIZE(one); i++) {
		assert_int_equal(wsnap_suggest(one[i].typed, names, n, out), 1);
		assert_string_equal(out[0], one[i].want);
	}
	for (i = 0; i < ARRAY_SIZE(none); i++)
		assert_int_equal(wsnap_suggest(none[i], names, n, out), 0);
	/* ties: every name at the smallest distance */
	assert_int_equal(wsnap_suggest("mount_",
				       (const char *const[]){"mount", "mounts"},
				       2, out),
			 2);
	memset(big, 'a', sizeof(big) - 1);
	big[sizeof(big) - 1] = '\0';
	assert_int_equal(wsnap_suggest(big, names, n, out), 0);
}

/* 'wsnap --version': wsnap, libarchive, libfuse, compression libraries. */
static void test_cli_version_lines(void **state)
{
	struct ts_capture c;
	char *line, *save = NULL;
	int n = 0, fuse = 0, libarchive = 0;

	ts_capture_begin(&c);
	wsnap_version_print(stdout);
	ts_capture_end(&c);
	assert_true(strncmp(c.stdout_text, "wsnap " WSNAP_VERSION "\n",
			    strlen("wsnap " WSNAP_VERSION "\n")) == 0);
	for (line = strtok_r(c.stdout_text, "\n", &save); line;
	     line = strtok_r(NULL, "\n", &save), n++) {
		/* 'NAME VERSION', one space */
		assert_non_null(strchr(line, ' '));
		assert_null(strchr(strchr(line, ' ') + 1, ' '));
		assert_null(strchr(line, '/'));
		libarchive += strncmp(line, "libarchive ", 11) == 0;
		fuse += strncmp(line, "libfuse 3.", 10) == 0;
	}
	assert_int_equal(libarchive, 1);
	assert_int_equal(fuse, 1);
	assert_true(n >= 4); /* and at least one compression library */
}

/*
 * 'wsnap pack DIR p.zip' wrote a plain tar and exited 0.
 * An OUT whose name asks for no compression wsnap writes is a usage error
 * naming the extensions, with nothing read nor written; --compress makes
 * any name fine.
 */
static void test_cli_pack_out_needs_known_extension(void **state)
{
	char *d = ts_tempdir();
	char *zip = malloc(strlen(d) + 16), *dir = malloc(strlen(d) + 16);
	char *a1[] = {"pack", dir, zip, NULL};
	char *a2[] = {"pack", "--compress", "gzip", dir, zip, NULL};
	char *a3[] = {"pack", "--compress", "rar", dir, zip, NULL};
	char want[512];
	struct ts_capture c;

	snprintf(dir, strlen(d) + 16, "%s/d", d);
	snprintf(zip, strlen(d) + 16, "%s/p.zip", d);
	assert_int_equal(mkdir(dir, 0755), 0);
	assert_int_equal(run_cmd(wsnap_cmd_pack, 3, a1, &c), 2);
	snprintf(want, sizeof(want),
		 "wsnap: pack: cannot tell the compression from '%s': name it "
		 ".tar, .tar.gz, .tgz, .tar.bz2, .tbz2, .tar.xz, .txz, "
		 ".tar.zst, .tzst or .tar.lz4, or give --compress (see 'wsnap "
		 "pack --help')\n",
		 zip);
	assert_string_equal(c.stderr_text, want);
	assert_int_equal(access(zip, F_OK), -1);
	assert_int_equal(run_cmd(wsnap_cmd_pack, 5, a3, &c), 2);
	assert_string_equal(c.stderr_text,
			    "wsnap: pack: --compress takes none, gzip, bzip2, "
			    "xz, zstd or lz4, not 'rar' (see 'wsnap pack "
			    "--help')\n");
	assert_int_equal(run_cmd(wsnap_cmd_pack, 5, a2, &c), 0);
	assert_int_equal(access(zip, F_OK), 0);
	ts_rmtree(d);
	free(d);
	free(zip);
	free(dir);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_cli_limits_plain_numbers),
		cmocka_unit_test(test_cli_limits_size_suffixes),
		cmocka_unit_test(test_cli_limits_rejects_bad_numbers),
		cmocka_unit_test(test_cli_flags_and_paths),
		cmocka_unit_test(test_cli_root_name_must_be_one_component),
		cmocka_unit_test(test_cli_report_rejection),
		cmocka_unit_test(test_cli_report_rejection_json),
		cmocka_unit_test(test_cli_report_stream),
		cmocka_unit_test(test_cli_report_limit_hints),
		cmocka_unit_test(test_cli_report_io),
		cmocka_unit_test(test_cli_report_usage_and_ok),
		cmocka_unit_test(test_cli_usage_error_one_line),
		cmocka_unit_test(test_cli_bad_options_named),
		cmocka_unit_test(test_cli_parse_command_line),
		cmocka_unit_test(test_cli_usage_error_json),
		cmocka_unit_test(test_cli_report_hint),
		cmocka_unit_test(test_cli_common_options),
		cmocka_unit_test(test_cli_every_command_common),
		cmocka_unit_test(test_cli_plural),
		cmocka_unit_test(test_cli_say_summary),
		cmocka_unit_test(test_cli_edit_distance),
		cmocka_unit_test(test_cli_did_you_mean),
		cmocka_unit_test(test_cli_version_lines),
		cmocka_unit_test(test_cli_pack_out_needs_known_extension),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
