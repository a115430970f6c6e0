/* SPDX-License-Identifier: MIT */
/*
 * The session's life (fs.h, wsnap_fs_serve): signal handlers, mount,
 * detaching (after mounting), the multi-threaded loop, unmount. Readiness
 * is signalled from the INIT handler (ll.c).
 */
#include "fs.h"
#include "fs_private.h"

#include <errno.h>
#include <fcntl.h>
#include <malloc.h>
#include <unistd.h>

/*
 * Worker threads of the loop, started on demand up to the maximum. Idle
 * ones are kept (libfuse ends a worker when more than the idle count wait):
 * a sequential read keeps two requests in flight, and with a lower idle
 * count every burst started and ended threads (44 for one cat of 1 GiB),
 * each with a new pipe and buffer. An idle worker costs a few pages.
 */
#define SERVE_MAX_THREADS  16
#define SERVE_IDLE_THREADS SERVE_MAX_THREADS
/* malloc arenas for all of them */
#define SERVE_ARENAS 2

/*
 * The daemon inherits the heap of the validation pass (libarchive's
 * buffers, the builder's tables), freed but possibly still resident: give
 * it back, and keep large buffers (libfuse's 1 MiB per worker) mmap'd so
 * that only the pages a request touches count.
 */
static void serve_trim_memory(void)
{
	mallopt(M_MMAP_THRESHOLD, 128 * 1024);
	/* workers share arenas: their short-lived buffers are recycled */
	mallopt(M_ARENA_MAX, SERVE_ARENAS);
	malloc_trim(0);
}

/*
 * What fuse_daemonize(0) does but for its fork: a new session, "/" as the
 * working directory, standard streams on /dev/null. The caller is already
 * the forked daemon (workspace/snapshot.c), so the second fork of
 * fuse_daemonize, and the wait of the process that mounted for it, are
 * spared: a process less to start and schedule before the mount answers.
 * setsid cannot fail in a forked child (it leads no process group).
 */
static int serve_detach(void)
{
	int fd;

	if (setsid() < 0 || chdir("/") != 0)
		return -1;
	fd = open("/dev/null", O_RDWR | O_CLOEXEC);
	if (fd < 0)
		return -1;
	if (dup2(fd, 0) < 0 || dup2(fd, 1) < 0 || dup2(fd, 2) < 0) {
		close(fd);
		return -1;
	}
	if (fd > 2)
		close(fd);
	return 0;
}

enum wsnap_status wsnap_fs_serve(struct fuse_session *se, struct wsnap_fs *fs,
				 const char *mountpoint, bool foreground,
				 struct wsnap_error *err)
{
	struct fuse_loop_config *cfg = NULL;
	enum wsnap_status status = WSNAP_OK;
	bool handlers = false, mounted = false;
	int rc;

	wsnap_fs_log_capture(true);
	if (fuse_set_signal_handlers(se) != 0) {
		status = wsnap_error_io(err, 0, mountpoint,
					"cannot install signal handlers");
		goto out;
	}
	handlers = true;
	if (fuse_session_mount(se, mountpoint) != 0) {
		status = wsnap_error_io(err, 0, mountpoint,
					"cannot mount (%s) on",
					wsnap_fs_log_text());
		goto out;
	}
	mounted = true;
	wsnap_fs_log_capture(false);
	/* in the foreground what fuse_daemonize(1) does, as before */
	if ((foreground ? fuse_daemonize(1) : serve_detach()) != 0) {
		status = wsnap_error_io(err, 0, mountpoint,
					"cannot start the daemon");
		goto out;
	}
	if (!foreground)
		serve_trim_memory();
	cfg = fuse_loop_cfg_create();
	if (!cfg) {
		status = wsnap_error_io(err, ENOMEM, mountpoint,
					"cannot start the filesystem loop");
		goto out;
	}
	fuse_loop_cfg_set_clone_fd(cfg, 0);
	fuse_loop_cfg_set_max_threads(cfg, SERVE_MAX_THREADS);
	fuse_loop_cfg_set_idle_threads(cfg, SERVE_IDLE_THREADS);
	/* 0 when unmounted, the signal number after SIGINT/SIGTERM/SIGHUP */
	rc = fuse_session_loop_mt(se, cfg);
	if (rc < 0)
		status = wsnap_error_io(err, -rc, mountpoint,
					"filesystem loop failed");
out:
	wsnap_fs_log_capture(false);
	if (cfg)
		fuse_loop_cfg_destroy(cfg);
	if (mounted)
		fuse_session_unmount(se);
	if (handlers)
		fuse_remove_signal_handlers(se);
	fuse_session_destroy(se);
	return status;
}
