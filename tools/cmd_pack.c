/*
 * wsnap pack [POLICY] [--compress none|gzip|bzip2|xz|zstd|lz4] [-v] DIR OUT|-
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

/* --compress KIND */
struct pack_compress {
	enum wsnap_pack_compress kind;
	bool set; /* else OUT's extension says */
};

struct pack_args {
	struct wsnap_policy policy;
	struct pack_compress compress;
	bool verbose;
};

static int set_compress(const char *cmd, void *target, const char *arg)
{
	struct pack_compress *c = target;

	if (wsnap_pack_compress_parse(arg, &c->kind) != 0)
		return wsnap_usage_error(cmd,
					 "--compress takes none, gzip, bzip2, "
					 "xz, zstd or lz4, not '%s'",
					 arg);
	c->set = true;
	return 0;
}

#define T struct pack_args
/* clang-format off */
static const struct wsnap_option pack_options[] = {
	WSNAP_OPT_POLICY(T, policy),
	WSNAP_OPT_CALLBACK(0, "compress", WSNAP_PACK_COMPRESS_NAMES,
			   offsetof(T, compress), set_compress,
			   "compression, instead of OUT's extension (needed "
			   "when OUT has none of those above)"),
	WSNAP_OPT_BOOL('v', "verbose", T, verbose,
		       "print a summary on standard error"),
	WSNAP_OPT_END(),
};

static const struct wsnap_cmd_usage pack_usage = {
	.name = CMD,
	.operands = "DIR OUT|-",
	.description =
		"Makes a snapshot of DIR: a pax tar of '.' and './...' sorted "
		"by name, ownership zeroed, mtimes kept, symlinks stored "
		"(never followed), hardlinks as files, sockets left out; "
		"FIFOs, devices and symlinks leaving DIR are refused. The "
		"same tree always gives the same bytes. Compression follows "
		"OUT's extension, in any case (.tar, .tar.gz/.tgz, "
		".tar.bz2/.tbz2, .tar.xz/.txz, .tar.zst/.tzst, .tar.lz4); "
		"another name needs --compress. '-' is standard output "
		"(uncompressed unless --compress). OUT is replaced "
		"atomically; the result is checked under the same options "
		"before it is kept.",
	.exit_status = "0 ok, 2 usage, 3 refused by the policy, 4 I/O error",
	.options = pack_options,
};
/* clang-format on */
#undef T

int wsnap_cmd_pack(int argc, char **argv)
{
	struct pack_args a = {0};
	struct wsnap_pack_opts popts = {0};
	struct wsnap_pack_stats st;
	struct wsnap_error err;
	const char *dir, *out;
	int rc;

	wsnap_policy_init(&a.policy);
	wsnap_error_clear(&err);
	rc = wsnap_options_parse(&pack_usage, &a, &argc, argv);
	if (rc != WSNAP_OPTIONS_RUN)
		goto out;
	if (argc != 2) {
		rc = wsnap_usage_error(CMD, "expected DIR and OUT");
		goto out;
	}
	dir = argv[0];
	out = argv[1];
	if (strcmp(out, "-") == 0 && isatty(STDOUT_FILENO)) {
		rc = wsnap_usage_error(CMD, "refusing to write an archive "
					    "to a terminal");
		goto out;
	}
	if (a.compress.set) {
		popts.compress = a.compress.kind;
	} else if (wsnap_pack_compress_for(out, &popts.compress) != 0) {
		rc = wsnap_usage_error(CMD,
				       "cannot tell the compression from "
				       "'%s': name it " WSNAP_PACK_EXTENSIONS
				       ", or give --compress",
				       out);
		goto out;
	}
	popts.policy = &a.policy;
	if (wsnap_pack_run(dir, out, &popts, &st, &err) != WSNAP_OK) {
		rc = wsnap_report(&err, false);
		goto out;
	}
	if (a.verbose) {
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
	wsnap_policy_release(&a.policy);
	return rc;
}
