/* SPDX-License-Identifier: MIT */
/*
 * Mounting a snapshot in the background (snapshot.h), and
 * wsnap_mount_snapshot (mounts.h) on top: the one way a snapshot is mounted
 * without -f, for 'wsnap mount' and 'wsnap hydrate' alike.
 *
 *   caller (parent)  --fork-->  daemon: mount, detach (setsid), loop;
 *        |                                INIT answered ->
 *        '<------- readiness pipe ------  'R'   (or 'E' + the error)
 *
 * The parent returns WSNAP_OK after 'R', the child's error after 'E', and
 * an error of its own when the pipe closes with neither. The child is the
 * daemon itself (no second fork as fuse_daemonize's: measured, one process
 * start less before the mount answers); the parent reaps it only when it
 * failed, a daemon that serves is left to outlive it. The daemon runs
 * fs->later (fs.h) once the mount answers, and waits for it before it
 * exits.
 */
#include "snapshot.h"

#include <errno.h>
#include <fcntl.h>
#include <malloc.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "fsutil.h"
#include "mountpoint.h"
#include "mounts.h"
#include "remote.h"

/* Options added around the user's: first the source (fsname=, which a
 * user's -o fsname= overrides), last read-only, permissions enforced by
 * the kernel from the presented modes, and the type 'fuse.wsnap' by which
 * 'wsnap unmount' recognizes its mounts (last: they win). */
#define MOUNT_OPT_SOURCE "fsname="
#define MOUNT_OPTS_LAST	 "ro,default_permissions,subtype=wsnap"

/* Tag of a failure report on the readiness pipe (success is
 * WSNAP_FS_READY). */
#define MOUNT_FAILED 'E'

/* Reads exactly len bytes unless the pipe ends first; returns bytes read. */
static size_t read_full(int fd, void *buf, size_t len)
{
	size_t done;

	wsnap_read_full(fd, buf, len, &done);
	return done;
}

static void write_full(int fd, const void *buf, size_t len)
{
	/* a failure means the parent is gone: nobody to tell */
	(void)wsnap_write_full(fd, buf, len);
}

/* The forked child: mount and serve; never returns. */
static void mount_child(struct fuse_session *se, struct wsnap_fs *fs,
			const char *mountpoint, const struct wsnap_fs_id *made,
			int ready_fd)
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
	/* the work put off until the mount answered ends first */
	wsnap_fs_later_join(fs);
	/* unmounted (by whomever): the directory made for it goes too */
	if (made)
		wsnap_mountpoint_remove(mountpoint, made);
	wsnap_index_free((struct wsnap_index *)fs->idx);
	_exit(status == WSNAP_OK ? 0 : (int)status);
}

/* The mounting child is forked and waited for on the readiness pipe; se is
 * handed to the child (and destroyed here in the parent). */
enum wsnap_status wsnap_mount_background(struct fuse_session *se,
					 struct wsnap_fs *fs,
					 const char *mountpoint,
					 const struct wsnap_fs_id *made,
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
		mount_child(se, fs, mountpoint, made, fds[1]);
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
	/* a child that did not get to serve has exited or is exiting */
	if (status != WSNAP_OK)
		wsnap_waitpid(pid, &wstatus);
	return status;
}

/*
 * "fsname=" and source with libfuse's option escapes (fuse_opt.c: a
 * backslash takes the next byte as it is), so that a ',' or a '\\' in
 * the path is part of it: malloc'd, NULL when out of memory.
 */
static char *source_opt(const char *source)
{
	size_t len = strlen(source), n = sizeof(MOUNT_OPT_SOURCE) - 1, i;
	char *out;

	if (len > (SIZE_MAX - sizeof(MOUNT_OPT_SOURCE)) / 2)
		return NULL;
	out = malloc(sizeof(MOUNT_OPT_SOURCE) + 2 * len);
	if (!out)
		return NULL;
	memcpy(out, MOUNT_OPT_SOURCE, n);
	for (i = 0; i < len; i++) {
		if (source[i] == ',' || source[i] == '\\')
			out[n++] = '\\';
		out[n++] = source[i];
	}
	out[n] = '\0';
	return out;
}

int wsnap_mount_fuse_args(struct fuse_args *fargs, const char *source,
			  const char *fuse_opts)
{
	char *src = source_opt(source);
	int rc = -1;

	if (src && fuse_opt_add_arg(fargs, "wsnap") == 0 &&
	    fuse_opt_add_arg(fargs, "-o") == 0 &&
	    fuse_opt_add_arg(fargs, src) == 0 &&
	    (!fuse_opts || (fuse_opt_add_arg(fargs, "-o") == 0 &&
			    fuse_opt_add_arg(fargs, fuse_opts) == 0)) &&
	    fuse_opt_add_arg(fargs, "-o") == 0 &&
	    fuse_opt_add_arg(fargs, MOUNT_OPTS_LAST) == 0)
		rc = 0;
	free(src);
	return rc;
}

char *wsnap_mount_source(const char *archive)
{
	/* a URL as its label: never its credentials */
	if (wsnap_remote_is_url(archive))
		return wsnap_remote_label(archive);
	return strcmp(archive, "-") == 0 ? strdup("-")
					 : realpath(archive, NULL);
}

enum wsnap_status wsnap_mount_snapshot(const struct wsnap_index *idx,
				       const char *source,
				       const char *mountpoint,
				       struct wsnap_error *err)
{
	struct fuse_args fargs = FUSE_ARGS_INIT(0, NULL);
	struct fuse_session *se = NULL;
	enum wsnap_status status;
	struct wsnap_fs fs;

	wsnap_fs_init(&fs, idx, getuid(), getgid());
	if (wsnap_mount_fuse_args(&fargs, source, NULL) != 0)
		status = wsnap_error_io(err, ENOMEM, NULL, "out of memory");
	else
		status = wsnap_fs_session_new(&se, &fs, &fargs, err);
	if (status == WSNAP_OK)
		status = wsnap_mount_background(se, &fs, mountpoint, NULL, err);
	fuse_opt_free_args(&fargs);
	return status;
}
