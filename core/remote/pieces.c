/* SPDX-License-Identifier: MIT */
/*
 * The on-disk chunk cache (pieces.h).
 *
 * The header of a piece, little-endian:
 *   0  magic "WSNAPPCE"      48  offset (u64)
 *   8  format version (u32)  56  length (u64)
 *  12  header bytes (u32)    64  XXH3-64 of the bytes
 *  16  key (32 bytes)        72  XXH3-64 of bytes 0..71 of the header
 *
 * The list of known pieces is sorted by offset; pieces may overlap (two
 * processes may store different extents), so a lookup looks a few back.
 */
#include "pieces.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/types.h>
#include <time.h>
#include <unistd.h>
#include <xxhash.h>

#include "fsutil.h"
#include "grow.h"
#include "hash.h"

#define MAGIC	    "WSNAPPCE"
#define VERSION	    1u
#define TMP_PREFIX  ".tmp-"
#define TMP_MAX_AGE 3600       /* seconds */
#define LOOK_BACK   4	       /* overlapping pieces looked at before off */
#define SAY_MAX	    8	       /* lines of -v at most */
#define SCAN_MAX    (1u << 20) /* pieces measured at most (64 MiB) */

#define KEY_HEX	     (2 * WSNAP_PIECE_KEY)
#define DIR_MODE_BAD (S_IWGRP | S_IWOTH)

struct known {
	uint64_t off, len;
};

struct wsnap_pieces {
	pthread_mutex_t lock;
	int root; /* chunks/ */
	int dir;  /* chunks/KEY, -1 until there */
	bool listed, dir_bad, pruning, measured;
	unsigned char key[WSNAP_PIECE_KEY];
	char keyhex[KEY_HEX + 1];
	uint64_t size, max_bytes;
	struct known *k;
	size_t n, cap;
	uint64_t total;	  /* bytes of all pieces, as last measured + since */
	uint64_t written; /* bytes written since last measured */
	uint64_t during;  /* bytes written while a measure runs */
	unsigned said;
	void (*say)(const char *line);
	atomic_uint_fast64_t hits, puts;
	/* the writer: pieces queued by put, written by one thread while
	 * there are any (writer), joined by the next put or by free */
	pthread_cond_t idle; /* the writer ended */
	struct queued *qhead, **qtail;
	uint64_t queued; /* bytes in the queue */
	bool writer, joinable, stop;
	pthread_t thread;
	atomic_int pid; /* the process p was made or last reset in */
};

/* A piece waiting for the writer. */
struct queued {
	struct queued *next;
	uint64_t off;
	size_t len;
	char data[];
};

static void put64(unsigned char *p, uint64_t v)
{
	int i;

	for (i = 0; i < 8; i++)
		p[i] = (unsigned char)(v >> (8 * i));
}

static uint64_t get64(const unsigned char *p)
{
	uint64_t v = 0;
	int i;

	for (i = 7; i >= 0; i--)
		v = v << 8 | p[i];
	return v;
}

void wsnap_piece_header(unsigned char hdr[WSNAP_PIECE_HDR],
			const unsigned char key[WSNAP_PIECE_KEY], uint64_t off,
			const void *data, size_t len)
{
	memcpy(hdr, MAGIC, 8);
	put64(hdr + 8, (uint64_t)WSNAP_PIECE_HDR << 32 | VERSION);
	memcpy(hdr + 16, key, WSNAP_PIECE_KEY);
	put64(hdr + 48, off);
	put64(hdr + 56, len);
	put64(hdr + 64, XXH3_64bits(data, len));
	put64(hdr + 72, XXH3_64bits(hdr, 72));
}

int wsnap_piece_verify(const unsigned char *hdr,
		       const unsigned char key[WSNAP_PIECE_KEY], uint64_t off,
		       uint64_t len, const void *data, size_t dlen)
{
	if (memcmp(hdr, MAGIC, 8) != 0 ||
	    get64(hdr + 8) != ((uint64_t)WSNAP_PIECE_HDR << 32 | VERSION))
		return -EINVAL;
	if (get64(hdr + 72) != XXH3_64bits(hdr, 72))
		return -EBADMSG;
	if (memcmp(hdr + 16, key, WSNAP_PIECE_KEY) != 0 ||
	    get64(hdr + 48) != off || get64(hdr + 56) != len ||
	    len > WSNAP_PIECE_MAX || dlen != len)
		return -EINVAL;
	if (get64(hdr + 64) != XXH3_64bits(data, dlen))
		return -EBADMSG;
	return 0;
}

void wsnap_piece_name(uint64_t off, uint64_t len,
		      char name[WSNAP_PIECE_NAME_LEN + 1])
{
	snprintf(name, WSNAP_PIECE_NAME_LEN + 1, "%016" PRIx64 "-%016" PRIx64,
		 off, len);
}

/* 16 lowercase hex digits at s into *v. */
static bool hex16(const char *s, uint64_t *v)
{
	int i;

	*v = 0;
	for (i = 0; i < 16; i++) {
		char c = s[i];
		unsigned d;

		if (c >= '0' && c <= '9')
			d = (unsigned)(c - '0');
		else if (c >= 'a' && c <= 'f')
			d = (unsigned)(c - 'a' + 10);
		else
			return false;
		*v = *v << 4 | d;
	}
	return true;
}

bool wsnap_piece_name_parse(const char *name, uint64_t *off, uint64_t *len)
{
	if (strnlen(name, WSNAP_PIECE_NAME_LEN + 1) != WSNAP_PIECE_NAME_LEN ||
	    name[16] != '-' || !hex16(name, off) || !hex16(name + 17, len))
		return false;
	return *len > 0 && *len <= WSNAP_PIECE_MAX && *off <= UINT64_MAX - *len;
}

/* ---- the list of known pieces (lock held) ------------------------------- */

/* The index of the first known piece with offset > off. */
static size_t upper(const struct wsnap_pieces *p, uint64_t off)
{
	size_t lo = 0, hi = p->n;

	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;

		if (p->k[mid].off <= off)
			lo = mid + 1;
		else
			hi = mid;
	}
	return lo;
}

static void know(struct wsnap_pieces *p, uint64_t off, uint64_t len)
{
	size_t i = upper(p, off), j;
	struct known *nk;

	for (j = i; j > 0 && p->k[j - 1].off == off; j--)
		if (p->k[j - 1].len == len)
			return;
	if (p->n >= WSNAP_PIECES_KNOWN_MAX)
		return;
	nk = wsnap_grow(p->k, &p->cap, p->n + 1, sizeof(*p->k));
	if (!nk)
		return;
	p->k = nk;
	memmove(&p->k[i + 1], &p->k[i], (p->n - i) * sizeof(*p->k));
	p->k[i].off = off;
	p->k[i].len = len;
	p->n++;
}

static void forget(struct wsnap_pieces *p, uint64_t off, uint64_t len)
{
	size_t i;

	for (i = upper(p, off); i > 0 && p->k[i - 1].off == off; i--)
		if (p->k[i - 1].len == len) {
			memmove(&p->k[i - 1], &p->k[i],
				(p->n - i) * sizeof(*p->k));
			p->n--;
			return;
		}
}

static int known_cmp(const void *a, const void *b)
{
	const struct known *x = a, *y = b;

	if (x->off != y->off)
		return x->off < y->off ? -1 : 1;
	return x->len < y->len ? -1 : x->len > y->len;
}

/* A line for -v, at most SAY_MAX in all (lock held). */
static void say(struct wsnap_pieces *p, const char *what, int e)
{
	char line[256];

	if (!p->say || p->said >= SAY_MAX)
		return;
	p->said++;
	snprintf(line, sizeof(line), "chunk cache: %s%s%s", what, e ? ": " : "",
		 e ? strerror(e) : "");
	p->say(line);
}

/* Whether the open directory fd may hold pieces: ours, not writable by
 * group or others. */
static bool dir_ok(int fd)
{
	struct stat sb;

	return fstat(fd, &sb) == 0 && S_ISDIR(sb.st_mode) &&
	       sb.st_uid == geteuid() && !(sb.st_mode & DIR_MODE_BAD);
}

/* Opens chunks/KEY (made when create and missing) and lists it the first
 * time (lock held). */
static void open_dir(struct wsnap_pieces *p, bool create)
{
	const int flags = O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC;
	struct dirent *de;
	DIR *d;
	int fd;

	if (p->dir >= 0 || p->dir_bad)
		return;
	fd = openat(p->root, p->keyhex, flags);
	if (fd < 0 && errno == ENOENT) {
		if (!create)
			return;
		if (mkdirat(p->root, p->keyhex, 0700) != 0 && errno != EEXIST) {
			say(p, "cannot make a directory for the object", errno);
			p->dir_bad = true;
			return;
		}
		fd = openat(p->root, p->keyhex, flags);
	}
	if (fd < 0 || !dir_ok(fd)) {
		say(p,
		    "the object's directory is not used (not a directory "
		    "of ours, or writable by others)",
		    0);
		if (fd >= 0)
			close(fd);
		p->dir_bad = true;
		return;
	}
	p->dir = fd;
	fd = openat(p->dir, ".", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	d = fd >= 0 ? fdopendir(fd) : NULL;
	if (!d) {
		if (fd >= 0)
			close(fd);
		return;
	}
	while ((de = readdir(d)) && p->n < WSNAP_PIECES_KNOWN_MAX) {
		struct known *nk;
		uint64_t off, len;

		if (!wsnap_piece_name_parse(de->d_name, &off, &len) ||
		    off + len > p->size)
			continue;
		nk = wsnap_grow(p->k, &p->cap, p->n + 1, sizeof(*p->k));
		if (!nk)
			break;
		p->k = nk;
		p->k[p->n].off = off;
		p->k[p->n].len = len;
		p->n++;
	}
	closedir(d);
	if (p->n)
		qsort(p->k, p->n, sizeof(*p->k), known_cmp);
	p->listed = true;
}

/* ---- reading ------------------------------------------------------------ */

static pthread_mutex_t fork_lock = PTHREAD_MUTEX_INITIALIZER;

/*
 * Called before p's lock is taken: in a forked child, a fresh start. The
 * parent's writer is not here (what it had queued is left to it) and its
 * lock and condition may have been in use at the fork: made again. The
 * first thread of the child to get here does it, the others wait for it
 * (fork_lock is never held in a parent: only this slow path takes it).
 */
static void check_fork(struct wsnap_pieces *p)
{
	pid_t me = getpid();
	struct queued *q, *next;

	if (atomic_load(&p->pid) == me)
		return;
	pthread_mutex_lock(&fork_lock);
	if (atomic_load(&p->pid) != me) {
		pthread_mutex_init(&p->lock, NULL);
		pthread_cond_init(&p->idle, NULL);
		for (q = p->qhead; q; q = next) {
			next = q->next;
			free(q);
		}
		p->qhead = NULL;
		p->qtail = &p->qhead;
		p->queued = 0;
		p->writer = p->joinable = p->pruning = false;
		atomic_store(&p->pid, me);
	}
	pthread_mutex_unlock(&fork_lock);
}

/*
 * Reads and checks the piece [po, po + pl) into a buffer: dst when the
 * piece fits there, else a new one (*bounce, the caller frees it). Returns
 * the bytes, or NULL (a bad or missing piece; *gone when it is not there
 * at all).
 */
static const char *read_piece(struct wsnap_pieces *p, int dir, uint64_t po,
			      uint64_t pl, char *dst, bool fits, char **bounce,
			      bool *gone)
{
	char name[WSNAP_PIECE_NAME_LEN + 1];
	unsigned char hdr[WSNAP_PIECE_HDR];
	char *buf = dst;
	struct stat sb;
	size_t got;
	int fd;

	*bounce = NULL;
	*gone = false;
	wsnap_piece_name(po, pl, name);
	/* O_NONBLOCK: a FIFO put there must not hang the open */
	fd = openat(dir, name, O_RDONLY | O_NOFOLLOW | O_CLOEXEC | O_NONBLOCK);
	if (fd < 0) {
		*gone = errno == ENOENT;
		return NULL;
	}
	if (fstat(fd, &sb) != 0 || !S_ISREG(sb.st_mode) ||
	    sb.st_uid != geteuid() ||
	    (uint64_t)sb.st_size != WSNAP_PIECE_HDR + pl)
		goto bad;
	if (!fits && !(buf = *bounce = malloc((size_t)pl)))
		goto bad;
	if (wsnap_pread_full(fd, hdr, sizeof(hdr), 0, &got) != 0 ||
	    got != sizeof(hdr) ||
	    wsnap_pread_full(fd, buf, (size_t)pl, WSNAP_PIECE_HDR, &got) != 0 ||
	    got != pl || wsnap_piece_verify(hdr, p->key, po, pl, buf, got) != 0)
		goto bad;
	futimens(fd, NULL); /* used: pruned last */
	close(fd);
	return buf;
bad:
	close(fd);
	free(*bounce);
	*bounce = NULL;
	return NULL;
}

size_t wsnap_pieces_get(struct wsnap_pieces *p, void *buf, uint64_t off,
			size_t len, uint64_t *next)
{
	check_fork(p);
	for (;;) {
		uint64_t po = 0, pl = 0, n;
		size_t i, j;
		bool found = false, gone;
		char *bounce;
		const char *src;
		int dir;

		pthread_mutex_lock(&p->lock);
		open_dir(p, false);
		i = upper(p, off);
		*next = i < p->n ? p->k[i].off : UINT64_MAX;
		for (j = i; j > 0 && i - j < LOOK_BACK; j--)
			if (off < p->k[j - 1].off + p->k[j - 1].len) {
				po = p->k[j - 1].off;
				pl = p->k[j - 1].len;
				found = true;
				break;
			}
		dir = p->dir;
		pthread_mutex_unlock(&p->lock);
		if (!found || dir < 0)
			return 0;
		n = po + pl - off < len ? po + pl - off : len;
		src = read_piece(p, dir, po, pl, buf, po == off && pl <= len,
				 &bounce, &gone);
		if (src) {
			if (src != buf)
				memcpy(buf, src + (off - po), (size_t)n);
			free(bounce);
			atomic_fetch_add(&p->hits, n);
			return (size_t)n;
		}
		/* not served: forgotten (and removed when bad), then the
		 * lookup again without it */
		pthread_mutex_lock(&p->lock);
		forget(p, po, pl);
		if (!gone) {
			char name[WSNAP_PIECE_NAME_LEN + 1];

			wsnap_piece_name(po, pl, name);
			unlinkat(dir, name, 0);
			say(p, "a bad piece was removed (not served)", 0);
		}
		pthread_mutex_unlock(&p->lock);
	}
}

/* ---- the bound ------------------------------------------------------------
 */

struct measured {
	uint32_t dir; /* index into the object directories' names */
	char name[WSNAP_PIECE_NAME_LEN + 1];
	uint64_t bytes;
	struct timespec mtime;
};

static int age_cmp(const void *a, const void *b)
{
	const struct measured *x = a, *y = b;

	if (x->mtime.tv_sec != y->mtime.tv_sec)
		return x->mtime.tv_sec < y->mtime.tv_sec ? -1 : 1;
	if (x->mtime.tv_nsec != y->mtime.tv_nsec)
		return x->mtime.tv_nsec < y->mtime.tv_nsec ? -1 : 1;
	return 0;
}

static int dir_cmp(const void *a, const void *b)
{
	const struct measured *x = a, *y = b;

	return x->dir < y->dir ? -1 : x->dir > y->dir;
}

static bool is_key_name(const char *s)
{
	size_t i;

	for (i = 0; i < KEY_HEX; i++)
		if (!((s[i] >= '0' && s[i] <= '9') ||
		      (s[i] >= 'a' && s[i] <= 'f')))
			return false;
	return s[KEY_HEX] == '\0';
}

/* Measures one object directory into *m, *total; removes old temporary
 * files. */
static void measure_dir(int dfd, uint32_t di, struct measured **m, size_t *n,
			size_t *cap, uint64_t *total)
{
	time_t now = time(NULL);
	struct dirent *de;
	int fd = openat(dfd, ".", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	DIR *d = fd >= 0 ? fdopendir(fd) : NULL;

	if (!d) {
		if (fd >= 0)
			close(fd);
		return;
	}
	while ((de = readdir(d)) && *n < SCAN_MAX) {
		struct measured *nm;
		uint64_t off, len;
		struct stat sb;

		if (fstatat(dfd, de->d_name, &sb, AT_SYMLINK_NOFOLLOW) != 0 ||
		    !S_ISREG(sb.st_mode))
			continue;
		if (strncmp(de->d_name, TMP_PREFIX, sizeof(TMP_PREFIX) - 1) ==
		    0) {
			if (now - sb.st_mtim.tv_sec >= TMP_MAX_AGE)
				unlinkat(dfd, de->d_name, 0);
			continue;
		}
		if (!wsnap_piece_name_parse(de->d_name, &off, &len))
			continue;
		*total += (uint64_t)sb.st_size;
		nm = wsnap_grow(*m, cap, *n + 1, sizeof(**m));
		if (!nm)
			break;
		*m = nm;
		nm = &(*m)[(*n)++];
		nm->dir = di;
		memcpy(nm->name, de->d_name, sizeof(nm->name));
		nm->bytes = (uint64_t)sb.st_size;
		nm->mtime = sb.st_mtim;
	}
	closedir(d);
}

/*
 * Measures every object's pieces under chunks/ and, when they take more
 * than the bound, removes the least recently used down to 7/8 of it.
 * Runs without the lock (one thread at a time: p->pruning).
 */
static void prune(struct wsnap_pieces *p)
{
	const int flags = O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC;
	char(*dirs)[KEY_HEX + 1] = NULL;
	struct measured *m = NULL;
	size_t n = 0, cap = 0, ndirs = 0, dcap = 0, i, cut;
	uint64_t total = 0, goal = p->max_bytes / 8 * 7;
	struct dirent *de;
	int fd = openat(p->root, ".", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	DIR *d = fd >= 0 ? fdopendir(fd) : NULL;

	if (!d) {
		if (fd >= 0)
			close(fd);
		return;
	}
	while ((de = readdir(d)) && ndirs < UINT32_MAX) {
		char(*nd)[KEY_HEX + 1];
		int dfd;

		if (!is_key_name(de->d_name))
			continue;
		dfd = openat(p->root, de->d_name, flags);
		if (dfd < 0)
			continue;
		nd = wsnap_grow(dirs, &dcap, ndirs + 1, sizeof(*dirs));
		if (nd) {
			dirs = nd;
			memcpy(dirs[ndirs], de->d_name, KEY_HEX + 1);
			measure_dir(dfd, (uint32_t)ndirs, &m, &n, &cap, &total);
			ndirs++;
		}
		close(dfd);
	}
	closedir(d);
	/* the oldest first, until what stays is within the goal */
	cut = 0;
	if (total > p->max_bytes) {
		qsort(m, n, sizeof(*m), age_cmp);
		while (cut < n && total > goal)
			total -= m[cut++].bytes;
		qsort(m, cut, sizeof(*m), dir_cmp);
	}
	for (i = 0; i < cut;) {
		uint32_t di = m[i].dir;
		bool mine = strcmp(dirs[di], p->keyhex) == 0;
		int dfd = openat(p->root, dirs[di], flags);

		for (; i < cut && m[i].dir == di; i++) {
			uint64_t off, len;

			if (dfd < 0 || unlinkat(dfd, m[i].name, 0) != 0)
				continue;
			if (mine &&
			    wsnap_piece_name_parse(m[i].name, &off, &len)) {
				pthread_mutex_lock(&p->lock);
				forget(p, off, len);
				pthread_mutex_unlock(&p->lock);
			}
		}
		if (dfd >= 0)
			close(dfd);
	}
	free(m);
	free(dirs);
	pthread_mutex_lock(&p->lock);
	/* what was written while it ran may or may not be in total: counted
	 * once more, so that the bound errs on the safe side */
	p->total = total + p->during;
	p->during = 0;
	p->measured = true;
	pthread_mutex_unlock(&p->lock);
}

/* ---- writing ------------------------------------------------------------ */

/* A new temporary file in dir; its name into tmp. */
static int tmp_open(int dir, char tmp[sizeof(TMP_PREFIX) + 16])
{
	struct wsnap_hash_key k;
	int fd, tries;

	for (tries = 0; tries < 16; tries++) {
		wsnap_hash_key_init(&k);
		snprintf(tmp, sizeof(TMP_PREFIX) + 16, TMP_PREFIX "%016" PRIx64,
			 k.k0 ^ k.k1);
		fd = openat(dir, tmp,
			    O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW |
				    O_CLOEXEC,
			    0600);
		if (fd >= 0 || errno != EEXIST)
			return fd;
	}
	errno = EEXIST;
	return -1;
}

/* Writes the piece (the writer's thread, or the caller's at free), then
 * keeps the bound. */
static void write_piece(struct wsnap_pieces *p, uint64_t off, const void *data,
			size_t len)
{
	char name[WSNAP_PIECE_NAME_LEN + 1], tmp[sizeof(TMP_PREFIX) + 16];
	unsigned char hdr[WSNAP_PIECE_HDR];
	bool there = false, need, mine;
	unsigned rounds = 0;
	size_t i;
	int dir, fd, e = 0;

	if (len == 0 || len > WSNAP_PIECE_MAX || off > p->size ||
	    len > p->size - off || p->max_bytes < WSNAP_PIECE_HDR + len)
		return;
	pthread_mutex_lock(&p->lock);
	open_dir(p, true);
	for (i = upper(p, off); i > 0 && p->k[i - 1].off == off; i--)
		there = there || p->k[i - 1].len == len;
	dir = p->dir;
	pthread_mutex_unlock(&p->lock);
	if (dir < 0 || there)
		return;
	wsnap_piece_header(hdr, p->key, off, data, len);
	wsnap_piece_name(off, len, name);
	fd = tmp_open(dir, tmp);
	if (fd < 0) {
		e = errno;
		goto failed;
	}
	e = wsnap_write_full(fd, hdr, sizeof(hdr));
	if (!e)
		e = wsnap_write_full(fd, data, len);
	if (close(fd) != 0 && !e)
		e = errno;
	if (!e && renameat(dir, tmp, dir, name) != 0)
		e = errno;
	if (e) {
		unlinkat(dir, tmp, 0);
		goto failed;
	}
	atomic_fetch_add(&p->puts, len);
	pthread_mutex_lock(&p->lock);
	know(p, off, len);
	p->total += WSNAP_PIECE_HDR + len;
	p->written += WSNAP_PIECE_HDR + len;
	if (p->pruning)
		p->during += WSNAP_PIECE_HDR + len;
	need = !p->pruning && (!p->measured || p->total > p->max_bytes ||
			       p->written >= p->max_bytes / 8);
	mine = need;
	if (need)
		p->pruning = true;
	/* until what others wrote while it ran is within the bound too */
	while (need) {
		p->written = 0;
		pthread_mutex_unlock(&p->lock);
		prune(p);
		pthread_mutex_lock(&p->lock);
		need = p->total > p->max_bytes && rounds++ < 2;
	}
	if (mine)
		p->pruning = false;
	pthread_mutex_unlock(&p->lock);
	return;
failed:
	pthread_mutex_lock(&p->lock);
	say(p, "cannot write a piece (reads go on without it)", e);
	pthread_mutex_unlock(&p->lock);
}

/*
 * The writer: writes what is queued until the queue is empty, then ends
 * (nothing waits idle, so that a fork finds no thread of p in the middle
 * of a wait).
 */
static void *writer_main(void *arg)
{
	struct wsnap_pieces *p = arg;
	struct queued *q;

	pthread_mutex_lock(&p->lock);
	while ((q = p->qhead) != NULL) {
		p->qhead = q->next;
		if (!p->qhead)
			p->qtail = &p->qhead;
		pthread_mutex_unlock(&p->lock);
		write_piece(p, q->off, q->data, q->len);
		pthread_mutex_lock(&p->lock);
		p->queued -= q->len;
		free(q);
	}
	p->writer = false;
	pthread_cond_broadcast(&p->idle);
	pthread_mutex_unlock(&p->lock);
	return NULL;
}

void wsnap_pieces_put(struct wsnap_pieces *p, uint64_t off, const void *data,
		      size_t len)
{
	struct queued *q;

	if (len == 0 || len > WSNAP_PIECE_MAX || off > p->size ||
	    len > p->size - off || p->max_bytes < WSNAP_PIECE_HDR + len)
		return;
	q = malloc(sizeof(*q) + len);
	if (!q)
		return;
	q->next = NULL;
	q->off = off;
	q->len = len;
	memcpy(q->data, data, len);
	check_fork(p);
	pthread_mutex_lock(&p->lock);
	if (!p->stop && !p->writer) {
		/* the last writer has set writer false under the lock: all
		 * it has left to do is return */
		if (p->joinable)
			pthread_join(p->thread, NULL);
		p->joinable = p->writer =
			pthread_create(&p->thread, NULL, writer_main, p) == 0;
	}
	/* the cache is an optimisation: what does not fit is not kept */
	if (p->stop || !p->writer || p->queued + len > WSNAP_PIECES_QUEUE) {
		pthread_mutex_unlock(&p->lock);
		free(q);
		return;
	}
	*p->qtail = q;
	p->qtail = &q->next;
	p->queued += len;
	pthread_mutex_unlock(&p->lock);
}

void wsnap_pieces_flush(struct wsnap_pieces *p)
{
	check_fork(p);
	pthread_mutex_lock(&p->lock);
	while (p->writer)
		pthread_cond_wait(&p->idle, &p->lock);
	pthread_mutex_unlock(&p->lock);
}

void wsnap_pieces_drop(struct wsnap_pieces *p, uint64_t off, uint64_t len)
{
	char name[WSNAP_PIECE_NAME_LEN + 1];
	size_t i;

	check_fork(p);
	pthread_mutex_lock(&p->lock);
	open_dir(p, false);
	for (i = 0; p->dir >= 0 && i < p->n;) {
		struct known k = p->k[i];

		if (k.off < off + len && off < k.off + k.len) {
			wsnap_piece_name(k.off, k.len, name);
			unlinkat(p->dir, name, 0);
			memmove(&p->k[i], &p->k[i + 1],
				(p->n - i - 1) * sizeof(*p->k));
			p->n--;
		} else {
			i++;
		}
	}
	pthread_mutex_unlock(&p->lock);
}

void wsnap_pieces_stats(struct wsnap_pieces *p, uint64_t *hit_bytes,
			uint64_t *put_bytes)
{
	*hit_bytes = atomic_load(&p->hits);
	*put_bytes = atomic_load(&p->puts);
}

int wsnap_pieces_new(int dirfd, const unsigned char key[WSNAP_PIECE_KEY],
		     uint64_t size, uint64_t max_bytes,
		     void (*say_fn)(const char *line),
		     struct wsnap_pieces **out)
{
	struct wsnap_pieces *p = calloc(1, sizeof(*p));
	int i;

	*out = NULL;
	if (!p)
		return -ENOMEM;
	p->root = fcntl(dirfd, F_DUPFD_CLOEXEC, 0);
	if (p->root < 0) {
		int e = errno;

		free(p);
		return -e;
	}
	if (pthread_mutex_init(&p->lock, NULL) != 0) {
		close(p->root);
		free(p);
		return -ENOMEM;
	}
	pthread_cond_init(&p->idle, NULL);
	p->qtail = &p->qhead;
	atomic_init(&p->pid, getpid());
	p->dir = -1;
	memcpy(p->key, key, WSNAP_PIECE_KEY);
	for (i = 0; i < WSNAP_PIECE_KEY; i++)
		snprintf(p->keyhex + 2 * i, 3, "%02x", key[i]);
	p->size = size;
	p->max_bytes = max_bytes;
	p->say = say_fn;
	*out = p;
	return 0;
}

void wsnap_pieces_free(struct wsnap_pieces *p)
{
	if (!p)
		return;
	/* what is queued is written before the writer ends */
	check_fork(p);
	pthread_mutex_lock(&p->lock);
	p->stop = true;
	while (p->writer)
		pthread_cond_wait(&p->idle, &p->lock);
	if (p->joinable)
		pthread_join(p->thread, NULL);
	p->joinable = false;
	pthread_mutex_unlock(&p->lock);
	/* what another process wrote since is seen now: the bound holds
	 * once the last of them has ended */
	if (p->written && !p->pruning)
		prune(p);
	if (p->dir >= 0)
		close(p->dir);
	close(p->root);
	pthread_cond_destroy(&p->idle);
	pthread_mutex_destroy(&p->lock);
	free(p->k);
	free(p);
}
