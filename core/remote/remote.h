/* SPDX-License-Identifier: MIT */
/*
 * Archives behind HTTP(S) and S3 (cli.md "Remote snapshots"): a source
 * (stream.h) over an object that is read with range requests through
 * libcurl, pinned to the version it was opened at.
 *
 * Invariants:
 *  - opening costs one HEAD, which fixes the object's size, ETag and
 *    Last-Modified; every later GET carries If-Match with that ETag (or
 *    If-Unmodified-Since when the server gives no strong ETag) and a Range,
 *    and a response is used only when its status is 206, its Content-Range
 *    is exactly the range asked for of an object of that size, and its
 *    body is exactly that long: anything else is -EIO, never other bytes;
 *  - once a response says the object changed (412, another ETag or size)
 *    every later read and check is -EIO;
 *  - credentials (a URL's user:password, S3 keys) live in this module's
 *    memory only: the label, messages and the cache key never hold them,
 *    nor a URL's query (a presigned URL's signature);
 *  - every request is bounded in time (connect timeout, a low-speed limit,
 *    an overall limit for ranged reads) and retried at most
 *    WSNAP_REMOTE_TRIES times, with backoff, on 5xx, 429, resets and short
 *    bodies;
 *  - reads go through a chunk cache (chunks.h): one request per chunk
 *    however many threads want it, and a read-ahead window on sequential
 *    reads; in memory at most min(cache_bytes, WSNAP_REMOTE_CACHE_DEFAULT),
 *    and with o->disk on disk too (pieces.h), keyed by the object's
 *    identity as pinned (label, ETag, Last-Modified, version id, size),
 *    only for an object that is pinned at all (a strong ETag or a
 *    Last-Modified).
 * A source is thread-safe (a small pool of curl handles). A process forked
 * while no read is in progress may use it: the child neither reuses the
 * parent's connections nor waits for its read-ahead.
 */
#ifndef WSNAP_REMOTE_H
#define WSNAP_REMOTE_H

#include <pthread.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "fileid.h"
#include "stream.h"

#define WSNAP_REMOTE_TRIES	     4
#define WSNAP_REMOTE_TIMEOUT_DEFAULT 30 /* seconds */
/* The chunk cache in memory: at most this, and at most cache_bytes. */
#define WSNAP_REMOTE_CACHE_DEFAULT (256ull << 20)
/* The chunk cache on disk (pieces.h) when cache_bytes does not say. */
#define WSNAP_REMOTE_DISK_DEFAULT (1ull << 30)
/* A sidecar fetched from the server is at most this long. */
#define WSNAP_REMOTE_SIDECAR_MAX (1ull << 30)
/* The longest message of a failed open or fetch, NUL included. */
#define WSNAP_REMOTE_MSG_MAX 512

struct wsnap_remote_opts {
	const char *cacert;   /* CA file; NULL: the environment's */
	unsigned timeout_s;   /* 0: WSNAP_REMOTE_TIMEOUT_DEFAULT */
	uint64_t cache_bytes; /* chunk cache; 0: the default */
	/* the chunk cache on disk: when disk is set, in chunk_dir (the
	 * cache directory's chunks/, cache.h; the source keeps a copy of
	 * the descriptor), bounded to cache_bytes (0: the default) */
	bool disk;
	int chunk_dir;
	/* told why the disk cache could not do its part (-v), or NULL */
	void (*say)(const char *line);
};

/* Whether s names a remote object (http://, https://, s3://). */
bool wsnap_remote_is_url(const char *s);

/*
 * Opens the object at url (one HEAD). Returns 0 and *out, or a negative
 * errno with msg set to one line naming the object without credentials
 * ("https://host/snap.tar: HTTP 404 Not Found"): -ENOENT (404), -EACCES
 * (401, 403), -EINVAL (a URL that cannot be used), -EIO (anything else).
 */
int wsnap_remote_open(const char *url, const struct wsnap_remote_opts *o,
		      struct wsnap_source **out,
		      char msg[WSNAP_REMOTE_MSG_MAX]);

/* Whether src is a remote source (made by wsnap_remote_open). */
bool wsnap_source_is_remote(const struct wsnap_source *src);

/*
 * The index cache key of a remote source: its label, ETag, Last-Modified,
 * version and size, as a file identity that no local file has (its ctime's
 * nanoseconds are out of range), so that the cache's keyed entries
 * (indexfile.h) serve remote objects unchanged.
 */
void wsnap_remote_cache_key(const struct wsnap_source *src,
			    struct wsnap_fileid *id);

/*
 * Writes the whole object (pinned, resumed with a range after a failure)
 * to fd, for a reader on the other end of a pipe (a SIGPIPE is not raised
 * for it). Returns 0 or a negative errno (-EPIPE when the reader stopped
 * reading) with msg set.
 */
int wsnap_remote_copy(struct wsnap_source *src, int fd,
		      char msg[WSNAP_REMOTE_MSG_MAX]);

/*
 * The whole object (wsnap_remote_copy) into a pipe from a thread of its
 * own: *rfd is the read end, for a reader (tar/reader.h). finish closes
 * rfd, waits for the thread and returns its outcome: 0 (also when the
 * reader stopped before the end) or a negative errno with p->msg set.
 */
struct wsnap_remote_pipe {
	struct wsnap_source *src;
	int fd;
	int rc;
	char msg[WSNAP_REMOTE_MSG_MAX];
	pthread_t thread;
};
int wsnap_remote_pipe_start(struct wsnap_remote_pipe *p,
			    struct wsnap_source *src, int *rfd);
int wsnap_remote_pipe_finish(struct wsnap_remote_pipe *p, int rfd);

/*
 * The decoded stream (stream_bytes long, of compression, a static string
 * such as the index's) of a compressed remote object without seek points:
 * decoded whole into an unlinked spill file in $TMPDIR on its first read,
 * which waits for it; a failed decoding fails that read (-EIO, or the
 * copy's error) and is tried again by the next. Takes over src (freed on
 * failure too). Returns 0 and *out, or -ENOMEM.
 */
int wsnap_stream_spill(struct wsnap_source *src, uint64_t stream_bytes,
		       const char *compression, struct wsnap_stream **out);

/*
 * Fetches the object beside src whose name is src's with suffix appended
 * (".wsnapidx": the sidecar), or, with src NULL, the object at url, whole,
 * at most max bytes, into a new unlinked temporary file in $TMPDIR. Returns
 * its descriptor (at offset 0), -ENOENT for a 404, or another negative
 * errno with msg set.
 */
int wsnap_remote_fetch(struct wsnap_source *src, const char *url,
		       const struct wsnap_remote_opts *o, const char *suffix,
		       uint64_t max, char msg[WSNAP_REMOTE_MSG_MAX]);

/* Requests made and body bytes received by src so far (-v, tests). */
void wsnap_remote_stats(const struct wsnap_source *src, uint64_t *requests,
			uint64_t *bytes);

/*
 * The parts that need no network (remote_parse.c), for tests and fuzzing.
 */

/* A Content-Range value "bytes FIRST-LAST/TOTAL" (TOTAL may be '*', then
 * *total is UINT64_MAX); exact digits, no sign, FIRST <= LAST. 0 or
 * -EINVAL. */
int wsnap_http_content_range(const char *v, size_t len, uint64_t *first,
			     uint64_t *last, uint64_t *total);

/* A decimal number without sign or spaces that fits in 63 bits: 0 or
 * -EINVAL. */
int wsnap_http_number(const char *v, size_t len, uint64_t *out);

/*
 * A header line "Name: value\r\n": when its name is name (case aside),
 * *val and *vlen are the value without surrounding blanks and true is
 * returned.
 */
bool wsnap_http_header(const char *line, size_t len, const char *name,
		       const char **val, size_t *vlen);

/* The longest key or secret taken from a credentials file. */
#define WSNAP_AWS_VALUE_MAX 1024
/* A credentials file longer than this is refused. */
#define WSNAP_AWS_FILE_MAX (1u << 20)

struct wsnap_aws_creds {
	char key_id[WSNAP_AWS_VALUE_MAX + 1];
	char secret[WSNAP_AWS_VALUE_MAX + 1];
	char token[4 * WSNAP_AWS_VALUE_MAX + 1];
};

/*
 * Parses an AWS shared credentials file (INI: [profile] sections, "key =
 * value" lines, '#' and ';' comments, indented lines under a key ignored)
 * and fills c with aws_access_key_id, aws_secret_access_key and
 * aws_session_token of profile. Returns 0 when the profile has a key and a
 * secret, -ENOENT when it does not, -EINVAL for a file that is not such
 * (a line that is none of these, a value too long, a NUL byte), with the
 * 1-based line number in *line.
 */
int wsnap_aws_creds_parse(const char *buf, size_t len, const char *profile,
			  struct wsnap_aws_creds *c, unsigned *line);

/*
 * The label of url: the URL without user, password, query and fragment
 * (malloc'd), or NULL when it is not one this module takes.
 */
char *wsnap_remote_label(const char *url);

/*
 * Overwrites in place, with '*', the parts of a URL in arg (an operand, or
 * an option's value with a URL inside: --index=https://...) that may be
 * secret: a user:password@ and a query. Returns whether it changed arg.
 * For main(), so that /proc/PID/cmdline never shows them.
 */
bool wsnap_remote_redact(char *arg);

#endif
