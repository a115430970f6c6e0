/* SPDX-License-Identifier: MIT */
/*
 * wsnap ls [OPTIONS] [POLICY] ARCHIVE|- [PATH...]
 *
 * Validates the archive, then lists the index as a mount presents it:
 * inos 2..count are the members (implicit directories included) sorted
 * bytewise by path (index.h), so the listing is one pass in ino order.
 * Times are local time (as ls -l and tar -tv show them); TZ=UTC gives UTC.
 * PATHs limit the listing to the nodes they name and everything below them
 * (select.h): the marks of the selection are checked in the same pass.
 *
 * Output goes through a large stdout buffer with unlocked stdio: listing
 * 100,000 members costs a few milliseconds beyond building the index.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "commands.h"
#include "json.h"
#include "opts.h"
#include "select.h"

#define OUT_BUFFER (1u << 20)

struct ls_args {
	struct wsnap_common common;
	struct wsnap_policy policy;
	struct wsnap_load_opts load;
};

#define T struct ls_args
/* clang-format off */
static const struct wsnap_option ls_options[] = {
	WSNAP_OPT_COMMON(T, common),
	WSNAP_OPT_POLICY(T, policy),
	WSNAP_OPT_LOAD(T, load),
	WSNAP_OPT_END(),
};

static const struct wsnap_cmd_usage ls_usage = {
	.name = "ls",
	.operands = "ARCHIVE|- [PATH...]",
	.description =
		"Validates the archive, lists it as a mount presents it (no "
		"root) by path:\n"
		"  drwxr-xr-x  4096 2026-11-29 10:00 src\n"
		"  lrwxrwxrwx    11 2026-11-29 10:00 src/link -> ../README\n"
		"mode, size, mtime in local time (TZ=UTC for UTC), path "
		"(bytewise order, escaped, unquoted), ' -> target'; PATHs "
		"limit it to them.",
	.exit_status =
		"0 listed, 2 usage error, 3 rejected (unsafe, or invalid tar "
		"stream), 4 I/O or system error",
	.options = ls_options,
};
/* clang-format on */
#undef T

static const char *type_name(unsigned type)
{
	switch (type) {
	case WSNAP_TYPE_DIR:
		return "dir";
	case WSNAP_TYPE_SYMLINK:
		return "symlink";
	default:
		return "file";
	}
}

/* 'drwxr-xr-x' from a node's type and presented mode; buf holds 11. */
static void mode_string(char *buf, const struct wsnap_node *n)
{
	static const char rwx[] = "rwxrwxrwx";
	int i;

	buf[0] = n->type == WSNAP_TYPE_DIR	 ? 'd'
		 : n->type == WSNAP_TYPE_SYMLINK ? 'l'
						 : '-';
	for (i = 0; i < 9; i++)
		buf[1 + i] = (n->mode & (0400u >> i)) ? rwx[i] : '-';
	buf[10] = '\0';
}

/* The mtime column, cached for runs of equal seconds. */
struct time_cache {
	bool valid;
	int64_t sec;
	char text[40];
};

static const char *time_column(struct time_cache *tc, int64_t sec)
{
	time_t t = (time_t)sec;
	struct tm tm;

	if (tc->valid && tc->sec == sec)
		return tc->text;
	tc->valid = true;
	tc->sec = sec;
	if ((int64_t)t != sec || !localtime_r(&t, &tm)) {
		/* out of the range of struct tm: show the seconds */
		snprintf(tc->text, sizeof(tc->text), "@%lld", (long long)sec);
		return tc->text;
	}
	snprintf(tc->text, sizeof(tc->text), "%04lld-%02d-%02d %02d:%02d",
		 (long long)tm.tm_year + 1900, tm.tm_mon + 1, tm.tm_mday,
		 tm.tm_hour, tm.tm_min);
	return tc->text;
}

/* Whether ino is listed: everything, or what the PATHs select. */
static bool listed(const unsigned char *sel, uint32_t ino)
{
	return !sel || sel[ino] == WSNAP_SELECT_YES;
}

static void list_text(const struct wsnap_index *idx, uint32_t count,
		      const unsigned char *sel)
{
	struct time_cache tc = {0};
	const struct wsnap_node *n;
	char mode[11], num[24];
	size_t width = 1, len, pad;
	uint32_t ino;

	/* the size column is as wide as the widest size */
	for (ino = 2; ino <= count; ino++) {
		if (!listed(sel, ino))
			continue;
		len = wsnap_fmt_u64(num, wsnap_index_node(idx, ino)->size);
		if (len > width)
			width = len;
	}
	for (ino = 2; ino <= count; ino++) {
		if (!listed(sel, ino))
			continue;
		n = wsnap_index_node(idx, ino);
		mode_string(mode, n);
		fwrite_unlocked(mode, 1, 10, stdout);
		len = wsnap_fmt_u64(num, n->size);
		for (pad = len; pad <= width; pad++)
			fputc_unlocked(' ', stdout);
		fwrite_unlocked(num, 1, len, stdout);
		fputc_unlocked(' ', stdout);
		fputs_unlocked(time_column(&tc, n->mtime_sec), stdout);
		fputc_unlocked(' ', stdout);
		wsnap_put_escaped(stdout, WSNAP_ESC_BARE, n->path,
				  strlen(n->path));
		if (n->type == WSNAP_TYPE_SYMLINK && n->target) {
			fputs_unlocked(" -> ", stdout);
			wsnap_put_escaped(stdout, WSNAP_ESC_BARE, n->target,
					  strlen(n->target));
		}
		fputc_unlocked('\n', stdout);
	}
}

static void list_json(const struct wsnap_index *idx, uint32_t count,
		      const unsigned char *sel)
{
	const struct wsnap_node *n;
	struct wsnap_index_stats st;
	struct wsnap_json j;
	uint64_t records = 0;
	uint32_t ino;

	for (ino = 2; ino <= count; ino++) {
		if (!listed(sel, ino))
			continue;
		records++;
		n = wsnap_index_node(idx, ino);
		wsnap_json_begin(&j, stdout);
		wsnap_json_cstring(&j, "path", n->path);
		wsnap_json_cstring(&j, "type", type_name(n->type));
		wsnap_json_mode(&j, "mode", n->mode);
		wsnap_json_u64(&j, "size", n->size);
		wsnap_json_time(&j, "mtime", n->mtime_sec, n->mtime_nsec,
				n->flags & WSNAP_NODE_MTIME_FRAC);
		if (n->type == WSNAP_TYPE_SYMLINK)
			wsnap_json_cstring(&j, "target",
					   n->target ? n->target : "");
		wsnap_json_end(&j);
	}
	/* the end: a listing without it was cut off */
	wsnap_index_stats(idx, &st);
	wsnap_json_begin(&j, stdout);
	wsnap_json_bool(&j, "ok", true);
	wsnap_json_u64(&j, "records", records);
	wsnap_json_summary(&j, &st);
	wsnap_json_end(&j);
}

int wsnap_cmd_ls(int argc, char **argv)
{
	static char outbuf[OUT_BUFFER];
	struct wsnap_index *idx = NULL;
	struct ls_args a = {0};
	struct wsnap_index_stats st;
	struct wsnap_error err;
	unsigned char *sel = NULL;
	char **paths = NULL;
	size_t npaths = 0;
	int rc;

	setvbuf(stdout, outbuf, _IOFBF, sizeof(outbuf));
	wsnap_policy_init(&a.policy);
	rc = wsnap_options_parse(&ls_usage, &a, &argc, argv);
	if (rc != WSNAP_OPTIONS_RUN)
		goto out;
	wsnap_common_apply(&a.common);
	if (argc < 1) {
		rc = wsnap_usage_error("ls", "missing ARCHIVE");
		goto out;
	}
	npaths = (size_t)argc - 1;
	rc = wsnap_paths_parse("ls", argv + 1, npaths, &paths);
	if (rc)
		goto out;
	a.load.verbose = a.common.verbose;
	if (wsnap_load_index(argv[0], &a.policy, false, &a.load, &idx, &err) ||
	    (paths && wsnap_select_build(idx, paths, npaths, &sel, &err))) {
		rc = wsnap_report(&err, a.common.json);
		goto out;
	}
	if (a.common.verbose) {
		wsnap_index_stats(idx, &st);
		wsnap_say_summary("ls", argv[0], &st);
	}
	if (a.common.json)
		list_json(idx, wsnap_index_count(idx), sel);
	else
		list_text(idx, wsnap_index_count(idx), sel);
	rc = wsnap_out_finish(stdout, "standard output");
out:
	free(sel);
	wsnap_paths_free(paths, npaths);
	wsnap_index_free(idx);
	wsnap_policy_release(&a.policy);
	fflush(stdout);
	return rc;
}
