/* SPDX-License-Identifier: MIT */
/*
 * wsnap pack [POLICY] [--compress none|gzip|bzip2|xz|zstd|lz4] [--index] [-v]
 *            DIR OUT|-
 *
 * Parses and reports; the work is ops/pack.c. The spec names --skip and
 * --allow-external-symlinks; the other policy options are accepted with
 * their usual meaning, so that 'pack' refuses what 'check' with the same
 * options would refuse. --index then writes the sidecar OUT.wsnapidx from
 * the archive written (what wsnap index OUT -o OUT.wsnapidx writes).
 */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "commands.h"
#include "indexfile.h"
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
	struct wsnap_common common;
	struct wsnap_policy policy;
	struct pack_compress compress;
	bool index; /* --index: OUT.wsnapidx too */
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
	WSNAP_OPT_COMMON(T, common),
	WSNAP_OPT_POLICY(T, policy),
	WSNAP_OPT_CALLBACK(0, "compress", WSNAP_PACK_COMPRESS_NAMES,
			   offsetof(T, compress), set_compress,
			   "compression, instead of OUT's extension (needed "
			   "when OUT has none of those above)"),
	WSNAP_OPT_BOOL(0, "index", T, index,
		       "also write the sidecar OUT.wsnapidx (what 'wsnap "
		       "index OUT -o OUT.wsnapidx' writes), after OUT"),
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
		"before it is kept. --index (not with '-') then validates "
		"OUT again under those options and writes its sidecar "
		"OUT.wsnapidx, atomically too, for 'mount --index'.",
	.exit_status = "0 ok, 2 usage, 3 refused by the policy, 4 I/O error",
	.options = pack_options,
};
/* clang-format on */
#undef T

/* -v: OUT quoted and escaped like a name, what it holds */
static void say_packed(const char *out, const struct wsnap_pack_stats *st)
{
	wsnap_say_counts(CMD, out, st->members, st->files, st->file_bytes,
			 st->dirs, st->symlinks);
	fprintf(stderr, "; %" PRIu64 " %s written, %s\n", st->out_bytes,
		wsnap_plural(st->out_bytes, "byte", "bytes"),
		st->compression ? st->compression : "?");
}

static void print_json(const char *out, const struct wsnap_pack_stats *st)
{
	struct wsnap_json j;

	wsnap_json_begin(&j, stdout);
	wsnap_json_bool(&j, "ok", true);
	wsnap_json_cstring(&j, "output", out);
	wsnap_json_u64(&j, "members", st->members);
	wsnap_json_u64(&j, "directories", st->dirs);
	wsnap_json_u64(&j, "files", st->files);
	wsnap_json_u64(&j, "symlinks", st->symlinks);
	wsnap_json_u64(&j, "bytes", st->file_bytes);
	wsnap_json_cstring(&j, "compression", st->compression);
	wsnap_json_u64(&j, "archive_bytes", st->out_bytes);
	wsnap_json_end(&j);
}

/* A progress line for a pack that takes a while (progress.h). */
#define PROGRESS_FIRST_NS 500000000LL

static void show_progress(void *ctx, const struct wsnap_pack_progress *p)
{
	wsnap_progress_members(ctx, CMD, p->members_done, p->members_total,
			       p->bytes_done, p->bytes_total);
}

/* --index: the sidecar of the archive just written, from the file itself */
static enum wsnap_status write_index(const char *out,
				     const struct wsnap_policy *policy,
				     struct wsnap_error *err)
{
	enum wsnap_status s;
	size_t n = strlen(out);
	char *side = malloc(n + sizeof(WSNAP_SIDECAR_SUFFIX));

	if (!side)
		return wsnap_error_io(err, ENOMEM, NULL, "out of memory");
	memcpy(side, out, n);
	memcpy(side + n, WSNAP_SIDECAR_SUFFIX, sizeof(WSNAP_SIDECAR_SUFFIX));
	s = wsnap_write_sidecar(out, side, policy, NULL, err);
	free(side);
	return s;
}

int wsnap_cmd_pack(int argc, char **argv)
{
	struct pack_args a = {0};
	struct wsnap_pack_opts popts = {0};
	struct wsnap_pack_stats st;
	struct wsnap_progress line;
	struct wsnap_error err;
	enum wsnap_status s;
	const char *dir, *out;
	int rc;

	wsnap_policy_init(&a.policy);
	wsnap_error_clear(&err);
	rc = wsnap_options_parse(&pack_usage, &a, &argc, argv);
	if (rc != WSNAP_OPTIONS_RUN)
		goto out;
	wsnap_common_apply(&a.common);
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
	if (strcmp(out, "-") == 0 && a.common.json) {
		rc = wsnap_usage_error(CMD, "--json needs an OUT other than "
					    "'-' (standard output holds the "
					    "archive)");
		goto out;
	}
	if (strcmp(out, "-") == 0 && a.index) {
		rc = wsnap_usage_error(CMD,
				       "--index needs an OUT other than "
				       "'-' (the sidecar is OUT.wsnapidx)");
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
	wsnap_progress_begin(&line, true, PROGRESS_FIRST_NS);
	if (line.on) {
		popts.progress = show_progress;
		popts.progress_ctx = &line;
	}
	s = wsnap_pack_run(dir, out, &popts, &st, &err);
	wsnap_progress_end(&line);
	if (s == WSNAP_OK && a.index)
		s = write_index(out, &a.policy, &err);
	if (s != WSNAP_OK) {
		rc = wsnap_report(&err, a.common.json);
		goto out;
	}
	if (a.common.verbose)
		say_packed(out, &st);
	rc = 0;
	if (a.common.json) {
		print_json(out, &st);
		rc = wsnap_out_finish(stdout, "standard output");
	}
out:
	wsnap_policy_release(&a.policy);
	return rc;
}
