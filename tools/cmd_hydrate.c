/* SPDX-License-Identifier: MIT */
/*
 * wsnap hydrate [--upper DIR] [--force] [--overlay KIND] [OPTIONS] [POLICY]
 *               ARCHIVE WORKSPACE
 *
 * Order: options (exit 2); the workspace and the upper directory checked
 * (exit 4, nothing made); the archive validated whole and its index built
 * (exit 3 or 4, nothing made nor mounted); then the state directory and
 * its file (hydrate.h), the snapshot mounted read-only at its lower
 * directory (the very code of 'wsnap mount', wsnap_mount_snapshot), and
 * the overlay at WORKSPACE. A failure from the state directory on takes
 * down what was set up, with the same teardown as 'wsnap unmount'.
 */
#include <errno.h>
#include <fcntl.h>
#include <dirent.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "commands.h"
#include "hydrate.h"
#include "json.h"
#include "mounts.h"
#include "opts.h"
#include "remote.h"

#define CMD "hydrate"

static const char hint_force[] =
	"--force mounts over a workspace that is not empty (its files are "
	"hidden until unmounted)";

struct hydrate_args {
	struct wsnap_common common;
	struct wsnap_policy policy;
	struct wsnap_load_opts load;
	const char *upper; /* --upper, or NULL */
	bool force;
	enum wsnap_overlay kind;
	const char *archive;
	const char *workspace;
};

/* --overlay KIND, into an enum wsnap_overlay (target). */
static int set_overlay(const char *cmd, void *target, const char *arg)
{
	enum wsnap_overlay *kind = target;

	if (strcmp(arg, "auto") == 0)
		*kind = WSNAP_OVERLAY_AUTO;
	else if (strcmp(arg, "kernel") == 0)
		*kind = WSNAP_OVERLAY_KERNEL;
	else if (strcmp(arg, "fuse") == 0)
		*kind = WSNAP_OVERLAY_FUSE;
	else
		return wsnap_usage_error(cmd,
					 "bad --overlay %s (want auto, kernel "
					 "or fuse)",
					 arg);
	return 0;
}

#define T struct hydrate_args
/* clang-format off */
static const struct wsnap_option hydrate_options[] = {
	WSNAP_OPT_STRING(0, "upper", "DIR", T, upper,
			 "keep changes in DIR (kept by unmount; a fresh upper "
			 "directory in the state directory is removed)"),
	WSNAP_OPT_BOOL(0, "force", T, force,
		       "mount over a WORKSPACE that is not empty (its files "
		       "are hidden until unmounted)"),
	WSNAP_OPT_CALLBACK(0, "overlay", "KIND", offsetof(T, kind),
			   set_overlay,
			   "auto (default: the kernel's overlayfs where "
			   "permitted, else fuse-overlayfs), kernel or fuse"),
	WSNAP_OPT_COMMON(T, common),
	WSNAP_OPT_POLICY(T, policy),
	WSNAP_OPT_LOAD_READ(T, load),
	WSNAP_OPT_END(),
};

static const struct wsnap_cmd_usage hydrate_usage = {
	.name = CMD,
	.operands = "ARCHIVE WORKSPACE",
	.description =
		"A writable workspace over a snapshot: ARCHIVE is validated "
		"and mounted read-only as the lower layer, an overlay of an "
		"upper directory over it is mounted at WORKSPACE (made if "
		"missing). Files are read from the archive lazily; every "
		"change lands in the upper directory. Returns once WORKSPACE "
		"answers; 'wsnap unmount WORKSPACE' takes it all down. "
		"State: WORKSPACE's sibling .NAME.wsnap/ (lower/, upper/, "
		"work/, state).",
	.exit_status =
		"0 ready, 2 usage, 3 archive rejected, 4 I/O error or mount "
		"failure",
	.options = hydrate_options,
};
/* clang-format on */
#undef T

/* Returns 0 to go on, -1 after --help, else the exit code. */
static int parse_args(struct hydrate_args *a, int argc, char **argv)
{
	int rc;

	rc = wsnap_options_parse(&hydrate_usage, a, &argc, argv);
	if (rc != WSNAP_OPTIONS_RUN)
		return rc ? rc : -1;
	wsnap_common_apply(&a->common);
	if (argc != 2)
		return wsnap_usage_error(CMD, "want ARCHIVE and WORKSPACE");
	a->archive = argv[0];
	a->workspace = argv[1];
	return 0;
}

/* 1 when the directory at path has entries, 0 when empty, -1 (err set). */
static int dir_has_entries(const char *path, struct wsnap_error *err)
{
	struct dirent *de;
	int found = 0;
	DIR *d = opendir(path);

	if (!d) {
		wsnap_error_io(err, errno, path, "cannot read directory");
		return -1;
	}
	errno = 0;
	while (!found && (de = readdir(d)) != NULL)
		found = strcmp(de->d_name, ".") != 0 &&
			strcmp(de->d_name, "..") != 0;
	if (!found && errno) {
		wsnap_error_io(err, errno, path, "cannot read directory");
		found = -1;
	}
	closedir(d);
	return found;
}

/* A directory at abs, made when missing; err set on failure. */
static enum wsnap_status need_dir(const char *abs, bool missing,
				  struct wsnap_error *err)
{
	struct stat sb;

	if (missing && mkdir(abs, 0755) != 0)
		return wsnap_error_io(err, errno, abs, "cannot make directory");
	if (stat(abs, &sb) != 0)
		return wsnap_error_io(err, errno, abs, "cannot access");
	if (!S_ISDIR(sb.st_mode))
		return wsnap_error_io(err, ENOTDIR, abs, "cannot hydrate into");
	return WSNAP_OK;
}

/* True when path a lies within b (equal, or below it). */
static bool path_within(const char *a, const char *b)
{
	size_t lb = strlen(b);

	if (strcmp(b, "/") == 0)
		return true;
	return strncmp(a, b, lb) == 0 && (a[lb] == '\0' || a[lb] == '/');
}

/* The workspace must not be hydrated already, and must be empty unless
 * --force (a missing one is made later, once the archive passed). */
static enum wsnap_status check_workspace(const struct hydrate_args *a,
					 const char *ws, bool missing,
					 const char *state_dir,
					 struct wsnap_error *err)
{
	struct stat sb;
	int full;

	/* 'wsnap unmount' is suggested only for what it would act on */
	if (lstat(state_dir, &sb) == 0 &&
	    (!S_ISDIR(sb.st_mode) || sb.st_uid != geteuid() ||
	     (sb.st_mode & (S_IWGRP | S_IWOTH))))
		return wsnap_error_io(err, EEXIST, state_dir,
				      "not made by 'wsnap hydrate' of this "
				      "user (remove it by hand): in the way "
				      "of the state directory");
	if (lstat(state_dir, &sb) == 0)
		return wsnap_error_io(err, EEXIST, state_dir,
				      "already hydrated, or not cleared "
				      "('wsnap unmount' of the workspace "
				      "clears it): state directory");
	if (missing)
		return WSNAP_OK;
	if (need_dir(ws, false, err) != WSNAP_OK)
		return err->status;
	full = dir_has_entries(ws, err);
	if (full < 0)
		return err->status;
	if (full && !a->force)
		return wsnap_error_io(err, ENOTEMPTY, ws,
				      "cannot hydrate into");
	return WSNAP_OK;
}

/* --upper DIR: made if missing, and apart from the workspace and the
 * state directory. */
static char *check_upper(const char *upper, const char *ws,
			 const char *state_dir, struct wsnap_error *err)
{
	bool missing;
	char *abs = wsnap_mounts_resolve(upper, &missing, err);

	if (!abs)
		return NULL;
	if (path_within(abs, ws) || path_within(ws, abs) ||
	    path_within(abs, state_dir) || path_within(state_dir, abs)) {
		wsnap_error_io(err, EINVAL, upper,
			       "upper directory overlaps the workspace or its "
			       "state:");
		free(abs);
		return NULL;
	}
	if (need_dir(abs, missing, err) != WSNAP_OK) {
		free(abs);
		return NULL;
	}
	return abs;
}

/*
 * The work directory: in the state directory when it shares the upper
 * directory's filesystem, else the upper directory's sibling
 * '.<name>.wsnap-work'. Returns a malloc'd path, or NULL with err set.
 */
static char *work_dir_for(const struct wsnap_hydrate_state *st,
			  struct wsnap_error *err)
{
	struct stat su, sd;
	char *out;

	if (st->own_upper ||
	    (stat(st->upper, &su) == 0 && stat(st->dir, &sd) == 0 &&
	     su.st_dev == sd.st_dev))
		out = wsnap_path_join(st->dir, "work");
	else
		out = wsnap_hydrate_work_sibling(st->upper);
	if (!out)
		wsnap_error_io(err, ENOMEM, st->dir, "out of memory");
	return out;
}

/*
 * A fresh upper directory starts with the snapshot root's mode and mtime:
 * the workspace root then looks like the snapshot's until changed.
 */
static enum wsnap_status init_upper(const struct wsnap_hydrate_state *st,
				    const struct wsnap_index *idx,
				    struct wsnap_error *err)
{
	const struct wsnap_node *root = wsnap_index_node(idx, WSNAP_ROOT_INO);
	struct timespec ts[2];
	enum wsnap_status status;
	int fd;

	/* set up through the descriptor made, never by name */
	status = wsnap_hydrate_make_in(st, "upper", 0755, &fd, err);
	if (status != WSNAP_OK)
		return status;
	ts[0].tv_sec = root->mtime_sec;
	ts[0].tv_nsec = root->mtime_nsec;
	ts[1] = ts[0];
	if (fchmod(fd, root->mode & 07777) != 0 || futimens(fd, ts) != 0)
		status = wsnap_error_io(err, errno, st->upper, "cannot set up");
	close(fd);
	return status;
}

/* Fills the state directory (made by the caller): its file first, then
 * the layers' directories. */
static enum wsnap_status make_state(struct wsnap_hydrate_state *st,
				    const struct wsnap_index *idx,
				    struct wsnap_error *err)
{
	enum wsnap_status status;

	st->lower = wsnap_path_join(st->dir, "lower");
	if (st->own_upper)
		st->upper = wsnap_path_join(st->dir, "upper");
	if (!st->lower || !st->upper)
		return wsnap_error_io(err, ENOMEM, st->dir, "out of memory");
	st->work = work_dir_for(st, err);
	if (!st->work)
		return err->status;
	/* saved first: from here on, 'wsnap unmount' can undo it all */
	status = wsnap_hydrate_state_save(st, err);
	if (status == WSNAP_OK)
		status = wsnap_hydrate_make_in(st, "lower", 0755, NULL, err);
	if (status == WSNAP_OK && st->own_upper)
		status = init_upper(st, idx, err);
	if (status == WSNAP_OK)
		status = wsnap_hydrate_make_work(st, err);
	return status;
}

/* Undoes a hydrate that failed once the state directory existed; a
 * failure to undo is reported as a second line. */
static void roll_back(const struct wsnap_hydrate_state *st)
{
	static struct wsnap_error err; /* large: not on the stack */

	wsnap_error_clear(&err);
	if (wsnap_hydrate_teardown(st, false, &err) != WSNAP_OK)
		wsnap_report(&err, false);
}

/* Writes text, then path quoted like a member name, to stderr. */
static void say_path(const char *text, const char *path)
{
	fputs(text, stderr);
	wsnap_put_escaped(stderr, WSNAP_ESC_REPR, path, strlen(path));
}

static const char *overlay_name(enum wsnap_overlay kind)
{
	return kind == WSNAP_OVERLAY_KERNEL ? "kernel" : "fuse-overlayfs";
}

/* -v: what was mounted where, the paths quoted and escaped like names. */
static void say_hydrated(const struct wsnap_hydrate_state *st,
			 const struct wsnap_index *idx)
{
	struct wsnap_index_stats is;

	say_path("wsnap: hydrate: ", st->workspace);
	fprintf(stderr, ": %s overlay", overlay_name(st->kind));
	say_path(" of ", st->upper);
	say_path(" over ", st->lower);
	say_path(" (state in ", st->dir);
	fputs(")\n", stderr);
	wsnap_index_stats(idx, &is);
	wsnap_say_summary("hydrate", st->archive, &is);
}

static void print_json(const struct wsnap_hydrate_state *st,
		       const struct wsnap_index *idx)
{
	struct wsnap_index_stats is;
	struct wsnap_json j;

	wsnap_index_stats(idx, &is);
	wsnap_json_begin(&j, stdout);
	wsnap_json_bool(&j, "ok", true);
	wsnap_json_cstring(&j, "workspace", st->workspace);
	wsnap_json_cstring(&j, "archive", st->archive);
	wsnap_json_cstring(&j, "overlay", overlay_name(st->kind));
	wsnap_json_cstring(&j, "upper", st->upper);
	wsnap_json_cstring(&j, "lower", st->lower);
	wsnap_json_cstring(&j, "state", st->dir);
	wsnap_json_summary(&j, &is);
	wsnap_json_end(&j);
}

int wsnap_cmd_hydrate(int argc, char **argv)
{
	static struct wsnap_error err; /* large: not on the stack */
	struct hydrate_args a = {.kind = WSNAP_OVERLAY_AUTO};
	struct wsnap_hydrate_state st;
	struct wsnap_hydrate_archive_id after;
	const struct wsnap_node *hidden;
	struct wsnap_index *idx = NULL;
	enum wsnap_status status;
	bool made = false, ws_missing;
	int rc;

	memset(&st, 0, sizeof(st));
	wsnap_error_clear(&err);
	wsnap_policy_init(&a.policy);
	rc = parse_args(&a, argc, argv);
	if (rc) {
		rc = rc < 0 ? 0 : rc;
		goto out;
	}

	st.workspace = wsnap_mounts_resolve(a.workspace, &ws_missing, &err);
	if (!st.workspace) {
		status = err.status;
		goto report;
	}
	st.dir = wsnap_hydrate_state_dir(st.workspace);
	if (!st.dir) {
		status = wsnap_error_io(&err, EINVAL, a.workspace,
					"cannot hydrate into");
		goto report;
	}
	status = check_workspace(&a, st.workspace, ws_missing, st.dir, &err);
	if (status != WSNAP_OK)
		goto report;
	if (a.upper) {
		st.upper = check_upper(a.upper, st.workspace, st.dir, &err);
		if (!st.upper) {
			status = err.status;
			goto report;
		}
	}
	st.own_upper = !a.upper;

	/* the archive: its identity around the read, so that the state
	 * describes the very file the index was built from */
	if (strcmp(a.archive, "-") == 0)
		st.archive = strdup("-");
	else if (wsnap_remote_is_url(a.archive))
		st.archive = wsnap_remote_label(a.archive); /* no secrets */
	else
		st.archive = realpath(a.archive, NULL);
	if (!st.archive) {
		status = wsnap_error_io(&err, errno, a.archive, "cannot open");
		goto report;
	}
	status = wsnap_hydrate_archive_id(a.archive, &st.arc, &err);
	if (status == WSNAP_OK)
		status = wsnap_load_index(a.archive, &a.policy, true, &a.load,
					  &idx, &err);
	if (status == WSNAP_OK)
		status = wsnap_hydrate_archive_id(a.archive, &after, &err);
	if (status != WSNAP_OK)
		goto report;
	if (st.arc.valid && !wsnap_hydrate_archive_same(&st.arc, &after)) {
		status = wsnap_error_io(&err, EAGAIN, a.archive,
					"archive changed while being read:");
		goto report;
	}
	/* what fuse-overlayfs would not show as it is refuses that overlay */
	hidden = wsnap_upper_fuse_hidden(idx);
	st.fuse_hidden = hidden ? hidden->path : NULL;
	wsnap_hydrate_policy_id(&a.policy, st.policy);
	/* saved as the kernel's unless told; corrected once mounted */
	st.kind = a.kind == WSNAP_OVERLAY_FUSE ? WSNAP_OVERLAY_FUSE
					       : WSNAP_OVERLAY_KERNEL;

	status = need_dir(st.workspace, ws_missing, &err);
	if (status == WSNAP_OK)
		status = wsnap_hydrate_state_create(&st, &err);
	if (status != WSNAP_OK)
		goto report;
	made = true;
	status = make_state(&st, idx, &err);
	if (status == WSNAP_OK)
		status = wsnap_mount_snapshot(idx, st.archive, st.lower, &err);
	if (status == WSNAP_OK) {
		enum wsnap_overlay saved = st.kind;

		st.kind = a.kind;
		status = wsnap_hydrate_mount_overlay(&st, &err);
		if (status != WSNAP_OK)
			st.kind = saved;
		else if (st.kind != saved)
			status = wsnap_hydrate_state_save(&st, &err);
	}
	if (status == WSNAP_OK && a.common.verbose)
		say_hydrated(&st, idx);
	if (status == WSNAP_OK && a.common.json) {
		print_json(&st, idx);
		fflush(stdout);
	}

report:
	rc = status == WSNAP_OK
		     ? 0
		     : wsnap_report_hint(&err, a.common.json,
					 err.errnum == ENOTEMPTY ? hint_force
								 : NULL);
	if (status != WSNAP_OK && made)
		roll_back(&st);
out:
	wsnap_index_free(idx);
	wsnap_hydrate_state_release(&st);
	wsnap_policy_release(&a.policy);
	return rc;
}
