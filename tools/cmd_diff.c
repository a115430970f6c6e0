/* SPDX-License-Identifier: MIT */
/*
 * wsnap diff [--stat] [--mtime] [--full]
 *            [-p [-U N] [--binary] [--max-diff-size BYTES]] [OPTIONS]
 *            [POLICY] A B
 *
 * Each side is a directory (read by the walker, tree.h) or an archive
 * ('-' is standard input); both are read under the policy and compared by
 * the engine (diff.h). This file only parses, loads the sides and prints.
 * A directory B that is a workspace hydrated from archive A is read from
 * its upper directory instead (hydrate.h), unless --full. With -p the
 * changes go to the patch writer (patch.h) instead of the letter lines;
 * with --stat too, the patch is spooled to an unlinked temporary file so
 * that git's summary can come first, as git prints it.
 */
#include <errno.h>
#include <pthread.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "commands.h"
#include "diff.h"
#include "hydrate.h"
#include "json.h"
#include "fsutil.h"
#include "opts.h"
#include "patch.h"
#include "tree.h"

#define CMD "diff"

#define OUT_BUFFER    (1u << 20)
#define CONTEXT_UNSET UINT64_MAX /* -U not given */

struct diff_args {
	struct wsnap_common common;
	struct wsnap_policy policy;
	struct wsnap_load_opts load;
	struct wsnap_diff_opts dopts;
	bool stat;
	bool full;
	bool patch;
	bool binary;
	uint64_t context;
	uint64_t max_diff_size;
};

#define T struct diff_args
/* clang-format off */
static const struct wsnap_option diff_options[] = {
	WSNAP_OPT_BOOL(0, "stat", T, stat,
		       "a closing summary line (with -p: git's summary of "
		       "each file, before the patch)"),
	WSNAP_OPT_BOOL(0, "mtime", T, dopts.mtime,
		       "a different mtime is a difference too"),
	WSNAP_OPT_BOOL(0, "full", T, full,
		       "read a workspace hydrated from A through its overlay "
		       "like any directory (by default only its upper "
		       "directory is read: the same answer, at a cost that "
		       "grows with the changes)"),
	WSNAP_OPT_BOOL('p', "patch", T, patch,
		       "a patch in git's format instead of the letter lines, "
		       "that git apply applies to A to give B"),
	WSNAP_OPT_NUMBER('U', "unified", "N", T, context, INT32_MAX, 0,
			 "N lines of context around each change (default 3; "
			 "implies -p)"),
	WSNAP_OPT_BOOL(0, "binary", T, binary,
		       "binary files as git binary patches, so that they "
		       "apply too (implies -p)"),
	WSNAP_OPT_NUMBER(0, "max-diff-size", "BYTES", T, max_diff_size,
			 UINT64_MAX, WSNAP_OPTION_BYTES,
			 "a larger file is not read: the patch says 'Binary "
			 "files a/X and b/X differ' (default 16M)"),
	WSNAP_OPT_COMMON(T, common),
	WSNAP_OPT_POLICY(T, policy),
	WSNAP_OPT_CACHE_READ(T, load),
	WSNAP_OPT_END(),
};

static const struct wsnap_cmd_usage diff_usage = {
	.name = CMD,
	.operands = "A B",
	.description =
		"Compares two snapshots, each an archive ('-' for standard "
		"input) or a directory (read without following symlinks). "
		"One line per changed path, sorted by path:\n"
		"  A  only in B      D  only in A\n"
		"  M  same type, different content, mode or symlink target\n"
		"  T  type changed\n"
		"With -p, a patch in git's format: text hunks, mode, symlink, "
		"new and deleted files as git writes them, paths quoted as git "
		"quotes them, in the same order; --stat then adds git's "
		"summary before it.",
	.exit_status =
		"0 identical, 1 different, 2 usage, 3 rejected, 4 I/O error",
	.options = diff_options,
};
/* clang-format on */
#undef T

struct side {
	const char *arg;
	struct wsnap_load_opts load; /* --no-cache, -v */
	int dir_fd;
	struct wsnap_index *idx;
	struct wsnap_tree_cursor *cursor;
	struct wsnap_diff_archive arc;
	struct wsnap_diff_side side;
};

struct printer {
	bool json;
};

static void side_release(struct side *s)
{
	wsnap_diff_archive_release(&s->arc);
	wsnap_tree_cursor_free(s->cursor);
	wsnap_index_free(s->idx);
	if (s->dir_fd >= 0)
		close(s->dir_fd);
}

static bool is_directory(const char *arg)
{
	struct stat st;

	return strcmp(arg, "-") != 0 && stat(arg, &st) == 0 &&
	       S_ISDIR(st.st_mode);
}

/*
 * Reads one side under the policy. progress: an archive may show the
 * progress line of wsnap_load_index (only one side does, so that two lines
 * never fight over the terminal).
 */
static enum wsnap_status side_load(struct side *s,
				   const struct wsnap_policy *policy,
				   bool progress, struct wsnap_error *err)
{
	enum wsnap_status st;

	if (!is_directory(s->arg)) {
		s->load.no_progress = !progress;
		st = wsnap_load_index(s->arg, policy, true, &s->load, &s->idx,
				      err);
		if (st == WSNAP_OK)
			wsnap_diff_side_archive(&s->side, &s->arc, s->idx,
						s->arg);
		return st;
	}
	s->dir_fd = wsnap_tree_open(s->arg, err);
	if (s->dir_fd < 0)
		return err->status;
	st = wsnap_tree_index(s->dir_fd, s->arg, policy, &s->idx, err);
	if (st == WSNAP_OK)
		st = wsnap_tree_cursor_new(&s->cursor, s->dir_fd, s->arg, err);
	if (st == WSNAP_OK)
		wsnap_diff_side_tree(&s->side, s->idx, s->cursor);
	return st;
}

struct loader {
	struct side *side;
	const struct wsnap_policy *policy;
	enum wsnap_status status;
	struct wsnap_error err;
};

static void *load_thread(void *arg)
{
	struct loader *l = arg;

	l->status = side_load(l->side, l->policy, false, &l->err);
	return NULL;
}

/*
 * Reads both sides, B in a second thread while A is read here: the two
 * indexes are independent (the policy is only read), and reading them is
 * most of the cost of a diff. An error of A is reported before one of B,
 * as if they had been read one after the other.
 */
static enum wsnap_status load_both(struct side *a, struct side *b,
				   const struct wsnap_policy *policy,
				   struct wsnap_error *err)
{
	struct loader lb;
	pthread_t th;
	enum wsnap_status s;
	bool threaded;

	lb.side = b;
	lb.policy = policy;
	lb.status = WSNAP_OK;
	wsnap_error_clear(&lb.err);
	threaded = pthread_create(&th, NULL, load_thread, &lb) == 0;
	s = side_load(a, policy, true, err);
	if (threaded)
		pthread_join(th, NULL);
	else if (s == WSNAP_OK)
		lb.status = side_load(b, policy, true, &lb.err);
	if (s == WSNAP_OK && lb.status != WSNAP_OK) {
		s = lb.status;
		*err = lb.err;
	}
	return s;
}

/* -v: how each side is read, on stderr, before it is. */
static void say_sides(const struct side *a, const struct side *b,
		      const struct wsnap_hydrate_diff *hyd)
{
	const struct side *sides[] = {a, b};
	int i;

	for (i = 0; i < 2; i++) {
		fprintf(stderr, "wsnap: diff: %c: ", i ? 'B' : 'A');
		wsnap_put_escaped(stderr, WSNAP_ESC_REPR, sides[i]->arg,
				  strlen(sides[i]->arg));
		fprintf(stderr, " read %s\n",
			i && hyd->upper_fd >= 0 ? "from its upper directory"
			: is_directory(sides[i]->arg) ? "as a directory"
						      : "as an archive");
	}
}

/* -v: the upper directory could not say it (upper.h). */
static void say_declined(const struct side *b, const char *why)
{
	fputs("wsnap: diff: B: ", stderr);
	wsnap_put_escaped(stderr, WSNAP_ESC_REPR, b->arg, strlen(b->arg));
	fprintf(stderr, " read as a directory after all (%s)\n", why);
}

/* -v: what reading the upper directory took. */
static void say_upper(const struct wsnap_hydrate_diff *hyd)
{
	struct wsnap_upper_stats us;

	if (!hyd->view)
		return;
	wsnap_upper_stats(hyd->view, &us);
	fprintf(stderr,
		"wsnap: diff: upper directory: %" PRIu64 " %s, %" PRIu64
		" %s, %" PRIu64 " opaque, %" PRIu64 " %s; %" PRIu64
		" %s from the archive\n",
		us.upper_entries,
		wsnap_plural(us.upper_entries, "entry", "entries"),
		us.whiteouts,
		wsnap_plural(us.whiteouts, "whiteout", "whiteouts"),
		us.opaque_dirs, us.redirects,
		wsnap_plural(us.redirects, "redirect", "redirects"),
		us.lower_nodes, wsnap_plural(us.lower_nodes, "node", "nodes"));
}

static const char *type_name(const struct wsnap_node *n)
{
	switch (n->type) {
	case WSNAP_TYPE_DIR:
		return "dir";
	case WSNAP_TYPE_SYMLINK:
		return "symlink";
	default:
		return "file";
	}
}

static void json_node(struct wsnap_json *j, const char *key,
		      const struct wsnap_node *n)
{
	if (!n) {
		wsnap_json_null(j, key);
		return;
	}
	wsnap_json_open(j, key);
	wsnap_json_cstring(j, "type", type_name(n));
	wsnap_json_mode(j, "mode", n->mode);
	wsnap_json_u64(j, "size", n->size);
	if (n->type == WSNAP_TYPE_SYMLINK && n->target)
		wsnap_json_string(j, "target", n->target, (size_t)n->size);
	wsnap_json_close(j);
}

static enum wsnap_status print_change(void *ctx,
				      const struct wsnap_diff_change *c,
				      struct wsnap_error *err)
{
	const struct printer *p = ctx;
	char kind[2] = {(char)c->kind, '\0'};
	struct wsnap_json j;

	if (!p->json) {
		putchar(kind[0]);
		putchar('\t');
		wsnap_put_escaped(stdout, WSNAP_ESC_BARE, c->path,
				  strlen(c->path));
		putchar('\n');
		return WSNAP_OK;
	}
	wsnap_json_begin(&j, stdout);
	wsnap_json_cstring(&j, "change", kind);
	wsnap_json_string(&j, "path", c->path, strlen(c->path));
	json_node(&j, "old", c->a);
	json_node(&j, "new", c->b);
	wsnap_json_end(&j);
	return WSNAP_OK;
}

/* The end: --stat's line, or the final JSON record (a stream without it
 * was cut off). */
static void print_end(const struct printer *p, bool stat,
		      const struct wsnap_diff_stats *s)
{
	uint64_t total = wsnap_diff_total(s);
	struct wsnap_json j;

	if (p->json) {
		wsnap_json_begin(&j, stdout);
		wsnap_json_bool(&j, "ok", true);
		wsnap_json_u64(&j, "records", total);
		wsnap_json_u64(&j, "added", s->added);
		wsnap_json_u64(&j, "removed", s->removed);
		wsnap_json_u64(&j, "modified", s->modified);
		wsnap_json_u64(&j, "type_changed", s->type_changed);
		wsnap_json_end(&j);
	} else if (stat) {
		printf("%" PRIu64 " %s: %" PRIu64 " added, %" PRIu64
		       " removed, %" PRIu64 " modified, %" PRIu64
		       " type changed\n",
		       total, wsnap_plural(total, "change", "changes"),
		       s->added, s->removed, s->modified, s->type_changed);
	}
}

/* ---- -p ---- */

/* Where the patch goes: standard output, or the spool (fd >= 0). */
struct patch_out {
	int fd;
};

static enum wsnap_status patch_write(void *ctx, const void *buf, size_t len,
				     struct wsnap_error *err)
{
	const struct patch_out *o = ctx;
	int e;

	if (o->fd >= 0) {
		e = wsnap_write_full(o->fd, buf, len);
		if (e)
			return wsnap_error_io(err, e, "temporary file",
					      "cannot write");
		return WSNAP_OK;
	}
	if (fwrite(buf, 1, len, stdout) != len)
		return wsnap_error_io(err, errno ? errno : EIO,
				      "standard output", "cannot write");
	return WSNAP_OK;
}

/* The spooled patch, after the summary, onto standard output. */
static enum wsnap_status unspool(int fd, struct wsnap_error *err)
{
	static char buf[1u << 16];
	size_t n;
	int e;

	if (lseek(fd, 0, SEEK_SET) != 0)
		return wsnap_error_io(err, errno, "temporary file",
				      "cannot read");
	do {
		e = wsnap_read_full(fd, buf, sizeof(buf), &n);
		if (e)
			return wsnap_error_io(err, e, "temporary file",
					      "cannot read");
		if (fwrite(buf, 1, n, stdout) != n)
			return wsnap_error_io(err, errno ? errno : EIO,
					      "standard output",
					      "cannot write");
	} while (n == sizeof(buf));
	return WSNAP_OK;
}

/* -v: what the patch holds. */
static void say_patch(const struct wsnap_patch *p)
{
	struct wsnap_patch_counts c;

	wsnap_patch_get_counts(p, &c);
	fprintf(stderr,
		"wsnap: diff: patch: %" PRIu64 " files, %" PRIu64
		" binary, %" PRIu64 " over --max-diff-size (not read); %" PRIu64
		" changes git's format cannot express (directories, mode bits "
		"but the owner's x, mtimes); %" PRIu64 " bytes read\n",
		c.files, c.binary, c.sized_out, c.unexpressed, c.bytes_read);
}

/*
 * The comparison written as a patch: with --stat, git's summary, a blank
 * line and the patch (spooled meanwhile); else the patch alone.
 */
static enum wsnap_status run_patch(const struct diff_args *a,
				   const struct side *sa, const struct side *sb,
				   struct wsnap_diff_stats *stats,
				   struct wsnap_error *err)
{
	struct wsnap_patch_opts po = {
		.context = a->context == CONTEXT_UNSET ? WSNAP_PATCH_CONTEXT
						       : (uint32_t)a->context,
		.binary = a->binary,
		.max_size = a->max_diff_size,
		.stat = a->stat,
	};
	struct patch_out out = {.fd = -1}, direct = {.fd = -1};
	struct wsnap_patch *p = NULL;
	enum wsnap_status s;
	off_t spooled = 0;

	if (a->stat) {
		out.fd = wsnap_fs_tmpfile(NULL, "wsnap-diff", err);
		if (out.fd < 0)
			return err->status;
	}
	s = wsnap_patch_new(&p, &sa->side, &sb->side, &po, patch_write, &out,
			    err);
	if (s == WSNAP_OK)
		s = wsnap_diff_run(&sa->side, &sb->side, &a->dopts,
				   wsnap_patch_change, p, stats, err);
	if (s == WSNAP_OK && a->common.verbose)
		say_patch(p);
	if (s == WSNAP_OK && a->stat)
		s = wsnap_patch_stat(p, patch_write, &direct, err);
	if (s == WSNAP_OK && a->stat)
		spooled = lseek(out.fd, 0, SEEK_CUR);
	if (s == WSNAP_OK && spooled > 0)
		s = patch_write(&direct, "\n", 1, err);
	if (s == WSNAP_OK && spooled > 0)
		s = unspool(out.fd, err);
	wsnap_patch_free(p);
	if (out.fd >= 0)
		close(out.fd);
	return s;
}

int wsnap_cmd_diff(int argc, char **argv)
{
	static char outbuf[OUT_BUFFER];
	struct diff_args a = {.context = CONTEXT_UNSET,
			      .max_diff_size = WSNAP_PATCH_MAX_SIZE};
	struct wsnap_diff_stats stats;
	struct printer pr = {0};
	struct side sa = {.dir_fd = -1}, sb = {.dir_fd = -1};
	struct wsnap_hydrate_diff hyd = {.upper_fd = -1, .merged_fd = -1};
	struct wsnap_error err;
	int rc;
	enum wsnap_status s;

	setvbuf(stdout, outbuf, _IOFBF, sizeof(outbuf));
	wsnap_policy_init(&a.policy);
	wsnap_error_clear(&err);
	rc = wsnap_options_parse(&diff_usage, &a, &argc, argv);
	if (rc != WSNAP_OPTIONS_RUN)
		goto out;
	wsnap_common_apply(&a.common);
	if (argc != 2) {
		rc = wsnap_usage_error(CMD, "expected two sides, A and B");
		goto out;
	}
	if (a.context != CONTEXT_UNSET || a.binary)
		a.patch = true; /* as git's -U and --binary */
	if (a.patch && a.common.json) {
		rc = wsnap_usage_error(CMD, "-p and --json cannot be combined");
		goto out;
	}
	pr.json = a.common.json;
	sa.arg = argv[0];
	sb.arg = argv[1];
	a.load.verbose = a.common.verbose;
	sa.load = a.load;
	sb.load = a.load;
	if (strcmp(sa.arg, "-") == 0 && strcmp(sb.arg, "-") == 0) {
		rc = wsnap_usage_error(CMD, "only one side can be '-'");
		goto out;
	}
	if (!a.full)
		wsnap_hydrate_diff_check(&hyd, sa.arg, sb.arg, &a.policy);
	if (a.common.verbose)
		say_sides(&sa, &sb, &hyd);
	if (hyd.upper_fd >= 0) {
		/* B is A's lower layer plus its upper directory */
		s = side_load(&sa, &a.policy, true, &err);
		if (s == WSNAP_OK)
			s = wsnap_hydrate_diff_side(&hyd, sa.idx, sb.arg,
						    sa.arg, &a.policy, &sb.side,
						    &err);
		/* the layers cannot tell: through the overlay after all */
		if (s == WSNAP_OK && hyd.declined) {
			if (a.common.verbose)
				say_declined(&sb, hyd.declined);
			s = side_load(&sb, &a.policy, false, &err);
		}
	} else {
		s = load_both(&sa, &sb, &a.policy, &err);
	}
	if (s == WSNAP_OK && a.common.verbose)
		say_upper(&hyd);
	if (s == WSNAP_OK && a.patch)
		s = run_patch(&a, &sa, &sb, &stats, &err);
	else if (s == WSNAP_OK)
		s = wsnap_diff_run(&sa.side, &sb.side, &a.dopts, print_change,
				   &pr, &stats, &err);
	if (s != WSNAP_OK) {
		fflush(stdout);
		rc = wsnap_report(&err, pr.json);
		goto out;
	}
	if (!a.patch)
		print_end(&pr, a.stat, &stats);
	rc = wsnap_out_finish(stdout, "standard output");
	if (rc == 0)
		rc = wsnap_diff_total(&stats) ? 1 : 0;
out:
	wsnap_hydrate_diff_release(&hyd);
	side_release(&sa);
	side_release(&sb);
	wsnap_policy_release(&a.policy);
	return rc;
}
