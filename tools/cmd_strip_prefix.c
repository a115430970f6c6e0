/* SPDX-License-Identifier: MIT */
/* wsnap strip-prefix: rewrite an archive relative to a prefix (policy.md
 * section 8). OUT is written atomically: a temporary file beside it, renamed
 * into place only once the result passed the policy; '-' is standard output,
 * written only once the result passed (it is staged in an unlinked temporary
 * file first). */
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "commands.h"
#include "fsutil.h"
#include "json.h"
#include "opts.h"
#include "strip.h"

struct strip_args {
	struct wsnap_common common;
	struct wsnap_policy policy;
	struct wsnap_load_opts load;
	const char *prefix;
};

#define T struct strip_args
/* clang-format off */
static const struct wsnap_option strip_options[] = {
	WSNAP_OPT_STRING_FLAGS(0, "prefix", "P", T, prefix,
			       WSNAP_OPTION_REQUIRED,
			       "the prefix to strip (required, not empty)"),
	WSNAP_OPT_COMMON(T, common),
	WSNAP_OPT_POLICY(T, policy),
	WSNAP_OPT_CACHE(T, load),
	WSNAP_OPT_END(),
};

static const struct wsnap_cmd_usage strip_usage = {
	.name = "strip-prefix",
	.operands = "IN|- OUT|-",
	.description =
		"Writes an uncompressed pax tar whose members are relative to "
		"P: a member 'P' (or a root entry) becomes '.', 'P/x' becomes "
		"'x', anything else is rejected. Every input member must pass "
		"the single-member rules on its original name; the result "
		"keeps every header attribute, gets a fresh pax 'path' where "
		"the new name needs one, and is validated again with POLICY "
		"(where --skip and --reject-path name the new paths) before "
		"OUT is replaced (temporary file + rename) or standard output "
		"written. Compressed or piped input is decompressed to an "
		"unlinked temporary file ($TMPDIR, else /tmp); OUT '-' is "
		"staged there too.",
	.exit_status = "0 ok, 2 usage, 3 archive rejected, 4 I/O error",
	.options = strip_options,
};
/* clang-format on */
#undef T

/* An unlinked read-write file in the temporary directory. */
static int open_staging(struct wsnap_error *err)
{
	return wsnap_fs_tmpfile(NULL, "wsnap-strip", err);
}

static int copy_to_stdout(int fd, struct wsnap_error *err)
{
	char buf[65536];
	off_t off = 0;

	for (;;) {
		ssize_t r;
		int e;

		WSNAP_RETRY_EINTR(r, pread(fd, buf, sizeof(buf), off));
		if (r < 0) {
			wsnap_error_io(err, errno, NULL,
				       "cannot read temporary file");
			return -1;
		}
		if (r == 0)
			return 0;
		e = wsnap_write_full(STDOUT_FILENO, buf, (size_t)r);
		if (e) {
			wsnap_error_io(err, e, "-",
				       "cannot write standard output");
			return -1;
		}
		off += r;
	}
}

/* A temporary file beside out ('<dir>/.<base>.wsnap-XXXXXX'); its path is
 * returned in *tmp_path (caller frees). */
static int open_beside(const char *out, char **tmp_path,
		       struct wsnap_error *err)
{
	const char *slash = strrchr(out, '/');
	int fd, e;

	if ((slash ? slash + 1 : out)[0] == '\0') {
		wsnap_error_io(err, EISDIR, out, "output is a directory");
		return -1;
	}
	e = wsnap_fs_tmpfile_beside(out, ".wsnap-", tmp_path, &fd);
	if (e == ENOMEM)
		wsnap_error_io(err, e, NULL, "out of memory");
	else if (e)
		wsnap_error_io(err, e, out, "cannot create output");
	return e ? -1 : fd;
}

static int finish_named(int fd, const char *tmp, const char *out,
			struct wsnap_error *err)
{
	mode_t mask = umask(0);

	umask(mask);
	/* An ordinary new file's mode, not mkstemp's 0600. */
	if (fchmod(fd, 0666 & ~mask) < 0 || rename(tmp, out) < 0) {
		wsnap_error_io(err, errno, out, "cannot write output");
		return -1;
	}
	return 0;
}

/* Step 1's index through the index cache (load.c). */
struct strip_loader {
	const char *path;
	const struct wsnap_load_opts *lo;
};

static enum wsnap_status load_input(void *ctx, int fd,
				    const struct wsnap_policy *policy,
				    bool keep_data, struct wsnap_index **out,
				    struct wsnap_error *err)
{
	const struct strip_loader *l = ctx;

	return wsnap_build_index(fd, l->path, policy, keep_data, l->lo, out,
				 err);
}

static void say_stripped(const char *out, const struct wsnap_strip_stats *st)
{
	fputs("wsnap: strip-prefix: ", stderr);
	wsnap_put_escaped(stderr, WSNAP_ESC_REPR, out, strlen(out));
	fprintf(stderr,
		": %" PRIu64 " %s, %" PRIu64 " %s written (input %s, %" PRIu64
		" %s decompressed)\n",
		st->members, wsnap_plural(st->members, "member", "members"),
		st->output_bytes,
		wsnap_plural(st->output_bytes, "byte", "bytes"),
		st->compression ? st->compression : "?", st->stream_bytes,
		wsnap_plural(st->stream_bytes, "byte", "bytes"));
}

static void print_json(const char *out, const struct wsnap_strip_stats *st)
{
	struct wsnap_json j;

	wsnap_json_begin(&j, stdout);
	wsnap_json_bool(&j, "ok", true);
	wsnap_json_cstring(&j, "output", out);
	wsnap_json_u64(&j, "members", st->members);
	wsnap_json_cstring(&j, "compression", st->compression);
	wsnap_json_u64(&j, "archive_bytes", st->output_bytes);
	wsnap_json_end(&j);
}

int wsnap_cmd_strip_prefix(int argc, char **argv)
{
	struct strip_loader ld;
	struct strip_args a = {0};
	struct wsnap_strip_stats st;
	struct wsnap_error err;
	const char *in, *out;
	char *tmp = NULL;
	int rc, in_fd = -1, out_fd = -1;

	wsnap_policy_init(&a.policy);
	wsnap_error_clear(&err);
	rc = wsnap_options_parse(&strip_usage, &a, &argc, argv);
	if (rc != WSNAP_OPTIONS_RUN)
		goto out;
	wsnap_common_apply(&a.common);
	if (argc != 2) {
		rc = wsnap_usage_error("strip-prefix",
				       argc > 2 ? "too many arguments"
						: "missing IN OUT");
		goto out;
	}
	{
		/* An empty prefix (also '.', '/', './') is a usage error. */
		struct wsnap_policy probe;

		wsnap_policy_init(&probe);
		rc = wsnap_policy_set_strip_prefix(&probe, a.prefix, &err);
		wsnap_policy_release(&probe);
		if (rc != WSNAP_OK) {
			rc = wsnap_usage_error("strip-prefix", "%s",
					       err.reason);
			goto out;
		}
	}
	in = argv[0];
	out = argv[1];
	if (out[0] == '\0') {
		rc = wsnap_usage_error("strip-prefix", "empty OUT");
		goto out;
	}
	if (strcmp(out, "-") == 0 && a.common.json) {
		rc = wsnap_usage_error("strip-prefix",
				       "--json needs an OUT other than '-' "
				       "(standard output holds the archive)");
		goto out;
	}
	in_fd = wsnap_open_archive(in, &err);
	if (in_fd < 0) {
		rc = wsnap_report(&err, a.common.json);
		goto out;
	}
	if (strcmp(out, "-") == 0)
		out_fd = open_staging(&err);
	else
		out_fd = open_beside(out, &tmp, &err);
	if (out_fd < 0) {
		rc = wsnap_report(&err, a.common.json);
		goto out;
	}
	a.load.verbose = a.common.verbose;
	a.load.no_progress = true;
	ld.path = in;
	ld.lo = &a.load;
	if (wsnap_strip_run_with(in_fd, out_fd, &a.policy, a.prefix, NULL,
				 load_input, &ld, &st, &err) != WSNAP_OK ||
	    (tmp ? finish_named(out_fd, tmp, out, &err)
		 : copy_to_stdout(out_fd, &err)) < 0) {
		rc = wsnap_report(&err, a.common.json);
		goto out;
	}
	if (tmp) {
		free(tmp);
		tmp = NULL; /* renamed: nothing to clean up */
	}
	if (a.common.verbose)
		say_stripped(out, &st);
	rc = 0;
	if (a.common.json) {
		print_json(out, &st);
		rc = wsnap_out_finish(stdout, "standard output");
	}
out:
	if (tmp) {
		unlink(tmp);
		free(tmp);
	}
	if (out_fd >= 0)
		close(out_fd);
	if (in_fd >= 0 && in_fd != STDIN_FILENO)
		close(in_fd);
	wsnap_policy_release(&a.policy);
	return rc;
}
