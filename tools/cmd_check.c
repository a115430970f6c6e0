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

static void help(void)
{
	printf("usage: wsnap check [POLICY] [--json] [-v] ARCHIVE|-\n"
	       "\n"
	       "Validates the whole archive against the snapshot policy. "
	       "Prints nothing and\n"
	       "exits 0 when it is safe; otherwise one line 'wsnap: unsafe "
	       "tar member ...'\n"
	       "(and a hint when an option would let it through). "
	       "ARCHIVE may be compressed\n"
	       "(gzip, bzip2, xz, zstd, lz4); '-' reads standard input.\n"
	       "\n"
	       "  -v, --verbose              print a summary: members, "
	       "directories, files,\n"
	       "                             symlinks, total bytes\n"
	       "  --json                     print the result as one JSON "
	       "object on stdout\n"
	       "  -h, --help                 show this help\n"
	       "\n"
	       "%s"
	       "\n"
	       "exit status: 0 safe, 2 usage error, 3 rejected (unsafe, or "
	       "invalid tar stream),\n"
	       "4 I/O or system error\n",
	       wsnap_policy_help);
}

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
	struct wsnap_cmdline cl;
	struct wsnap_error err;
	int rc;

	rc = wsnap_opts_parse_simple(&cl, argc, argv, WSNAP_CMDLINE_VERBOSE,
				     "ARCHIVE", help);
	if (rc >= 0)
		goto out;
	rc = 0;
	if (wsnap_load_index(cl.operands[0], &cl.policy, false, &idx, &err)) {
		rc = wsnap_report(&err, cl.json);
		goto out;
	}
	if (cl.verbose || cl.json) {
		wsnap_index_stats(idx, &st);
		print_summary(&st, cl.json);
		rc = wsnap_out_finish(stdout, "standard output");
	}
out:
	wsnap_index_free(idx);
	wsnap_policy_release(&cl.policy);
	return rc;
}
