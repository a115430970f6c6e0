/* SPDX-License-Identifier: MIT */
/*
 * wsnap mount [-f] [-o OPT[,OPT...]] [OPTIONS] [POLICY] ARCHIVE MOUNTPOINT
 *
 * Order: options (exit 2), the FUSE session (libfuse refuses an option:
 * exit 2), the mountpoint (exit 4), the archive validated whole and its
 * index built with data kept (exit 3 or 4), a missing mountpoint made
 * (mountpoint.h: removed again when the mount fails or, by the daemon or
 * 'wsnap unmount', once unmounted), and only then the mount. The mount's
 * source, as findmnt and df show it, is the archive's absolute path.
 *
 * Without -f the command returns only once the mount answers: the
 * filesystem daemon is forked and waited for by wsnap_mount_background
 * (workspace/snapshot.c, shared with hydrate). The daemon holds the
 * archive's descriptor (or its spill file); a plain archive changed in any
 * way once mounted (its ctime moved: rewritten, but also renamed or
 * deleted) reads as EIO (fs.h).
 * -v and --json report the mount once it answers (with -f, from a thread
 * that waits for the readiness byte of the INIT handler).
 */
#include <errno.h>
#include <dirent.h>
#include <fcntl.h>
#include <malloc.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "chunks.h"
#include "commands.h"
#include "fs.h"
#include "json.h"
#include "mountpoint.h"
#include "mounts.h"
#include "opts.h"
#include "snapshot.h"

struct mount_args {
	struct wsnap_common common;
	struct wsnap_policy policy;
	struct wsnap_load_opts load;
	bool foreground;
	uid_t uid;
	gid_t gid;
	char *cache_dir;     /* -o cache_dir=, owned */
	char *cacert;	     /* -o cacert=, owned */
	uint64_t span_cache; /* -o span_cache=, 0: the default */
	char *fuse_opts;     /* the other -o options, comma-joined, owned */
	size_t fuse_opts_len;
	size_t fuse_opts_cap;
	struct wsnap_option_list o; /* the -o arguments */
	const char *archive;
	const char *mountpoint;
};

#define T struct mount_args
/* clang-format off */
static const struct wsnap_option mount_options[] = {
	WSNAP_OPT_BOOL('f', "foreground", T, foreground,
		       "stay in the foreground until unmounted (Ctrl-C "
		       "unmounts)"),
	WSNAP_OPT_LIST('o', NULL, "OPT[,OPT...]", T, o,
		       "FUSE mount options (allow_other, ...), and:\n"
		       "  uid=N, gid=N   presented owner (default: the "
		       "caller)\n"
		       "  cache_dir=DIR  where a compressed archive's data is "
		       "unpacked (default $TMPDIR or /tmp)\n"
		       "  cache_size=N   a remote archive's chunk cache on "
		       "disk, bytes (K, M, G; default 1G; in memory at most "
		       "256M of it)\n"
		       "  span_cache=N   decoded spans a compressed archive "
		       "read in place keeps, bytes (K, M, G; default 1% of "
		       "its decoded size, 2 spans to 64M)\n"
		       "  timeout=S      a remote archive's request timeout, "
		       "seconds (default 30)\n"
		       "  cacert=FILE    the CA certificates of a remote "
		       "archive's server"),
	WSNAP_OPT_COMMON(T, common),
	WSNAP_OPT_POLICY(T, policy),
	WSNAP_OPT_LOAD_READ(T, load),
	WSNAP_OPT_END(),
};

static const struct wsnap_cmd_usage mount_usage = {
	.name = "mount",
	.operands = "ARCHIVE MOUNTPOINT",
	.description =
		"Validates ARCHIVE and mounts it read-only at MOUNTPOINT (an "
		"empty directory, made if missing and then removed again at "
		"unmount) with FUSE, of type fuse.wsnap, its source the "
		"archive's absolute path (findmnt, df). Returns once the "
		"mount answers; the filesystem daemon stays in the background "
		"until 'wsnap unmount MOUNTPOINT'. Writes fail with EROFS.",
	.exit_status =
		"0 mounted, 2 usage, 3 archive rejected, 4 I/O error or mount "
		"failure",
	.options = mount_options,
};
/* clang-format on */
#undef T

/* Strict decimal id: digits only, no sign, fits in 32 bits. */
static int parse_id(const char *s, unsigned *out)
{
	unsigned long v;
	char *end;

	if (*s < '0' || *s > '9')
		return -1;
	errno = 0;
	v = strtoul(s, &end, 10);
	if (errno || *end || v > UINT32_MAX - 1)
		return -1;
	*out = (unsigned)v;
	return 0;
}

/* Appends one option (len bytes, escapes kept) to the FUSE option list. */
static int add_fuse_opt(struct mount_args *a, const char *opt, size_t len)
{
	size_t need = a->fuse_opts_len + len + 2;

	if (need > a->fuse_opts_cap) {
		size_t cap = need * 2;
		char *p = realloc(a->fuse_opts, cap);

		if (!p)
			return -1;
		a->fuse_opts = p;
		a->fuse_opts_cap = cap;
	}
	if (a->fuse_opts_len)
		a->fuse_opts[a->fuse_opts_len++] = ',';
	memcpy(a->fuse_opts + a->fuse_opts_len, opt, len);
	a->fuse_opts_len += len;
	a->fuse_opts[a->fuse_opts_len] = '\0';
	return 0;
}

/* The value of a 'key=' option of ours, with libfuse's '\x' escapes
 * removed. Returns a malloc'd string. */
static char *opt_value(const char *v, size_t len)
{
	char *out = malloc(len + 1);
	size_t i, n = 0;

	if (!out)
		return NULL;
	for (i = 0; i < len; i++) {
		if (v[i] == '\\' && i + 1 < len)
			i++;
		out[n++] = v[i];
	}
	out[n] = '\0';
	return out;
}

/*
 * One -o argument: split at commas not escaped by '\' (libfuse's rule);
 * uid=, gid=, cache_dir=, cacert=, cache_size=, span_cache= and timeout= are
 * ours, the rest goes to libfuse. Returns 0, or 2 after printing a usage error.
 */
static int parse_o(struct mount_args *a, const char *arg)
{
	const char *p = arg;

	while (*p) {
		const char *s = p;
		size_t len;
		unsigned id;
		char *val;

		while (*p && *p != ',') {
			if (*p == '\\' && p[1])
				p++;
			p++;
		}
		len = (size_t)(p - s);
		if (*p == ',')
			p++;
		if (len == 0)
			continue;
		val = NULL;
		if ((len > 4 && strncmp(s, "uid=", 4) == 0) ||
		    (len > 4 && strncmp(s, "gid=", 4) == 0)) {
			val = opt_value(s + 4, len - 4);
			if (!val || parse_id(val, &id) != 0) {
				free(val);
				return wsnap_usage_error(
					"mount", "bad -o %.*s (want a number)",
					(int)len, s);
			}
			if (s[0] == 'u')
				a->uid = (uid_t)id;
			else
				a->gid = (gid_t)id;
			free(val);
		} else if (len > 10 && strncmp(s, "cache_dir=", 10) == 0) {
			val = opt_value(s + 10, len - 10);
			if (!val)
				return wsnap_usage_error("mount",
							 "out of memory");
			free(a->cache_dir);
			a->cache_dir = val;
		} else if (len > 7 && strncmp(s, "cacert=", 7) == 0) {
			val = opt_value(s + 7, len - 7);
			if (!val)
				return wsnap_usage_error("mount",
							 "out of memory");
			free(a->cacert);
			a->cacert = val;
			a->load.remote.cacert = val;
		} else if ((len > 11 && strncmp(s, "cache_size=", 11) == 0) ||
			   (len > 11 && strncmp(s, "span_cache=", 11) == 0) ||
			   (len > 8 && strncmp(s, "timeout=", 8) == 0)) {
			bool size = s[0] != 't';
			uint64_t v;

			val = opt_value(s + (size ? 11 : 8),
					len - (size ? 11 : 8));
			if (!val || wsnap_remote_amount(val, size, &v) != 0) {
				free(val);
				return wsnap_usage_error(
					"mount", "bad -o %.*s (want %s)",
					(int)len, s,
					wsnap_remote_amount_want(size));
			}
			free(val);
			if (s[0] == 's')
				a->span_cache = v;
			else if (size)
				a->load.remote.cache_bytes = v;
			else
				a->load.remote.timeout_s = (unsigned)v;
		} else if (add_fuse_opt(a, s, len) != 0) {
			return wsnap_usage_error("mount", "out of memory");
		}
	}
	return 0;
}

/* Returns 0 to go on, -1 after --help, else the exit code. */
static int parse_args(struct mount_args *a, int argc, char **argv)
{
	size_t i;
	int rc;

	rc = wsnap_options_parse(&mount_usage, a, &argc, argv);
	if (rc != WSNAP_OPTIONS_RUN)
		return rc ? rc : -1;
	wsnap_common_apply(&a->common);
	for (i = 0; i < a->o.count; i++) {
		rc = parse_o(a, a->o.items[i]);
		if (rc)
			return rc;
	}
	if (argc != 2)
		return wsnap_usage_error("mount",
					 "want ARCHIVE and MOUNTPOINT");
	a->archive = argv[0];
	a->mountpoint = argv[1];
	return 0;
}

/*
 * The mountpoint must be an empty directory, or missing (then *missing is
 * set: it is made once the archive passed). On success *abs is its
 * absolute path (malloc'd): the daemon leaves the working directory.
 */
static enum wsnap_status check_mountpoint(const char *path, char **abs,
					  bool *missing,
					  struct wsnap_error *err)
{
	enum wsnap_status status = WSNAP_OK;
	struct dirent *de;
	struct stat st;
	DIR *d;

	*abs = wsnap_mounts_resolve(path, missing, err);
	if (!*abs || *missing)
		return *abs ? WSNAP_OK : err->status;
	free(*abs);
	*abs = NULL;
	if (stat(path, &st) != 0)
		return wsnap_error_io(err, errno, path, "cannot mount on");
	if (!S_ISDIR(st.st_mode))
		return wsnap_error_io(err, ENOTDIR, path, "cannot mount on");
	d = opendir(path);
	if (!d)
		return wsnap_error_io(err, errno, path,
				      "cannot read mountpoint");
	errno = 0;
	while ((de = readdir(d)) != NULL) {
		if (strcmp(de->d_name, ".") != 0 &&
		    strcmp(de->d_name, "..") != 0) {
			status = wsnap_error_io(err, ENOTEMPTY, path,
						"cannot mount on");
			break;
		}
	}
	if (!de && errno)
		status = wsnap_error_io(err, errno, path,
					"cannot read mountpoint");
	closedir(d);
	if (status != WSNAP_OK)
		return status;
	*abs = realpath(path, NULL);
	if (!*abs)
		return wsnap_error_io(err, errno, path,
				      "cannot resolve mountpoint");
	return WSNAP_OK;
}

/*
 * Blocks from this size up each in a mapping of its own, unmapped when
 * freed. glibc otherwise raises its threshold at the first such free (up
 * to 32 MiB), so that the validation pass's later tables come from the
 * heap and what is freed there stays resident, adding to the command's
 * peak (1,000,000 members: 120.6 MiB, 119.5-119.7 MiB with this; CPU the
 * same within noise). The daemon keeps the same setting (serve.c).
 */
#define MOUNT_MMAP_THRESHOLD (128 * 1024)

static const char hint_enotconn[] =
	"the filesystem daemon of a mount there died; 'wsnap unmount' clears "
	"it";

/* -v and --json: the mount answers. */
static void announce(const struct mount_args *a, const char *mountpoint,
		     const struct wsnap_index *idx)
{
	struct wsnap_index_stats is;
	struct wsnap_json j;

	wsnap_index_stats(idx, &is);
	if (a->common.verbose) {
		fputs("wsnap: mount: mounted at ", stderr);
		wsnap_put_escaped(stderr, WSNAP_ESC_REPR, mountpoint,
				  strlen(mountpoint));
		fputc('\n', stderr);
		wsnap_say_summary("mount", a->archive, &is);
	}
	if (!a->common.json)
		return;
	wsnap_json_begin(&j, stdout);
	wsnap_json_bool(&j, "ok", true);
	wsnap_json_cstring(&j, "archive", a->archive);
	wsnap_json_cstring(&j, "mountpoint", mountpoint);
	wsnap_json_summary(&j, &is);
	wsnap_json_end(&j);
	fflush(stdout);
}

/* With -f: announce() once the readiness byte arrives on fd. */
struct waiter {
	const struct mount_args *a;
	const char *mountpoint;
	const struct wsnap_index *idx;
	int fd;
};

static void *wait_ready(void *arg)
{
	struct waiter *w = arg;
	ssize_t r;
	char c;

	do
		r = read(w->fd, &c, 1);
	while (r < 0 && errno == EINTR);
	if (r == 1 && c == WSNAP_FS_READY)
		announce(w->a, w->mountpoint, w->idx);
	return NULL;
}

/* -f: serves until unmounted, announcing the mount from a thread when
 * -v or --json ask for it. */
static enum wsnap_status serve_foreground(struct fuse_session *se,
					  struct wsnap_fs *fs,
					  const struct mount_args *a,
					  const char *mountpoint,
					  struct wsnap_error *err)
{
	struct waiter w = {a, mountpoint, fs->idx, -1};
	enum wsnap_status status;
	pthread_t th;
	int p[2];

	if (!a->common.verbose && !a->common.json)
		return wsnap_fs_serve(se, fs, mountpoint, true, err);
	if (pipe2(p, O_CLOEXEC) != 0) {
		fuse_session_destroy(se);
		return wsnap_error_io(err, errno, NULL, "cannot make a pipe");
	}
	w.fd = p[0];
	fs->ready_fd = p[1];
	if (pthread_create(&th, NULL, wait_ready, &w) != 0) {
		close(p[0]);
		close(p[1]);
		fs->ready_fd = -1;
		fuse_session_destroy(se);
		return wsnap_error_io(err, EAGAIN, NULL,
				      "cannot start a thread");
	}
	status = wsnap_fs_serve(se, fs, mountpoint, true, err);
	if (fs->ready_fd >= 0) {
		close(fs->ready_fd); /* never ready: the thread reads 0 */
		fs->ready_fd = -1;
	}
	pthread_join(th, NULL);
	close(p[0]);
	return status;
}

int wsnap_cmd_mount(int argc, char **argv)
{
	static struct wsnap_error err; /* large: not on the stack */
	struct mount_args a = {.uid = getuid(), .gid = getgid()};
	struct fuse_args fargs = FUSE_ARGS_INIT(0, NULL);
	struct fuse_session *se = NULL;
	struct wsnap_index *idx = NULL;
	enum wsnap_status status;
	char *mountpoint = NULL, *source = NULL;
	struct wsnap_store_later *later = NULL;
	struct wsnap_fs_id made_id;
	bool missing = false, made = false;
	struct wsnap_fs fs;
	int rc;

	wsnap_error_clear(&err);
	wsnap_policy_init(&a.policy);
	rc = parse_args(&a, argc, argv);
	if (rc) {
		rc = rc < 0 ? 0 : rc;
		goto out;
	}

	mallopt(M_MMAP_THRESHOLD, MOUNT_MMAP_THRESHOLD);
	wsnap_fs_init(&fs, NULL, a.uid, a.gid);
	/* an archive that cannot be resolved is reported by its reading */
	source = wsnap_mount_source(a.archive);
	if (!source && !wsnap_remote_is_url(a.archive))
		source = strdup(a.archive);
	else if (!source)
		source = strdup("-"); /* not a URL it reads: never mounted */
	if (!source ||
	    wsnap_mount_fuse_args(&fargs, source, a.fuse_opts) != 0) {
		status = wsnap_error_io(&err, ENOMEM, NULL, "out of memory");
		goto report;
	}
	status = wsnap_fs_session_new(&se, &fs, &fargs, &err);
	if (status == WSNAP_USAGE) {
		rc = wsnap_usage_error("mount", "%s", err.reason);
		goto out;
	}
	if (status != WSNAP_OK)
		goto report;
	status = check_mountpoint(a.mountpoint, &mountpoint, &missing, &err);
	if (status != WSNAP_OK)
		goto report;

	/* the spill file of a compressed archive goes to $TMPDIR */
	if (a.cache_dir && setenv("TMPDIR", a.cache_dir, 1) != 0) {
		status = wsnap_error_io(&err, errno, a.cache_dir,
					"cannot use cache_dir");
		goto report;
	}
	/* in the background, a first mount's cache entry is written by the
	 * daemon once the mount answers */
	if (!a.foreground)
		a.load.later = &later;
	status = wsnap_load_index(a.archive, &a.policy, true, &a.load, &idx,
				  &err);
	if (status == WSNAP_OK && missing)
		status = wsnap_mountpoint_make(mountpoint, &made_id, &err);
	if (status != WSNAP_OK) {
		if (later)
			wsnap_store_later_run(later); /* as a load writes it */
		goto report;
	}
	made = missing;
	wsnap_index_set_span_cache(idx, (size_t)a.span_cache);
	fs.idx = idx;

	if (a.foreground) {
		status = serve_foreground(se, &fs, &a, mountpoint, &err);
	} else {
		if (later) {
			fs.later = wsnap_store_later_run;
			fs.later_ctx = later;
		}
		status = wsnap_mount_background(se, &fs, mountpoint,
						made ? &made_id : NULL, &err);
		if (status == WSNAP_OK)
			announce(&a, mountpoint, idx);
		else if (later)
			wsnap_store_later_run(later); /* no daemon wrote it */
	}
	se = NULL; /* destroyed by both */
	/* in the foreground it is unmounted now; a mount that failed is
	 * not there: the directory made for it goes */
	if (made && (a.foreground || status != WSNAP_OK))
		wsnap_mountpoint_remove(mountpoint, &made_id);

report:
	rc = status == WSNAP_OK
		     ? 0
		     : wsnap_report_hint(&err, a.common.json,
					 err.errnum == ENOTCONN ? hint_enotconn
								: NULL);
	if (se)
		fuse_session_destroy(se);
out:
	wsnap_store_later_free(later);
	wsnap_index_free(idx);
	fuse_opt_free_args(&fargs);
	free(mountpoint);
	free(source);
	free(a.cache_dir);
	free(a.cacert);
	free(a.fuse_opts);
	wsnap_option_list_release(&a.o);
	wsnap_policy_release(&a.policy);
	return rc;
}
