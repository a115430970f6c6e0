/*
 * wsnap diff [POLICY] [--json] [--stat] [--mtime] A B
 *
 * Each side is a directory (read by the walker, tree.h) or an archive
 * ('-' is standard input); both are read under the policy and compared by
 * the engine (diff.h). This file only parses, loads the sides and prints.
 */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "commands.h"
#include "diff.h"
#include "escape.h"
#include "opts.h"
#include "tree.h"

enum {
	OPT_STAT = WSNAP_OPT_FIRST_PRIVATE,
	OPT_MTIME,
};

static const char diff_usage[] =
	"usage: wsnap diff [POLICY] [--json] [--stat] [--mtime] A B\n"
	"\n"
	"Compares two snapshots, each an archive ('-' for standard input) or "
	"a directory\n"
	"(read without following symlinks). One line per changed path, "
	"sorted by path:\n"
	"  A  only in B      D  only in A\n"
	"  M  same type, different content, mode or symlink target\n"
	"  T  type changed\n"
	"\n"
	"  --json    one JSON object per change (old and new type, mode, "
	"size, target)\n"
	"  --stat    a closing summary line\n"
	"  --mtime   a different mtime is a difference too\n"
	"\n"
	"exit status: 0 identical, 1 different, 2 usage, 3 rejected, 4 I/O "
	"error\n";

struct side {
	const char *arg;
	int dir_fd;
	struct wsnap_index *idx;
	struct wsnap_tree_cursor *cursor;
	struct wsnap_diff_archive arc;
	struct wsnap_diff_side side;
};

struct printer {
	bool json;
	char *buf;
	size_t cap;
};

static void side_release(struct side *s)
{
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

static enum wsnap_status side_load(struct side *s,
				   const struct wsnap_policy *policy,
				   struct wsnap_error *err)
{
	enum wsnap_status st;

	if (!is_directory(s->arg)) {
		st = wsnap_load_index(s->arg, policy, true, &s->idx, err);
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

/* The escaping buffer, grown to fit len input bytes. */
static char *escape_buf(struct printer *p, size_t len)
{
	size_t need = WSNAP_ESCAPE_CAP(len);

	if (need > p->cap) {
		char *nb = realloc(p->buf, need);

		if (!nb)
			return NULL;
		p->buf = nb;
		p->cap = need;
	}
	return p->buf;
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

static bool print_json_node(struct printer *p, const char *key,
			    const struct wsnap_node *n)
{
	char *b;

	if (!n) {
		printf(",\"%s\":null", key);
		return true;
	}
	printf(",\"%s\":{\"type\":\"%s\",\"mode\":\"%04o\",\"size\":%" PRIu64,
	       key, type_name(n), (unsigned)n->mode, n->size);
	if (n->type == WSNAP_TYPE_SYMLINK && n->target) {
		b = escape_buf(p, (size_t)n->size);
		if (!b)
			return false;
		wsnap_escape_json(b, n->target, (size_t)n->size);
		printf(",\"target\":%s", b);
	}
	putchar('}');
	return true;
}

static enum wsnap_status print_change(void *ctx,
				      const struct wsnap_diff_change *c,
				      struct wsnap_error *err)
{
	struct printer *p = ctx;
	size_t len = strlen(c->path);
	char *b = escape_buf(p, len);

	if (!b)
		return wsnap_error_io(err, ENOMEM, NULL, "out of memory");
	if (!p->json) {
		wsnap_escape_bare(b, c->path, len);
		printf("%c\t%s\n", (char)c->kind, b);
		return WSNAP_OK;
	}
	wsnap_escape_json(b, c->path, len);
	printf("{\"change\":\"%c\",\"path\":%s", (char)c->kind, b);
	if (!print_json_node(p, "old", c->a) ||
	    !print_json_node(p, "new", c->b))
		return wsnap_error_io(err, ENOMEM, NULL, "out of memory");
	printf("}\n");
	return WSNAP_OK;
}

static void print_stat(const struct printer *p,
		       const struct wsnap_diff_stats *s)
{
	if (p->json)
		printf("{\"stat\":{\"changes\":%" PRIu64 ",\"added\":%" PRIu64
		       ",\"removed\":%" PRIu64 ",\"modified\":%" PRIu64
		       ",\"type_changed\":%" PRIu64 "}}\n",
		       wsnap_diff_total(s), s->added, s->removed, s->modified,
		       s->type_changed);
	else
		printf("%" PRIu64 " changes: %" PRIu64 " added, %" PRIu64
		       " removed, %" PRIu64 " modified, %" PRIu64
		       " type changed\n",
		       wsnap_diff_total(s), s->added, s->removed, s->modified,
		       s->type_changed);
}

int wsnap_cmd_diff(int argc, char **argv)
{
	static const struct option longopts[] = {
		WSNAP_POLICY_LONGOPTS,
		{"json", no_argument, NULL, WSNAP_OPT_JSON},
		{"stat", no_argument, NULL, OPT_STAT},
		{"mtime", no_argument, NULL, OPT_MTIME},
		{"help", no_argument, NULL, WSNAP_OPT_HELP},
		{NULL, 0, NULL, 0},
	};
	struct wsnap_policy policy;
	struct wsnap_diff_opts dopts = {0};
	struct wsnap_diff_stats stats;
	struct printer pr = {0};
	struct side sa = {.dir_fd = -1}, sb = {.dir_fd = -1};
	struct wsnap_error err;
	bool stat = false;
	int opt, rc;
	enum wsnap_status s;

	wsnap_policy_init(&policy);
	wsnap_error_clear(&err);
	optind = 1;
	while ((opt = getopt_long(argc, argv, "h", longopts, NULL)) != -1) {
		int r;

		switch (opt) {
		case WSNAP_OPT_JSON:
			pr.json = true;
			continue;
		case OPT_STAT:
			stat = true;
			continue;
		case OPT_MTIME:
			dopts.mtime = true;
			continue;
		case 'h':
		case WSNAP_OPT_HELP:
			fputs(diff_usage, stdout);
			fputs(wsnap_policy_help, stdout);
			rc = 0;
			goto out;
		default:
			break;
		}
		r = wsnap_opts_policy(&policy, opt, optarg);
		if (r == 1)
			continue;
		if (r == 0)
			rc = wsnap_usage_error("diff", "unknown option");
		else
			rc = 2;
		goto out;
	}
	if (argc - optind != 2) {
		rc = wsnap_usage_error("diff", "expected two sides, A and B");
		goto out;
	}
	sa.arg = argv[optind];
	sb.arg = argv[optind + 1];
	if (strcmp(sa.arg, "-") == 0 && strcmp(sb.arg, "-") == 0) {
		rc = wsnap_usage_error("diff", "only one side can be '-'");
		goto out;
	}
	s = side_load(&sa, &policy, &err);
	if (s == WSNAP_OK)
		s = side_load(&sb, &policy, &err);
	if (s == WSNAP_OK)
		s = wsnap_diff_run(&sa.side, &sb.side, &dopts, print_change,
				   &pr, &stats, &err);
	if (s != WSNAP_OK) {
		fflush(stdout);
		rc = wsnap_report(&err, pr.json);
		goto out;
	}
	if (stat)
		print_stat(&pr, &stats);
	if (fflush(stdout) != 0 || ferror(stdout)) {
		wsnap_error_io(&err, errno, "-", "cannot write");
		rc = wsnap_report(&err, false);
		goto out;
	}
	rc = wsnap_diff_total(&stats) ? 1 : 0;
out:
	side_release(&sa);
	side_release(&sb);
	free(pr.buf);
	wsnap_policy_release(&policy);
	return rc;
}
