/* SPDX-License-Identifier: MIT */
/*
 * wsnap export: safe extraction (policy.md sections 7 and 8), of the whole
 * archive or of what the PATH operands select (select.h); the whole
 * archive is validated either way.
 */
#include <errno.h>
#include <signal.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "commands.h"
#include "export.h"
#include "json.h"
#include "opts.h"
#include "remote.h"
#include "select.h"

/* Long work (a progress line on a terminal) from this size on. */
#define PROGRESS_MIN_MEMBERS 20000u
#define PROGRESS_MIN_BYTES   (256ull << 20)

struct export_args {
	struct wsnap_common common;
	struct wsnap_policy policy;
	struct wsnap_load_opts load;
};

/* --strip-prefix P: section 8, in the policy (target). */
static int set_strip_prefix(const char *cmd, void *policy, const char *arg)
{
	struct wsnap_error err;

	if (wsnap_policy_set_strip_prefix(policy, arg, &err) == WSNAP_OK)
		return 0;
	return wsnap_usage_error(cmd, "%s", err.reason);
}

#define T struct export_args
/* clang-format off */
static const struct wsnap_option export_options[] = {
	WSNAP_OPT_CALLBACK(0, "strip-prefix", "P", offsetof(T, policy),
			   set_strip_prefix,
			   "members are relative to P (policy.md section 8)"),
	WSNAP_OPT_COMMON(T, common),
	WSNAP_OPT_POLICY(T, policy),
	WSNAP_OPT_LOAD_READ(T, load),
	WSNAP_OPT_END(),
};

static const struct wsnap_cmd_usage export_usage = {
	.name = "export",
	.operands = "ARCHIVE|- DEST [PATH...]",
	.description =
		"Validates the whole archive, then writes it (or only the "
		"PATHs and what is below them) to DEST without "
		"ever touching anything outside DEST: no symlink is followed, "
		"files are created 0600 and get their sanitized mode only "
		"once complete, symlinks come last. A DEST that does not "
		"exist is built under a temporary name beside it and renamed "
		"into place only on success; an existing DEST is merged into "
		"(a file, symlink or other non-directory in the way is "
		"replaced; a directory where a file or symlink is wanted is "
		"refused). A compressed archive file is decompressed twice "
		"(to validate, then to copy); standard input is decompressed "
		"once into an unlinked temporary file (in $TMPDIR, else "
		"/tmp), which needs that much free space.",
	.exit_status =
		"0 ok, 2 usage, 3 archive rejected or destination unsafe, "
		"4 I/O error (no space, cannot write)",
	.options = export_options,
};
/* clang-format on */
#undef T

/* Set by SIGINT, SIGTERM, SIGHUP: the export stops and, for a fresh
 * destination, removes what it built. */
static volatile sig_atomic_t interrupted;

static void on_signal(int sig)
{
	interrupted = sig;
}

static void catch_signals(void)
{
	struct sigaction sa;

	memset(&sa, 0, sizeof(sa));
	sa.sa_handler = on_signal;
	sigemptyset(&sa.sa_mask);
	sigaction(SIGINT, &sa, NULL);
	sigaction(SIGTERM, &sa, NULL);
	sigaction(SIGHUP, &sa, NULL);
}

static void show_progress(void *ctx, const struct wsnap_export_progress *p)
{
	wsnap_progress_members(ctx, "export", p->members_done, p->members_total,
			       p->bytes_done, p->bytes_total);
}

static void print_json(const char *dest, const struct wsnap_export_stats *st,
		       const struct wsnap_index_stats *is)
{
	struct wsnap_json j;

	wsnap_json_begin(&j, stdout);
	wsnap_json_bool(&j, "ok", true);
	wsnap_json_cstring(&j, "dest", dest);
	wsnap_json_bool(&j, "created", st->created);
	wsnap_json_u64(&j, "members", st->members);
	wsnap_json_u64(&j, "directories", st->dirs);
	wsnap_json_u64(&j, "directories_kept", st->dirs_kept);
	wsnap_json_u64(&j, "files", st->files);
	wsnap_json_u64(&j, "symlinks", st->symlinks);
	wsnap_json_u64(&j, "bytes", st->bytes);
	wsnap_json_u64(&j, "replaced", st->replaced);
	wsnap_json_cstring(&j, "compression", is->compression);
	wsnap_json_end(&j);
}

static void print_summary(const char *dest, const struct wsnap_export_stats *st)
{
	fprintf(stderr, "wsnap: export: %" PRIu64 " %s to ", st->members,
		wsnap_plural(st->members, "member", "members"));
	wsnap_put_escaped(stderr, WSNAP_ESC_REPR, dest, strlen(dest));
	fprintf(stderr,
		"%s: %" PRIu64 " %s (%" PRIu64 " %s), %" PRIu64 " %s created, "
		"%" PRIu64 " kept, %" PRIu64 " %s; %" PRIu64 " %s replaced\n",
		st->created ? " (new)" : "", st->files,
		wsnap_plural(st->files, "file", "files"), st->bytes,
		wsnap_plural(st->bytes, "byte", "bytes"), st->dirs,
		wsnap_plural(st->dirs, "directory", "directories"),
		st->dirs_kept, st->symlinks,
		wsnap_plural(st->symlinks, "symlink", "symlinks"), st->replaced,
		wsnap_plural(st->replaced, "entry", "entries"));
}

int wsnap_cmd_export(int argc, char **argv)
{
	struct export_args a = {0};
	struct wsnap_index *idx = NULL;
	struct wsnap_export_stats st;
	struct wsnap_export_opts eo;
	struct wsnap_progress line;
	struct wsnap_index_stats is;
	struct wsnap_error err;
	enum wsnap_status s;
	unsigned char *sel = NULL;
	char **paths = NULL;
	size_t npaths = 0;
	bool reread = false, remote;
	struct stat in_st;
	int rc, in_fd = -1;

	wsnap_policy_init(&a.policy);
	wsnap_error_clear(&err);
	memset(&st, 0, sizeof(st));
	rc = wsnap_options_parse(&export_usage, &a, &argc, argv);
	if (rc != WSNAP_OPTIONS_RUN)
		goto out;
	wsnap_common_apply(&a.common);
	if (argc < 2) {
		rc = wsnap_usage_error("export", "missing ARCHIVE DEST");
		goto out;
	}
	if (argv[1][0] == '\0') {
		rc = wsnap_usage_error("export", "empty DEST");
		goto out;
	}
	npaths = (size_t)argc - 2;
	rc = wsnap_paths_parse("export", argv + 2, npaths, &paths);
	if (rc)
		goto out;
	/*
	 * A regular file is read again for the data (in place, or
	 * decompressed a second time): no temporary copy. Only a pipe has its
	 * (decompressed) stream kept in an unlinked temporary file while it
	 * is validated.
	 */
	/* a remote archive's data is read through its index (remote.h) */
	remote = wsnap_remote_is_url(argv[0]);
	in_fd = remote ? -1 : wsnap_open_archive(argv[0], &err);
	if (!remote && (in_fd < 0 || fstat(in_fd, &in_st) < 0)) {
		if (in_fd >= 0)
			wsnap_error_io(&err, errno, argv[0], "cannot stat");
		rc = wsnap_report(&err, a.common.json);
		goto out;
	}
	/* (with a sidecar the data is read through the index, whose digests
	 * are checked on the way) */
	reread = !remote && S_ISREG(in_st.st_mode) && !a.load.index;
	a.load.verbose = a.common.verbose;
	if ((remote ? wsnap_load_index(argv[0], &a.policy, true, &a.load, &idx,
				       &err)
		    : wsnap_build_index(in_fd, argv[0], &a.policy, !reread,
					&a.load, &idx, &err)) != WSNAP_OK ||
	    (paths &&
	     wsnap_select_build(idx, paths, npaths, &sel, &err) != WSNAP_OK)) {
		rc = wsnap_report(&err, a.common.json);
		goto out;
	}
	wsnap_index_stats(idx, &is);
	wsnap_progress_begin(&line,
			     is.members >= PROGRESS_MIN_MEMBERS ||
				     is.total_bytes >= PROGRESS_MIN_BYTES,
			     0);
	memset(&eo, 0, sizeof(eo));
	eo.progress = line.on ? show_progress : NULL;
	eo.ctx = &line;
	eo.select = sel;
	eo.cancel = &interrupted;
	if (reread) {
		eo.flags |= WSNAP_EXPORT_INPUT;
		eo.input_fd = in_fd;
		eo.input_stat = &in_st;
	}
	catch_signals();
	s = wsnap_export_run(idx, argv[1], &eo, &st, &err);
	wsnap_progress_end(&line);
	if (s != WSNAP_OK) {
		rc = wsnap_report(&err, a.common.json);
		goto out;
	}
	if (a.common.verbose)
		print_summary(argv[1], &st);
	if (a.common.json)
		print_json(argv[1], &st, &is);
	rc = wsnap_out_finish(stdout, "standard output");
out:
	free(sel);
	wsnap_paths_free(paths, npaths);
	if (in_fd >= 0)
		close(in_fd);
	wsnap_index_free(idx);
	wsnap_policy_release(&a.policy);
	return rc;
}
