/* SPDX-License-Identifier: MIT */
/*
 * wsnap index [OPTIONS] [POLICY] ARCHIVE [-o FILE]
 *
 * Validates ARCHIVE and keeps the result: in the index cache (the entry
 * every later command under the same policy uses), or with -o in the
 * sidecar FILE, written atomically (temporary file beside it + rename),
 * for publishing beside the archive ('--index FILE' reads it, as untrusted
 * input). Prints nothing on success unless --json (its outcome record,
 * doc/json.md).
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "commands.h"
#include "json.h"
#include "opts.h"

struct index_args {
	struct wsnap_common common;
	struct wsnap_policy policy;
	struct wsnap_remote_opts remote;
	const char *output;
};

#define T struct index_args
/* clang-format off */
static const struct wsnap_option index_options[] = {
	WSNAP_OPT_STRING('o', "output", "FILE", T, output,
			 "write a sidecar FILE (with digests of the data) "
			 "instead of the cache entry"),
	WSNAP_OPT_COMMON(T, common),
	WSNAP_OPT_POLICY(T, policy),
	WSNAP_OPT_REMOTE(T, remote),
	WSNAP_OPT_END(),
};

static const struct wsnap_cmd_usage index_usage = {
	.name = "index",
	.operands = "ARCHIVE",
	.description =
		"Validates ARCHIVE (a file, not standard input) and stores "
		"the result in the index cache, so that later commands under "
		"the same policy skip the validation; or, with -o, in FILE, "
		"a sidecar to publish beside the archive, which carries "
		"SHA-256 digests of the data for every 1 MiB of each member. "
		"The cache is $WSNAP_CACHE_DIR, else $XDG_CACHE_HOME/wsnap, "
		"else ~/.cache/wsnap, at most $WSNAP_CACHE_MAX bytes (1G).",
	.exit_status =
		"0 ok, 2 usage, 3 archive rejected, 4 I/O error (cache not "
		"usable, cannot write FILE)",
	.options = index_options,
};
/* clang-format on */
#undef T

int wsnap_cmd_index(int argc, char **argv)
{
	struct index_args a = {0};
	struct wsnap_load_opts lo = {0};
	struct wsnap_error err;
	struct wsnap_json j;
	enum wsnap_status st;
	int rc;

	wsnap_policy_init(&a.policy);
	wsnap_error_clear(&err);
	rc = wsnap_options_parse(&index_usage, &a, &argc, argv);
	if (rc != WSNAP_OPTIONS_RUN)
		goto out;
	wsnap_common_apply(&a.common);
	if (argc != 1) {
		rc = wsnap_usage_error("index", argc ? "too many arguments"
						     : "missing ARCHIVE");
		goto out;
	}
	if (a.output && a.output[0] == '\0') {
		rc = wsnap_usage_error("index", "empty FILE");
		goto out;
	}
	lo.verbose = a.common.verbose;
	lo.remote = a.remote;
	if (a.output)
		st = wsnap_write_sidecar(argv[0], a.output, &a.policy,
					 &a.remote, &err);
	else
		st = wsnap_cache_index(argv[0], &a.policy, &lo, &err);
	if (st != WSNAP_OK) {
		rc = wsnap_report(&err, a.common.json);
		goto out;
	}
	if (a.common.json) {
		wsnap_json_begin(&j, stdout);
		wsnap_json_bool(&j, "ok", true);
		wsnap_json_cstring(&j, "archive", argv[0]);
		wsnap_json_cstring(&j, "stored",
				   a.output ? "sidecar" : "cache");
		if (a.output)
			wsnap_json_cstring(&j, "output", a.output);
		wsnap_json_end(&j);
	}
	rc = wsnap_out_finish(stdout, "standard output");
out:
	wsnap_policy_release(&a.policy);
	return rc;
}
