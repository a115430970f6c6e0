/* SPDX-License-Identifier: MIT */
/*
 * Declarative command lines (parse_options.h): the parser and the --help
 * generator, both walking the same tables.
 *
 * Invariants: an entry takes an argument exactly when it has an arg_name;
 * a table's targets are at base + offset, an included table's at base +
 * (its INCLUDE's offset) + offset; the operands are moved down in argv as
 * they are met, never past the word being read.
 */
#include "parse_options.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "escape.h"
#include "opts.h"

/* --help lines are at most this wide. */
#define HELP_WIDTH 79

/* The option column of --help is at most this far in; a longer option
 * has its help on the next line. */
#define HELP_COLUMN_MAX 30

/* clang-format off */
static const struct wsnap_option builtin_options[] = {
	{.kind = WSNAP_OPTION_HELP, .short_name = 'h', .long_name = "help",
	 .help = "show this help"},
	WSNAP_OPT_END(),
};
/* clang-format on */

void wsnap_option_list_release(struct wsnap_option_list *l)
{
	free(l->items);
	memset(l, 0, sizeof(*l));
}

/*
 * Parses a whole number strictly: decimal digits only (no sign, no space,
 * no 0x), at most max; with bytes an optional binary suffix or 'unlimited'.
 */
static bool parse_number(const char *s, bool bytes, uint64_t max, uint64_t *out)
{
	unsigned long long v;
	unsigned shift = 0;
	char *end;

	if (bytes && strcmp(s, "unlimited") == 0) {
		*out = UINT64_MAX;
		return max == UINT64_MAX;
	}
	if (s[0] < '0' || s[0] > '9')
		return false;
	errno = 0;
	v = strtoull(s, &end, 10);
	if (errno == ERANGE)
		return false;
	if (bytes && *end) {
		switch (*end) {
		case 'k':
		case 'K':
			shift = 10;
			break;
		case 'M':
			shift = 20;
			break;
		case 'G':
			shift = 30;
			break;
		case 'T':
			shift = 40;
			break;
		case 'P':
			shift = 50;
			break;
		default:
			return false;
		}
		end++;
		/* 64G, 64GiB and 64GB all mean 64 GiB */
		if (*end == 'i')
			end++;
		if (*end == 'B')
			end++;
	}
	if (*end)
		return false;
	if (shift && v > (UINT64_MAX >> shift))
		return false;
	v <<= shift;
	if (v > max)
		return false;
	*out = v;
	return true;
}

/* The state of one parse. */
struct parse {
	const struct wsnap_cmd_usage *u;
	int argc;
	char **argv;
};

/* An entry looked up by name, and the base its offset applies to. */
struct match {
	const struct wsnap_option *opt;
	char *base;
	int prefixes; /* entries the name is a prefix of */
	bool exact;
};

static void find_long(const struct wsnap_option *t, char *base,
		      const char *name, size_t len, struct match *m)
{
	for (; t->kind != WSNAP_OPTION_END && !m->exact; t++) {
		if (t->kind == WSNAP_OPTION_INCLUDE) {
			find_long(t->table, base + t->offset, name, len, m);
			continue;
		}
		if (!t->long_name || strncmp(t->long_name, name, len) != 0)
			continue;
		if (t->long_name[len] == '\0')
			m->exact = true;
		else if (m->prefixes++)
			continue;
		m->opt = t;
		m->base = base;
	}
}

static void find_short(const struct wsnap_option *t, char *base, char c,
		       struct match *m)
{
	for (; t->kind != WSNAP_OPTION_END && !m->opt; t++) {
		if (t->kind == WSNAP_OPTION_INCLUDE) {
			find_short(t->table, base + t->offset, c, m);
		} else if (t->short_name == c) {
			m->opt = t;
			m->base = base;
		}
	}
}

static int list_add(struct wsnap_option_list *l, const char *arg)
{
	struct wsnap_error err;
	const char **items;
	size_t cap;

	/* at most one item per word of argv: the growth is bounded */
	if (l->count == l->cap) {
		cap = l->cap ? 2 * l->cap : 8;
		items = realloc(l->items, cap * sizeof(*items));
		if (!items) {
			wsnap_error_io(&err, ENOMEM, NULL, "out of memory");
			return wsnap_report(&err, false);
		}
		l->items = items;
		l->cap = cap;
	}
	l->items[l->count++] = arg;
	return WSNAP_OPTIONS_RUN;
}

/* The option as messages name it: "--max-depth", or "-N". */
static void option_label(const struct wsnap_option *o, char *buf, size_t cap)
{
	if (o->long_name)
		snprintf(buf, cap, "--%s", o->long_name);
	else
		snprintf(buf, cap, "-%c", o->short_name);
}

static int set_number(const struct parse *ps, const struct wsnap_option *o,
		      uint64_t *target, const char *arg)
{
	/* the value quoted (wsnap_usage_error escapes it), cut if long */
	int cut = (int)strnlen(arg, 64);
	bool bytes = o->flags & WSNAP_OPTION_BYTES;
	char label[64];

	if (parse_number(arg, bytes, o->max, target))
		return WSNAP_OPTIONS_RUN;
	option_label(o, label, sizeof(label));
	if (bytes)
		return wsnap_usage_error(ps->u->name,
					 "invalid %s '%.*s': want a number of "
					 "bytes such as 1000, 64K, 1M, 64G, "
					 "or 'unlimited'",
					 label, cut, arg);
	return wsnap_usage_error(ps->u->name,
				 "invalid %s '%.*s': want a whole number from "
				 "0 to %llu",
				 label, cut, arg, (unsigned long long)o->max);
}

/* Applies one option; returns WSNAP_OPTIONS_RUN to go on, else the exit
 * code. */
static int apply(const struct parse *ps, const struct wsnap_option *o,
		 char *base, const char *arg)
{
	void *target = base + o->offset;
	int rc;

	switch (o->kind) {
	case WSNAP_OPTION_HELP:
		wsnap_options_help(ps->u, stdout);
		return 0;
	case WSNAP_OPTION_BOOL:
		*(bool *)target = true;
		return WSNAP_OPTIONS_RUN;
	case WSNAP_OPTION_STRING:
		*(const char **)target = arg;
		return WSNAP_OPTIONS_RUN;
	case WSNAP_OPTION_LIST:
		return list_add(target, arg);
	case WSNAP_OPTION_NUMBER:
		return set_number(ps, o, target, arg);
	case WSNAP_OPTION_CALLBACK:
		rc = o->callback(ps->u->name, target, arg);
		return rc ? rc : WSNAP_OPTIONS_RUN;
	default:
		return WSNAP_OPTIONS_RUN; /* not an option: never found */
	}
}

/* argv[*i] is '--name' or '--name=value'. */
static int parse_long(const struct parse *ps, char *base, int *i)
{
	const char *name = ps->argv[*i] + 2, *arg = NULL;
	int len = (int)strcspn(name, "=");
	struct match m = {0};

	find_long(ps->u->options, base, name, (size_t)len, &m);
	find_long(builtin_options, base, name, (size_t)len, &m);
	if (!m.opt)
		return wsnap_usage_error(
			ps->u->name, "option '--%.*s' is not known", len, name);
	if (!m.exact && m.prefixes > 1)
		return wsnap_usage_error(
			ps->u->name, "option '--%.*s' is ambiguous", len, name);
	if (name[len] == '=') {
		if (!m.opt->arg_name)
			return wsnap_usage_error(ps->u->name,
						 "option '--%.*s' takes no "
						 "argument",
						 len, name);
		arg = name + len + 1;
	} else if (m.opt->arg_name) {
		if (*i + 1 >= ps->argc)
			return wsnap_usage_error(ps->u->name,
						 "option '--%.*s' needs an "
						 "argument",
						 len, name);
		arg = ps->argv[++*i];
	}
	return apply(ps, m.opt, m.base, arg);
}

/* argv[*i] is '-x', '-xyz' or '-xVALUE'. */
static int parse_short(const struct parse *ps, char *base, int *i)
{
	const char *p = ps->argv[*i] + 1, *arg;
	struct match m;
	int rc;

	for (; *p; p++) {
		memset(&m, 0, sizeof(m));
		find_short(ps->u->options, base, *p, &m);
		find_short(builtin_options, base, *p, &m);
		if (!m.opt)
			return wsnap_usage_error(
				ps->u->name, "option '-%c' is not known", *p);
		if (!m.opt->arg_name) {
			rc = apply(ps, m.opt, m.base, NULL);
			if (rc != WSNAP_OPTIONS_RUN)
				return rc;
			continue;
		}
		if (p[1]) {
			arg = p + 1;
		} else if (*i + 1 < ps->argc) {
			arg = ps->argv[++*i];
		} else {
			return wsnap_usage_error(ps->u->name,
						 "option '-%c' needs an "
						 "argument",
						 *p);
		}
		return apply(ps, m.opt, m.base, arg);
	}
	return WSNAP_OPTIONS_RUN;
}

/* The long name of the entry with WSNAP_OPTION_JSON, or NULL. */
static const char *json_option(const struct wsnap_option *t)
{
	const char *name;

	for (; t->kind != WSNAP_OPTION_END; t++) {
		if (t->kind == WSNAP_OPTION_INCLUDE) {
			name = json_option(t->table);
			if (name)
				return name;
		} else if (t->flags & WSNAP_OPTION_JSON) {
			return t->long_name;
		}
	}
	return NULL;
}

/* Reports the first WSNAP_OPTION_REQUIRED option of t (targets at base)
 * that was not given; WSNAP_OPTIONS_RUN when there is none. */
static int check_required(const char *cmd, const struct wsnap_option *t,
			  char *base)
{
	char label[64];
	int rc;

	for (; t->kind != WSNAP_OPTION_END; t++) {
		if (t->kind == WSNAP_OPTION_INCLUDE) {
			rc = check_required(cmd, t->table, base + t->offset);
			if (rc != WSNAP_OPTIONS_RUN)
				return rc;
		} else if (t->kind == WSNAP_OPTION_STRING &&
			   (t->flags & WSNAP_OPTION_REQUIRED) &&
			   !*(const char **)(base + t->offset)) {
			option_label(t, label, sizeof(label));
			return wsnap_usage_error(cmd, "%s is required", label);
		}
	}
	return WSNAP_OPTIONS_RUN;
}

int wsnap_options_parse(const struct wsnap_cmd_usage *u, void *base, int *argc,
			char **argv)
{
	struct parse ps = {.u = u, .argc = *argc, .argv = argv};
	const char *json = json_option(u->options);
	bool options = true;
	int i, n = 0, rc;

	/* --json anywhere makes usage errors JSON too, even before it */
	for (i = 1; json && i < ps.argc && strcmp(argv[i], "--") != 0; i++)
		if (strncmp(argv[i], "--", 2) == 0 &&
		    strcmp(argv[i] + 2, json) == 0)
			wsnap_opts_usage_json(true);
	for (i = 1; i < ps.argc; i++) {
		char *a = argv[i];

		if (!options || a[0] != '-' || a[1] == '\0') {
			argv[n++] = a;
			continue;
		}
		if (strcmp(a, "--") == 0) {
			options = false;
			continue;
		}
		rc = a[1] == '-' ? parse_long(&ps, base, &i)
				 : parse_short(&ps, base, &i);
		if (rc != WSNAP_OPTIONS_RUN)
			return rc;
	}
	argv[n] = NULL;
	*argc = n;
	return check_required(u->name, u->options, base);
}

/*
 * Writes one line of text (len bytes, no '\n') from column col, where the
 * cursor is, broken at spaces to fit HELP_WIDTH (a word longer than a line
 * overflows); continuation lines start at column hang. The first skip
 * bytes (the line's indentation) are never a break.
 */
static void put_line(FILE *f, const char *s, size_t len, size_t col,
		     size_t hang, size_t skip)
{
	size_t brk, i;

	while (col + len > HELP_WIDTH) {
		/* the last space that leaves the line short enough, else the
		 * first one */
		brk = len;
		for (i = skip; i < len; i++) {
			if (s[i] != ' ')
				continue;
			if (col + i <= HELP_WIDTH || brk == len)
				brk = i;
			if (col + i > HELP_WIDTH)
				break;
		}
		if (brk == len || brk == 0)
			break;
		fprintf(f, "%.*s\n%*s", (int)brk, s, (int)hang, "");
		s += brk + 1;
		len -= brk + 1;
		col = hang;
		skip = 0;
	}
	fprintf(f, "%.*s\n", (int)len, s);
}

/*
 * Where the continuation lines of an indented line ("  term  text", lead
 * spaces, len bytes) start, relative to the line: under its text when it
 * has a term ending in two spaces, else under the term.
 */
static size_t hang_of(const char *line, size_t len, size_t lead)
{
	const char *gap;

	if (!lead)
		return 0;
	gap = memmem(line + lead, len - lead, "  ", 2);
	if (!gap)
		return lead;
	return (size_t)(gap - line) + strspn(gap, " ");
}

/*
 * Writes text from column col, where the cursor is, wrapped (put_line);
 * '\n' ends a line, and the next starts at column indent followed by its
 * own leading spaces (its continuation lines: hang_of).
 */
static void put_wrapped(FILE *f, const char *text, size_t col, size_t indent)
{
	const char *line = text;
	size_t len, lead;

	for (;;) {
		len = strcspn(line, "\n");
		lead = strspn(line, " ");
		if (lead > len)
			lead = len;
		put_line(f, line, len, col, indent + hang_of(line, len, lead),
			 lead);
		if (line[len] == '\0' || line[len + 1] == '\0')
			return;
		line += len + 1;
		fprintf(f, "%*s", (int)indent, "");
		col = indent;
	}
}

/* The option as --help shows it: "-v, --verbose", "--skip P", "-o OPT";
 * returns its length. */
static size_t option_name(const struct wsnap_option *o, char *buf, size_t cap)
{
	char s[8] = "";
	int n;

	if (o->short_name)
		snprintf(s, sizeof(s), "-%c%s", o->short_name,
			 o->long_name ? ", " : "");
	n = snprintf(buf, cap, "%s%s%s%s%s", s, o->long_name ? "--" : "",
		     o->long_name ? o->long_name : "", o->arg_name ? " " : "",
		     o->arg_name ? o->arg_name : "");
	if (n < 0)
		return 0;
	return (size_t)n < cap ? (size_t)n : cap - 1;
}

static bool is_option(const struct wsnap_option *o)
{
	return o->kind >= WSNAP_OPTION_BOOL;
}

/* The widest option name of t and the tables it includes that fits the
 * column. */
static size_t widest(const struct wsnap_option *t)
{
	char buf[128];
	size_t w = 0, n;

	for (; t->kind != WSNAP_OPTION_END; t++) {
		if (t->kind == WSNAP_OPTION_INCLUDE)
			n = widest(t->table);
		else if (is_option(t))
			n = option_name(t, buf, sizeof(buf));
		else
			n = 0;
		if (n > w && n <= HELP_COLUMN_MAX - 4)
			w = n;
	}
	return w;
}

/*
 * The entries of t, help at column col; the tables t includes are left
 * out when top (wsnap_options_help puts them after), else put in place.
 */
static void put_entries(FILE *f, const struct wsnap_option *t, size_t col,
			bool top)
{
	char buf[128];
	size_t n;

	for (; t->kind != WSNAP_OPTION_END; t++) {
		if (t->kind == WSNAP_OPTION_INCLUDE && !top) {
			put_entries(f, t->table, col, false);
		} else if (t->kind == WSNAP_OPTION_GROUP) {
			put_wrapped(f, t->help, 0, 2);
		} else if (t->kind == WSNAP_OPTION_NOTE) {
			fputs("  ", f);
			put_wrapped(f, t->help, 2, 2);
		} else if (is_option(t)) {
			n = option_name(t, buf, sizeof(buf));
			fprintf(f, "  %s", buf);
			if (2 + n + 2 > col)
				fprintf(f, "\n%*s", (int)col, "");
			else
				fprintf(f, "%*s", (int)(col - 2 - n), "");
			put_wrapped(f, t->help ? t->help : "", col, col);
		}
	}
}

/* Adds one word to the usage line, on a new line where it would not fit. */
static void put_usage_word(FILE *f, const char *word, size_t len, size_t indent,
			   size_t *col)
{
	if (*col + 1 + len > HELP_WIDTH && *col > indent) {
		fprintf(f, "\n%*s", (int)indent, "");
		*col = indent;
	} else {
		fputc(' ', f);
		(*col)++;
	}
	fwrite(word, 1, len, f);
	*col += len;
}

/* "usage: wsnap CMD [POLICY] [-v] [--upper DIR] OPERANDS", wrapped with
 * its continuation lines under the first word after CMD. */
static void put_usage(const struct wsnap_cmd_usage *u, FILE *f)
{
	const struct wsnap_option *o;
	const char *p = u->operands, *arg, *open, *close;
	char word[160];
	size_t indent, col, len;
	int n;

	n = fprintf(f, "usage: wsnap %s", u->name);
	col = n > 0 ? (size_t)n : 0;
	indent = col + 1;
	for (o = u->options; o->kind != WSNAP_OPTION_END; o++) {
		arg = o->arg_name ? o->arg_name : "";
		open = o->flags & WSNAP_OPTION_REQUIRED ? "" : "[";
		close = *open ? "]" : "";
		if (o->kind == WSNAP_OPTION_INCLUDE)
			n = snprintf(word, sizeof(word), "[%s]", arg);
		else if (is_option(o) && o->short_name)
			n = snprintf(word, sizeof(word), "%s-%c%s%s%s", open,
				     o->short_name, *arg ? " " : "", arg,
				     close);
		else if (is_option(o))
			n = snprintf(word, sizeof(word), "%s--%s%s%s%s", open,
				     o->long_name, *arg ? " " : "", arg, close);
		else
			continue;
		if (n > 0)
			put_usage_word(f, word, strnlen(word, sizeof(word)),
				       indent, &col);
	}
	while (p && *p) {
		len = strcspn(p, " ");
		if (len)
			put_usage_word(f, p, len, indent, &col);
		p += len + (p[len] == ' ');
	}
	fputc('\n', f);
}

void wsnap_options_help(const struct wsnap_cmd_usage *u, FILE *f)
{
	const struct wsnap_option *o;
	size_t col = widest(u->options), w = widest(builtin_options);

	col = 2 + (w > col ? w : col) + 2;
	put_usage(u, f);
	fputc('\n', f);
	put_wrapped(f, u->description, 0, 0);
	fputc('\n', f);
	put_entries(f, u->options, col, true);
	put_entries(f, builtin_options, col, true);
	for (o = u->options; o->kind != WSNAP_OPTION_END; o++) {
		if (o->kind != WSNAP_OPTION_INCLUDE)
			continue;
		fputc('\n', f);
		put_entries(f, o->table, col, false);
	}
	fputs("\nexit status: ", f);
	put_wrapped(f, u->exit_status, 13, 0);
}
