/*
 * Option parsing and error reporting shared by the subcommands (opts.h).
 *
 * Every message goes to stderr as one line 'wsnap: ...'. Member names,
 * paths and reasons are escaped (policy.md section 2) before they reach a
 * terminal, so an archive cannot inject control sequences through them.
 */
#include "opts.h"

#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "escape.h"
#include "json.h"

const char wsnap_policy_help[] =
	"policy options (all repeatable ones may be given many times):\n"
	"  --allow-external-symlinks  accept symlinks whose targets leave the "
	"snapshot\n"
	"  --no-symlinks              reject every symlink member\n"
	"  --skip P                   ignore members within P entirely\n"
	"  --root-name R              --skip also matches below a first "
	"component R\n"
	"  --reject-path R            reject members overlapping protected "
	"path R\n"
	"  --reject-symlink P         reject a symlink member at exactly P\n"
	"  --max-members N            most non-root members (2000000)\n"
	"  --max-total-size BYTES     most bytes of all files together (64G)\n"
	"  --max-file-size BYTES      most bytes of one file (unlimited)\n"
	"  --max-path-length BYTES    longest path (4096)\n"
	"  --max-depth N              most path components (256)\n"
	"  --max-index-size BYTES     most memory for the index of members "
	"(1G)\n"
	"  BYTES: a number with an optional K, M, G, T or P suffix (powers of\n"
	"  1024), or 'unlimited'.\n";

/* The subcommand being run, for messages; see wsnap_opts_set_command. */
static const char *command_name;

void wsnap_opts_set_command(const char *name)
{
	command_name = name;
}

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

int wsnap_opts_bad_option(const char *cmd, int c, char *const argv[])
{
	const char *arg = optind > 0 ? argv[optind - 1] : NULL;
	const char *what = c == ':' ? "needs an argument" : "is not known";
	char shortopt[3] = {'-', (char)optopt, '\0'};
	int len;

	/*
	 * A long option is in argv[optind - 1] ('--name' or '--name=value');
	 * a short one may sit in a group ('-fx'), so only optopt names it.
	 */
	if (arg && arg[0] == '-' && arg[1] == '-') {
		len = (int)strcspn(arg, "=");
		if (c != ':' && arg[len] == '=' && optopt)
			what = "takes no argument";
	} else {
		arg = shortopt;
		len = 2;
	}
	return wsnap_usage_error(cmd, "option '%.*s' %s", len, arg, what);
}

int wsnap_opts_rest(const char *cmd, struct wsnap_policy *p, int opt,
		    const char *arg, char *const argv[])
{
	int r;

	if (opt == '?' || opt == ':')
		return wsnap_opts_bad_option(cmd, opt, argv);
	r = wsnap_opts_policy(p, opt, arg);
	if (r == 1)
		return 1;
	return r < 0 ? WSNAP_USAGE : wsnap_opts_bad_option(cmd, '?', argv);
}
int wsnap_opts_parse_simple(struct wsnap_cmdline *cl, int argc, char **argv,
			    unsigned flags, const char *operand_names,
			    void (*help)(void))
{
	static const struct option longopts[] = {
		WSNAP_POLICY_LONGOPTS,
		{"json", no_argument, NULL, WSNAP_OPT_JSON},
		{"verbose", no_argument, NULL, 'v'},
		{"help", no_argument, NULL, 'h'},
		{NULL, 0, NULL, 0},
	};
	const char *cmd = argv[0];
	int c, r, want = 1;
	const char *p;

	memset(cl, 0, sizeof(*cl));
	wsnap_policy_init(&cl->policy);
	/* --json anywhere makes usage errors JSON too, even before it */
	for (c = 1; c < argc && strcmp(argv[c], "--"); c++)
		if (strcmp(argv[c], "--json") == 0)
			wsnap_opts_usage_json(true);
	for (p = operand_names; *p; p++)
		want += *p == ' ';
	opterr = 0;
	while ((c = getopt_long(argc, argv, ":hv", longopts, NULL)) != -1) {
		if (c == 'h') {
			help();
			return 0;
		}
		if (c == WSNAP_OPT_JSON) {
			cl->json = true;
			continue;
		}
		if (c == 'v' && (flags & WSNAP_CMDLINE_VERBOSE)) {
			cl->verbose = true;
			continue;
		}
		if (c == 'v') {
			/* -v of another command: unknown here */
			optopt = 'v';
			c = '?';
		}
		r = wsnap_opts_rest(cmd, &cl->policy, c, optarg, argv);
		if (r != 1)
			return r;
	}
	cl->operands = argv + optind;
	cl->noperands = argc - optind;
	if (cl->noperands > want)
		return wsnap_usage_error(cmd, "too many arguments");
	if (cl->noperands < want)
		return wsnap_usage_error(cmd, "missing %s", operand_names);
	return -1;
}

enum number_kind {
	NUMBER_COUNT, /* a plain whole number */
	NUMBER_BYTES, /* with K/M/G/T/P suffixes, or 'unlimited' */
};

/*
 * Parses a whole number strictly: decimal digits only (no sign, no
 * space, no 0x), at most max; for bytes an optional binary suffix.
 */
static bool parse_number(const char *s, enum number_kind kind, uint64_t max,
			 uint64_t *out)
{
	unsigned long long v;
	unsigned shift = 0;
	char *end;

	if (kind == NUMBER_BYTES && strcmp(s, "unlimited") == 0) {
		*out = UINT64_MAX;
		return max == UINT64_MAX;
	}
	if (s[0] < '0' || s[0] > '9')
		return false;
	errno = 0;
	v = strtoull(s, &end, 10);
	if (errno == ERANGE)
		return false;
	if (kind == NUMBER_BYTES && *end) {
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

struct limit_opt {
	int opt;
	const char *name;
	enum number_kind kind;
	uint64_t max;
	size_t field; /* offset in struct wsnap_policy */
};

/*
 * Ranges: inos are 32-bit, so at most 2^32 - 2 members; no path or depth
 * can exceed what the reader accepts for one member's headers.
 */
static const struct limit_opt limit_opts[] = {
	{WSNAP_OPT_MAX_MEMBERS, "--max-members", NUMBER_COUNT, UINT32_MAX - 1,
	 offsetof(struct wsnap_policy, max_members)},
	{WSNAP_OPT_MAX_TOTAL_SIZE, "--max-total-size", NUMBER_BYTES, UINT64_MAX,
	 offsetof(struct wsnap_policy, max_total_size)},
	{WSNAP_OPT_MAX_FILE_SIZE, "--max-file-size", NUMBER_BYTES, UINT64_MAX,
	 offsetof(struct wsnap_policy, max_file_size)},
	{WSNAP_OPT_MAX_PATH_LENGTH, "--max-path-length", NUMBER_COUNT,
	 WSNAP_READER_MAX_HEADER_BYTES,
	 offsetof(struct wsnap_policy, max_path_length)},
	{WSNAP_OPT_MAX_DEPTH, "--max-depth", NUMBER_COUNT,
	 WSNAP_READER_MAX_HEADER_BYTES / 2,
	 offsetof(struct wsnap_policy, max_depth)},
	{WSNAP_OPT_MAX_INDEX_SIZE, "--max-index-size", NUMBER_BYTES, UINT64_MAX,
	 offsetof(struct wsnap_policy, max_index_size)},
};

int wsnap_opts_policy(struct wsnap_policy *p, int opt, const char *arg)
{
	struct wsnap_error err;
	enum wsnap_status st;
	uint64_t v;
	size_t i;

	for (i = 0; i < sizeof(limit_opts) / sizeof(limit_opts[0]); i++) {
		const struct limit_opt *l = &limit_opts[i];

		if (l->opt != opt)
			continue;
		if (!parse_number(arg, l->kind, l->max, &v)) {
			/* the value quoted (usage_v escapes), cut if long */
			int cut = (int)strnlen(arg, 64);

			if (l->kind == NUMBER_BYTES)
				wsnap_usage_error(
					command_name,
					"invalid %s '%.*s': want a number of "
					"bytes such as 1000, 64K, 1M, 64G, "
					"or 'unlimited'",
					l->name, cut, arg);
			else
				wsnap_usage_error(
					command_name,
					"invalid %s '%.*s': want a whole "
					"number from 0 to %llu",
					l->name, cut, arg,
					(unsigned long long)l->max);
			return -1;
		}
		memcpy((char *)p + l->field, &v, sizeof(v));
		return 1;
	}
	switch (opt) {
	case WSNAP_OPT_ALLOW_EXTERNAL_SYMLINKS:
		p->allow_external_symlinks = true;
		return 1;
	case WSNAP_OPT_NO_SYMLINKS:
		p->no_symlinks = true;
		return 1;
	case WSNAP_OPT_SKIP:
		st = wsnap_policy_add_skip(p, arg, &err);
		break;
	case WSNAP_OPT_ROOT_NAME:
		st = wsnap_policy_set_root_name(p, arg, &err);
		break;
	case WSNAP_OPT_REJECT_PATH:
		st = wsnap_policy_add_reject_path(p, arg, &err);
		break;
	case WSNAP_OPT_REJECT_SYMLINK:
		st = wsnap_policy_add_reject_symlink(p, arg, &err);
		break;
	default:
		return 0;
	}
	if (st == WSNAP_OK)
		return 1;
	if (st == WSNAP_USAGE) {
		wsnap_usage_error(command_name, "%s", err.reason);
	} else {
		wsnap_report(&err, usage_json);
	}
	return -1;
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

	for (i = 0; i < sizeof(hints) / sizeof(hints[0]); i++) {
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

int wsnap_report(const struct wsnap_error *err, bool json)
{
	const char *hint;
	struct wsnap_json j;

	if (err->status == WSNAP_OK)
		return 0;
	fflush(stdout);
	if (err->status == WSNAP_REJECTED) {
		fputs("wsnap: unsafe tar member ", stderr);
		wsnap_put_escaped(stderr, WSNAP_ESC_REPR, err->member,
				  strlen(err->member));
		fputs(": ", stderr);
		wsnap_put_escaped(stderr, WSNAP_ESC_BARE, err->reason,
				  strlen(err->reason));
		fputc('\n', stderr);
		hint = hint_for(err->reason);
		if (hint)
			fprintf(stderr, "wsnap: hint: %s\n", hint);
	} else {
		fputs("wsnap: ", stderr);
		put_message(stderr, err);
		fputc('\n', stderr);
	}
	if (!json)
		return err->status;
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
	}
	wsnap_json_end(&j);
	fflush(stdout);
	return err->status;
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
