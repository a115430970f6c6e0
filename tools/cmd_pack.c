/*
 * wsnap pack [POLICY] [--compress none|gzip|zstd|xz] [-v] DIR OUT|-
 *
 * Parses and reports; the work is ops/pack.c. The spec names --skip and
 * --allow-external-symlinks; the other policy options are accepted with
 * their usual meaning, so that 'pack' refuses what 'check' with the same
 * options would refuse.
 */
#include <inttypes.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "commands.h"
#include "json.h"
#include "opts.h"
#include "pack.h"

#define CMD "pack"

enum {
	OPT_COMPRESS = WSNAP_OPT_FIRST_PRIVATE,
};

static const char pack_usage[] =
	"usage: wsnap pack [--skip P]... [--allow-external-symlinks]\n"
	"                  [--compress none|gzip|zstd|xz] [-v] DIR OUT|-\n"
	"\n"
	"Makes a snapshot of DIR: a pax tar of '.' and './...' sorted by "
	"name, ownership\n"
	"zeroed, mtimes kept, symlinks stored (never followed), hardlinks as "
	"files,\n"
	"sockets left out; FIFOs, devices and symlinks leaving DIR are "
	"refused. The\n"
	"same tree always gives the same bytes. Compression follows OUT's "
	"extension\n"
	"(.tar, .tar.gz/.tgz, .tar.zst, .tar.xz) unless --compress; '-' is "
	"standard\n"
	"output (uncompressed unless --compress). OUT is replaced atomically; "
	"the\n"
	"result is checked under the same options before it is kept.\n"
	"\n"
	"  --compress C   none, gzip, zstd or xz\n"
	"  -v             print a summary on standard error\n";

int wsnap_cmd_pack(int argc, char **argv)
{
	static const struct option longopts[] = {
		WSNAP_POLICY_LONGOPTS,
		{"compress", required_argument, NULL, OPT_COMPRESS},
		{"verbose", no_argument, NULL, 'v'},
		{"help", no_argument, NULL, WSNAP_OPT_HELP},
		{NULL, 0, NULL, 0},
	};
	struct wsnap_policy policy;
	struct wsnap_pack_opts popts = {0};
	struct wsnap_pack_stats st;
	struct wsnap_error err;
	bool verbose = false, compress_set = false;
	const char *dir, *out;
	int opt, rc;

	wsnap_policy_init(&policy);
	wsnap_error_clear(&err);
	opterr = 0;
	while ((opt = getopt_long(argc, argv, ":hv", longopts, NULL)) != -1) {
		int r;

		switch (opt) {
		case OPT_COMPRESS:
			if (wsnap_pack_compress_parse(optarg,
						      &popts.compress) != 0) {
				rc = wsnap_usage_error(
					CMD,
					"--compress takes none, gzip, zstd "
					"or xz, not '%s'",
					optarg);
				goto out;
			}
			compress_set = true;
			continue;
		case 'v':
			verbose = true;
			continue;
		case 'h':
		case WSNAP_OPT_HELP:
			fputs(pack_usage, stdout);
			fputs(wsnap_policy_help, stdout);
			rc = 0;
			goto out;
		default:
			break;
		}
		r = wsnap_opts_rest(CMD, &policy, opt, optarg, argv);
		if (r == 1)
			continue;
		rc = r;
		goto out;
	}
	if (argc - optind != 2) {
		rc = wsnap_usage_error(CMD, "expected DIR and OUT");
		goto out;
	}
	dir = argv[optind];
	out = argv[optind + 1];
	if (strcmp(out, "-") == 0 && isatty(STDOUT_FILENO)) {
		rc = wsnap_usage_error(CMD, "refusing to write an archive "
					    "to a terminal");
		goto out;
	}
	if (!compress_set)
		popts.compress = wsnap_pack_compress_for(out);
	popts.policy = &policy;
	if (wsnap_pack_run(dir, out, &popts, &st, &err) != WSNAP_OK) {
		rc = wsnap_report(&err, false);
		goto out;
	}
	if (verbose) {
		fprintf(stderr,
			"wsnap: packed %" PRIu64 " members (%" PRIu64
			" directories, %" PRIu64 " files, %" PRIu64
			" symlinks, %" PRIu64 " bytes) into ",
			st.members, st.dirs, st.files, st.symlinks,
			st.file_bytes);
		/* OUT quoted and escaped like a name */
		wsnap_put_escaped(stderr, WSNAP_ESC_REPR, out, strlen(out));
		fprintf(stderr, " (%" PRIu64 " bytes)\n", st.out_bytes);
	}
	rc = 0;
out:
	wsnap_policy_release(&policy);
	return rc;
}
