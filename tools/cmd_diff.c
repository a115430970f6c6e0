/*
 * wsnap diff [POLICY] [--json] [--stat] [--mtime] [--full] [-v] A B
 *
 * Each side is a directory (read by the walker, tree.h) or an archive
 * ('-' is standard input); both are read under the policy and compared by
 * the engine (diff.h). This file only parses, loads the sides and prints.
 * A directory B that is a workspace hydrated from archive A is read from
 * its upper directory instead (hydrate.h), unless --full.
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
#include "opts.h"
#include "tree.h"

#define CMD "diff"

#define OUT_BUFFER (1u << 20)

struct diff_args {
	struct wsnap_policy policy;
	struct wsnap_load_opts load;
	struct wsnap_diff_opts dopts;
	bool json;
	bool stat;
	bool full;
	bool verbose;
};

#define T struct diff_args
/* clang-format off */
static const struct wsnap_option diff_options[] = {
	WSNAP_OPT_POLICY(T, policy),
	WSNAP_OPT_CACHE(T, load),
	WSNAP_OPT_JSON(T, json,
		       "one JSON object per change (old and new type, mode, "
		       "size, target)"),
	WSNAP_OPT_BOOL(0, "stat", T, stat, "a closing summary line"),
	WSNAP_OPT_BOOL(0, "mtime", T, dopts.mtime,
		       "a different mtime is a difference too"),
	WSNAP_OPT_BOOL(0, "full", T, full,
		       "read a workspace hydrated from A through its overlay "
		       "like any directory (by default only its upper "
		       "directory is read: the same answer, at a cost that "
		       "grows with the changes)"),
	WSNAP_OPT_BOOL('v', "verbose", T, verbose,
		       "say on standard error how each side was read"),
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
		"  T  type changed",
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

/* -v: what reading the upper directory took. */
static void say_upper(const struct wsnap_hydrate_diff *hyd)
{
	struct wsnap_upper_stats us;

	if (!hyd->view)
		return;
	wsnap_upper_stats(hyd->view, &us);
	fprintf(stderr,
		"wsnap: diff: upper directory: %" PRIu64 " entries, %" PRIu64
		" whiteouts, %" PRIu64 " opaque, %" PRIu64
		" redirects; %" PRIu64 " nodes from the archive\n",
		us.upper_entries, us.whiteouts, us.opaque_dirs, us.redirects,
		us.lower_nodes);
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

static void print_stat(const struct printer *p,
		       const struct wsnap_diff_stats *s)
{
	struct wsnap_json j;

	if (p->json) {
		wsnap_json_begin(&j, stdout);
		wsnap_json_open(&j, "stat");
		wsnap_json_u64(&j, "changes", wsnap_diff_total(s));
		wsnap_json_u64(&j, "added", s->added);
		wsnap_json_u64(&j, "removed", s->removed);
		wsnap_json_u64(&j, "modified", s->modified);
		wsnap_json_u64(&j, "type_changed", s->type_changed);
		wsnap_json_end(&j);
	} else {
		printf("%" PRIu64 " changes: %" PRIu64 " added, %" PRIu64
		       " removed, %" PRIu64 " modified, %" PRIu64
		       " type changed\n",
		       wsnap_diff_total(s), s->added, s->removed, s->modified,
		       s->type_changed);
	}
}

int wsnap_cmd_diff(int argc, char **argv)
{
	static char outbuf[OUT_BUFFER];
	struct diff_args a = {0};
	struct wsnap_diff_stats stats;
	struct printer pr = {0};
	struct side sa = {.dir_fd = -1}, sb = {.dir_fd = -1};
	struct wsnap_hydrate_diff hyd = {.upper_fd = -1};
	struct wsnap_error err;
	int rc;
	enum wsnap_status s;

	setvbuf(stdout, outbuf, _IOFBF, sizeof(outbuf));
	wsnap_policy_init(&a.policy);
	wsnap_error_clear(&err);
	rc = wsnap_options_parse(&diff_usage, &a, &argc, argv);
	if (rc != WSNAP_OPTIONS_RUN)
		goto out;
	if (argc != 2) {
		rc = wsnap_usage_error(CMD, "expected two sides, A and B");
		goto out;
	}
	pr.json = a.json;
	sa.arg = argv[0];
	sb.arg = argv[1];
	a.load.verbose = a.verbose;
	sa.load = a.load;
	sb.load = a.load;
	if (strcmp(sa.arg, "-") == 0 && strcmp(sb.arg, "-") == 0) {
		rc = wsnap_usage_error(CMD, "only one side can be '-'");
		goto out;
	}
	if (!a.full)
		wsnap_hydrate_diff_check(&hyd, sa.arg, sb.arg, &a.policy);
	if (a.verbose)
		say_sides(&sa, &sb, &hyd);
	if (hyd.upper_fd >= 0) {
		/* B is A's lower layer plus its upper directory */
		s = side_load(&sa, &a.policy, true, &err);
		if (s == WSNAP_OK)
			s = wsnap_hydrate_diff_side(&hyd, sa.idx, sb.arg,
						    sa.arg, &a.policy, &sb.side,
						    &err);
	} else {
		s = load_both(&sa, &sb, &a.policy, &err);
	}
	if (s == WSNAP_OK && a.verbose)
		say_upper(&hyd);
	if (s == WSNAP_OK)
		s = wsnap_diff_run(&sa.side, &sb.side, &a.dopts, print_change,
				   &pr, &stats, &err);
	if (s != WSNAP_OK) {
		fflush(stdout);
		rc = wsnap_report(&err, pr.json);
		goto out;
	}
	if (a.stat)
		print_stat(&pr, &stats);
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
