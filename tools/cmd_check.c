/* SPDX-License-Identifier: MIT */
/*
 * wsnap check [OPTIONS] [POLICY] ARCHIVE|-
 *
 * Validates the whole archive (the index is built and thrown away): silent
 * on success unless -v (a summary on stderr) or --json
 * ({"ok":true,...summary}).
 */
#include <stdio.h>
#include <string.h>

#include "commands.h"
#include "json.h"
#include "opts.h"

struct check_args {
	struct wsnap_common common;
	struct wsnap_policy policy;
	struct wsnap_load_opts load;
};

#define T struct check_args
/* clang-format off */
static const struct wsnap_option check_options[] = {
	WSNAP_OPT_COMMON(T, common),
	WSNAP_OPT_POLICY(T, policy),
	WSNAP_OPT_LOAD(T, load),
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
		"(gzip, bzip2, xz, zstd, lz4); '-' reads standard input. -v "
		"and --json give a summary (members, files, bytes, ...).",
	.exit_status =
		"0 safe, 2 usage error, 3 rejected (unsafe, or invalid tar "
		"stream), 4 I/O or system error",
	.options = check_options,
};
/* clang-format on */
#undef T

static void print_json(const struct wsnap_index_stats *st)
{
	struct wsnap_json j;

	wsnap_json_begin(&j, stdout);
	wsnap_json_bool(&j, "ok", true);
	wsnap_json_summary(&j, st);
	wsnap_json_end(&j);
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
	wsnap_common_apply(&a.common);
	if (argc != 1) {
		rc = wsnap_usage_error("check", argc ? "too many arguments"
						     : "missing ARCHIVE");
		goto out;
	}
	rc = 0;
	a.load.verbose = a.common.verbose;
	if (wsnap_load_index(argv[0], &a.policy, false, &a.load, &idx, &err)) {
		rc = wsnap_report(&err, a.common.json);
		goto out;
	}
	wsnap_index_stats(idx, &st);
	if (a.common.verbose)
		wsnap_say_summary("check", argv[0], &st);
	if (a.common.json) {
		print_json(&st);
		rc = wsnap_out_finish(stdout, "standard output");
	}
out:
	wsnap_index_free(idx);
	wsnap_policy_release(&a.policy);
	return rc;
}
