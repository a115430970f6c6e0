/*
 * wsnap check [POLICY] [--json] [-v] ARCHIVE|-
 *
 * Validates the whole archive (the index is built and thrown away): silent
 * on success unless -v (a summary) or --json ({"ok":true,...summary}).
 */
#include <stdio.h>
#include <string.h>

#include "commands.h"
#include "json.h"
#include "opts.h"

struct check_args {
	struct wsnap_policy policy;
	struct wsnap_load_opts load;
	bool json;
	bool verbose;
};

#define T struct check_args
/* clang-format off */
static const struct wsnap_option check_options[] = {
	WSNAP_OPT_POLICY(T, policy),
	WSNAP_OPT_LOAD(T, load),
	WSNAP_OPT_JSON(T, json,
		       "print the result as one JSON object on stdout"),
	WSNAP_OPT_BOOL('v', "verbose", T, verbose,
		       "print a summary: members, directories, files, "
		       "symlinks, total bytes"),
	WSNAP_OPT_END(),
};

static const struct wsnap_cmd_usage check_usage = {
	.name = "check",
	.operands = "ARCHIVE|-",
	.description =
		"Validates the whole archive against the snapshot policy. "
		"Prints nothing and exits 0 when it is safe; otherwise one "
		"line 'wsnap: unsafe tar member ...' (and a hint when an "
		"option would let it through). ARCHIVE may be compressed "
		"(gzip, bzip2, xz, zstd, lz4); '-' reads standard input.",
	.exit_status =
		"0 safe, 2 usage error, 3 rejected (unsafe, or invalid tar "
		"stream), 4 I/O or system error",
	.options = check_options,
};
/* clang-format on */
#undef T

static void print_summary(const struct wsnap_index_stats *st, bool json)
{
	struct wsnap_json j;

	if (json) {
		wsnap_json_begin(&j, stdout);
		wsnap_json_bool(&j, "ok", true);
		wsnap_json_u64(&j, "members", st->members);
		wsnap_json_u64(&j, "directories", st->dirs);
		wsnap_json_u64(&j, "implicit_directories", st->implicit);
		wsnap_json_u64(&j, "files", st->files);
		wsnap_json_u64(&j, "symlinks", st->symlinks);
		wsnap_json_u64(&j, "total_bytes", st->total_bytes);
		wsnap_json_cstring(&j, "compression", st->compression);
		wsnap_json_end(&j);
		return;
	}
	printf("members: %llu\n"
	       "directories: %llu (%llu implicit)\n"
	       "files: %llu\n"
	       "symlinks: %llu\n"
	       "total bytes: %llu\n"
	       "compression: %s\n",
	       (unsigned long long)st->members, (unsigned long long)st->dirs,
	       (unsigned long long)st->implicit, (unsigned long long)st->files,
	       (unsigned long long)st->symlinks,
	       (unsigned long long)st->total_bytes,
	       st->compression ? st->compression : "unknown");
}

int wsnap_cmd_check(int argc, char **argv)
{
	struct wsnap_index *idx = NULL;
	struct wsnap_index_stats st;
	struct check_args a = {0};
	struct wsnap_error err;
	int rc;

	wsnap_policy_init(&a.policy);
	rc = wsnap_options_parse(&check_usage, &a, &argc, argv);
	if (rc != WSNAP_OPTIONS_RUN)
		goto out;
	if (argc != 1) {
		rc = wsnap_usage_error("check", argc ? "too many arguments"
						     : "missing ARCHIVE");
		goto out;
	}
	rc = 0;
	a.load.verbose = a.verbose;
	if (wsnap_load_index(argv[0], &a.policy, false, &a.load, &idx, &err)) {
		rc = wsnap_report(&err, a.json);
		goto out;
	}
	if (a.verbose || a.json) {
		wsnap_index_stats(idx, &st);
		print_summary(&st, a.json);
		rc = wsnap_out_finish(stdout, "standard output");
	}
out:
	wsnap_index_free(idx);
	wsnap_policy_release(&a.policy);
	return rc;
}
