/*
 * wsnap mount [POLICY] [-f] [-o OPT[,OPT...]] ARCHIVE MOUNTPOINT
 *
 * Order: options (exit 2), the FUSE session (libfuse refuses an option:
 * exit 2), the mountpoint (exit 4), the archive validated whole and its
 * index built with data kept (exit 3 or 4), and only then the mount.
 *
 * Without -f the command returns only once the mount answers:
 *
 *   wsnap (parent)  --fork-->  child: mount, fuse_daemonize()
 *        |                        |   exits 0 once the daemon is detached
 *        |                        '--> daemon: loop; INIT answered ->
 *        '<------- readiness pipe ----------  'R'   (or 'E' + the error)
 *
 * The parent exits 0 after 'R', with the child's error after 'E', and
 * with an error of its own when the pipe closes with neither. The daemon
 * holds the archive's descriptor (or its spill file); a plain archive
 * changed in any way once mounted (its ctime moved) reads as EIO (fs.h).
 */
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <dirent.h>
#include <limits.h>
#include <malloc.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "commands.h"
#include "fs.h"
#include "mounts.h"
#include "opts.h"

/* Options added around the user's: read-only, permissions enforced by the
 * kernel from the presented modes, and the type 'fuse.wsnap' by which
 * 'wsnap unmount' recognizes its mounts (last: they win). */
#define MOUNT_OPTS_FIRST "fsname=wsnap"
#define MOUNT_OPTS_LAST	 "ro,default_permissions,subtype=wsnap"

/* Tag of a failure report on the readiness pipe (success is
 * WSNAP_FS_READY). */
#define MOUNT_FAILED 'E'

enum {
	OPT_FOREGROUND = WSNAP_OPT_FIRST_PRIVATE,
};

struct mount_args {
	struct wsnap_policy policy;
	bool foreground;
	uid_t uid;
	gid_t gid;
	char *cache_dir; /* -o cache_dir=, owned */
	char *fuse_opts; /* the other -o options, comma-joined, owned */
	size_t fuse_opts_len;
	size_t fuse_opts_cap;
	const char *archive;
	const char *mountpoint;
};

static void usage(FILE *f)
{
	fprintf(f,
		"usage: wsnap mount [POLICY] [-f] [-o OPT[,OPT...]] ARCHIVE "
		"MOUNTPOINT\n\n"
		"Validates ARCHIVE and mounts it read-only at MOUNTPOINT (an "
		"empty directory)\nwith FUSE. Returns once the mount answers; "
		"the filesystem daemon stays in\nthe background until 'wsnap "
		"unmount MOUNTPOINT'. Writes fail with EROFS.\n\n"
		"  -f, --foreground  stay in the foreground until unmounted "
		"(Ctrl-C unmounts)\n"
		"  -o OPT[,OPT...]   FUSE mount options (allow_other, ...), "
		"and:\n"
		"                      uid=N, gid=N   presented owner "
		"(default: "
		"the caller)\n"
		"                      cache_dir=DIR  where a compressed "
		"archive's data is\n"
		"                                     unpacked (default "
		"$TMPDIR "
		"or /tmp)\n"
		"  -h, --help        this help\n\n"
		"%s\n"
		"exit status: 0 mounted, 2 usage, 3 archive rejected, 4 I/O "
		"error or mount failure\n",
		wsnap_policy_help);
}

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
 * uid=, gid= and cache_dir= are ours, the rest goes to libfuse. Returns 0,
 * or 2 after printing a usage error.
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
		} else if (add_fuse_opt(a, s, len) != 0) {
			return wsnap_usage_error("mount", "out of memory");
		}
	}
	return 0;
}

static int parse_args(struct mount_args *a, int argc, char **argv)
{
	static const struct option longopts[] = {
		WSNAP_POLICY_LONGOPTS,
		{"foreground", no_argument, NULL, OPT_FOREGROUND},
		{"help", no_argument, NULL, WSNAP_OPT_HELP},
		{NULL, 0, NULL, 0},
	};
	int opt, rc;

	optind = 1;
	opterr = 0;
	while ((opt = getopt_long(argc, argv, ":fo:h", longopts, NULL)) != -1) {
		switch (opt) {
		case 'f':
		case OPT_FOREGROUND:
			a->foreground = true;
			break;
		case 'o':
			rc = parse_o(a, optarg);
			if (rc)
				return rc;
			break;
		case 'h':
		case WSNAP_OPT_HELP:
			usage(stdout);
			return -1;
		default:
			rc = wsnap_opts_rest("mount", &a->policy, opt, optarg,
					     argv);
			if (rc != 1)
				return rc;
		}
	}
	if (argc - optind != 2)
		return wsnap_usage_error("mount",
					 "want ARCHIVE and MOUNTPOINT");
	a->archive = argv[optind];
	a->mountpoint = argv[optind + 1];
	return 0;
}

/*
 * The mountpoint must be an existing, empty directory. On success *abs is
 * its absolute path (malloc'd): the daemon leaves the working directory.
 */
static enum wsnap_status check_mountpoint(const char *path, char **abs,
					  struct wsnap_error *err)
{
	enum wsnap_status status = WSNAP_OK;
	struct dirent *de;
	struct stat st;
	DIR *d;

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

/* Reads exactly len bytes unless the pipe ends first; returns bytes read. */
static size_t read_full(int fd, void *buf, size_t len)
{
	size_t done = 0;

	while (done < len) {
		ssize_t n = read(fd, (char *)buf + done, len - done);

		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0)
			break;
		done += (size_t)n;
	}
	return done;
}

static void write_full(int fd, const void *buf, size_t len)
{
	size_t done = 0;

	while (done < len) {
		ssize_t n = write(fd, (const char *)buf + done, len - done);

		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0)
			return; /* the parent is gone: nobody to tell */
		done += (size_t)n;
	}
}

/* The forked child: mount and serve; never returns. */
static void mount_child(struct fuse_session *se, struct wsnap_fs *fs,
			const char *mountpoint, int ready_fd)
{
	static struct wsnap_error err; /* large: not on the stack */
	enum wsnap_status status;
	char tag = MOUNT_FAILED;

	fs->ready_fd = ready_fd;
	status = wsnap_fs_serve(se, fs, mountpoint, false, &err);
	if (fs->ready_fd >= 0) {
		/* never got to INIT: tell the parent why */
		if (status != WSNAP_OK) {
			write_full(fs->ready_fd, &tag, 1);
			write_full(fs->ready_fd, &err, sizeof(err));
		}
		close(fs->ready_fd);
	}
	wsnap_index_free((struct wsnap_index *)fs->idx);
	_exit(status == WSNAP_OK ? 0 : (int)status);
}

/*
 * Forks the mounting child and waits for its word on the readiness pipe.
 * se is handed to the child (and destroyed here in the parent).
 */
static enum wsnap_status mount_background(struct fuse_session *se,
					  struct wsnap_fs *fs,
					  const char *mountpoint,
					  struct wsnap_error *err)
{
	enum wsnap_status status;
	int fds[2], wstatus;
	char tag = 0;
	pid_t pid;

	if (pipe2(fds, O_CLOEXEC) != 0) {
		fuse_session_destroy(se);
		return wsnap_error_io(err, errno, mountpoint,
				      "cannot create a pipe");
	}
	fflush(stdout);
	fflush(stderr);
	/*
	 * The daemon starts as a copy of this process: hand back what the
	 * validation pass freed first, so that it starts (and its resident
	 * high-water mark starts) with little more than the index.
	 */
	malloc_trim(0);
	pid = fork();
	if (pid < 0) {
		status = wsnap_error_io(err, errno, mountpoint,
					"cannot fork the filesystem daemon");
		close(fds[0]);
		close(fds[1]);
		fuse_session_destroy(se);
		return status;
	}
	if (pid == 0) {
		close(fds[0]);
		mount_child(se, fs, mountpoint, fds[1]);
	}
	close(fds[1]);
	fuse_session_destroy(se);
	if (read_full(fds[0], &tag, 1) == 1 && tag == WSNAP_FS_READY)
		status = WSNAP_OK;
	else if (tag == MOUNT_FAILED &&
		 read_full(fds[0], err, sizeof(*err)) == sizeof(*err) &&
		 err->status != WSNAP_OK)
		status = err->status;
	else
		status = wsnap_error_io(err, 0, mountpoint,
					"the filesystem daemon exited before "
					"the mount was ready");
	close(fds[0]);
	/* the child itself exits as soon as the daemon is detached */
	while (waitpid(pid, &wstatus, 0) < 0 && errno == EINTR)
		;
	return status;
}

/* The libfuse arguments of a snapshot mount: ours around the user's
 * options (may be NULL). Returns 0, or -1 when out of memory. */
static int session_args(struct fuse_args *fargs, const char *fuse_opts)
{
	if (fuse_opt_add_arg(fargs, "wsnap") != 0 ||
	    fuse_opt_add_arg(fargs, "-o") != 0 ||
	    fuse_opt_add_arg(fargs, MOUNT_OPTS_FIRST) != 0 ||
	    (fuse_opts && (fuse_opt_add_arg(fargs, "-o") != 0 ||
			   fuse_opt_add_arg(fargs, fuse_opts) != 0)) ||
	    fuse_opt_add_arg(fargs, "-o") != 0 ||
	    fuse_opt_add_arg(fargs, MOUNT_OPTS_LAST) != 0)
		return -1;
	return 0;
}

enum wsnap_status wsnap_mount_snapshot(const struct wsnap_index *idx,
				       const char *mountpoint,
				       struct wsnap_error *err)
{
	struct fuse_args fargs = FUSE_ARGS_INIT(0, NULL);
	struct fuse_session *se = NULL;
	enum wsnap_status status;
	struct wsnap_fs fs;

	wsnap_fs_init(&fs, idx, getuid(), getgid());
	if (session_args(&fargs, NULL) != 0)
		status = wsnap_error_io(err, ENOMEM, NULL, "out of memory");
	else
		status = wsnap_fs_session_new(&se, &fs, &fargs, err);
	if (status == WSNAP_OK)
		status = mount_background(se, &fs, mountpoint, err);
	fuse_opt_free_args(&fargs);
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
	char *mountpoint = NULL;
	struct wsnap_fs fs;
	int rc;

	wsnap_error_clear(&err);
	wsnap_policy_init(&a.policy);
	rc = parse_args(&a, argc, argv);
	if (rc) {
		rc = rc < 0 ? 0 : rc;
		goto out;
	}

	wsnap_fs_init(&fs, NULL, a.uid, a.gid);
	if (session_args(&fargs, a.fuse_opts) != 0) {
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
	status = check_mountpoint(a.mountpoint, &mountpoint, &err);
	if (status != WSNAP_OK)
		goto report;

	/* the spill file of a compressed archive goes to $TMPDIR */
	if (a.cache_dir && setenv("TMPDIR", a.cache_dir, 1) != 0) {
		status = wsnap_error_io(&err, errno, a.cache_dir,
					"cannot use cache_dir");
		goto report;
	}
	status = wsnap_load_index(a.archive, &a.policy, true, &idx, &err);
	if (status != WSNAP_OK)
		goto report;
	fs.idx = idx;

	if (a.foreground) {
		status = wsnap_fs_serve(se, &fs, mountpoint, true, &err);
	} else {
		status = mount_background(se, &fs, mountpoint, &err);
	}
	se = NULL; /* destroyed by both */

report:
	rc = status == WSNAP_OK ? 0 : wsnap_report(&err, false);
	if (err.errnum == ENOTCONN)
		fprintf(stderr, "wsnap: hint: the filesystem daemon of a mount "
				"there died; 'wsnap unmount' clears it\n");
	if (se)
		fuse_session_destroy(se);
out:
	wsnap_index_free(idx);
	fuse_opt_free_args(&fargs);
	free(mountpoint);
	free(a.cache_dir);
	free(a.fuse_opts);
	wsnap_policy_release(&a.policy);
	return rc;
}
