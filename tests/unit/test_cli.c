/*
 * Unit tests of tools/opts.c: the policy options (strict numbers, size
 * suffixes, ranges, configured paths) as the parser applies them, error
 * reporting (the policy format, hint lines, I/O messages, the --json
 * objects) and usage errors, also those of a subcommand's command line.
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
#include "opts.h"

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
	for (i = 0; i < sizeof(ok) / sizeof(ok[0]); i++) {
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
	for (i = 0; i < sizeof(bad_count) / sizeof(bad_count[0]); i++) {
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
	for (i = 0; i < sizeof(bad_bytes) / sizeof(bad_bytes[0]); i++) {
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
		"symlink target not allowed: /usr/bin/python3\"}\n");
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

	for (i = 0; i < sizeof(limits) / sizeof(limits[0]); i++) {
		wsnap_error_reject(&err, "m", "%s", limits[i].reason);
		assert_int_equal(report(&err, false, &c), 3);
		snprintf(want, sizeof(want),
			 "wsnap: unsafe tar member 'm': %s\nwsnap: hint: %s",
			 limits[i].reason, limits[i].option);
		assert_true(strncmp(c.stderr_text, want, strlen(want)) == 0);
	}
	for (i = 0; i < sizeof(no_hint) / sizeof(no_hint[0]); i++) {
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
			    "directory\"}\n");

	/* a hostile path: escaped on stderr, exact in JSON */
	wsnap_error_io(&err, 28, "d/\n\xfe", "cannot write");
	assert_int_equal(report(&err, true, &c), 4);
	assert_string_equal(c.stderr_text, "wsnap: cannot write 'd/\\n\\xfe': "
					   "No space left on device\n");
	assert_string_equal(c.stdout_text,
			    "{\"ok\":false,\"error\":\"io\",\"message\":"
			    "\"cannot write 'd/\\u000a\\udcfe': No space left "
			    "on device\"}\n");

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
	char *a2[] = {"check", "-q", "x.tar", NULL};
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
			    "wsnap: check: option '-q' is not "
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

/*
 * Issue 15, item 2: 'wsnap pack DIR p.zip' wrote a plain tar and exited 0.
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
		cmocka_unit_test(test_cli_pack_out_needs_known_extension),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
