/* SPDX-License-Identifier: MIT */
/*
 * Opening archives and building their index for the subcommands (opts.h):
 * "-" is standard input, a directory or a terminal is refused, and a large
 * input shows a progress line (progress.h); the PATH operands of ls and
 * export.
 */
#include "opts.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "json.h"
#include "progress.h"
#include "select.h"

int wsnap_open_archive(const char *path, struct wsnap_error *err)
{
	struct stat st;
	int fd;

	if (strcmp(path, "-") == 0) {
		if (isatty(STDIN_FILENO)) {
			wsnap_error_usage(err, "refusing to read an archive "
					       "from a terminal (standard "
					       "input)");
			return -1;
		}
		fd = fcntl(STDIN_FILENO, F_DUPFD_CLOEXEC, 3);
		if (fd < 0)
			wsnap_error_io(err, errno, "-",
				       "cannot read standard input");
		return fd;
	}
	fd = open(path, O_RDONLY | O_CLOEXEC | O_NOCTTY);
	if (fd < 0) {
		wsnap_error_io(err, errno, path, "cannot open");
		return -1;
	}
	if (fstat(fd, &st) < 0) {
		wsnap_error_io(err, errno, path, "cannot stat");
		close(fd);
		return -1;
	}
	if (S_ISDIR(st.st_mode)) {
		wsnap_error_io(err, EISDIR, path, "cannot read archive");
		close(fd);
		return -1;
	}
	return fd;
}

/*
 * Progress for reads that take a while (a large input, or a small one that
 * decompresses to a lot): bytes of the input read so far. Quick reads show
 * nothing on a terminal.
 */
#define PROGRESS_FIRST_NS 500000000LL

struct progress {
	const char *path;
	struct wsnap_progress line;
};

static void put_mib(FILE *f, uint64_t bytes)
{
	fprintf(f, "%llu.%llu MiB", (unsigned long long)(bytes >> 20),
		(unsigned long long)(((bytes & ((1u << 20) - 1)) * 10) >> 20));
}

static void progress_cb(void *ctx, uint64_t done, uint64_t total)
{
	struct progress *pr = ctx;

	if (!wsnap_progress_due(&pr->line, total && done == total))
		return;
	fputs("reading ", stderr);
	wsnap_put_escaped(stderr, WSNAP_ESC_REPR, pr->path, strlen(pr->path));
	fputs(": ", stderr);
	put_mib(stderr, done);
	if (total && done <= total) {
		fputs(" of ", stderr);
		put_mib(stderr, total);
		fprintf(stderr, " (%u%%)", (unsigned)(done * 100 / total));
	}
	wsnap_progress_put_end(&pr->line);
}

enum wsnap_status wsnap_build_index(int fd, const char *path,
				    const struct wsnap_policy *policy,
				    bool keep_data, struct wsnap_index **out,
				    struct wsnap_error *err)
{
	struct wsnap_reader_opts ropts = {.keep_data = keep_data};
	struct progress pr = {.path = path};
	enum wsnap_status st;

	*out = NULL;
	wsnap_progress_begin(&pr.line, true, PROGRESS_FIRST_NS);
	if (pr.line.on) {
		ropts.progress = progress_cb;
		ropts.progress_ctx = &pr;
	}
	st = wsnap_index_build(out, fd, policy, &ropts, err);
	wsnap_progress_end(&pr.line);
	if (st != WSNAP_OK)
		*out = NULL;
	return st;
}

void wsnap_paths_free(char **paths, size_t n)
{
	size_t i;

	for (i = 0; paths && i < n; i++)
		free(paths[i]);
	free(paths);
}

int wsnap_paths_parse(const char *cmd, char *const *paths, size_t n,
		      char ***out)
{
	struct wsnap_error err;
	char **norm;
	size_t i;

	*out = NULL;
	if (n == 0)
		return 0;
	norm = calloc(n, sizeof(*norm));
	if (!norm) {
		wsnap_error_io(&err, ENOMEM, NULL, "out of memory");
		return wsnap_report(&err, false);
	}
	for (i = 0; i < n; i++) {
		if (wsnap_select_normalize(paths[i], &norm[i], &err) ==
		    WSNAP_OK)
			continue;
		wsnap_paths_free(norm, n);
		if (err.status == WSNAP_USAGE)
			return wsnap_usage_error(cmd, "%s", err.reason);
		return wsnap_report(&err, false);
	}
	*out = norm;
	return 0;
}

enum wsnap_status wsnap_load_index(const char *path,
				   const struct wsnap_policy *policy,
				   bool keep_data, struct wsnap_index **out,
				   struct wsnap_error *err)
{
	enum wsnap_status st;
	int fd;

	*out = NULL;
	fd = wsnap_open_archive(path, err);
	if (fd < 0)
		return err->status;
	st = wsnap_build_index(fd, path, policy, keep_data, out, err);
	close(fd);
	return st;
}
