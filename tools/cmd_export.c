/* wsnap export: safe extraction (policy.md sections 7 and 8). */
#include <errno.h>
#include <signal.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "commands.h"
#include "export.h"
#include "json.h"
#include "opts.h"

/* A progress line is shown on a terminal from this size on. */
#define PROGRESS_MIN_MEMBERS 20000u
#define PROGRESS_MIN_BYTES   (256ull << 20)
#define PROGRESS_INTERVAL_NS 200000000ll

struct export_args {
	struct wsnap_policy policy;
	struct wsnap_load_opts load;
	bool json;
	bool verbose;
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
	WSNAP_OPT_POLICY(T, policy),
	WSNAP_OPT_LOAD(T, load),
	WSNAP_OPT_CALLBACK(0, "strip-prefix", "P", offsetof(T, policy),
			   set_strip_prefix,
			   "members are relative to P (policy.md section 8)"),
	WSNAP_OPT_JSON(T, json,
		       "print a JSON summary (counts, bytes) on stdout"),
	WSNAP_OPT_BOOL('v', "verbose", T, verbose,
		       "print a summary line on stdout"),
	WSNAP_OPT_END(),
};

static const struct wsnap_cmd_usage export_usage = {
	.name = "export",
	.operands = "ARCHIVE|- DEST",
	.description =
		"Validates the whole archive, then writes it to DEST without "
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

struct progress_line {
	bool on;
	bool shown;
	struct timespec last;
};

static void show_progress(void *ctx, const struct wsnap_export_progress *p)
{
	struct progress_line *pl = ctx;
	struct timespec now;
	long long dt;

	if (!pl->on)
		return;
	clock_gettime(CLOCK_MONOTONIC, &now);
	dt = (now.tv_sec - pl->last.tv_sec) * 1000000000ll +
	     (now.tv_nsec - pl->last.tv_nsec);
	if (pl->shown && dt < PROGRESS_INTERVAL_NS &&
	    p->members_done < p->members_total)
		return;
	pl->last = now;
	pl->shown = true;
	fprintf(stderr,
		"\rwsnap: export: %" PRIu64 "/%" PRIu64 " members, %" PRIu64
		"/%" PRIu64 " MiB",
		p->members_done, p->members_total, p->bytes_done >> 20,
		p->bytes_total >> 20);
	if (p->members_done >= p->members_total)
		fputc('\n', stderr);
	fflush(stderr);
}

static void print_json(const char *dest, const struct wsnap_export_stats *st)
{
	struct wsnap_json j;

	wsnap_json_begin(&j, stdout);
	wsnap_json_bool(&j, "ok", true);
	wsnap_json_cstring(&j, "dest", dest);
	wsnap_json_bool(&j, "created", st->created);
	wsnap_json_u64(&j, "members", st->members);
	wsnap_json_u64(&j, "dirs", st->dirs);
	wsnap_json_u64(&j, "dirs_kept", st->dirs_kept);
	wsnap_json_u64(&j, "files", st->files);
	wsnap_json_u64(&j, "symlinks", st->symlinks);
	wsnap_json_u64(&j, "replaced", st->replaced);
	wsnap_json_u64(&j, "bytes", st->bytes);
	wsnap_json_end(&j);
}

static void print_summary(const char *dest, const struct wsnap_export_stats *st)
{
	printf("exported %" PRIu64 " members to ", st->members);
	wsnap_put_escaped(stdout, WSNAP_ESC_REPR, dest, strlen(dest));
	printf("%s: %" PRIu64 " directories created, %" PRIu64 " kept, %" PRIu64
	       " files (%" PRIu64 " bytes), %" PRIu64 " symlinks, %" PRIu64
	       " entries replaced\n",
	       st->created ? " (new)" : "", st->dirs, st->dirs_kept, st->files,
	       st->bytes, st->symlinks, st->replaced);
}

int wsnap_cmd_export(int argc, char **argv)
{
	struct export_args a = {0};
	struct wsnap_index *idx = NULL;
	struct wsnap_export_stats st;
	struct wsnap_export_opts eo;
	struct progress_line pl;
	struct wsnap_index_stats is;
	struct wsnap_error err;
	bool reread = false;
	struct stat in_st;
	int rc, in_fd = -1;

	wsnap_policy_init(&a.policy);
	wsnap_error_clear(&err);
	memset(&st, 0, sizeof(st));
	rc = wsnap_options_parse(&export_usage, &a, &argc, argv);
	if (rc != WSNAP_OPTIONS_RUN)
		goto out;
	if (argc != 2) {
		rc = wsnap_usage_error("export",
				       argc > 2 ? "too many arguments"
						: "missing ARCHIVE DEST");
		goto out;
	}
	if (argv[1][0] == '\0') {
		rc = wsnap_usage_error("export", "empty DEST");
		goto out;
	}
	/*
	 * A regular file is read again for the data (in place, or
	 * decompressed a second time): no temporary copy. Only a pipe has its
	 * (decompressed) stream kept in an unlinked temporary file while it
	 * is validated.
	 */
	in_fd = wsnap_open_archive(argv[0], &err);
	if (in_fd < 0 || fstat(in_fd, &in_st) < 0) {
		if (in_fd >= 0)
			wsnap_error_io(&err, errno, argv[0], "cannot stat");
		rc = wsnap_report(&err, a.json);
		goto out;
	}
	/* (with a sidecar the data is read through the index, whose digests
	 * are checked on the way) */
	reread = S_ISREG(in_st.st_mode) && !a.load.index;
	a.load.verbose = a.verbose;
	if (wsnap_build_index(in_fd, argv[0], &a.policy, !reread, &a.load, &idx,
			      &err) != WSNAP_OK) {
		rc = wsnap_report(&err, a.json);
		goto out;
	}
	wsnap_index_stats(idx, &is);
	memset(&pl, 0, sizeof(pl));
	pl.on = isatty(STDERR_FILENO) && (is.members >= PROGRESS_MIN_MEMBERS ||
					  is.total_bytes >= PROGRESS_MIN_BYTES);
	memset(&eo, 0, sizeof(eo));
	eo.progress = show_progress;
	eo.ctx = &pl;
	eo.cancel = &interrupted;
	if (reread) {
		eo.flags |= WSNAP_EXPORT_INPUT;
		eo.input_fd = in_fd;
		eo.input_stat = &in_st;
	}
	catch_signals();
	if (wsnap_export_run(idx, argv[1], &eo, &st, &err) != WSNAP_OK) {
		if (pl.shown)
			fputc('\n', stderr);
		rc = wsnap_report(&err, a.json);
		goto out;
	}
	if (a.json)
		print_json(argv[1], &st);
	else if (a.verbose)
		print_summary(argv[1], &st);
	rc = wsnap_out_finish(stdout, "standard output");
out:
	if (in_fd >= 0)
		close(in_fd);
	wsnap_index_free(idx);
	wsnap_policy_release(&a.policy);
	return rc;
}
