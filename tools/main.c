/* SPDX-License-Identifier: MIT */
/* wsnap: dispatch to one subcommand. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "commands.h"
#include "opts.h"
#include "remote.h"
#include "suggest.h"
#include "array.h"

struct command {
	const char *name;
	int (*run)(int argc, char **argv);
	const char *summary;
};

static const struct command commands[] = {
	{"check", wsnap_cmd_check, "validate an archive against the policy"},
	{"ls", wsnap_cmd_ls, "list an archive as a mount would present it"},
	{"mount", wsnap_cmd_mount, "mount an archive read-only (FUSE)"},
	{"export", wsnap_cmd_export, "extract an archive safely"},
	{"strip-prefix", wsnap_cmd_strip_prefix,
	 "rewrite an archive relative to a prefix"},
	{"diff", wsnap_cmd_diff, "compare snapshots and directories"},
	{"pack", wsnap_cmd_pack, "make a snapshot of a directory"},
	{"hydrate", wsnap_cmd_hydrate,
	 "writable workspace over a snapshot (overlay)"},
	{"unmount", wsnap_cmd_unmount, "take down a mount or a workspace"},
	{"index", wsnap_cmd_index,
	 "validate once and keep the index (cache or sidecar)"},
};

#define NCOMMANDS (ARRAY_SIZE(commands))

static void usage(FILE *f)
{
	size_t i;

	fprintf(f, "usage: wsnap COMMAND [OPTIONS] ARGS...\n\n"
		   "A tar snapshot of a workspace as a validated, read-only "
		   "filesystem.\n\ncommands:\n");
	for (i = 0; i < NCOMMANDS; i++)
		fprintf(f, "  %-13s %s\n", commands[i].name,
			commands[i].summary);
	fprintf(f, "\n'wsnap help COMMAND' or 'wsnap COMMAND --help' for "
		   "details;\n'wsnap -V' or 'wsnap --version' for the "
		   "versions.\n"
		   "exit status: 0 ok, 1 differences (diff), 2 usage, "
		   "3 archive rejected, 4 I/O or system error\n");
}

static const struct command *find(const char *name)
{
	size_t i;

	for (i = 0; i < NCOMMANDS; i++)
		if (strcmp(commands[i].name, name) == 0)
			return &commands[i];
	return NULL;
}

/* An unknown command, and a hint line naming what it may have meant. */
static int unknown(const char *name)
{
	const char *names[NCOMMANDS + 1], *best[WSNAP_SUGGEST_MAX];
	size_t i, n;

	wsnap_usage_error(NULL, "unknown command '%s'", name);
	for (i = 0; i < NCOMMANDS; i++)
		names[i] = commands[i].name;
	names[i] = "help";
	n = wsnap_suggest(name, names, NCOMMANDS + 1, best);
	if (!n)
		return 2;
	fputs("wsnap: hint: did you mean ", stderr);
	for (i = 0; i < n; i++)
		fprintf(stderr, "%s'wsnap %s'",
			i == 0	    ? ""
			: i + 1 < n ? ", "
				    : " or ",
			best[i]);
	fputs("?\n", stderr);
	return 2;
}

/*
 * The credentials a URL argument may hold (user:password@, a presigned
 * query) are taken into our own memory and overwritten where the kernel
 * shows the arguments (/proc/PID/cmdline, ps), also to the filesystem
 * daemon forked later. Returns 0, or -1 when out of memory.
 */
static int scrub_args(int argc, char **argv)
{
	int i;

	for (i = 1; i < argc; i++) {
		char *copy;

		if (!strstr(argv[i], "://"))
			continue;
		copy = strdup(argv[i]);
		if (!copy)
			return -1;
		if (wsnap_remote_redact(argv[i]))
			argv[i] = copy; /* for the life of the process */
		else
			free(copy);
	}
	return 0;
}

int main(int argc, char **argv)
{
	/* one write per message line, whatever the pieces it is made of */
	static char errbuf[1 << 16];
	const struct command *cmd;

	setvbuf(stderr, errbuf, _IOLBF, sizeof(errbuf));
	if (scrub_args(argc, argv) != 0) {
		fputs("wsnap: out of memory\n", stderr);
		return 4;
	}
	if (argc < 2) {
		usage(stderr);
		return 2;
	}
	if (strcmp(argv[1], "--help") == 0 || strcmp(argv[1], "-h") == 0) {
		usage(stdout);
		return 0;
	}
	if (strcmp(argv[1], "--version") == 0 || strcmp(argv[1], "-V") == 0) {
		wsnap_version_print(stdout);
		return fflush(stdout) == 0 ? 0 : 4;
	}
	if (strcmp(argv[1], "help") == 0) {
		char *help_argv[] = {argv[2], "--help", NULL};

		if (argc < 3) {
			usage(stdout);
			return 0;
		}
		cmd = find(argv[2]);
		if (!cmd)
			return unknown(argv[2]);
		return cmd->run(2, help_argv);
	}
	cmd = find(argv[1]);
	if (!cmd) {
		if (argv[1][0] == '-')
			return wsnap_usage_error(NULL,
						 "option '%s' needs a "
						 "COMMAND before it",
						 argv[1]);
		return unknown(argv[1]);
	}
	return cmd->run(argc - 1, argv + 1);
}
