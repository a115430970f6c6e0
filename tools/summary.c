/* SPDX-License-Identifier: MIT */
/*
 * The summary of a snapshot, one set of names for every subcommand that
 * reports one (opts.h, doc/json.md 'Summary').
 */
#include "opts.h"

#include <inttypes.h>
#include <stdio.h>
#include <string.h>

#include "json.h"

void wsnap_json_summary(struct wsnap_json *j,
			const struct wsnap_index_stats *st)
{
	wsnap_json_u64(j, "members", st->members);
	wsnap_json_u64(j, "directories", st->dirs);
	wsnap_json_u64(j, "implicit_directories", st->implicit);
	wsnap_json_u64(j, "files", st->files);
	wsnap_json_u64(j, "symlinks", st->symlinks);
	wsnap_json_u64(j, "bytes", st->total_bytes);
	wsnap_json_cstring(j, "compression", st->compression);
}

void wsnap_say_counts(const char *cmd, const char *path, uint64_t members,
		      uint64_t files, uint64_t bytes, uint64_t dirs,
		      uint64_t symlinks)
{
	fprintf(stderr, "wsnap: %s: ", cmd);
	wsnap_put_escaped(stderr, WSNAP_ESC_REPR, path, strlen(path));
	fprintf(stderr,
		": %" PRIu64 " %s: %" PRIu64 " %s (%" PRIu64 " %s), %" PRIu64
		" %s, %" PRIu64 " %s",
		members, wsnap_plural(members, "member", "members"), files,
		wsnap_plural(files, "file", "files"), bytes,
		wsnap_plural(bytes, "byte", "bytes"), dirs,
		wsnap_plural(dirs, "directory", "directories"), symlinks,
		wsnap_plural(symlinks, "symlink", "symlinks"));
}

void wsnap_say_summary(const char *cmd, const char *archive,
		       const struct wsnap_index_stats *st)
{
	wsnap_say_counts(cmd, archive, st->members, st->files, st->total_bytes,
			 st->dirs - st->implicit, st->symlinks);
	fprintf(stderr, "; %" PRIu64 " %s; %s\n", st->implicit,
		wsnap_plural(st->implicit, "implicit directory",
			     "implicit directories"),
		st->compression ? st->compression : "compression unknown");
}
