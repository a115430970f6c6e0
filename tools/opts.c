/* SPDX-License-Identifier: MIT */
/*
 * The policy options and the error reporting shared by the subcommands
 * (opts.h).
 *
 * Every message goes to stderr as one line 'wsnap: ...'. Member names,
 * paths and reasons are escaped (policy.md section 2) before they reach a
 * terminal, so an archive cannot inject control sequences through them.
 */
#include "opts.h"

#include <errno.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "escape.h"
#include "json.h"
#include "array.h"

/* Usage errors also go to stdout as JSON; see wsnap_opts_usage_json. */
static bool usage_json;

void wsnap_opts_usage_json(bool on)
{
	usage_json = on;
}

/* Longest message of a usage error; longer ones are cut. */
#define USAGE_MESSAGE_MAX 1024

static int usage_v(const char *cmd, const char *fmt, va_list ap)
{
	char msg[USAGE_MESSAGE_MAX];
	struct wsnap_json j;
	int n;

	n = vsnprintf(msg, sizeof(msg), fmt, ap);
	if (n < 0)
		msg[0] = '\0';
	fflush(stdout);
	/* escaped: messages quote arguments, paths and libfuse's text */
	fputs("wsnap: ", stderr);
	if (cmd)
		fprintf(stderr, "%s: ", cmd);
	wsnap_put_escaped(stderr, WSNAP_ESC_BARE, msg, strlen(msg));
	if (cmd)
		fprintf(stderr, " (see 'wsnap %s --help')\n", cmd);
	else
		fputs(" (see 'wsnap --help')\n", stderr);
	if (usage_json) {
		wsnap_json_begin(&j, stdout);
		wsnap_json_bool(&j, "ok", false);
		wsnap_json_cstring(&j, "error", "usage");
		wsnap_json_cstring(&j, "message", msg);
		wsnap_json_end(&j);
		fflush(stdout);
	}
	return WSNAP_USAGE;
}

int wsnap_usage_error(const char *cmd, const char *fmt, ...)
{
	va_list ap;
	int rc;

	va_start(ap, fmt);
	rc = usage_v(cmd, fmt, ap);
	va_end(ap);
	return rc;
}

/* A configured path's status (the policy's setters): 0, or the exit code
 * after the error was reported. */
static int policy_result(const char *cmd, enum wsnap_status st,
			 const struct wsnap_error *err)
{
	if (st == WSNAP_OK)
		return 0;
	if (st != WSNAP_USAGE)
		return wsnap_report(err, usage_json);
	/* usage_v escapes the message */
	return wsnap_usage_error(cmd, "%s", err->reason);
}

static int policy_skip(const char *cmd, void *policy, const char *arg)
{
	struct wsnap_error err;

	return policy_result(cmd, wsnap_policy_add_skip(policy, arg, &err),
			     &err);
}

static int policy_root_name(const char *cmd, void *policy, const char *arg)
{
	struct wsnap_error err;

	return policy_result(cmd, wsnap_policy_set_root_name(policy, arg, &err),
			     &err);
}

static int policy_reject_path(const char *cmd, void *policy, const char *arg)
{
	struct wsnap_error err;

	return policy_result(
		cmd, wsnap_policy_add_reject_path(policy, arg, &err), &err);
}

static int policy_reject_symlink(const char *cmd, void *policy, const char *arg)
{
	struct wsnap_error err;

	return policy_result(
		cmd, wsnap_policy_add_reject_symlink(policy, arg, &err), &err);
}

/*
 * The callbacks' target is the whole policy (offset 0). Ranges: inos are
 * 32-bit, so at most 2^32 - 2 members; no path or depth can exceed what the
 * reader accepts for one member's headers.
 */
#define P struct wsnap_policy
/* clang-format off */
const struct wsnap_option wsnap_policy_options[] = {
	WSNAP_OPT_GROUP("policy options (all repeatable ones may be given "
			"many times):"),
	WSNAP_OPT_BOOL(0, "allow-external-symlinks", P, allow_external_symlinks,
		       "accept symlinks whose targets leave the snapshot"),
	WSNAP_OPT_BOOL(0, "no-symlinks", P, no_symlinks,
		       "reject every symlink member"),
	WSNAP_OPT_CALLBACK(0, "skip", "P", 0, policy_skip,
			   "ignore members within P entirely"),
	WSNAP_OPT_CALLBACK(0, "root-name", "R", 0, policy_root_name,
			   "--skip also matches below a first component R"),
	WSNAP_OPT_CALLBACK(0, "reject-path", "R", 0, policy_reject_path,
			   "reject members overlapping protected path R"),
	WSNAP_OPT_CALLBACK(0, "reject-symlink", "P", 0,
			   policy_reject_symlink,
			   "reject a symlink member at exactly P"),
	WSNAP_OPT_NUMBER(0, "max-members", "N", P, max_members,
			 UINT32_MAX - 1, 0, "most non-root members (2000000)"),
	WSNAP_OPT_NUMBER(0, "max-total-size", "BYTES", P, max_total_size,
			 UINT64_MAX, WSNAP_OPTION_BYTES,
			 "most bytes of all files together (64G)"),
	WSNAP_OPT_NUMBER(0, "max-file-size", "BYTES", P, max_file_size,
			 UINT64_MAX, WSNAP_OPTION_BYTES,
			 "most bytes of one file (unlimited)"),
	WSNAP_OPT_NUMBER(0, "max-path-length", "BYTES", P, max_path_length,
			 WSNAP_READER_MAX_HEADER_BYTES, 0,
			 "longest path (4096)"),
	WSNAP_OPT_NUMBER(0, "max-depth", "N", P, max_depth,
			 WSNAP_READER_MAX_HEADER_BYTES / 2, 0,
			 "most path components (256)"),
	WSNAP_OPT_NUMBER(0, "max-index-size", "BYTES", P, max_index_size,
			 UINT64_MAX, WSNAP_OPTION_BYTES,
			 "most memory for the index of members (1G)"),
	WSNAP_OPT_NOTE("BYTES: 1000, 64K, 1M, 64G, ... (powers of 1024) or "
		       "'unlimited'."),
	WSNAP_OPT_END(),
};
/* clang-format on */
#undef P

static int progress_on(const char *cmd, void *target, const char *arg)
{
	*(enum wsnap_progress_mode *)target = WSNAP_PROGRESS_ON;
	return 0;
}

static int progress_off(const char *cmd, void *target, const char *arg)
{
	*(enum wsnap_progress_mode *)target = WSNAP_PROGRESS_OFF;
	return 0;
}

#define C struct wsnap_common
/* clang-format off */
const struct wsnap_option wsnap_common_options[] = {
	WSNAP_OPT_GROUP("common options:"),
	WSNAP_OPT_JSON(C, json, "JSON lines on stdout (doc/json.md)"),
	WSNAP_OPT_BOOL('v', "verbose", C, verbose, "details on stderr"),
	WSNAP_OPT_BOOL('q', "quiet", C, quiet,
		       "only errors on stderr (beats -v, --progress)"),
	WSNAP_OPT_CALLBACK(0, "progress", NULL, offsetof(C, progress),
			   progress_on,
			   "the progress line of long work, also off a tty"),
	WSNAP_OPT_CALLBACK(0, "no-progress", NULL, offsetof(C, progress),
			   progress_off, "no progress line"),
	WSNAP_OPT_END(),
};
/* clang-format on */
#undef C

void wsnap_common_apply(struct wsnap_common *c)
{
	if (c->quiet) {
		c->verbose = false;
		c->progress = WSNAP_PROGRESS_OFF;
	}
	wsnap_progress_mode_set(c->progress);
}

const char *wsnap_plural(uint64_t n, const char *one, const char *many)
{
	return n == 1 ? one : many;
}

/* Hints for rejections that an option would let through (cli.md). */
struct hint {
	const char *reason; /* reason, or its start up to ': ' */
	const char *text;
};

static const struct hint hints[] = {
	{"absolute symlink target not allowed: ",
	 "--allow-external-symlinks accepts symlinks whose targets leave the "
	 "snapshot"},
	{"symlink target escapes archive root: ",
	 "--allow-external-symlinks accepts symlinks whose targets leave the "
	 "snapshot"},
	{"archive member count exceeds limit",
	 "--max-members N raises the limit on the number of members "
	 "(default 2000000)"},
	{"archive extracted size exceeds limit",
	 "--max-total-size BYTES raises the limit on the total size of the "
	 "files (default 64G)"},
	{"file size exceeds limit",
	 "--max-file-size BYTES raises the limit on the size of one file"},
	{"path too long",
	 "--max-path-length BYTES raises the limit on the length of a path "
	 "(default 4096)"},
	{"path too deep",
	 "--max-depth N raises the limit on the number of path components "
	 "(default 256)"},
	{"archive index size exceeds limit",
	 "--max-index-size BYTES raises the limit on the memory of the index "
	 "(default 1G)"},
};

static const char *hint_for(const char *reason)
{
	size_t i, n;

	for (i = 0; i < ARRAY_SIZE(hints); i++) {
		n = strlen(hints[i].reason);
		if (hints[i].reason[n - 1] == ' '
			    ? !strncmp(reason, hints[i].reason, n)
			    : !strcmp(reason, hints[i].reason))
			return hints[i].text;
	}
	return NULL;
}

/* The I/O or usage message for a terminal: reason 'path': strerror */
static void put_message(FILE *f, const struct wsnap_error *err)
{
	wsnap_put_escaped(f, WSNAP_ESC_BARE, err->reason, strlen(err->reason));
	if (err->member[0]) {
		fputc(' ', f);
		wsnap_put_escaped(f, WSNAP_ESC_REPR, err->member,
				  strlen(err->member));
	}
	if (err->errnum) {
		fputs(": ", f);
		fputs(strerror(err->errnum), f);
	}
}

/* The same message as a JSON string, the path exact (raw bytes). */
static void json_message(struct wsnap_json *j, const struct wsnap_error *err)
{
	static char buf[2 * WSNAP_ERROR_TEXT_MAX + 256];
	const char *parts[6] = {err->reason};
	size_t n = 0, k, len, i = 1;

	if (err->member[0]) {
		parts[i++] = " '";
		parts[i++] = err->member;
		parts[i++] = "'";
	}
	if (err->errnum) {
		parts[i++] = ": ";
		parts[i++] = strerror(err->errnum);
	}
	for (k = 0; k < i; k++) {
		len = strlen(parts[k]);
		if (len > sizeof(buf) - n)
			len = sizeof(buf) - n;
		memcpy(buf + n, parts[k], len);
		n += len;
	}
	wsnap_json_string(j, "message", buf, n);
}

/* The JSON object of an error (doc/json.md). */
static void json_error(const struct wsnap_error *err, const char *hint)
{
	const char *name;
	struct wsnap_json j;

	wsnap_json_begin(&j, stdout);
	wsnap_json_bool(&j, "ok", false);
	if (err->status == WSNAP_REJECTED) {
		wsnap_json_cstring(&j, "error", "rejected");
		wsnap_json_cstring(&j, "member", err->member);
		wsnap_json_cstring(&j, "reason", err->reason);
	} else {
		wsnap_json_cstring(&j, "error",
				   err->status == WSNAP_USAGE ? "usage" : "io");
		json_message(&j, err);
		/* the path exactly: an archive path for a usage error (a
		 * PATH operand), a file for an I/O error */
		if (err->member[0])
			wsnap_json_cstring(&j,
					   err->status == WSNAP_USAGE ? "member"
								      : "file",
					   err->member);
	}
	name = err->errnum ? strerrorname_np(err->errnum) : NULL;
	if (name)
		wsnap_json_cstring(&j, "errno", name);
	if (hint)
		wsnap_json_cstring(&j, "hint", hint);
	wsnap_json_end(&j);
	fflush(stdout);
}

int wsnap_report_hint(const struct wsnap_error *err, bool json,
		      const char *hint)
{
	if (err->status == WSNAP_OK)
		return 0;
	fflush(stdout);
	if (!hint && err->status == WSNAP_REJECTED)
		hint = hint_for(err->reason);
	if (err->status == WSNAP_REJECTED) {
		fputs("wsnap: unsafe tar member ", stderr);
		wsnap_put_escaped(stderr, WSNAP_ESC_REPR, err->member,
				  strlen(err->member));
		fputs(": ", stderr);
		wsnap_put_escaped(stderr, WSNAP_ESC_BARE, err->reason,
				  strlen(err->reason));
		fputc('\n', stderr);
	} else {
		fputs("wsnap: ", stderr);
		put_message(stderr, err);
		fputc('\n', stderr);
	}
	if (hint)
		fprintf(stderr, "wsnap: hint: %s\n", hint);
	if (json)
		json_error(err, hint);
	return err->status;
}

int wsnap_report(const struct wsnap_error *err, bool json)
{
	return wsnap_report_hint(err, json, NULL);
}

int wsnap_out_finish(FILE *f, const char *what)
{
	struct wsnap_error err;
	int e = 0;

	if (fflush(f) != 0)
		e = errno;
	if (!e && !ferror(f))
		return 0;
	wsnap_error_io(&err, e ? e : EIO, what, "cannot write");
	return wsnap_report(&err, false);
}
