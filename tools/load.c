/* SPDX-License-Identifier: MIT */
/*
 * Opening archives and building their index for the subcommands (opts.h):
 * "-" is standard input, a directory or a terminal is refused, and a large
 * input shows a progress line (progress.h); the PATH operands of ls and
 * export.
 *
 * An archive file's index comes from the index cache when an entry for its
 * identity and the policy is there and intact (core/cache, indexfile.h);
 * otherwise it is built from the archive and stored there. --no-cache
 * does neither; --index FILE takes the index from a sidecar, which is
 * checked as untrusted input. Standard input is never cached. The cache
 * is an optimisation: when it cannot be used (its directory refused, an
 * entry damaged, no space to write one) the command goes on as without
 * it, -v says why.
 */
#include "opts.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "cache.h"
#include "indexfile.h"
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

/* A build from the archive itself, with the progress line. */
static enum wsnap_status build_fresh(int fd, const char *path,
				     const struct wsnap_policy *policy,
				     bool keep_data, bool progress,
				     struct wsnap_index **out,
				     struct wsnap_error *err)
{
	struct wsnap_reader_opts ropts = {.keep_data = keep_data};
	struct progress pr = {.path = path};
	enum wsnap_status st;

	*out = NULL;
	if (progress)
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

/* A -v line: 'wsnap: ' and the text, escaped. */
static void say(const struct wsnap_load_opts *lo, const char *text)
{
	if (!lo || !lo->verbose)
		return;
	fputs("wsnap: ", stderr);
	wsnap_put_escaped(stderr, WSNAP_ESC_BARE, text, strlen(text));
	fputc('\n', stderr);
}

/* -v, when the cache could not do its part (a command that works prints
 * nothing): 'wsnap: index cache entry NAME what (why)', why escaped. */
static void say_entry(const struct wsnap_load_opts *lo, const char *name,
		      const char *what, const char *why)
{
	if (!lo || !lo->verbose)
		return;
	fprintf(stderr, "wsnap: index cache entry %s %s", name, what);
	if (why) {
		fputs(" (", stderr);
		wsnap_put_escaped(stderr, WSNAP_ESC_BARE, why, strlen(why));
		fputc(')', stderr);
	}
	fputc('\n', stderr);
}

/* The index from a sidecar: judged again, its data checked on read. */
static enum wsnap_status
load_sidecar(int fd, const struct stat *sb, const struct wsnap_policy *policy,
	     bool keep_data, const struct wsnap_load_opts *lo,
	     struct wsnap_index **out, struct wsnap_error *err)
{
	struct wsnap_reader_opts ropts = {.keep_data = true};
	struct wsnap_sidecar *sc = NULL;
	struct wsnap_index *idx = NULL;
	enum wsnap_status st;
	uint64_t stream;
	int sfd;

	sfd = open(lo->index, O_RDONLY | O_CLOEXEC | O_NOCTTY);
	if (sfd < 0)
		return wsnap_error_io(err, errno, lo->index, "cannot open");
	st = wsnap_sidecar_read(&sc, sfd, lo->index, err);
	close(sfd);
	if (st != WSNAP_OK)
		return st;
	if (wsnap_sidecar_archive_size(sc) != (uint64_t)sb->st_size) {
		wsnap_sidecar_free(sc);
		return wsnap_error_io(err, 0, lo->index,
				      "index file is for another archive "
				      "(its size differs)");
	}
	stream = strcmp(wsnap_sidecar_compression(sc), "none") == 0
			 ? (uint64_t)sb->st_size
			 : wsnap_sidecar_stream_bytes(sc);
	st = wsnap_sidecar_index(sc, policy, stream, &idx, err);
	wsnap_sidecar_free(sc);
	/* reads check the digests against the data descriptor, so a
	 * sidecar's index always has one (a plain archive is used in place) */
	if (st == WSNAP_OK && keep_data)
		st = wsnap_index_attach_archive(idx, fd, &ropts, err);
	if (st != WSNAP_OK) {
		wsnap_index_free(idx);
		return st;
	}
	*out = idx;
	return WSNAP_OK;
}

/* Writes idx into the cache as entry name. Returns 0 or an errno, with
 * the reason in err; -v says what happened. */
static int cache_store(struct wsnap_cache *c, const char *name,
		       const struct wsnap_index *idx,
		       const struct wsnap_fileid *id,
		       const struct wsnap_policy *policy,
		       const struct wsnap_load_opts *lo,
		       struct wsnap_error *err)
{
	char tmp[WSNAP_CACHE_TMP_LEN + 1];
	int tfd, rc;

	tfd = wsnap_cache_tmp(c, tmp);
	if (tfd < 0) {
		rc = errno;
		wsnap_error_io(err, rc, NULL,
			       "cannot create index cache entry");
	} else if (wsnap_indexfile_write(tfd, idx, id, policy, err) !=
		   WSNAP_OK) {
		rc = err->errnum ? err->errnum : EIO;
		close(tfd);
		wsnap_cache_discard(c, tmp);
	} else {
		close(tfd);
		rc = wsnap_cache_commit(c, tmp, name);
		if (rc)
			wsnap_error_io(err, rc, NULL,
				       "cannot write index cache entry");
	}
	if (rc)
		say_entry(lo, name, "not written", err->reason);
	return rc;
}

/* Whether the file on fd is still the one id describes. */
static bool same_file(int fd, const struct wsnap_fileid *id)
{
	struct wsnap_fileid now;

	return wsnap_fileid_get(fd, &now) == 0 && wsnap_fileid_same(&now, id);
}

/*
 * The index of the regular file on fd through the cache: its entry when
 * there is a usable one, else built and stored. With strict (wsnap index),
 * a cache that cannot be used or written is an error; otherwise the
 * command goes on without it.
 */
static enum wsnap_status
through_cache(int fd, const char *path, const struct wsnap_policy *policy,
	      bool keep_data, const struct wsnap_load_opts *lo, bool strict,
	      struct wsnap_index **out, struct wsnap_error *err)
{
	struct wsnap_reader_opts ropts = {.keep_data = true};
	char why[WSNAP_CACHE_WHY_MAX], name[WSNAP_INDEXFILE_NAME_LEN + 1];
	struct wsnap_cache cache = {.dirfd = -1};
	struct wsnap_index *idx = NULL;
	struct wsnap_fileid id;
	struct wsnap_error *e2;
	enum wsnap_status st;
	int efd, rc;

	/* the key is the identity once settled (fileid.h): a change made
	 * after it was taken gives the archive another one */
	rc = wsnap_fileid_settle(fd, &id);
	if (rc && strict)
		return wsnap_error_io(err, -rc, path, "cannot identify");
	if (rc)
		return build_fresh(fd, path, policy, keep_data,
				   !lo->no_progress, out, err);
	if (!wsnap_cache_open(&cache, why, sizeof(why))) {
		if (strict)
			return wsnap_error_io(err, 0, NULL, "%s", why);
		say(lo, why);
	}
	e2 = malloc(sizeof(*e2));
	if (!e2) {
		wsnap_cache_close(&cache);
		return wsnap_error_io(err, ENOMEM, NULL, "out of memory");
	}
	wsnap_indexfile_name(&id, policy, name);
	efd = wsnap_cache_get(&cache, name);
	if (efd >= 0) {
		if (wsnap_indexfile_load(&idx, efd, &id, policy, e2) !=
		    WSNAP_OK)
			say_entry(lo, name, "not used", e2->reason);
		close(efd);
	}
	if (idx) {
		st = keep_data
			     ? wsnap_index_attach_archive(idx, fd, &ropts, err)
			     : WSNAP_OK;
	} else {
		st = build_fresh(fd, path, policy, keep_data, !lo->no_progress,
				 &idx, err);
		/* an archive that changed while it was read is not stored
		 * under the identity it had before */
		if (st == WSNAP_OK && cache.dirfd >= 0 && cache.max_bytes > 0 &&
		    same_file(fd, &id) &&
		    cache_store(&cache, name, idx, &id, policy, lo, e2) &&
		    strict) {
			*err = *e2;
			st = err->status;
		}
	}
	if (st != WSNAP_OK) {
		wsnap_index_free(idx);
		idx = NULL;
	}
	*out = idx;
	free(e2);
	wsnap_cache_close(&cache);
	return st;
}

enum wsnap_status
wsnap_build_index(int fd, const char *path, const struct wsnap_policy *policy,
		  bool keep_data, const struct wsnap_load_opts *lo,
		  struct wsnap_index **out, struct wsnap_error *err)
{
	static const struct wsnap_load_opts defaults;
	struct stat sb;

	*out = NULL;
	if (!lo)
		lo = &defaults;
	/* standard input (even a file there) or a pipe is never cached */
	if (strcmp(path, "-") == 0 || fstat(fd, &sb) != 0 ||
	    !S_ISREG(sb.st_mode)) {
		if (lo->index)
			return wsnap_error_usage(err, "--index needs an "
						      "archive file, not "
						      "standard input");
		return build_fresh(fd, path, policy, keep_data,
				   !lo->no_progress, out, err);
	}
	if (lo->index)
		return load_sidecar(fd, &sb, policy, keep_data, lo, out, err);
	if (lo->no_cache)
		return build_fresh(fd, path, policy, keep_data,
				   !lo->no_progress, out, err);
	return through_cache(fd, path, policy, keep_data, lo, false, out, err);
}

enum wsnap_status wsnap_cache_index(const char *path,
				    const struct wsnap_policy *policy,
				    const struct wsnap_load_opts *lo,
				    struct wsnap_error *err)
{
	struct wsnap_index *idx = NULL;
	enum wsnap_status st;
	struct stat sb;
	int fd;

	fd = wsnap_open_archive(path, err);
	if (fd < 0)
		return err->status;
	if (strcmp(path, "-") == 0 || fstat(fd, &sb) != 0 ||
	    !S_ISREG(sb.st_mode))
		st = wsnap_error_usage(err, "the index cache holds indexes of "
					    "archive files only");
	else
		st = through_cache(fd, path, policy, false, lo, true, &idx,
				   err);
	wsnap_index_free(idx);
	close(fd);
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

enum wsnap_status
wsnap_load_index(const char *path, const struct wsnap_policy *policy,
		 bool keep_data, const struct wsnap_load_opts *lo,
		 struct wsnap_index **out, struct wsnap_error *err)
{
	enum wsnap_status st;
	int fd;

	*out = NULL;
	fd = wsnap_open_archive(path, err);
	if (fd < 0)
		return err->status;
	st = wsnap_build_index(fd, path, policy, keep_data, lo, out, err);
	close(fd);
	return st;
}

#define L struct wsnap_load_opts
/* clang-format off */
const struct wsnap_option wsnap_load_options[] = {
	WSNAP_OPT_GROUP("index options:"),
	WSNAP_OPT_BOOL(0, "no-cache", L, no_cache,
		       "neither read nor write the index cache"),
	WSNAP_OPT_STRING(0, "index", "FILE", L, index,
			 "use the sidecar FILE (wsnap index -o), untrusted"),
	WSNAP_OPT_END(),
};

const struct wsnap_option wsnap_cache_options[] = {
	WSNAP_OPT_GROUP("index options:"),
	WSNAP_OPT_BOOL(0, "no-cache", L, no_cache,
		       "neither read nor write the index cache"),
	WSNAP_OPT_END(),
};
/* clang-format on */
#undef L
