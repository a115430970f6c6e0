/* SPDX-License-Identifier: MIT */
/*
 * The remote source (remote.h) over libcurl: targets (a URL, or an S3
 * object with its endpoint, region and keys), requests with their checks,
 * retries, and the source operations over the chunk cache.
 *
 * A response's body reaches a buffer or a descriptor only once its status
 * and headers passed (checked on the first byte of the body, in
 * body_cb), and never more of it than was asked for.
 */
#include "remote.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include "crypto_dl.h"
#include <pthread.h>
#include <signal.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "chunks.h"
#include "pieces.h"
#include "curl_dl.h"
#include "fsutil.h"

#define ETAG_MAX    256
#define LM_MAX	    64
#define VERSION_MAX 1024
#define POOL_MAX    8
#define BACKOFF_MS  100
/* a ranged read of at most a chunk may take this many timeouts in all */
#define READ_TIMEOUTS 4

static pthread_once_t curl_once = PTHREAD_ONCE_INIT;
static CURLcode curl_init_rc = CURLE_FAILED_INIT;
static const char *curl_load_why; /* why libcurl could not be loaded */

static void curl_init(void)
{
	if (wsnap_curl_load(&curl_load_why) == 0)
		curl_init_rc = curl_global_init(CURL_GLOBAL_DEFAULT);
}

/* ---- targets ------------------------------------------------------------ */

struct target {
	char *url;	 /* what is requested: no user, no password */
	char *label;	 /* what messages say */
	char *user;	 /* basic auth user, or the S3 key id */
	char *pass;	 /* its password or secret */
	char *sigv4;	 /* "aws:amz:REGION:s3", or NULL */
	char *token_hdr; /* "x-amz-security-token: ...", or NULL */
	char *cainfo;
	long timeout;
};

static void free_secret(char *s)
{
	if (s) {
		explicit_bzero(s, strlen(s));
		free(s);
	}
}

static void target_release(struct target *t)
{
	free(t->url);
	free(t->label);
	free_secret(t->user);
	free_secret(t->pass);
	free(t->sigv4);
	free_secret(t->token_hdr);
	free(t->cainfo);
	memset(t, 0, sizeof(*t));
}

static const char *env(const char *name)
{
	const char *v = getenv(name);

	return v && v[0] ? v : NULL;
}

static int say(char *msg, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));
static int say(char *msg, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(msg, WSNAP_REMOTE_MSG_MAX, fmt, ap);
	va_end(ap);
	return 0;
}

static bool bucket_ok(const char *b, size_t n)
{
	size_t i;

	if (n < 3 || n > 63)
		return false;
	for (i = 0; i < n; i++)
		if (!((b[i] >= 'a' && b[i] <= 'z') ||
		      (b[i] >= '0' && b[i] <= '9') || b[i] == '.' ||
		      b[i] == '-'))
			return false;
	return true;
}

static bool region_ok(const char *r)
{
	size_t i, n = strlen(r);

	if (n == 0 || n > 32)
		return false;
	for (i = 0; i < n; i++)
		if (!((r[i] >= 'a' && r[i] <= 'z') ||
		      (r[i] >= '0' && r[i] <= '9') || r[i] == '-'))
			return false;
	return true;
}

/* "/" + bucket (path-style) + "/" + the key, every byte but unreserved
 * ones and '/' percent-encoded (what S3 signs). malloc'd. */
static char *s3_path(const char *prefix, const char *bucket, size_t blen,
		     const char *key)
{
	static const char hex[] = "0123456789ABCDEF";
	size_t plen = strlen(prefix), klen = strlen(key), n = 0, i;
	char *out;

	while (plen > 0 && prefix[plen - 1] == '/')
		plen--;
	if (klen > 4096)
		return NULL;
	out = malloc(plen + blen + 3 * klen + 3);
	if (!out)
		return NULL;
	memcpy(out, prefix, plen);
	n = plen;
	if (blen) {
		out[n++] = '/';
		memcpy(out + n, bucket, blen);
		n += blen;
	}
	out[n++] = '/';
	for (i = 0; i < klen; i++) {
		unsigned char ch = (unsigned char)key[i];

		if ((ch >= 'A' && ch <= 'Z') || (ch >= 'a' && ch <= 'z') ||
		    (ch >= '0' && ch <= '9') || ch == '-' || ch == '.' ||
		    ch == '_' || ch == '~' || ch == '/') {
			out[n++] = (char)ch;
		} else {
			out[n++] = '%';
			out[n++] = hex[ch >> 4];
			out[n++] = hex[ch & 15];
		}
	}
	out[n] = '\0';
	return out;
}

/* The S3 keys: the environment's, else the credentials file's; none is
 * anonymous. 0, or -EINVAL with msg. */
static int s3_keys(struct target *t, char *msg)
{
	static struct wsnap_aws_creds c; /* large; filled under curl_once's
					    caller, one open at a time */
	static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
	const char *id = env("AWS_ACCESS_KEY_ID");
	const char *secret = env("AWS_SECRET_ACCESS_KEY");
	const char *token = env("AWS_SESSION_TOKEN");
	const char *profile = env("AWS_PROFILE"), *path, *home;
	char *buf = NULL, pathbuf[PATH_MAX];
	unsigned line;
	size_t got;
	struct stat st;
	int fd, rc = 0;

	if (id && secret) {
		t->user = strdup(id);
		t->pass = strdup(secret);
		if (token && asprintf(&t->token_hdr, "x-amz-security-token: %s",
				      token) < 0)
			t->token_hdr = NULL, rc = -ENOMEM;
		return !t->user || !t->pass ? -ENOMEM : rc;
	}
	path = env("AWS_SHARED_CREDENTIALS_FILE");
	if (!path) {
		home = env("HOME");
		if (!home ||
		    snprintf(pathbuf, sizeof(pathbuf), "%s/.aws/credentials",
			     home) >= (int)sizeof(pathbuf))
			return 0;
		path = pathbuf;
	}
	fd = open(path, O_RDONLY | O_CLOEXEC | O_NOCTTY);
	if (fd < 0)
		return 0;
	if (fstat(fd, &st) != 0 || !S_ISREG(st.st_mode) ||
	    st.st_size > WSNAP_AWS_FILE_MAX) {
		close(fd);
		say(msg,
		    "cannot use credentials file '%s' (not a regular "
		    "file of at most 1 MiB)",
		    path);
		return -EINVAL;
	}
	buf = malloc((size_t)st.st_size + 1);
	if (!buf || wsnap_read_full(fd, buf, (size_t)st.st_size, &got)) {
		close(fd);
		free(buf);
		say(msg, "cannot read credentials file '%s'", path);
		return -EIO;
	}
	close(fd);
	pthread_mutex_lock(&lock);
	rc = wsnap_aws_creds_parse(buf, got, profile ? profile : "default", &c,
				   &line);
	explicit_bzero(buf, got);
	free(buf);
	if (rc == -EINVAL) {
		say(msg, "invalid credentials file '%s' (line %u)", path, line);
	} else if (rc == -ENOENT && profile) {
		say(msg, "credentials file '%s' has no keys for profile '%s'",
		    path, profile);
		rc = -EINVAL;
	} else if (rc == 0) {
		t->user = strdup(c.key_id);
		t->pass = strdup(c.secret);
		if (c.token[0] &&
		    asprintf(&t->token_hdr, "x-amz-security-token: %s",
			     c.token) < 0)
			t->token_hdr = NULL;
		rc = !t->user || !t->pass || (c.token[0] && !t->token_hdr)
			     ? -ENOMEM
			     : 0;
	} else {
		rc = 0; /* no keys for the default profile: anonymous */
	}
	explicit_bzero(&c, sizeof(c));
	pthread_mutex_unlock(&lock);
	return rc;
}

/* s3://BUCKET/KEY: the request URL, path-style on a custom endpoint,
 * virtual-host style on AWS (path-style for a bucket with a dot, which
 * the certificate's wildcard does not cover). */
static int s3_target(struct target *t, const char *url, char *msg)
{
	const char *b = url + 5, *slash = strchr(b, '/');
	const char *endpoint = env("AWS_ENDPOINT_URL_S3");
	const char *region = env("AWS_REGION");
	char *path = NULL, *host = NULL, *ep_path = NULL;
	size_t blen;
	CURLU *u = NULL;
	int rc = -EINVAL;

	if (!endpoint)
		endpoint = env("AWS_ENDPOINT_URL");
	if (!region)
		region = env("AWS_DEFAULT_REGION");
	if (!region)
		region = "us-east-1";
	blen = slash ? (size_t)(slash - b) : 0;
	if (!slash || !bucket_ok(b, blen) || slash[1] == '\0') {
		say(msg, "%s: not an S3 object (s3://BUCKET/KEY)", t->label);
		return -EINVAL;
	}
	if (!region_ok(region)) {
		say(msg, "%s: invalid AWS region", t->label);
		return -EINVAL;
	}
	u = curl_url();
	if (!u)
		return -ENOMEM;
	if (endpoint) {
		if (curl_url_set(u, CURLUPART_URL, endpoint, 0) != CURLUE_OK ||
		    curl_url_get(u, CURLUPART_PATH, &ep_path, 0) != CURLUE_OK) {
			say(msg, "invalid S3 endpoint URL");
			goto out;
		}
		path = s3_path(ep_path, b, blen, slash + 1);
	} else if (memchr(b, '.', blen)) {
		if (asprintf(&host, "s3.%s.amazonaws.com", region) < 0)
			host = NULL;
		path = s3_path("", b, blen, slash + 1);
	} else {
		if (asprintf(&host, "%.*s.s3.%s.amazonaws.com", (int)blen, b,
			     region) < 0)
			host = NULL;
		path = s3_path("", "", 0, slash + 1);
	}
	if (!path || (!endpoint && !host)) {
		rc = -ENOMEM;
		goto out;
	}
	if ((!endpoint &&
	     (curl_url_set(u, CURLUPART_SCHEME, "https", 0) != CURLUE_OK ||
	      curl_url_set(u, CURLUPART_HOST, host, 0) != CURLUE_OK)) ||
	    curl_url_set(u, CURLUPART_PATH, path, 0) != CURLUE_OK ||
	    curl_url_get(u, CURLUPART_URL, &t->url, 0) != CURLUE_OK) {
		say(msg, "%s: cannot make the S3 request URL", t->label);
		goto out;
	}
	rc = s3_keys(t, msg);
	if (rc == 0 && t->user) {
		if (asprintf(&t->sigv4, "aws:amz:%s:s3", region) < 0) {
			t->sigv4 = NULL;
			rc = -ENOMEM;
		}
	}
out:
	curl_free(ep_path);
	free(host);
	free(path);
	curl_url_cleanup(u);
	return rc;
}

/* An http(s) URL: the user and password taken out of it. */
static int http_target(struct target *t, const char *url, char *msg)
{
	char *user = NULL, *pass = NULL, *scheme = NULL;
	CURLU *u = curl_url();
	int rc = -EINVAL;

	if (!u)
		return -ENOMEM;
	if (curl_url_set(u, CURLUPART_URL, url, 0) != CURLUE_OK ||
	    curl_url_get(u, CURLUPART_SCHEME, &scheme, 0) != CURLUE_OK ||
	    (strcmp(scheme, "http") != 0 && strcmp(scheme, "https") != 0)) {
		say(msg, "%s: not a URL wsnap can read", t->label);
		goto out;
	}
	curl_url_get(u, CURLUPART_USER, &user, CURLU_URLDECODE);
	curl_url_get(u, CURLUPART_PASSWORD, &pass, CURLU_URLDECODE);
	if (curl_url_set(u, CURLUPART_USER, NULL, 0) != CURLUE_OK ||
	    curl_url_set(u, CURLUPART_PASSWORD, NULL, 0) != CURLUE_OK ||
	    curl_url_set(u, CURLUPART_FRAGMENT, NULL, 0) != CURLUE_OK ||
	    curl_url_get(u, CURLUPART_URL, &t->url, 0) != CURLUE_OK) {
		say(msg, "%s: not a URL wsnap can read", t->label);
		goto out;
	}
	rc = 0;
	if (user && !(t->user = strdup(user)))
		rc = -ENOMEM;
	if (user && !(t->pass = strdup(pass ? pass : "")))
		rc = -ENOMEM;
out:
	if (user)
		explicit_bzero(user, strlen(user));
	if (pass)
		explicit_bzero(pass, strlen(pass));
	curl_free(user);
	curl_free(pass);
	curl_free(scheme);
	curl_url_cleanup(u);
	return rc;
}

static int target_init(struct target *t, const char *url,
		       const struct wsnap_remote_opts *o, char *msg)
{
	const char *ca = o && o->cacert ? o->cacert : NULL;
	int rc;

	memset(t, 0, sizeof(*t));
	msg[0] = '\0';
	pthread_once(&curl_once, curl_init);
	if (curl_load_why) {
		say(msg, "cannot load libcurl (%s)", curl_load_why);
		return -ENOSYS;
	}
	if (curl_init_rc != CURLE_OK) {
		say(msg, "cannot initialise libcurl");
		return -ENOMEM;
	}
	t->label = wsnap_remote_label(url);
	if (!t->label) {
		say(msg, "not a URL wsnap can read");
		return -EINVAL;
	}
	t->timeout = o && o->timeout_s ? (long)o->timeout_s
				       : WSNAP_REMOTE_TIMEOUT_DEFAULT;
	if (!ca)
		ca = env("AWS_CA_BUNDLE");
	if (!ca)
		ca = env("CURL_CA_BUNDLE");
	if (!ca)
		ca = env("SSL_CERT_FILE");
	if (ca && !(t->cainfo = strdup(ca)))
		return -ENOMEM;
	rc = strncasecmp(url, "s3://", 5) == 0 ? s3_target(t, url, msg)
					       : http_target(t, url, msg);
	if (rc && !msg[0])
		say(msg, "%s: %s", t->label, strerror(-rc));
	return rc;
}

/* ---- requests ----------------------------------------------------------- */

struct remote {
	struct wsnap_source base;
	struct target t;
	char etag[ETAG_MAX + 1];
	char lm[LM_MAX + 1];
	char version[VERSION_MAX + 1];
	char *pin_hdr; /* If-Match or If-Unmodified-Since, or NULL */
	atomic_bool changed;
	pthread_mutex_t pool_lock;
	CURL *pool[POOL_MAX];
	unsigned npool;
	pid_t pool_pid;
	struct wsnap_chunks *chunks;
	struct wsnap_pieces *pieces; /* on disk, or NULL */
	atomic_uint_fast64_t requests, bytes;
};

/* One response as it arrives. */
struct xfer {
	/* what is asked */
	uint64_t first, len; /* a range, when ranged */
	bool ranged;
	uint64_t object_size; /* for a ranged one: the pinned size */
	const char *etag;     /* the pinned ETag, or NULL */
	char *buf;	      /* the body into buf (cap bytes) ... */
	int fd;		      /* ... or into fd */
	uint64_t cap;
	void (*filled)(void *fctx, size_t n); /* buf's bytes so far */
	void *fctx;
	size_t base; /* buf's bytes before this request's */
	/* what came */
	long status;
	bool have_range, have_len, bad_header, checked, too_much, changed;
	int write_errno;
	uint64_t r_first, r_last, r_total, clen, got;
	char etag_got[ETAG_MAX + 1];
	char lm_got[LM_MAX + 1];
	char version_got[VERSION_MAX + 1];
};

static bool printable(const char *v, size_t n, bool spaces)
{
	size_t i;

	for (i = 0; i < n; i++)
		if ((unsigned char)v[i] < (spaces ? 0x20 : 0x21) ||
		    (unsigned char)v[i] > 0x7e)
			return false;
	return true;
}

static void keep(struct xfer *x, char *out, size_t cap, const char *v, size_t n,
		 bool spaces)
{
	if (n >= cap || !printable(v, n, spaces)) {
		x->bad_header = true;
		return;
	}
	memcpy(out, v, n);
	out[n] = '\0';
}

static size_t header_cb(char *b, size_t size, size_t nitems, void *ud)
{
	struct xfer *x = ud;
	size_t len = size * nitems, vlen, i;
	const char *v;

	if (len >= 5 && memcmp(b, "HTTP/", 5) == 0) {
		/* a new response (after a 100 Continue, say): start over */
		x->status = 0;
		x->have_range = x->have_len = x->bad_header = false;
		x->etag_got[0] = x->lm_got[0] = x->version_got[0] = '\0';
		for (i = 5; i < len && b[i] != ' '; i++)
			;
		if (i + 4 <= len && b[i + 1] >= '1' && b[i + 1] <= '5' &&
		    b[i + 2] >= '0' && b[i + 2] <= '9' && b[i + 3] >= '0' &&
		    b[i + 3] <= '9')
			x->status = (b[i + 1] - '0') * 100 +
				    (b[i + 2] - '0') * 10 + (b[i + 3] - '0');
		return len;
	}
	if (wsnap_http_header(b, len, "content-range", &v, &vlen)) {
		if (x->have_range ||
		    wsnap_http_content_range(v, vlen, &x->r_first, &x->r_last,
					     &x->r_total))
			x->bad_header = true;
		x->have_range = true;
	} else if (wsnap_http_header(b, len, "content-length", &v, &vlen)) {
		if (x->have_len || wsnap_http_number(v, vlen, &x->clen))
			x->bad_header = true;
		x->have_len = true;
	} else if (wsnap_http_header(b, len, "etag", &v, &vlen)) {
		keep(x, x->etag_got, sizeof(x->etag_got), v, vlen, false);
	} else if (wsnap_http_header(b, len, "last-modified", &v, &vlen)) {
		keep(x, x->lm_got, sizeof(x->lm_got), v, vlen, true);
	} else if (wsnap_http_header(b, len, "x-amz-version-id", &v, &vlen)) {
		keep(x, x->version_got, sizeof(x->version_got), v, vlen, false);
	}
	return len;
}

/* Whether a response may give its body: the status asked for, a
 * Content-Range that is the range asked for of the pinned object, the
 * pinned ETag. */
static bool response_ok(struct xfer *x)
{
	if (x->bad_header)
		return false;
	if (x->etag && x->etag_got[0] && strcmp(x->etag, x->etag_got) != 0) {
		x->changed = true;
		return false;
	}
	if (!x->ranged)
		return x->status == 200 && (!x->have_len || x->clen <= x->cap);
	if (x->status != 206 || !x->have_range)
		return false;
	if (x->r_total != x->object_size) {
		x->changed = true;
		return false;
	}
	return x->r_first == x->first && x->r_last == x->first + x->len - 1 &&
	       (!x->have_len || x->clen == x->len);
}

static size_t body_cb(char *b, size_t size, size_t nitems, void *ud)
{
	struct xfer *x = ud;
	size_t len = size * nitems;

	if (!x->checked) {
		if (!response_ok(x))
			return 0;
		x->checked = true;
	}
	if (len > x->cap - x->got) {
		x->too_much = true;
		return 0;
	}
	if (x->buf) {
		memcpy(x->buf + x->got, b, len);
		if (x->filled)
			x->filled(x->fctx, x->base + (size_t)x->got + len);
	} else {
		int e = wsnap_write_full(x->fd, b, len);

		if (e) {
			x->write_errno = e;
			return 0;
		}
	}
	x->got += len;
	return len;
}

static bool is_redirect(long status)
{
	return status == 301 || status == 302 || status == 303 ||
	       status == 307 || status == 308;
}

static const char *reason(long status)
{
	switch (status) {
	case 301:
		return " Moved Permanently";
	case 302:
		return " Found";
	case 303:
		return " See Other";
	case 307:
		return " Temporary Redirect";
	case 308:
		return " Permanent Redirect";
	case 400:
		return " Bad Request";
	case 401:
		return " Unauthorized";
	case 403:
		return " Forbidden";
	case 404:
		return " Not Found";
	case 405:
		return " Method Not Allowed";
	case 412:
		return " Precondition Failed";
	case 416:
		return " Range Not Satisfiable";
	case 429:
		return " Too Many Requests";
	case 500:
		return " Internal Server Error";
	case 502:
		return " Bad Gateway";
	case 503:
		return " Service Unavailable";
	case 504:
		return " Gateway Timeout";
	default:
		return "";
	}
}

static CURL *handle_get(struct remote *r)
{
	CURL *h = NULL;

	pthread_mutex_lock(&r->pool_lock);
	if (r->pool_pid != getpid()) {
		/* forked: the parent's connections are not ours to use (nor
		 * to close: that would end its TLS sessions) */
		r->npool = 0;
		r->pool_pid = getpid();
	}
	if (r->npool)
		h = r->pool[--r->npool];
	pthread_mutex_unlock(&r->pool_lock);
	return h ? h : curl_easy_init();
}

static void handle_put(struct remote *r, CURL *h)
{
	pthread_mutex_lock(&r->pool_lock);
	if (r->npool < POOL_MAX && r->pool_pid == getpid()) {
		r->pool[r->npool++] = h;
		h = NULL;
	}
	pthread_mutex_unlock(&r->pool_lock);
	if (h)
		curl_easy_cleanup(h);
}

/*
 * curl_easy_perform with SIGPIPE blocked in this thread (CURLOPT_NOSIGNAL
 * leaves a write to a closed socket, or to the pipe body_cb writes, to
 * raise it): one raised meanwhile is taken back before it is unblocked.
 */
static CURLcode perform(CURL *h)
{
	struct timespec zero = {0, 0};
	sigset_t set, old, pending;
	bool was_pending;
	CURLcode cc;

	sigemptyset(&set);
	sigaddset(&set, SIGPIPE);
	pthread_sigmask(SIG_BLOCK, &set, &old);
	was_pending = sigpending(&pending) == 0 &&
		      sigismember(&pending, SIGPIPE) == 1;
	cc = curl_easy_perform(h);
	if (!was_pending)
		while (sigtimedwait(&set, NULL, &zero) == SIGPIPE)
			;
	pthread_sigmask(SIG_SETMASK, &old, NULL);
	return cc;
}

/* Outcome of one request. */
enum outcome {
	O_DONE,
	O_RETRY,   /* worth another try */
	O_FAIL,	   /* the server said no (status in x) */
	O_CHANGED, /* not the pinned object any more */
	O_LOCAL,   /* ours: out of memory, a write that failed */
};

/*
 * One request of t's URL (url when not NULL) with headers pin (may be
 * NULL), the range in x when x->ranged, HEAD when head. total_s bounds the
 * whole request (0: only the connect timeout and the low-speed limit).
 */
static enum outcome request(struct remote *r, const struct target *t,
			    const char *url, bool head, long total_s,
			    struct xfer *x, char *msg)
{
	char range[64], errbuf[CURL_ERROR_SIZE] = "";
	struct curl_slist *hdrs = NULL, *n;
	enum outcome out = O_LOCAL;
	CURL *h = r ? handle_get(r) : curl_easy_init();
	CURLcode cc;

	if (!h)
		return O_LOCAL;
	curl_easy_reset(h);
	if (x->ranged) {
		snprintf(range, sizeof(range), "Range: bytes=%llu-%llu",
			 (unsigned long long)x->first,
			 (unsigned long long)(x->first + x->len - 1));
		if (!(n = curl_slist_append(hdrs, range)))
			goto out;
		hdrs = n;
	}
	if (r && r->pin_hdr) {
		if (!(n = curl_slist_append(hdrs, r->pin_hdr)))
			goto out;
		hdrs = n;
	}
	if (t->sigv4) {
		/* signed with the rest (libcurl 7.88 does not add it) */
		if (!(n = curl_slist_append(
			      hdrs, "x-amz-content-sha256: UNSIGNED-PAYLOAD")))
			goto out;
		hdrs = n;
	}
	if (t->token_hdr) {
		if (!(n = curl_slist_append(hdrs, t->token_hdr)))
			goto out;
		hdrs = n;
	}
	curl_easy_setopt(h, CURLOPT_URL, url ? url : t->url);
	curl_easy_setopt(h, CURLOPT_NOSIGNAL, 1L);
	curl_easy_setopt(h, CURLOPT_PROTOCOLS_STR, "http,https");
	curl_easy_setopt(h, CURLOPT_FOLLOWLOCATION, 0L);
	curl_easy_setopt(h, CURLOPT_CONNECTTIMEOUT, t->timeout);
	curl_easy_setopt(h, CURLOPT_LOW_SPEED_LIMIT, 1L);
	curl_easy_setopt(h, CURLOPT_LOW_SPEED_TIME, t->timeout);
	if (total_s)
		curl_easy_setopt(h, CURLOPT_TIMEOUT, total_s);
	if (t->cainfo)
		curl_easy_setopt(h, CURLOPT_CAINFO, t->cainfo);
	if (t->user) {
		curl_easy_setopt(h, CURLOPT_USERNAME, t->user);
		curl_easy_setopt(h, CURLOPT_PASSWORD, t->pass);
	}
	if (t->sigv4)
		curl_easy_setopt(h, CURLOPT_AWS_SIGV4, t->sigv4);
	curl_easy_setopt(h, CURLOPT_HTTPHEADER, hdrs);
	curl_easy_setopt(h, CURLOPT_HEADERFUNCTION, header_cb);
	curl_easy_setopt(h, CURLOPT_HEADERDATA, x);
	curl_easy_setopt(h, CURLOPT_WRITEFUNCTION, body_cb);
	curl_easy_setopt(h, CURLOPT_WRITEDATA, x);
	curl_easy_setopt(h, CURLOPT_ERRORBUFFER, errbuf);
	/* fewer, larger socket reads for 1 MiB chunks */
	curl_easy_setopt(h, CURLOPT_BUFFERSIZE, 256L << 10);
	if (head)
		curl_easy_setopt(h, CURLOPT_NOBODY, 1L);
	cc = perform(h);
	if (r) {
		atomic_fetch_add(&r->requests, 1);
		atomic_fetch_add(&r->bytes, x->got);
	}
	curl_easy_setopt(h, CURLOPT_ERRORBUFFER, NULL);
	curl_easy_setopt(h, CURLOPT_HTTPHEADER, NULL);
	if (x->write_errno || (cc != CURLE_OK && x->too_much)) {
		say(msg, "%s: %s", t->label,
		    x->too_much ? "the server sent more than asked for"
				: strerror(x->write_errno));
		out = x->too_much ? O_FAIL : O_LOCAL;
	} else if (x->changed || x->status == 412) {
		say(msg, "%s: the object changed since it was opened",
		    t->label);
		out = O_CHANGED;
	} else if (x->status >= 500 || x->status == 429) {
		say(msg, "%s: HTTP %ld%s", t->label, x->status,
		    reason(x->status));
		out = O_RETRY;
	} else if (x->ranged && x->status == 200) {
		say(msg, "%s: the server ignored the range request", t->label);
		out = O_FAIL;
	} else if (is_redirect(x->status)) {
		/* a redirect is not followed: its target may be another
		 * host, which would see the signed headers or the URL's
		 * credentials (cli.md "Remote snapshots") */
		say(msg, "%s: HTTP %ld%s (redirects are not followed)",
		    t->label, x->status, reason(x->status));
		out = O_FAIL;
	} else if (x->status >= 300 ||
		   (x->status && x->status != (x->ranged ? 206 : 200))) {
		say(msg, "%s: HTTP %ld%s", t->label, x->status,
		    reason(x->status));
		out = O_FAIL;
	} else if (cc != CURLE_OK) {
		say(msg, "%s: %s", t->label,
		    errbuf[0] ? errbuf : curl_easy_strerror(cc));
		/* a response that said the wrong things is not retried */
		out = x->status && !x->checked && !head ? O_FAIL : O_RETRY;
		if (cc == CURLE_PEER_FAILED_VERIFICATION ||
		    cc == CURLE_SSL_CACERT_BADFILE ||
		    cc == CURLE_URL_MALFORMAT ||
		    cc == CURLE_UNSUPPORTED_PROTOCOL ||
		    cc == CURLE_LOGIN_DENIED)
			out = O_FAIL;
	} else if (head) {
		out = x->status == 200 && !x->bad_header ? O_DONE : O_FAIL;
		if (out != O_DONE)
			say(msg, "%s: invalid response to HEAD", t->label);
	} else if (!x->checked && !response_ok(x)) {
		/* an empty body never reached body_cb */
		say(msg, "%s: invalid response", t->label);
		out = x->changed ? O_CHANGED : O_FAIL;
	} else if (x->ranged ? x->got != x->len
			     : x->have_len && x->got != x->clen) {
		say(msg, "%s: short response", t->label);
		out = O_RETRY;
	} else {
		out = O_DONE;
	}
out:
	curl_slist_free_all(hdrs);
	if (r)
		handle_put(r, h);
	else
		curl_easy_cleanup(h);
	return out;
}

static void backoff(unsigned attempt)
{
	struct timespec ts;
	long ms = BACKOFF_MS << attempt;

	ts.tv_sec = ms / 1000;
	ts.tv_nsec = (ms % 1000) * 1000000L;
	while (nanosleep(&ts, &ts) != 0 && errno == EINTR)
		;
}

static int outcome_errno(enum outcome o)
{
	return o == O_LOCAL ? -ENOMEM : -EIO;
}

/* ---- the source ---------------------------------------------------------- */

/* The chunk cache's fetch: one range of the pinned object, resumed where
 * a failed try stopped (what it gave passed every check). */
static int fetch_range(void *ctx, void *buf, uint64_t off, size_t len,
		       void (*filled)(void *fctx, size_t n), void *fctx)
{
	struct remote *r = ctx;
	char msg[WSNAP_REMOTE_MSG_MAX];
	enum outcome o = O_RETRY;
	size_t done = 0;
	unsigned a;

	for (a = 0; a < WSNAP_REMOTE_TRIES && o == O_RETRY; a++) {
		struct xfer x = {.first = off + done,
				 .len = len - done,
				 .ranged = true,
				 .object_size = r->base.size,
				 .etag = r->etag[0] ? r->etag : NULL,
				 .buf = (char *)buf + done,
				 .fd = -1,
				 .cap = len - done,
				 .filled = filled,
				 .fctx = fctx,
				 .base = done};

		if (atomic_load(&r->changed))
			return -EIO;
		if (a)
			backoff(a - 1);
		o = request(r, &r->t, NULL, false, READ_TIMEOUTS * r->t.timeout,
			    &x, msg);
		done += (size_t)x.got;
	}
	if (o == O_CHANGED)
		atomic_store(&r->changed, true);
	return o == O_DONE ? 0 : outcome_errno(o);
}

static ssize_t remote_pread(struct wsnap_source *src, void *buf, size_t len,
			    uint64_t off)
{
	struct remote *r = (struct remote *)src;

	if (atomic_load(&r->changed))
		return -EIO;
	return wsnap_chunks_read(r->chunks, buf, len, off);
}

static void remote_set_data_check(struct wsnap_source *src,
				  wsnap_data_check_fn fn, void *ctx)
{
	wsnap_chunks_set_check(((struct remote *)src)->chunks, fn, ctx);
}

static int remote_fill(struct wsnap_source *src, size_t len, uint64_t off)
{
	struct remote *r = (struct remote *)src;

	if (atomic_load(&r->changed))
		return -EIO;
	return wsnap_chunks_fill(r->chunks, len, off);
}

static int remote_check(struct wsnap_source *src)
{
	struct remote *r = (struct remote *)src;

	return atomic_load(&r->changed) ? -EIO : 0;
}

static void remote_destroy(struct wsnap_source *src)
{
	struct remote *r = (struct remote *)src;
	unsigned i;

	wsnap_chunks_free(r->chunks);
	wsnap_pieces_free(r->pieces);
	if (r->pool_pid == getpid())
		for (i = 0; i < r->npool; i++)
			curl_easy_cleanup(r->pool[i]);
	pthread_mutex_destroy(&r->pool_lock);
	free(r->pin_hdr);
	target_release(&r->t);
	free(r);
}

static const struct wsnap_source_ops remote_ops = {
	.pread = remote_pread,
	.check = remote_check,
	.destroy = remote_destroy,
	.set_data_check = remote_set_data_check,
	.fill = remote_fill,
};

bool wsnap_source_is_remote(const struct wsnap_source *src)
{
	return src && src->ops == &remote_ops;
}

static int status_errno(long status)
{
	return status == 404			? -ENOENT
	       : status == 401 || status == 403 ? -EACCES
						: -EIO;
}

static int open_pieces(struct remote *r, const struct wsnap_remote_opts *o);

int wsnap_remote_open(const char *url, const struct wsnap_remote_opts *o,
		      struct wsnap_source **out, char msg[WSNAP_REMOTE_MSG_MAX])
{
	struct remote *r = calloc(1, sizeof(*r));
	enum outcome oc = O_RETRY;
	struct xfer x;
	unsigned a;
	int rc;

	*out = NULL;
	msg[0] = '\0';
	if (!r)
		return -ENOMEM;
	pthread_mutex_init(&r->pool_lock, NULL);
	r->pool_pid = getpid();
	r->base.ops = &remote_ops;
	rc = target_init(&r->t, url, o, msg);
	if (rc) {
		remote_destroy(&r->base);
		return rc;
	}
	r->base.label = r->t.label;
	r->base.fetches = true;
	for (a = 0; a < WSNAP_REMOTE_TRIES && oc == O_RETRY; a++) {
		memset(&x, 0, sizeof(x));
		x.fd = -1;
		if (a)
			backoff(a - 1);
		oc = request(r, &r->t, NULL, true, READ_TIMEOUTS * r->t.timeout,
			     &x, msg);
	}
	if (oc == O_DONE && !x.have_len) {
		say(msg, "%s: the server gives no size (Content-Length)",
		    r->t.label);
		oc = O_FAIL;
	}
	if (oc != O_DONE) {
		rc = oc == O_FAIL ? status_errno(x.status) : outcome_errno(oc);
		remote_destroy(&r->base);
		return rc;
	}
	r->base.size = x.clen;
	memcpy(r->etag, x.etag_got, sizeof(r->etag));
	memcpy(r->lm, x.lm_got, sizeof(r->lm));
	memcpy(r->version, x.version_got, sizeof(r->version));
	/* a weak ETag never matches If-Match: then the date pins it */
	if (r->etag[0] && strncmp(r->etag, "W/", 2) != 0)
		rc = asprintf(&r->pin_hdr, "If-Match: %s", r->etag);
	else if (r->lm[0])
		rc = asprintf(&r->pin_hdr, "If-Unmodified-Since: %s", r->lm);
	if (strncmp(r->etag, "W/", 2) == 0)
		r->etag[0] = '\0';
	if (rc < 0) {
		r->pin_hdr = NULL;
		remote_destroy(&r->base);
		return -ENOMEM;
	}
	rc = wsnap_chunks_new(r->base.size,
			      o && o->cache_bytes &&
					      o->cache_bytes <
						      WSNAP_REMOTE_CACHE_DEFAULT
				      ? o->cache_bytes
				      : WSNAP_REMOTE_CACHE_DEFAULT,
			      fetch_range, r, &r->chunks);
	if (rc == 0)
		rc = open_pieces(r, o);
	if (rc) {
		remote_destroy(&r->base);
		return rc;
	}
	*out = &r->base;
	return 0;
}

void wsnap_remote_stats(const struct wsnap_source *src, uint64_t *requests,
			uint64_t *bytes)
{
	struct remote *r = (struct remote *)src;

	*requests = atomic_load(&r->requests);
	*bytes = atomic_load(&r->bytes);
}

/* SHA-256 of the object's identity as pinned into md (zeros when it
 * cannot be computed), with its size when with_size. */
static void identity_digest(const struct remote *r, bool with_size,
			    unsigned char md[EVP_MAX_MD_SIZE])
{
	unsigned mdlen = 0;
	EVP_MD_CTX *ctx = EVP_MD_CTX_new();
	const char *parts[4] = {r->t.label, r->etag, r->lm, r->version};
	unsigned char sz[8];
	unsigned i;

	memset(md, 0, EVP_MAX_MD_SIZE);
	for (i = 0; i < 8; i++)
		sz[i] = (unsigned char)(r->base.size >> (8 * i));
	if (ctx && EVP_DigestInit_ex(ctx, EVP_sha256(), NULL) == 1) {
		for (i = 0; i < 4; i++)
			EVP_DigestUpdate(ctx, parts[i], strlen(parts[i]) + 1);
		if (with_size)
			EVP_DigestUpdate(ctx, sz, sizeof(sz));
		EVP_DigestFinal_ex(ctx, md, &mdlen);
	}
	EVP_MD_CTX_free(ctx);
}

void wsnap_remote_cache_key(const struct wsnap_source *src,
			    struct wsnap_fileid *id)
{
	const struct remote *r = (const struct remote *)src;
	unsigned char md[EVP_MAX_MD_SIZE];

	memset(id, 0, sizeof(*id));
	identity_digest(r, false, md);
	memcpy(&id->dev, md, sizeof(id->dev));
	memcpy(&id->ino, md + 8, sizeof(id->ino));
	memcpy(&id->mtime.tv_sec, md + 16, sizeof(id->mtime.tv_sec));
	id->size = (int64_t)r->base.size;
	/* no file has these nanoseconds: a remote key is never a local one */
	id->ctime.tv_sec = 1;
	id->ctime.tv_nsec = 1000000000L;
	id->mtime.tv_nsec = 1000000000L;
}

/* The chunk cache on disk of r, when o asks for it and r is pinned (a
 * version it cannot tell from another is never kept). */
static int open_pieces(struct remote *r, const struct wsnap_remote_opts *o)
{
	unsigned char md[EVP_MAX_MD_SIZE], zero[WSNAP_PIECE_KEY] = {0};
	char line[WSNAP_REMOTE_MSG_MAX];
	int rc;

	if (!o || !o->disk || o->chunk_dir < 0)
		return 0;
	if (!r->pin_hdr) {
		if (o->say) {
			snprintf(line, sizeof(line),
				 "chunk cache: not used for %s: the server "
				 "gives neither a strong ETag nor "
				 "Last-Modified",
				 r->t.label);
			o->say(line);
		}
		return 0;
	}
	identity_digest(r, true, md);
	if (memcmp(md, zero, sizeof(zero)) == 0)
		return 0;
	rc = wsnap_pieces_new(o->chunk_dir, md, r->base.size,
			      o->cache_bytes ? o->cache_bytes
					     : WSNAP_REMOTE_DISK_DEFAULT,
			      o->say, &r->pieces);
	if (rc == 0)
		wsnap_chunks_set_store(r->chunks, r->pieces);
	return rc == -ENOMEM ? rc : 0;
}

int wsnap_remote_copy(struct wsnap_source *src, int fd,
		      char msg[WSNAP_REMOTE_MSG_MAX])
{
	struct remote *r = (struct remote *)src;
	uint64_t pos = 0;
	unsigned a = 0;

	while (pos < r->base.size) {
		struct xfer x = {.first = pos,
				 .len = r->base.size - pos,
				 .ranged = true,
				 .object_size = r->base.size,
				 .etag = r->etag[0] ? r->etag : NULL,
				 .fd = fd,
				 .cap = r->base.size - pos};
		enum outcome o;

		o = request(r, &r->t, NULL, false, 0, &x, msg);
		pos += x.got;
		if (o == O_DONE)
			break;
		if (o == O_CHANGED)
			atomic_store(&r->changed, true);
		if (x.write_errno) {
			say(msg, "%s: %s", r->t.label, strerror(x.write_errno));
			return -x.write_errno;
		}
		if (o != O_RETRY)
			return outcome_errno(o);
		/* a try that moved on is not held against the next ones */
		a = x.got >= WSNAP_CHUNK ? 0 : a + 1;
		if (a >= WSNAP_REMOTE_TRIES)
			return -EIO; /* msg says the last failure */
		if (a)
			backoff(a - 1);
	}
	return 0;
}

/* path + suffix for the object beside url (malloc'd). */
static char *beside(const char *url, const char *suffix)
{
	char *path = NULL, *full = NULL, *out = NULL, *np = NULL;
	CURLU *u = curl_url();

	if (u && curl_url_set(u, CURLUPART_URL, url, 0) == CURLUE_OK &&
	    curl_url_get(u, CURLUPART_PATH, &path, 0) == CURLUE_OK &&
	    asprintf(&np, "%s%s", path, suffix) >= 0 &&
	    curl_url_set(u, CURLUPART_PATH, np, 0) == CURLUE_OK &&
	    curl_url_get(u, CURLUPART_URL, &full, 0) == CURLUE_OK)
		out = strdup(full);
	free(np);
	curl_free(path);
	curl_free(full);
	curl_url_cleanup(u);
	return out;
}

static int tmpfile_fd(void)
{
	const char *dir = env("TMPDIR");
	int fd = open(dir ? dir : "/tmp", O_TMPFILE | O_RDWR | O_CLOEXEC, 0600);

	return fd < 0 ? -errno : fd;
}

int wsnap_remote_fetch(struct wsnap_source *src, const char *url,
		       const struct wsnap_remote_opts *o, const char *suffix,
		       uint64_t max, char msg[WSNAP_REMOTE_MSG_MAX])
{
	struct remote *r = src ? (struct remote *)src : NULL;
	struct target own, *t = &own;
	char *where = NULL, *label = NULL;
	enum outcome oc = O_RETRY;
	struct xfer x;
	unsigned a;
	int fd, rc;

	msg[0] = '\0';
	if (r) {
		t = &r->t;
		where = beside(t->url, suffix ? suffix : "");
		if (!where || asprintf(&label, "%s%s", t->label,
				       suffix ? suffix : "") < 0) {
			free(where);
			return -ENOMEM;
		}
	} else {
		rc = target_init(&own, url, o, msg);
		if (rc) {
			target_release(&own);
			return rc;
		}
	}
	fd = tmpfile_fd();
	if (fd < 0) {
		say(msg, "cannot create a temporary file: %s", strerror(-fd));
		goto fail;
	}
	for (a = 0; a < WSNAP_REMOTE_TRIES && oc == O_RETRY; a++) {
		struct target tl = *t;

		memset(&x, 0, sizeof(x));
		x.fd = fd;
		x.cap = max;
		if (a)
			backoff(a - 1);
		if (ftruncate(fd, 0) != 0 || lseek(fd, 0, SEEK_SET) != 0) {
			say(msg, "cannot write a temporary file: %s",
			    strerror(errno));
			goto fail;
		}
		if (label)
			tl.label = label;
		/* the sidecar is another object: not pinned to the archive */
		oc = request(NULL, &tl, where, false, 0, &x, msg);
		if (r) {
			atomic_fetch_add(&r->requests, 1);
			atomic_fetch_add(&r->bytes, x.got);
		}
	}
	if (oc != O_DONE) {
		rc = oc == O_FAIL ? status_errno(x.status) : outcome_errno(oc);
		goto out;
	}
	if (lseek(fd, 0, SEEK_SET) != 0) {
		rc = -errno;
		goto out;
	}
	free(where);
	free(label);
	if (!r)
		target_release(&own);
	return fd;
fail:
	rc = -EIO;
out:
	if (fd >= 0)
		close(fd);
	free(where);
	free(label);
	if (!r)
		target_release(&own);
	return rc;
}
