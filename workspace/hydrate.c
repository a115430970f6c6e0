/*
 * Hydrated workspaces: state, overlay mounts, teardown (hydrate.h).
 *
 * Which overlay: the kernel's overlayfs where this process may mount it
 * (root, CAP_SYS_ADMIN), fuse-overlayfs otherwise. The kernel overlay is
 * mounted with
 *	redirect_dir=on   renaming a directory of the snapshot is one rename
 *			  (recorded as a redirect xattr in the upper
 *			  directory), not EXDEV and a copy of its tree;
 *	index=off	  hard links are not tracked across layers: the
 *			  snapshot's inodes (FUSE) have no stable handles to
 *			  index by;
 *	metacopy=off	  a copied-up file holds its data in the upper
 *			  directory, so that the upper directory alone tells
 *			  what changed and pack/diff read plain files.
 * These are written out rather than left to the module's defaults, which
 * differ between kernels.
 */
#include "hydrate.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "hash.h"
#include "mounts.h"

#define STATE_FILE	"state"
#define STATE_TMP	"state.tmp"
#define STATE_MAGIC	"wsnap-hydrate 1"
#define STATE_MAX_BYTES (256u << 10)

/* mount(2) takes its options in one page. */
#define OVERLAY_OPTS_MAX   4096
#define OVERLAY_FIXED_OPTS "redirect_dir=on,index=off,metacopy=off"

/* How long the snapshot may stay busy after fuse-overlayfs was unmounted
 * (its process leaving): LOWER_RETRIES times LOWER_RETRY_NS. */
#define LOWER_RETRIES  100
#define LOWER_RETRY_NS 50000000L

/* Deepest directory tree removal descends into. */
#define REMOVE_MAX_DEPTH 4096

static const char *const kind_names[] = {
	[WSNAP_OVERLAY_AUTO] = "auto",
	[WSNAP_OVERLAY_KERNEL] = "kernel",
	[WSNAP_OVERLAY_FUSE] = "fuse",
};

/* The mount types the two kinds show in mountinfo. */
static const char *overlay_fstype(enum wsnap_overlay kind)
{
	return kind == WSNAP_OVERLAY_KERNEL ? "overlay" : "fuse.fuse-overlayfs";
}

void wsnap_hydrate_state_release(struct wsnap_hydrate_state *st)
{
	free(st->workspace);
	free(st->dir);
	free(st->archive);
	free(st->lower);
	free(st->upper);
	free(st->work);
	memset(st, 0, sizeof(*st));
}

char *wsnap_hydrate_state_dir(const char *workspace)
{
	const char *slash = strrchr(workspace, '/');
	size_t plen, nlen;
	char *out;

	if (!slash || !slash[1])
		return NULL;
	plen = (size_t)(slash - workspace);
	nlen = strlen(slash + 1);
	out = malloc(plen + nlen + sizeof("/..wsnap"));
	if (!out)
		return NULL;
	memcpy(out, workspace, plen);
	out[plen] = '/';
	out[plen + 1] = '.';
	memcpy(out + plen + 2, slash + 1, nlen);
	memcpy(out + plen + 2 + nlen, ".wsnap", sizeof(".wsnap"));
	return out;
}

/* ---- the state file ---- */

static bool plain_byte(unsigned char c)
{
	return c > ' ' && c < 0x7f && c != '%';
}

static void put_encoded(FILE *f, const char *key, const char *s)
{
	const unsigned char *p = (const unsigned char *)s;

	fputs(key, f);
	fputc(' ', f);
	for (; *p; p++) {
		if (plain_byte(*p))
			fputc(*p, f);
		else
			fprintf(f, "%%%02X", *p);
	}
	fputc('\n', f);
}

static int hexval(char c)
{
	if (c >= '0' && c <= '9')
		return c - '0';
	if (c >= 'A' && c <= 'F')
		return c - 'A' + 10;
	if (c >= 'a' && c <= 'f')
		return c - 'a' + 10;
	return -1;
}

/* Decodes a percent-encoded value (len bytes) into a malloc'd string;
 * NULL when it is malformed, holds a NUL, or memory runs out. */
static char *decode(const char *s, size_t len)
{
	char *out = malloc(len + 1);
	size_t i, n = 0;

	if (!out)
		return NULL;
	for (i = 0; i < len; i++) {
		if (s[i] != '%') {
			out[n++] = s[i];
			continue;
		}
		if (i + 2 >= len)
			goto bad;
		if (hexval(s[i + 1]) < 0 || hexval(s[i + 2]) < 0)
			goto bad;
		out[n] = (char)(hexval(s[i + 1]) * 16 + hexval(s[i + 2]));
		if (!out[n])
			goto bad;
		n++;
		i += 2;
	}
	out[n] = '\0';
	return out;
bad:
	free(out);
	return NULL;
}

enum wsnap_status wsnap_hydrate_state_save(const struct wsnap_hydrate_state *st,
					   struct wsnap_error *err)
{
	const struct wsnap_hydrate_archive_id *a = &st->arc;
	char *tmp = NULL, *path = NULL;
	enum wsnap_status status = WSNAP_OK;
	FILE *f = NULL;
	int fd;

	tmp = wsnap_path_join(st->dir, STATE_TMP);
	path = wsnap_path_join(st->dir, STATE_FILE);
	if (!tmp || !path) {
		status = wsnap_error_io(err, ENOMEM, st->dir, "out of memory");
		goto out;
	}
	fd = open(tmp, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC | O_NOFOLLOW,
		  0600);
	if (fd < 0 || !(f = fdopen(fd, "w"))) {
		status = wsnap_error_io(err, errno, tmp, "cannot write");
		if (fd >= 0)
			close(fd);
		goto out;
	}
	fprintf(f, "%s\n", STATE_MAGIC);
	put_encoded(f, "workspace", st->workspace);
	put_encoded(f, "archive", st->archive);
	if (a->valid)
		fprintf(f,
			"archive-id %" PRIu64 " %" PRIu64 " %" PRIu64
			" %" PRId64 " %" PRId64 " %" PRId64 " %" PRId64 "\n",
			a->dev, a->ino, a->size, a->mtime_sec, a->mtime_nsec,
			a->ctime_sec, a->ctime_nsec);
	fprintf(f, "policy %s\n", st->policy);
	fprintf(f, "overlay %s\n", kind_names[st->kind]);
	put_encoded(f, "lower", st->lower);
	put_encoded(f, "upper", st->upper);
	fprintf(f, "own-upper %d\n", st->own_upper ? 1 : 0);
	put_encoded(f, "work", st->work);
	if (fflush(f) != 0 || fsync(fileno(f)) != 0) {
		status = wsnap_error_io(err, errno, tmp, "cannot write");
		fclose(f);
		goto out;
	}
	if (fclose(f) != 0) {
		status = wsnap_error_io(err, errno, tmp, "cannot write");
		goto out;
	}
	if (rename(tmp, path) != 0)
		status = wsnap_error_io(err, errno, path, "cannot write");
out:
	if (status != WSNAP_OK && tmp)
		unlink(tmp);
	free(tmp);
	free(path);
	return status;
}

/* Reads the whole state file (at most STATE_MAX_BYTES) into a malloc'd,
 * NUL-terminated buffer. Returns 1, 0 when there is none, -1 on error. */
static int read_state_file(const char *path, char **out,
			   struct wsnap_error *err)
{
	char *buf = NULL;
	size_t len = 0;
	ssize_t n;
	int fd;

	*out = NULL;
	fd = open(path, O_RDONLY | O_CLOEXEC | O_NOFOLLOW);
	if (fd < 0) {
		if (errno == ENOENT)
			return 0;
		wsnap_error_io(err, errno, path, "cannot read");
		return -1;
	}
	buf = malloc(STATE_MAX_BYTES + 1);
	if (!buf) {
		close(fd);
		wsnap_error_io(err, ENOMEM, path, "out of memory");
		return -1;
	}
	while ((n = read(fd, buf + len, STATE_MAX_BYTES + 1 - len)) != 0) {
		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0 || len + (size_t)n > STATE_MAX_BYTES) {
			wsnap_error_io(err, n < 0 ? errno : EFBIG, path,
				       "cannot read");
			free(buf);
			close(fd);
			return -1;
		}
		len += (size_t)n;
	}
	close(fd);
	buf[len] = '\0';
	*out = buf;
	return 1;
}

static bool parse_i64(const char **p, int64_t *v)
{
	char *end;

	errno = 0;
	*v = strtoll(*p, &end, 10);
	if (errno || end == *p)
		return false;
	*p = end;
	return true;
}

static bool parse_u64(const char **p, uint64_t *v)
{
	char *end;

	if (**p == ' ')
		(*p)++;
	if (**p < '0' || **p > '9')
		return false;
	errno = 0;
	*v = strtoull(*p, &end, 10);
	if (errno || end == *p)
		return false;
	*p = end;
	return true;
}

static bool parse_archive_id(const char *s, struct wsnap_hydrate_archive_id *a)
{
	const char *p = s;

	if (!parse_u64(&p, &a->dev) || !parse_u64(&p, &a->ino) ||
	    !parse_u64(&p, &a->size) || !parse_i64(&p, &a->mtime_sec) ||
	    !parse_i64(&p, &a->mtime_nsec) || !parse_i64(&p, &a->ctime_sec) ||
	    !parse_i64(&p, &a->ctime_nsec) || *p)
		return false;
	a->valid = true;
	return true;
}

/* One 'key value' line into st; false when it makes no sense. */
static bool parse_line(struct wsnap_hydrate_state *st, char *line)
{
	char *sp = strchr(line, ' ');
	char **slot = NULL;
	const char *v;
	size_t vl;

	if (!sp)
		return false;
	*sp = '\0';
	v = sp + 1;
	vl = strlen(v);
	if (strcmp(line, "workspace") == 0)
		slot = &st->workspace;
	else if (strcmp(line, "archive") == 0)
		slot = &st->archive;
	else if (strcmp(line, "lower") == 0)
		slot = &st->lower;
	else if (strcmp(line, "upper") == 0)
		slot = &st->upper;
	else if (strcmp(line, "work") == 0)
		slot = &st->work;
	if (slot) {
		free(*slot);
		*slot = decode(v, vl);
		if (!*slot)
			return false;
		/* paths are absolute; the archive may be standard input */
		return **slot == '/' ||
		       (slot == &st->archive && strcmp(*slot, "-") == 0);
	}
	if (strcmp(line, "archive-id") == 0)
		return parse_archive_id(v, &st->arc);
	if (strcmp(line, "policy") == 0) {
		if (vl != WSNAP_HYDRATE_POLICY_ID_LEN)
			return false;
		memcpy(st->policy, v, vl + 1);
		return true;
	}
	if (strcmp(line, "overlay") == 0) {
		if (strcmp(v, "kernel") == 0)
			st->kind = WSNAP_OVERLAY_KERNEL;
		else if (strcmp(v, "fuse") == 0)
			st->kind = WSNAP_OVERLAY_FUSE;
		else
			return false;
		return true;
	}
	if (strcmp(line, "own-upper") == 0) {
		if (strcmp(v, "0") != 0 && strcmp(v, "1") != 0)
			return false;
		st->own_upper = v[0] == '1';
		return true;
	}
	return true; /* a later version's key: ignored */
}

int wsnap_hydrate_state_load(struct wsnap_hydrate_state *st,
			     const char *workspace, struct wsnap_error *err)
{
	char *dir = NULL, *path = NULL, *buf = NULL, *line, *nl;
	int rc;

	memset(st, 0, sizeof(*st));
	dir = wsnap_hydrate_state_dir(workspace);
	if (!dir)
		return 0;
	path = wsnap_path_join(dir, STATE_FILE);
	if (!path) {
		free(dir);
		wsnap_error_io(err, ENOMEM, workspace, "out of memory");
		return -1;
	}
	rc = read_state_file(path, &buf, err);
	if (rc <= 0)
		goto out;
	line = buf;
	nl = strchr(line, '\n');
	if (!nl || (size_t)(nl - line) != strlen(STATE_MAGIC) ||
	    memcmp(line, STATE_MAGIC, strlen(STATE_MAGIC)) != 0)
		goto bad;
	for (line = nl + 1; *line; line = nl + 1) {
		nl = strchr(line, '\n');
		if (!nl)
			goto bad;
		*nl = '\0';
		if (!parse_line(st, line))
			goto bad;
	}
	if (!st->workspace || !st->archive || !st->lower || !st->upper ||
	    !st->work || st->kind == WSNAP_OVERLAY_AUTO || !st->policy[0] ||
	    strcmp(st->workspace, workspace) != 0)
		goto bad;
	st->dir = dir;
	dir = NULL;
	rc = 1;
	goto out;
bad:
	wsnap_error_io(err, EINVAL, path,
		       "state of a hydrated workspace makes no sense (remove "
		       "it by hand once nothing is mounted)");
	rc = -1;
out:
	if (rc != 1)
		wsnap_hydrate_state_release(st);
	free(buf);
	free(path);
	free(dir);
	return rc;
}

/* ---- policy fingerprint, archive identity ---- */

static void hash_field(struct wsnap_hasher *h, char tag, const void *data,
		       size_t len)
{
	uint64_t l = len;

	wsnap_hasher_update(h, &tag, 1);
	wsnap_hasher_update(h, &l, sizeof(l));
	wsnap_hasher_update(h, data, len);
}

static void hash_str(struct wsnap_hasher *h, char tag, const char *s)
{
	if (s)
		hash_field(h, tag, s, strlen(s));
	else
		hash_field(h, (char)(tag | 0x80), "", 0);
}

static void hash_list(struct wsnap_hasher *h, char tag,
		      const struct wsnap_pathlist *l)
{
	size_t i;

	hash_field(h, tag, &l->count, sizeof(l->count));
	for (i = 0; i < l->count; i++)
		hash_str(h, tag, l->items[i]);
}

static uint64_t policy_hash(const struct wsnap_policy *p,
			    const struct wsnap_hash_key *key)
{
	const uint64_t limits[] = {p->max_members, p->max_total_size,
				   p->max_file_size, p->max_path_length,
				   p->max_depth};
	const unsigned char flags[] = {p->allow_external_symlinks,
				       p->no_symlinks};
	struct wsnap_hasher h;

	wsnap_hasher_init(&h, key);
	hash_field(&h, 'f', flags, sizeof(flags));
	hash_field(&h, 'l', limits, sizeof(limits));
	hash_list(&h, 's', &p->skip);
	hash_list(&h, 'r', &p->reject_path);
	hash_list(&h, 'y', &p->reject_symlink);
	hash_str(&h, 'n', p->root_name);
	hash_str(&h, 'p', p->strip_prefix);
	/* --max-index-size came later: hashed only when not the default, so
	 * that states written before it keep their fingerprints */
	if (p->max_index_size != WSNAP_DEFAULT_MAX_INDEX_SIZE)
		hash_field(&h, 'i', &p->max_index_size,
			   sizeof(p->max_index_size));
	return wsnap_hasher_final(&h);
}

void wsnap_hydrate_policy_id(const struct wsnap_policy *p,
			     char out[WSNAP_HYDRATE_POLICY_ID_LEN + 1])
{
	/* fixed keys: the fingerprint must be the same in every process */
	static const struct wsnap_hash_key k1 = {0x77736e6170687964ULL,
						 0x7261746531000000ULL};
	static const struct wsnap_hash_key k2 = {0x706f6c6963792d69ULL,
						 0x6432000000000000ULL};

	snprintf(out, WSNAP_HYDRATE_POLICY_ID_LEN + 1,
		 "%016" PRIx64 "%016" PRIx64, policy_hash(p, &k1),
		 policy_hash(p, &k2));
}

enum wsnap_status wsnap_hydrate_archive_id(const char *path,
					   struct wsnap_hydrate_archive_id *id,
					   struct wsnap_error *err)
{
	struct stat st;

	memset(id, 0, sizeof(*id));
	if (strcmp(path, "-") == 0)
		return WSNAP_OK;
	if (stat(path, &st) != 0)
		return wsnap_error_io(err, errno, path, "cannot stat");
	id->valid = true;
	id->dev = (uint64_t)st.st_dev;
	id->ino = (uint64_t)st.st_ino;
	id->size = (uint64_t)st.st_size;
	id->mtime_sec = st.st_mtim.tv_sec;
	id->mtime_nsec = st.st_mtim.tv_nsec;
	id->ctime_sec = st.st_ctim.tv_sec;
	id->ctime_nsec = st.st_ctim.tv_nsec;
	return WSNAP_OK;
}

bool wsnap_hydrate_archive_same(const struct wsnap_hydrate_archive_id *a,
				const struct wsnap_hydrate_archive_id *b)
{
	return a->valid && b->valid && a->dev == b->dev && a->ino == b->ino &&
	       a->size == b->size && a->mtime_sec == b->mtime_sec &&
	       a->mtime_nsec == b->mtime_nsec && a->ctime_sec == b->ctime_sec &&
	       a->ctime_nsec == b->ctime_nsec;
}

/* ---- mounting the overlay ---- */

/*
 * Appends "key=" and path to buf (length *len, capacity cap), escaping
 * with '\' the bytes the option parser gives a meaning: '\\', ',' and,
 * for the kernel's lowerdir list, ':'. Returns false when it does not fit.
 */
static bool add_path_opt(char *buf, size_t *len, size_t cap, const char *key,
			 const char *path)
{
	size_t n = *len;
	const char *p;

	if (n && n < cap)
		buf[n++] = ',';
	for (p = key; *p && n < cap; p++)
		buf[n++] = *p;
	for (p = path; *p && n + 1 < cap; p++) {
		if (*p == '\\' || *p == ',' || *p == ':')
			buf[n++] = '\\';
		buf[n++] = *p;
	}
	if (*p || n >= cap)
		return false;
	buf[n] = '\0';
	*len = n;
	return true;
}

/* The layer options lowerdir=,upperdir=,workdir= into buf. */
static bool layer_opts(const struct wsnap_hydrate_state *st, char *buf,
		       size_t cap)
{
	size_t len = 0;

	buf[0] = '\0';
	return add_path_opt(buf, &len, cap, "lowerdir=", st->lower) &&
	       add_path_opt(buf, &len, cap, "upperdir=", st->upper) &&
	       add_path_opt(buf, &len, cap, "workdir=", st->work);
}

static enum wsnap_status mount_kernel(const struct wsnap_hydrate_state *st,
				      struct wsnap_error *err)
{
	char opts[OVERLAY_OPTS_MAX];
	size_t len;

	if (!layer_opts(st, opts, sizeof(opts)))
		return wsnap_error_io(err, ENAMETOOLONG, st->workspace,
				      "cannot mount overlay (paths too long) "
				      "on");
	len = strlen(opts);
	if (len + 1 + sizeof(OVERLAY_FIXED_OPTS) > sizeof(opts))
		return wsnap_error_io(err, ENAMETOOLONG, st->workspace,
				      "cannot mount overlay (paths too long) "
				      "on");
	opts[len] = ',';
	memcpy(opts + len + 1, OVERLAY_FIXED_OPTS, sizeof(OVERLAY_FIXED_OPTS));
	if (mount("wsnap-hydrate", st->workspace, "overlay", 0, opts) != 0)
		return wsnap_error_io(err, errno, st->workspace,
				      "cannot mount overlay on");
	return WSNAP_OK;
}

static enum wsnap_status mount_fuse(const struct wsnap_hydrate_state *st,
				    struct wsnap_error *err)
{
	char opts[OVERLAY_OPTS_MAX], msg[WSNAP_RUN_MSG_MAX];
	/* no "--": fuse-overlayfs takes it for an option (the workspace is
	 * an absolute path anyway) */
	char *argv[] = {"fuse-overlayfs", "-o", opts, st->workspace, NULL};
	int rc;

	/* fuse-overlayfs splits lowerdir at every ':', escaped or not */
	if (strchr(st->lower, ':'))
		return wsnap_error_io(err, EINVAL, st->lower,
				      "fuse-overlayfs cannot take a ':' in "
				      "the lower directory");
	if (!layer_opts(st, opts, sizeof(opts)))
		return wsnap_error_io(err, ENAMETOOLONG, st->workspace,
				      "cannot mount fuse-overlayfs (paths "
				      "too long) on");
	rc = wsnap_run(argv, msg, sizeof(msg), err);
	if (rc < 0)
		return err->status;
	if (rc == 127)
		return wsnap_error_io(err, ENOENT, st->workspace,
				      "cannot mount fuse-overlayfs (%s; "
				      "install the fuse-overlayfs package) on",
				      msg);
	if (rc != 0)
		return wsnap_error_io(err, 0, st->workspace,
				      "cannot mount fuse-overlayfs (%s) on",
				      msg[0] ? msg : "it failed");
	return WSNAP_OK;
}

enum wsnap_status wsnap_hydrate_mount_overlay(struct wsnap_hydrate_state *st,
					      struct wsnap_error *err)
{
	static struct wsnap_error kerr; /* large: not on the stack */
	enum wsnap_status status;
	struct stat sb;

	if (st->kind == WSNAP_OVERLAY_FUSE) {
		status = mount_fuse(st, err);
	} else {
		status = mount_kernel(st, st->kind == WSNAP_OVERLAY_AUTO ? &kerr
									 : err);
		if (status == WSNAP_OK) {
			st->kind = WSNAP_OVERLAY_KERNEL;
		} else if (st->kind == WSNAP_OVERLAY_AUTO) {
			status = mount_fuse(st, err);
			if (status == WSNAP_OK)
				st->kind = WSNAP_OVERLAY_FUSE;
			else
				wsnap_error_io(err, err->errnum, st->workspace,
					       "cannot mount an overlay "
					       "(kernel: %s; %s) on",
					       strerror(kerr.errnum),
					       err->reason);
		}
	}
	if (status != WSNAP_OK)
		return status;
	/* the kernel's is ready at once; a FUSE one answers from here */
	if (stat(st->workspace, &sb) != 0 || !S_ISDIR(sb.st_mode))
		return wsnap_error_io(err, errno, st->workspace,
				      "overlay does not answer at");
	return WSNAP_OK;
}

/* ---- teardown ---- */

/*
 * Removes the entry name of directory parent, a directory's contents first,
 * never following a symlink nor entering another filesystem than dev (a
 * mount below is EXDEV). A directory the owner cannot read (mode 000) is
 * made readable first. Returns 0 or an errno.
 */
static int remove_at(int parent, const char *name, dev_t dev, unsigned depth)
{
	struct dirent *de;
	struct stat sb;
	bool again = true;
	int fd, e = 0;
	DIR *d;

	if (fstatat(parent, name, &sb, AT_SYMLINK_NOFOLLOW) != 0)
		return errno == ENOENT ? 0 : errno;
	if (!S_ISDIR(sb.st_mode))
		return unlinkat(parent, name, 0) != 0 && errno != ENOENT ? errno
									 : 0;
	if (sb.st_dev != dev)
		return EXDEV; /* something is mounted there */
	if (depth > REMOVE_MAX_DEPTH)
		return ELOOP;
	fd = openat(parent, name,
		    O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	if (fd < 0 && errno == EACCES && fchmodat(parent, name, 0700, 0) == 0)
		fd = openat(parent, name,
			    O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	if (fd < 0)
		return errno;
	d = fdopendir(fd);
	if (!d) {
		e = errno;
		close(fd);
		return e;
	}
	/* entries removed while listing may hide others: list until none */
	while (again && !e) {
		again = false;
		rewinddir(d);
		errno = 0;
		while (!e && (de = readdir(d)) != NULL) {
			if (strcmp(de->d_name, ".") == 0 ||
			    strcmp(de->d_name, "..") == 0)
				continue;
			e = remove_at(dirfd(d), de->d_name, dev, depth + 1);
			again = true;
		}
		if (!e && errno)
			e = errno;
	}
	closedir(d);
	if (!e && unlinkat(parent, name, AT_REMOVEDIR) != 0 && errno != ENOENT)
		e = errno;
	return e;
}

/* Removes the tree at path (absolute), which may be missing. */
static enum wsnap_status remove_tree(const char *path, struct wsnap_error *err)
{
	char *copy = strdup(path), *slash;
	struct stat sb;
	int dfd, e;

	if (!copy)
		return wsnap_error_io(err, ENOMEM, path, "out of memory");
	slash = strrchr(copy, '/');
	if (!slash || !slash[1]) {
		free(copy);
		return wsnap_error_io(err, EINVAL, path, "cannot remove");
	}
	*slash = '\0';
	dfd = open(slash == copy ? "/" : copy,
		   O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (dfd < 0) {
		e = errno;
		free(copy);
		if (e == ENOENT)
			return WSNAP_OK;
		return wsnap_error_io(err, e, path, "cannot remove");
	}
	e = 0;
	if (fstatat(dfd, slash + 1, &sb, AT_SYMLINK_NOFOLLOW) == 0)
		e = remove_at(dfd, slash + 1, sb.st_dev, 0);
	else if (errno != ENOENT)
		e = errno;
	close(dfd);
	free(copy);
	if (e)
		return wsnap_error_io(err, e, path, "cannot remove");
	return WSNAP_OK;
}

/* Number of mounts at abs whose type is fstype; -1 with err set. */
static int count_mounts(const char *abs, const char *fstype,
			struct wsnap_error *err)
{
	char top[WSNAP_FSTYPE_MAX];
	int found = wsnap_mounts_type_at(abs, top, sizeof(top), err);

	if (found <= 0)
		return found;
	return strcmp(top, fstype) == 0 ? 1 : 2;
}

static enum wsnap_status unmount_overlay(const struct wsnap_hydrate_state *st,
					 bool lazy, struct wsnap_error *err)
{
	const char *want = overlay_fstype(st->kind);
	char top[WSNAP_FSTYPE_MAX] = "";
	int found;

	found = wsnap_mounts_type_at(st->workspace, top, sizeof(top), err);
	if (found < 0)
		return err->status;
	if (!found)
		return WSNAP_OK; /* already down */
	if (strcmp(top, want) != 0)
		return wsnap_error_io(err, 0, st->workspace,
				      "not the overlay of a hydrated "
				      "workspace (%s) at",
				      top);
	if (st->kind == WSNAP_OVERLAY_FUSE)
		return wsnap_mounts_fusermount(st->workspace, lazy, err);
	if (umount2(st->workspace, UMOUNT_NOFOLLOW | (lazy ? MNT_DETACH : 0)) !=
	    0)
		return wsnap_error_io(err, errno, st->workspace,
				      "cannot unmount");
	return WSNAP_OK;
}

/*
 * The snapshot under the overlay. fuse-overlayfs leaves once unmounted,
 * but not at once: until its process is gone it holds the lower directory
 * open, and the snapshot answers EBUSY for a while.
 */
static enum wsnap_status unmount_lower(const struct wsnap_hydrate_state *st,
				       bool lazy, struct wsnap_error *err)
{
	const struct timespec pause = {0, LOWER_RETRY_NS};
	enum wsnap_status status;
	int tries = 0;

	for (;;) {
		status = wsnap_mounts_fusermount(st->lower, lazy, err);
		if (status == WSNAP_OK || err->errnum != EBUSY ||
		    st->kind != WSNAP_OVERLAY_FUSE || ++tries > LOWER_RETRIES)
			return status;
		nanosleep(&pause, NULL);
	}
}

enum wsnap_status wsnap_hydrate_teardown(const struct wsnap_hydrate_state *st,
					 bool lazy, struct wsnap_error *err)
{
	enum wsnap_status status;
	char *path;
	int n;

	status = unmount_overlay(st, lazy, err);
	if (status != WSNAP_OK)
		return status;
	n = count_mounts(st->lower, "fuse.wsnap", err);
	if (n < 0)
		return err->status;
	if (n == 2)
		return wsnap_error_io(err, 0, st->lower,
				      "not a wsnap mount at");
	if (n == 1) {
		status = unmount_lower(st, lazy, err);
		if (status != WSNAP_OK)
			return status;
	}
	status = remove_tree(st->work, err);
	if (status == WSNAP_OK && st->own_upper)
		status = remove_tree(st->upper, err);
	if (status == WSNAP_OK && rmdir(st->lower) != 0 && errno != ENOENT)
		status = wsnap_error_io(err, errno, st->lower, "cannot remove");
	if (status != WSNAP_OK)
		return status;
	/* a leftover temporary state file first, the state file last */
	for (n = 0; n < 2 && status == WSNAP_OK; n++) {
		path = wsnap_path_join(st->dir,
				       n == 0 ? STATE_TMP : STATE_FILE);
		if (!path)
			return wsnap_error_io(err, ENOMEM, st->dir,
					      "out of memory");
		if (unlink(path) != 0 && errno != ENOENT)
			status = wsnap_error_io(err, errno, path,
						"cannot remove");
		free(path);
	}
	if (status == WSNAP_OK && rmdir(st->dir) != 0 && errno != ENOENT)
		status = wsnap_error_io(err, errno, st->dir, "cannot remove");
	return status;
}

int wsnap_hydrate_unmount(const char *abs, bool lazy, enum wsnap_status *status,
			  struct wsnap_error *err)
{
	struct wsnap_hydrate_state st;
	int rc = wsnap_hydrate_state_load(&st, abs, err);

	if (rc == 0)
		return 0;
	if (rc < 0) {
		*status = err->status;
		return 1;
	}
	*status = wsnap_hydrate_teardown(&st, lazy, err);
	wsnap_hydrate_state_release(&st);
	return 1;
}

/* ---- diff from the upper directory ---- */

/* True when the topmost mount at path has type fstype. */
static bool mounted_as(const char *path, const char *fstype)
{
	static struct wsnap_error ignored; /* large: not on the stack */
	char top[WSNAP_FSTYPE_MAX];

	return wsnap_mounts_type_at(path, top, sizeof(top), &ignored) == 1 &&
	       strcmp(top, fstype) == 0;
}

int wsnap_hydrate_diff_check(struct wsnap_hydrate_diff *hd, const char *archive,
			     const char *path,
			     const struct wsnap_policy *policy)
{
	static struct wsnap_error ignored; /* large: not on the stack */
	char pid[WSNAP_HYDRATE_POLICY_ID_LEN + 1];
	struct wsnap_hydrate_archive_id now;
	struct wsnap_hydrate_state st;
	char *abs;
	int rc;

	hd->upper_fd = -1;
	hd->view = NULL;
	if (strcmp(archive, "-") == 0)
		return 0;
	abs = realpath(path, NULL);
	if (!abs)
		return 0; /* the full comparison reports it */
	rc = wsnap_hydrate_state_load(&st, abs, &ignored);
	free(abs);
	if (rc != 1)
		return 0;
	wsnap_hydrate_policy_id(policy, pid);
	if (strcmp(pid, st.policy) == 0 &&
	    wsnap_hydrate_archive_id(archive, &now, &ignored) == WSNAP_OK &&
	    wsnap_hydrate_archive_same(&st.arc, &now) &&
	    mounted_as(st.workspace, overlay_fstype(st.kind)) &&
	    mounted_as(st.lower, "fuse.wsnap")) {
		hd->fmt = st.kind == WSNAP_OVERLAY_KERNEL
				  ? WSNAP_UPPER_OVERLAYFS
				  : WSNAP_UPPER_FUSE_OVERLAYFS;
		hd->upper_fd =
			open(st.upper, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	}
	wsnap_hydrate_state_release(&st);
	return hd->upper_fd >= 0;
}

enum wsnap_status wsnap_hydrate_diff_side(struct wsnap_hydrate_diff *hd,
					  const struct wsnap_index *idx,
					  const char *label,
					  const char *archive_label,
					  const struct wsnap_policy *policy,
					  struct wsnap_diff_side *side,
					  struct wsnap_error *err)
{
	enum wsnap_status s;

	s = wsnap_upper_new(&hd->view, idx, hd->upper_fd, hd->fmt, label,
			    archive_label, policy, err);
	if (s == WSNAP_OK)
		wsnap_upper_diff_side(hd->view, side);
	return s;
}

void wsnap_hydrate_diff_release(struct wsnap_hydrate_diff *hd)
{
	wsnap_upper_free(hd->view);
	hd->view = NULL;
	if (hd->upper_fd >= 0)
		close(hd->upper_fd);
	hd->upper_fd = -1;
}
