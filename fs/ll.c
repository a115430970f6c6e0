/* SPDX-License-Identifier: MIT */
/*
 * The lowlevel handlers: each asks one wsnap_fs_do_*() (fs.c) and then
 * calls exactly one fuse_reply_* (forget: fuse_reply_none). Write
 * operations answer EROFS without looking at anything.
 */
#include "fs.h"
#include "fs_private.h"

#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

/* Largest readdir buffer honoured (the kernel asks for a page or a few). */
#define LL_DIRBUF_MAX (1u << 20)

static struct wsnap_fs *fs_of(fuse_req_t req)
{
	return fuse_req_userdata(req);
}

static void *later_main(void *arg)
{
	struct wsnap_fs *fs = arg;

	fs->later(fs->later_ctx);
	return NULL;
}

/* fs->later, once: on a thread, so that INIT is answered now. */
static void later_start(struct wsnap_fs *fs)
{
	if (!fs->later || fs->later_started)
		return;
	if (pthread_create(&fs->later_thread, NULL, later_main, fs) == 0) {
		fs->later_started = true;
		return;
	}
	fs->later(fs->later_ctx); /* no thread: before the first request */
	fs->later = NULL;
}

void wsnap_fs_later_join(struct wsnap_fs *fs)
{
	if (!fs->later_started)
		return;
	pthread_join(fs->later_thread, NULL);
	fs->later_started = false;
	fs->later = NULL;
}

static void ll_init(void *userdata, struct fuse_conn_info *conn)
{
	struct wsnap_fs *fs = userdata;
	const unsigned want = FUSE_CAP_SPLICE_WRITE | FUSE_CAP_SPLICE_MOVE |
			      FUSE_CAP_CACHE_SYMLINKS;
	char ready = WSNAP_FS_READY;

	/* replies to reads are spliced from the data file */
	conn->want |= conn->capable & want;
	/* nothing ever changes: no attribute check per read for stale pages */
	conn->want &= ~FUSE_CAP_AUTO_INVAL_DATA;
	/*
	 * Every listing batch with its entries' attributes, not only the
	 * first (the kernel's adaptive mode): 'find -newer', du, ls -l and
	 * git status read a whole directory before they stat its entries,
	 * and each entry missed cost a LOOKUP round trip afterwards (612 a
	 * directory of 1000 on 6.18). Entries and attributes never expire.
	 */
	conn->want &= ~FUSE_CAP_READDIRPLUS_AUTO;
	/*
	 * libfuse derives the kernel's largest request (max_pages) from
	 * max_write, and the kernel sizes read requests by it. Keep a read
	 * reply, header included, within one pipe of pipe-max-size (1 MiB by
	 * default), or libfuse cannot splice it and copies it through a
	 * bounce buffer instead. Nothing is ever written.
	 */
	if (conn->max_write > WSNAP_FS_MAX_REQUEST)
		conn->max_write = WSNAP_FS_MAX_REQUEST;
	/*
	 * The kernel holds every other request until this INIT is answered,
	 * which libfuse does right after this returns: from here the mount
	 * answers. Runs once, before any other handler.
	 */
	if (fs->ready_fd >= 0) {
		if (write(fs->ready_fd, &ready, 1) != 1) {
			/* the waiting parent is gone; nothing to tell */
		}
		close(fs->ready_fd);
		fs->ready_fd = -1;
	}
	later_start(fs);
}

static void ll_lookup(fuse_req_t req, fuse_ino_t parent, const char *name)
{
	struct fuse_entry_param e;
	int rc = wsnap_fs_do_lookup(fs_of(req), parent, name, &e);

	/* a miss is an entry with ino 0 and a timeout: a cached negative */
	if (rc == 0 || (rc == ENOENT && e.entry_timeout > 0))
		fuse_reply_entry(req, &e);
	else
		fuse_reply_err(req, rc);
}

static void ll_forget(fuse_req_t req, fuse_ino_t ino, uint64_t nlookup)
{
	/* immutable and never freed: nothing to release */
	fuse_reply_none(req);
}

static void ll_forget_multi(fuse_req_t req, size_t count,
			    struct fuse_forget_data *forgets)
{
	fuse_reply_none(req);
}

static void ll_getattr(fuse_req_t req, fuse_ino_t ino,
		       struct fuse_file_info *fi)
{
	struct stat st;
	int rc = wsnap_fs_do_getattr(fs_of(req), ino, &st);

	if (rc)
		fuse_reply_err(req, rc);
	else
		fuse_reply_attr(req, &st, WSNAP_FS_TIMEOUT);
}

static void ll_readlink(fuse_req_t req, fuse_ino_t ino)
{
	const char *target;
	int rc = wsnap_fs_do_readlink(fs_of(req), ino, &target);

	if (rc)
		fuse_reply_err(req, rc);
	else
		fuse_reply_readlink(req, target);
}

static void ll_opendir(fuse_req_t req, fuse_ino_t ino,
		       struct fuse_file_info *fi)
{
	int rc = wsnap_fs_do_opendir(fs_of(req), ino);

	if (rc) {
		fuse_reply_err(req, rc);
		return;
	}
	/* listings never change: the kernel may cache and keep them */
	fi->cache_readdir = 1;
	fi->keep_cache = 1;
	fuse_reply_open(req, fi);
}

struct dirbuf {
	fuse_req_t req;
	char *buf;
	size_t size;
	size_t used;
	bool plus;
};

static int dirbuf_add(void *ctx, const char *name,
		      const struct fuse_entry_param *e, off_t next)
{
	struct dirbuf *d = ctx;
	size_t room = d->size - d->used;
	size_t need;

	if (d->plus)
		need = fuse_add_direntry_plus(d->req, d->buf + d->used, room,
					      name, e, next);
	else
		need = fuse_add_direntry(d->req, d->buf + d->used, room, name,
					 &e->attr, next);
	if (need > room)
		return 1; /* full: this entry starts the next reply */
	d->used += need;
	return 0;
}

static void readdir_common(fuse_req_t req, fuse_ino_t ino, size_t size,
			   off_t off, bool plus)
{
	struct dirbuf d = {.req = req, .plus = plus};
	int rc;

	d.size = size < LL_DIRBUF_MAX ? size : LL_DIRBUF_MAX;
	d.buf = malloc(d.size ? d.size : 1);
	if (!d.buf) {
		fuse_reply_err(req, ENOMEM);
		return;
	}
	rc = wsnap_fs_do_readdir(fs_of(req), ino, off, plus, dirbuf_add, &d);
	if (rc)
		fuse_reply_err(req, rc);
	else
		fuse_reply_buf(req, d.buf, d.used);
	free(d.buf);
}

static void ll_readdir(fuse_req_t req, fuse_ino_t ino, size_t size, off_t off,
		       struct fuse_file_info *fi)
{
	readdir_common(req, ino, size, off, false);
}

static void ll_readdirplus(fuse_req_t req, fuse_ino_t ino, size_t size,
			   off_t off, struct fuse_file_info *fi)
{
	readdir_common(req, ino, size, off, true);
}

static void ll_release(fuse_req_t req, fuse_ino_t ino,
		       struct fuse_file_info *fi)
{
	fuse_reply_err(req, 0);
}

static void ll_open(fuse_req_t req, fuse_ino_t ino, struct fuse_file_info *fi)
{
	int rc = wsnap_fs_do_open(fs_of(req), ino, fi->flags);

	if (rc) {
		fuse_reply_err(req, rc);
		return;
	}
	/* the bytes never change: pages stay cached across opens */
	fi->keep_cache = 1;
	fi->noflush = 1;
	fuse_reply_open(req, fi);
}

static void ll_read(fuse_req_t req, fuse_ino_t ino, size_t size, off_t off,
		    struct fuse_file_info *fi)
{
	struct wsnap_fs_read r;
	int rc = wsnap_fs_do_read(fs_of(req), ino, size, off, &r);

	/*
	 * Memory goes out in one writev: given to fuse_reply_data, libfuse
	 * would copy it into a pipe first and splice that, a copy more.
	 */
	if (rc)
		fuse_reply_err(req, rc);
	else if (r.vec.buf[0].flags & FUSE_BUF_IS_FD)
		fuse_reply_data(req, &r.vec, FUSE_BUF_SPLICE_MOVE);
	else
		fuse_reply_buf(req, r.vec.buf[0].mem, r.vec.buf[0].size);
	wsnap_fs_read_release(&r);
}

static void ll_statfs(fuse_req_t req, fuse_ino_t ino)
{
	struct statvfs st;
	int rc = wsnap_fs_do_statfs(fs_of(req), &st);

	if (rc)
		fuse_reply_err(req, rc);
	else
		fuse_reply_statfs(req, &st);
}

static void ll_getxattr(fuse_req_t req, fuse_ino_t ino, const char *name,
			size_t size)
{
	int rc = wsnap_fs_do_getxattr(fs_of(req), ino, name);

	/* ENOSYS: the kernel stops asking (fs.h) */
	if (rc)
		fuse_reply_err(req, rc);
	else if (size == 0)
		fuse_reply_xattr(req, 0);
	else
		fuse_reply_buf(req, NULL, 0);
}

static void ll_listxattr(fuse_req_t req, fuse_ino_t ino, size_t size)
{
	size_t len;
	int rc = wsnap_fs_do_listxattr(fs_of(req), ino, &len);

	/* size 0 asks how big the list is; otherwise send the list */
	if (rc)
		fuse_reply_err(req, rc);
	else if (size == 0)
		fuse_reply_xattr(req, len);
	else if (len > size)
		fuse_reply_err(req, ERANGE);
	else
		fuse_reply_buf(req, NULL, len);
}

static void ll_access(fuse_req_t req, fuse_ino_t ino, int mask)
{
	const struct fuse_ctx *ctx = fuse_req_ctx(req);
	gid_t groups[WSNAP_FS_MAX_GROUPS];
	int n = fuse_req_getgroups(req, WSNAP_FS_MAX_GROUPS, groups);
	size_t ngroups = n < 0 ? 0 : (size_t)n;

	if (ngroups > WSNAP_FS_MAX_GROUPS)
		ngroups = WSNAP_FS_MAX_GROUPS;
	fuse_reply_err(req, wsnap_fs_do_access(fs_of(req), ino, mask, ctx->uid,
					       ctx->gid, groups, ngroups));
}

/* Write operations: the snapshot is read-only. */

static void ll_setattr(fuse_req_t req, fuse_ino_t ino, struct stat *attr,
		       int to_set, struct fuse_file_info *fi)
{
	fuse_reply_err(req, EROFS);
}

static void ll_mknod(fuse_req_t req, fuse_ino_t parent, const char *name,
		     mode_t mode, dev_t rdev)
{
	fuse_reply_err(req, EROFS);
}

static void ll_mkdir(fuse_req_t req, fuse_ino_t parent, const char *name,
		     mode_t mode)
{
	fuse_reply_err(req, EROFS);
}

static void ll_unlink(fuse_req_t req, fuse_ino_t parent, const char *name)
{
	fuse_reply_err(req, EROFS);
}

static void ll_symlink(fuse_req_t req, const char *link, fuse_ino_t parent,
		       const char *name)
{
	fuse_reply_err(req, EROFS);
}

static void ll_rename(fuse_req_t req, fuse_ino_t parent, const char *name,
		      fuse_ino_t newparent, const char *newname,
		      unsigned int flags)
{
	fuse_reply_err(req, EROFS);
}

static void ll_link(fuse_req_t req, fuse_ino_t ino, fuse_ino_t newparent,
		    const char *newname)
{
	fuse_reply_err(req, EROFS);
}

static void ll_write(fuse_req_t req, fuse_ino_t ino, const char *buf,
		     size_t size, off_t off, struct fuse_file_info *fi)
{
	fuse_reply_err(req, EROFS);
}

static void ll_create(fuse_req_t req, fuse_ino_t parent, const char *name,
		      mode_t mode, struct fuse_file_info *fi)
{
	fuse_reply_err(req, EROFS);
}

static void ll_setxattr(fuse_req_t req, fuse_ino_t ino, const char *name,
			const char *value, size_t size, int flags)
{
	fuse_reply_err(req, EROFS);
}

static void ll_removexattr(fuse_req_t req, fuse_ino_t ino, const char *name)
{
	fuse_reply_err(req, EROFS);
}

static void ll_fallocate(fuse_req_t req, fuse_ino_t ino, int mode, off_t offset,
			 off_t length, struct fuse_file_info *fi)
{
	fuse_reply_err(req, EROFS);
}

static void ll_copy_file_range(fuse_req_t req, fuse_ino_t ino_in, off_t off_in,
			       struct fuse_file_info *fi_in, fuse_ino_t ino_out,
			       off_t off_out, struct fuse_file_info *fi_out,
			       size_t len, int flags)
{
	/* the destination would be a file of this filesystem */
	fuse_reply_err(req, EROFS);
}

static const struct fuse_lowlevel_ops wsnap_ll_ops = {
	.init = ll_init,
	.lookup = ll_lookup,
	.forget = ll_forget,
	.forget_multi = ll_forget_multi,
	.getattr = ll_getattr,
	.readlink = ll_readlink,
	.opendir = ll_opendir,
	.readdir = ll_readdir,
	.readdirplus = ll_readdirplus,
	.releasedir = ll_release,
	.open = ll_open,
	.read = ll_read,
	.release = ll_release,
	.statfs = ll_statfs,
	.getxattr = ll_getxattr,
	.listxattr = ll_listxattr,
	.access = ll_access,
	.setattr = ll_setattr,
	.mknod = ll_mknod,
	.mkdir = ll_mkdir,
	.unlink = ll_unlink,
	.rmdir = ll_unlink,
	.symlink = ll_symlink,
	.rename = ll_rename,
	.link = ll_link,
	.write = ll_write,
	.create = ll_create,
	.setxattr = ll_setxattr,
	.removexattr = ll_removexattr,
	.fallocate = ll_fallocate,
	.copy_file_range = ll_copy_file_range,
};

/* The last libfuse error line while capturing (fs_private.h). */
static char ll_log_text[512];

static void ll_log_capture(enum fuse_log_level level, const char *fmt,
			   va_list ap)
{
	size_t n = strlen(ll_log_text);

	if (level > FUSE_LOG_ERR)
		return;
	/* one message may come in pieces: a line ends with '\n' */
	if (n > 0 && ll_log_text[n - 1] == '\n')
		n = 0;
	if (n < sizeof(ll_log_text) - 1 &&
	    vsnprintf(ll_log_text + n, sizeof(ll_log_text) - n, fmt, ap) < 0)
		ll_log_text[n] = '\0';
}

void wsnap_fs_log_capture(bool on)
{
	ll_log_text[0] = '\0';
	fuse_set_log_func(on ? ll_log_capture : NULL);
}

const char *wsnap_fs_log_text(void)
{
	size_t n = strlen(ll_log_text);

	while (n > 0 && ll_log_text[n - 1] == '\n')
		ll_log_text[--n] = '\0';
	return n ? ll_log_text : "libfuse gave no reason";
}

enum wsnap_status wsnap_fs_session_new(struct fuse_session **out,
				       struct wsnap_fs *fs,
				       struct fuse_args *args,
				       struct wsnap_error *err)
{
	struct fuse_session *se;

	wsnap_fs_log_capture(true);
	se = fuse_session_new(args, &wsnap_ll_ops, sizeof(wsnap_ll_ops), fs);
	*out = se;
	if (!se) {
		wsnap_error_usage(err, "%s", wsnap_fs_log_text());
		wsnap_fs_log_capture(false);
		return WSNAP_USAGE;
	}
	wsnap_fs_log_capture(false);
	return WSNAP_OK;
}
