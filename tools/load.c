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
#include <pthread.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "cache.h"
#include "chunks.h"
#include "fsutil.h"
#include "indexfile.h"
#include "json.h"
#include "progress.h"
#include "remote.h"
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

/* A build from the archive itself, with the progress line; seek_stream
 * as in struct wsnap_reader_opts (a remote object's copy). */
static enum wsnap_status build_stream(int fd, const char *path,
				      const struct wsnap_policy *policy,
				      bool keep_data, bool seek_stream,
				      bool progress, struct wsnap_index **out,
				      struct wsnap_error *err)
{
	struct wsnap_reader_opts ropts = {.keep_data = keep_data,
					  .seek_stream = seek_stream};
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

static enum wsnap_status build_fresh(int fd, const char *path,
				     const struct wsnap_policy *policy,
				     bool keep_data, bool progress,
				     struct wsnap_index **out,
				     struct wsnap_error *err)
{
	return build_stream(fd, path, policy, keep_data, false, progress, out,
			    err);
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

/* -v: what the build of idx found worth saying (a zstd seek table it did
 * not use). */
static void say_build(const struct wsnap_load_opts *lo,
		      const struct wsnap_index *idx)
{
	struct wsnap_index_stats is;

	if (!lo->verbose || !idx)
		return;
	wsnap_index_stats(idx, &is);
	if (is.zstd_table == WSNAP_ZSTD_TABLE_IGNORED)
		fputs("wsnap: zstd seek table ignored (it breaks the format or "
		      "disagrees with the frames decoded, which are used "
		      "instead)\n",
		      stderr);
}

/*
 * Where an archive's bytes come from: a local file (fd), or a remote object
 * (src, remote.h) read through the network. An index built or loaded for
 * a remote object reads its data through src (attached as its stream, the
 * index then owns it: src is set to NULL) or, for a compressed one, from
 * the spill file made while the object was streamed once.
 */
struct origin {
	int fd;
	struct wsnap_source *src;    /* owned until an index takes it */
	struct wsnap_source *remote; /* the same, borrowed: while o or the
					index built from it lives */
	const char *label; /* the path, or the URL without credentials */
	uint64_t size;
};

/* The remote object's copy into a pipe ended: a copy that failed is the
 * error (the reader saw a stream cut short), one that the reader stopped
 * reading is not. */
static enum wsnap_status pipe_finish(struct wsnap_remote_pipe *p, int rfd,
				     enum wsnap_status st,
				     struct wsnap_error *err)
{
	if (wsnap_remote_pipe_finish(p, rfd) != 0)
		return wsnap_error_io(err, 0, NULL, "%s", p->msg);
	return st;
}

static enum wsnap_status pipe_start(struct wsnap_remote_pipe *p,
				    struct origin *o, int *rfd,
				    struct wsnap_error *err)
{
	int rc = wsnap_remote_pipe_start(p, o->remote, rfd);

	return rc ? wsnap_error_io(err, -rc, NULL, "cannot stream %s", o->label)
		  : WSNAP_OK;
}

/* What the first bytes of a remote archive are: a compressed stream's
 * (then its data is spilled while it is streamed, rather than read
 * remotely), gzip's (whose seek points the stream gives: read remotely
 * from them), or neither. */
enum head_kind { HEAD_PLAIN, HEAD_GZIP, HEAD_COMPRESSED };

static enum head_kind head_kind(struct origin *o)
{
	static const struct {
		size_t len;
		const char *magic;
	} m[] = {
		{2, "\x1f\x8b"},
		{3, "BZh"},
		{6, "\xfd"
		    "7zXZ\0"},
		{4, "\x28\xb5\x2f\xfd"},
		{4, "\x04\x22\x4d\x18"},
		{2, "\x1f\x9d"},
		{4, "LZIP"},
		{3, "\x5d\0\0"},
	};
	unsigned char head[6];
	size_t n = o->size < sizeof(head) ? (size_t)o->size : sizeof(head);
	size_t i;

	if (n == 0 || wsnap_source_read(o->remote, head, n, 0) != 0)
		return HEAD_PLAIN;
	for (i = 0; i < sizeof(m) / sizeof(m[0]); i++)
		if (m[i].len <= n && memcmp(head, m[i].magic, m[i].len) == 0)
			return i == 0 ? HEAD_GZIP : HEAD_COMPRESSED;
	return HEAD_PLAIN;
}

/*
 * Gives idx (built or loaded without data) its data from o. A remote
 * object's is read through the network: a plain one in place, a
 * compressed one from the seek points its sidecar or cache entry holds
 * (only the compressed spans a read touches are fetched), else decoded
 * whole into a spill file on its first read.
 */
static enum wsnap_status origin_attach(struct origin *o,
				       struct wsnap_index *idx,
				       struct wsnap_error *err)
{
	struct wsnap_reader_opts ropts = {.keep_data = true};
	struct wsnap_index_stats is;
	struct wsnap_stream *s;
	int rc;

	if (!o->remote)
		return wsnap_index_attach_archive(idx, o->fd, &ropts, err);
	wsnap_index_stats(idx, &is);
	if (strcmp(is.compression, "none") != 0 &&
	    wsnap_index_has_seek_table(idx)) {
		rc = wsnap_index_attach_seek_source(idx, o->src, 0);
		o->src = NULL;
		return wsnap_index_seek_status(rc, err);
	}
	rc = strcmp(is.compression, "none") == 0
		     ? wsnap_stream_plain(o->src, &s)
		     : wsnap_stream_spill(o->src, is.stream_bytes,
					  is.compression, &s);
	o->src = NULL;
	if (rc)
		return wsnap_error_io(err, -rc, NULL, "out of memory");
	wsnap_index_attach_stream(idx, s);
	return WSNAP_OK;
}

/* A build from o itself, with the progress line; its data attached with
 * keep_data. A remote object is streamed once: a plain one is read
 * without keeping data (its stream offsets are the object's), then read
 * in place through the network; so is a gzip one, from the seek points
 * recorded while it streamed; another compressed one is spilled. */
static enum wsnap_status origin_build(struct origin *o,
				      const struct wsnap_policy *policy,
				      bool keep_data, bool progress,
				      struct wsnap_index **out,
				      struct wsnap_error *err)
{
	struct wsnap_remote_pipe p;
	enum wsnap_status st;
	enum head_kind kind;
	bool spill;
	int rfd;

	if (!o->remote)
		return build_fresh(o->fd, o->label, policy, keep_data, progress,
				   out, err);
	kind = head_kind(o);
	spill = keep_data && kind == HEAD_COMPRESSED;
	st = pipe_start(&p, o, &rfd, err);
	if (st != WSNAP_OK)
		return st;
	st = build_stream(rfd, o->label, policy, spill, kind == HEAD_GZIP,
			  progress, out, err);
	st = pipe_finish(&p, rfd, st, err);
	if (st == WSNAP_OK && keep_data && !wsnap_index_has_data(*out))
		st = origin_attach(o, *out, err);
	if (st != WSNAP_OK) {
		wsnap_index_free(*out);
		*out = NULL;
	}
	return st;
}

/* The sidecar lo->index (a file or a URL), or for a remote archive the one
 * beside it (URL.wsnapidx, none when there is none: -ENOENT). Returns its
 * descriptor, -ENOENT, or -1 with err set. */
static int open_sidecar(struct origin *o, const struct wsnap_load_opts *lo,
			char *label, size_t labellen, struct wsnap_error *err)
{
	char msg[WSNAP_REMOTE_MSG_MAX];
	int fd;

	if (lo->index && !wsnap_remote_is_url(lo->index)) {
		snprintf(label, labellen, "%s", lo->index);
		fd = open(lo->index, O_RDONLY | O_CLOEXEC | O_NOCTTY);
		if (fd < 0)
			wsnap_error_io(err, errno, lo->index, "cannot open");
		return fd < 0 ? -1 : fd;
	}
	if (lo->index) {
		char *l = wsnap_remote_label(lo->index);

		snprintf(label, labellen, "%s", l ? l : "--index");
		free(l);
		fd = wsnap_remote_fetch(NULL, lo->index, &lo->remote, NULL,
					WSNAP_REMOTE_SIDECAR_MAX, msg);
	} else {
		snprintf(label, labellen, "%s.wsnapidx", o->label);
		fd = wsnap_remote_fetch(o->src, NULL, &lo->remote, ".wsnapidx",
					WSNAP_REMOTE_SIDECAR_MAX, msg);
		/* none beside it (S3 says 403 for a missing key that may
		 * not be listed) */
		if (fd == -ENOENT || fd == -EACCES)
			return -ENOENT;
	}
	if (fd < 0) {
		wsnap_error_io(err, 0, NULL, "%s", msg);
		return -1;
	}
	return fd;
}

/* The index from a sidecar: judged again, its data checked on read. */
static enum wsnap_status load_sidecar(struct origin *o, int sfd,
				      const char *slabel,
				      const struct wsnap_policy *policy,
				      bool keep_data, struct wsnap_index **out,
				      struct wsnap_error *err)
{
	struct wsnap_sidecar *sc = NULL;
	struct wsnap_index *idx = NULL;
	enum wsnap_status st;
	uint64_t stream;

	st = wsnap_sidecar_read(&sc, sfd, slabel, err);
	close(sfd);
	if (st != WSNAP_OK)
		return st;
	if (wsnap_sidecar_archive_size(sc) != o->size) {
		wsnap_sidecar_free(sc);
		return wsnap_error_io(err, 0, slabel,
				      "index file is for another archive "
				      "(its size differs)");
	}
	stream = strcmp(wsnap_sidecar_compression(sc), "none") == 0
			 ? o->size
			 : wsnap_sidecar_stream_bytes(sc);
	st = wsnap_sidecar_index(sc, policy, stream, &idx, err);
	wsnap_sidecar_free(sc);
	/* reads check the digests against the data descriptor, so a
	 * sidecar's index always has one (a plain archive is used in place) */
	if (st == WSNAP_OK && keep_data)
		st = origin_attach(o, idx, err);
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

struct wsnap_store_later {
	struct wsnap_cache cache;
	char name[WSNAP_INDEXFILE_NAME_LEN + 1];
	struct wsnap_fileid id;
	const struct wsnap_policy *policy;
	const struct wsnap_index *idx;
};

/*
 * Hands the entry of idx over to lo->later instead of writing it now:
 * only for a plain local archive (its index holds no seek table, which
 * reads of a compressed one's data may still be working on) and without
 * -v (whose lines about the cache would have nowhere to go). Takes the
 * cache directory over. False: store it now.
 */
static bool store_later(const struct wsnap_load_opts *lo, struct origin *o,
			struct wsnap_cache *cache, const char *name,
			const struct wsnap_index *idx,
			const struct wsnap_fileid *id,
			const struct wsnap_policy *policy)
{
	struct wsnap_index_stats is;
	struct wsnap_store_later *s;

	if (!lo->later || lo->verbose || o->remote)
		return false;
	wsnap_index_stats(idx, &is);
	if (strcmp(is.compression, "none") != 0)
		return false;
	s = calloc(1, sizeof(*s));
	if (!s)
		return false;
	s->cache = *cache;
	cache->dirfd = -1;
	snprintf(s->name, sizeof(s->name), "%s", name);
	s->id = *id;
	s->policy = policy;
	s->idx = idx;
	wsnap_store_later_free(*lo->later);
	*lo->later = s;
	return true;
}

void wsnap_store_later_run(void *ctx)
{
	struct wsnap_store_later *s = ctx;
	struct wsnap_error *e = malloc(sizeof(*e)); /* large */

	if (!e)
		return;
	wsnap_error_clear(e);
	(void)cache_store(&s->cache, s->name, s->idx, &s->id, s->policy, NULL,
			  e);
	free(e);
}

void wsnap_store_later_free(struct wsnap_store_later *s)
{
	if (!s)
		return;
	wsnap_cache_close(&s->cache);
	free(s);
}

/* Whether o is still the archive id describes. */
static bool origin_same(struct origin *o, const struct wsnap_fileid *id)
{
	struct wsnap_fileid now;

	if (o->remote)
		return o->remote->ops->check(o->remote) == 0;
	return wsnap_fileid_get(o->fd, &now) == 0 &&
	       wsnap_fileid_same(&now, id);
}

/*
 * The index of the archive o (a regular file, or a remote object) through
 * the cache: its entry when there is a usable one, else built and stored.
 * With strict (wsnap index), a cache that cannot be used or written is an
 * error; otherwise the command goes on without it.
 */
static enum wsnap_status
through_cache(struct origin *o, const struct wsnap_policy *policy,
	      bool keep_data, const struct wsnap_load_opts *lo, bool strict,
	      struct wsnap_index **out, struct wsnap_error *err)
{
	char why[WSNAP_CACHE_WHY_MAX], name[WSNAP_INDEXFILE_NAME_LEN + 1];
	struct wsnap_cache cache = {.dirfd = -1};
	struct wsnap_index *idx = NULL;
	struct wsnap_fileid id;
	struct wsnap_error *e2;
	enum wsnap_status st;
	int efd, rc = 0;
	bool store;

	/* the key is the identity once settled (fileid.h): a change made
	 * after it was taken gives the archive another one; a remote
	 * object's is its URL, ETag, Last-Modified and size */
	if (o->remote)
		wsnap_remote_cache_key(o->remote, &id);
	else
		rc = wsnap_fileid_settle(o->fd, &id);
	if (rc && strict)
		return wsnap_error_io(err, -rc, o->label, "cannot identify");
	if (rc && lo && lo->verbose)
		fprintf(stderr,
			"wsnap: index cache not used: the archive's identity "
			"did not settle (%s)\n",
			strerror(-rc));
	if (rc)
		return origin_build(o, policy, keep_data, !lo->no_progress, out,
				    err);
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
		st = keep_data ? origin_attach(o, idx, err) : WSNAP_OK;
	} else {
		st = origin_build(o, policy, keep_data, !lo->no_progress, &idx,
				  err);
		say_build(lo, st == WSNAP_OK ? idx : NULL);
		/* an archive that changed while it was read is not stored
		 * under the identity it had before */
		store = st == WSNAP_OK && cache.dirfd >= 0 &&
			cache.max_bytes > 0;
		if (store && !origin_same(o, &id)) {
			store = false;
			say_entry(lo, name, "not written",
				  "the archive changed while it was read");
		}

		/* or written by the caller later (lo->later) */
		if (store && !strict)
			store = !store_later(lo, o, &cache, name, idx, &id,
					     policy);
		if (store &&
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

/* -v: a line of the chunk cache on disk (remote.h say), escaped. */
static void say_line(const char *line)
{
	fputs("wsnap: ", stderr);
	wsnap_put_escaped(stderr, WSNAP_ESC_BARE, line, strlen(line));
	fputc('\n', stderr);
}

/*
 * The remote settings of lo into *ro, with the chunk cache on disk unless
 * --no-cache or the cache directory cannot be used (-v says why): the
 * descriptor of its chunks/ directory is returned (the caller closes it
 * after the open), or -1.
 */
static int remote_settings(const struct wsnap_load_opts *lo,
			   struct wsnap_remote_opts *ro)
{
	char why[WSNAP_CACHE_WHY_MAX];
	struct wsnap_cache c = {.dirfd = -1};
	int fd = -1;

	*ro = lo->remote;
	if (!lo->no_cache) {
		if (wsnap_cache_open_as(&c, "chunk cache", why, sizeof(why)))
			fd = wsnap_cache_subdir(&c, "chunks", "chunk cache",
						why, sizeof(why));
		if (fd < 0)
			say(lo, why);
		wsnap_cache_close(&c);
	}
	ro->disk = fd >= 0;
	ro->chunk_dir = fd;
	ro->say = lo->verbose ? say_line : NULL;
	return fd;
}

/* A remote archive: opened (one HEAD), then its index from the cache,
 * else from the sidecar (--index, or the one beside it), else built. */
static enum wsnap_status
load_remote(const char *url, const struct wsnap_policy *policy, bool keep_data,
	    const struct wsnap_load_opts *lo, bool strict,
	    struct wsnap_index **out, struct wsnap_error *err)
{
	char msg[WSNAP_REMOTE_MSG_MAX], slabel[WSNAP_REMOTE_MSG_MAX];
	struct origin o = {.fd = -1};
	struct wsnap_index *idx = NULL;
	struct wsnap_remote_opts ro;
	enum wsnap_status st;
	int rc, sfd, cdir;

	*out = NULL;
	cdir = remote_settings(lo, &ro);
	rc = wsnap_remote_open(url, &ro, &o.src, msg);
	if (cdir >= 0)
		close(cdir);
	if (rc)
		return wsnap_error_io(err, 0, NULL, "%s", msg);
	o.remote = o.src;
	o.label = o.src->label;
	o.size = o.src->size;
	/* a remount costs the HEAD only */
	if (!lo->no_cache && !lo->index && !strict) {
		struct wsnap_cache probe = {.dirfd = -1};
		char why[WSNAP_CACHE_WHY_MAX],
			name[WSNAP_INDEXFILE_NAME_LEN + 1];
		struct wsnap_fileid id;
		int efd = -1;

		if (wsnap_cache_open(&probe, why, sizeof(why))) {
			wsnap_remote_cache_key(o.src, &id);
			wsnap_indexfile_name(&id, policy, name);
			efd = wsnap_cache_get(&probe, name);
		}
		if (efd >= 0)
			close(efd);
		wsnap_cache_close(&probe);
		if (efd >= 0) {
			st = through_cache(&o, policy, keep_data, lo, false,
					   &idx, err);
			goto out;
		}
	}
	sfd = strict ? -ENOENT
		     : open_sidecar(&o, lo, slabel, sizeof(slabel), err);
	if (sfd == -1) {
		st = err->status;
	} else if (sfd >= 0) {
		st = load_sidecar(&o, sfd, slabel, policy, keep_data, &idx,
				  err);
	} else if (lo->no_cache) {
		say(lo, "no index file beside the archive");
		st = origin_build(&o, policy, keep_data, !lo->no_progress, &idx,
				  err);
	} else {
		st = through_cache(&o, policy, keep_data, lo, strict, &idx,
				   err);
	}
out:
	wsnap_source_free(o.src);
	*out = st == WSNAP_OK ? idx : NULL;
	return st;
}

enum wsnap_status
wsnap_build_index(int fd, const char *path, const struct wsnap_policy *policy,
		  bool keep_data, const struct wsnap_load_opts *lo,
		  struct wsnap_index **out, struct wsnap_error *err)
{
	static const struct wsnap_load_opts defaults;
	struct origin o = {.fd = fd, .label = path};
	struct stat sb;
	int sfd;

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
	o.size = (uint64_t)sb.st_size;
	if (lo->index) {
		char slabel[WSNAP_REMOTE_MSG_MAX];

		sfd = open_sidecar(&o, lo, slabel, sizeof(slabel), err);
		if (sfd < 0)
			return err->status;
		return load_sidecar(&o, sfd, slabel, policy, keep_data, out,
				    err);
	}
	if (lo->no_cache) {
		enum wsnap_status st = build_fresh(fd, path, policy, keep_data,
						   !lo->no_progress, out, err);

		say_build(lo, *out);
		return st;
	}
	return through_cache(&o, policy, keep_data, lo, false, out, err);
}

enum wsnap_status wsnap_cache_index(const char *path,
				    const struct wsnap_policy *policy,
				    const struct wsnap_load_opts *lo,
				    struct wsnap_error *err)
{
	struct wsnap_index *idx = NULL;
	struct origin o = {.label = path};
	enum wsnap_status st;
	struct stat sb;
	int fd;

	if (wsnap_remote_is_url(path)) {
		st = load_remote(path, policy, false, lo, true, &idx, err);
		wsnap_index_free(idx);
		return st;
	}
	fd = wsnap_open_archive(path, err);
	if (fd < 0)
		return err->status;
	o.fd = fd;
	if (strcmp(path, "-") == 0 || fstat(fd, &sb) != 0 ||
	    !S_ISREG(sb.st_mode)) {
		st = wsnap_error_usage(err, "the index cache holds indexes of "
					    "archive files only");
	} else {
		o.size = (uint64_t)sb.st_size;
		st = through_cache(&o, policy, false, lo, true, &idx, err);
	}
	wsnap_index_free(idx);
	close(fd);
	return st;
}

int wsnap_download_archive(const char *url, const struct wsnap_remote_opts *ro,
			   struct wsnap_error *err)
{
	char msg[WSNAP_REMOTE_MSG_MAX];
	struct wsnap_source *src;
	const char *dir = getenv("TMPDIR");
	int fd, rc;

	rc = wsnap_remote_open(url, ro, &src, msg);
	if (rc) {
		wsnap_error_io(err, 0, NULL, "%s", msg);
		return -1;
	}
	fd = open(dir && dir[0] ? dir : "/tmp", O_TMPFILE | O_RDWR | O_CLOEXEC,
		  0600);
	if (fd < 0) {
		wsnap_error_io(err, errno, dir && dir[0] ? dir : "/tmp",
			       "cannot create a temporary file in");
	} else if (wsnap_remote_copy(src, fd, msg) != 0) {
		wsnap_error_io(err, 0, NULL, "%s", msg);
		close(fd);
		fd = -1;
	}
	wsnap_source_free(src);
	return fd;
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
	if (wsnap_remote_is_url(path))
		return load_remote(path, policy, keep_data, lo, false, out,
				   err);
	fd = wsnap_open_archive(path, err);
	if (fd < 0)
		return err->status;
	st = wsnap_build_index(fd, path, policy, keep_data, lo, out, err);
	close(fd);
	return st;
}

int wsnap_remote_amount(const char *s, bool size, uint64_t *out)
{
	uint64_t v = 0, mul = 1;
	const char *p = s;

	if (*p < '0' || *p > '9')
		return -1;
	for (; *p >= '0' && *p <= '9'; p++) {
		if (v > (1ull << 40))
			return -1;
		v = v * 10 + (uint64_t)(*p - '0');
	}
	if (size && *p && !p[1])
		mul = *p == 'K'	  ? 1ull << 10
		      : *p == 'M' ? 1ull << 20
		      : *p == 'G' ? 1ull << 30
				  : 0;
	else if (*p)
		mul = 0;
	if (mul == 0 || v > (1ull << 40) / mul)
		return -1;
	v *= mul;
	if (size ? v < WSNAP_CHUNK : v < 1 || v > 3600)
		return -1;
	*out = v;
	return 0;
}

const char *wsnap_remote_amount_want(bool size)
{
	return size ? "a size: N, NK, NM or NG of at least 1M"
		    : "seconds, 1 to 3600";
}

/* --timeout S and --cache-size N, into a struct wsnap_remote_opts */
static int remote_amount(const char *cmd, const char *opt, bool size,
			 const char *arg, uint64_t *v)
{
	if (wsnap_remote_amount(arg, size, v) != 0)
		return wsnap_usage_error(cmd, "bad --%s %s (want %s)", opt, arg,
					 wsnap_remote_amount_want(size));
	return 0;
}

static int remote_timeout(const char *cmd, void *target, const char *arg)
{
	uint64_t v;
	int rc = remote_amount(cmd, "timeout", false, arg, &v);

	if (rc == 0)
		((struct wsnap_remote_opts *)target)->timeout_s = (unsigned)v;
	return rc;
}

static int remote_cache_size(const char *cmd, void *target, const char *arg)
{
	uint64_t v;
	int rc = remote_amount(cmd, "cache-size", true, arg, &v);

	if (rc == 0)
		((struct wsnap_remote_opts *)target)->cache_bytes = v;
	return rc;
}

#define R struct wsnap_remote_opts
#define L struct wsnap_load_opts
/* clang-format off */
/* the remote settings, one line each: --help of check and ls must fit a
 * screen (40 lines); included with the same base */
#define REMOTE_ENTRIES                                                         \
	{                                                                      \
		.kind = WSNAP_OPTION_INCLUDE, .table = remote_entries,         \
	}
static const struct wsnap_option remote_entries[] = {
	WSNAP_OPT_CALLBACK(0, "timeout", "S", 0, remote_timeout,
			   "a remote ARCHIVE's request timeout, seconds (30)"),
	WSNAP_OPT_STRING(0, "cacert", "FILE", R, cacert,
			 "CA certificates to check a remote ARCHIVE's server"),
	WSNAP_OPT_END(),
};

static const struct wsnap_option remote_read_entries[] = {
	REMOTE_ENTRIES,
	WSNAP_OPT_CALLBACK(0, "cache-size", "N", 0, remote_cache_size,
			   "a remote ARCHIVE's chunk cache on disk (1G)"),
	WSNAP_OPT_END(),
};

#define REMOTE_IN_LOAD(entries)                                                \
	WSNAP_OPT_INCLUDE("REMOTE", entries, L, remote,                        \
			  struct wsnap_remote_opts)
#define LOAD_ENTRIES                                                           \
	WSNAP_OPT_BOOL(0, "no-cache", L, no_cache,                             \
		       "neither read nor write the index (or chunk) cache"),   \
	WSNAP_OPT_STRING(0, "index", "FILE", L, index,                         \
			 "use the sidecar FILE or URL (untrusted)")

const struct wsnap_option wsnap_remote_options[] = {
	WSNAP_OPT_GROUP("remote options:"),
	REMOTE_ENTRIES,
	WSNAP_OPT_END(),
};

const struct wsnap_option wsnap_load_options[] = {
	WSNAP_OPT_GROUP("index and remote options:"),
	LOAD_ENTRIES,
	REMOTE_IN_LOAD(remote_entries),
	WSNAP_OPT_END(),
};

const struct wsnap_option wsnap_load_read_options[] = {
	WSNAP_OPT_GROUP("index and remote options:"),
	LOAD_ENTRIES,
	REMOTE_IN_LOAD(remote_read_entries),
	WSNAP_OPT_END(),
};

const struct wsnap_option wsnap_cache_options[] = {
	WSNAP_OPT_GROUP("index options:"),
	WSNAP_OPT_BOOL(0, "no-cache", L, no_cache,
		       "neither read nor write the index (or chunk) cache"),
	WSNAP_OPT_END(),
};

const struct wsnap_option wsnap_cache_read_options[] = {
	WSNAP_OPT_GROUP("index and remote options:"),
	WSNAP_OPT_BOOL(0, "no-cache", L, no_cache,
		       "neither read nor write the index (or chunk) cache"),
	REMOTE_IN_LOAD(remote_read_entries),
	WSNAP_OPT_END(),
};
/* clang-format on */
#undef LOAD_ENTRIES
#undef REMOTE_IN_LOAD
#undef REMOTE_ENTRIES
#undef L
#undef R

enum wsnap_status wsnap_write_sidecar(const char *archive, const char *out,
				      const struct wsnap_policy *policy,
				      const struct wsnap_remote_opts *remote,
				      struct wsnap_error *err)
{
	struct wsnap_reader_opts ro = {.keep_data = true};
	enum wsnap_status st;
	char *tmp = NULL;
	struct stat sb;
	mode_t mask;
	int in_fd, out_fd = -1, e;

	/* a remote archive is fetched whole, once, to be described */
	in_fd = wsnap_remote_is_url(archive)
			? wsnap_download_archive(archive, remote, err)
			: wsnap_open_archive(archive, err);
	if (in_fd < 0)
		return err->status;
	if (strcmp(archive, "-") == 0 || fstat(in_fd, &sb) != 0 ||
	    !S_ISREG(sb.st_mode)) {
		close(in_fd);
		return wsnap_error_usage(err, "an index file describes an "
					      "archive file, not a pipe");
	}
	e = wsnap_fs_tmpfile_beside(out, ".wsnap-", &tmp, &out_fd);
	if (e) {
		close(in_fd);
		return wsnap_error_io(err, e, out, "cannot create");
	}
	st = wsnap_sidecar_write(out_fd, in_fd, policy, &ro, err);
	mask = umask(0);
	umask(mask);
	if (st == WSNAP_OK &&
	    (fchmod(out_fd, 0666 & ~mask) != 0 || rename(tmp, out) != 0))
		st = wsnap_error_io(err, errno, out, "cannot write");
	if (st != WSNAP_OK)
		unlink(tmp);
	free(tmp);
	close(out_fd);
	close(in_fd);
	return st;
}
