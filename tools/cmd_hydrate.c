/*
 * wsnap hydrate [POLICY] [--upper DIR] [--force] [--overlay KIND] [-v]
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
#include <getopt.h>
#include <dirent.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "commands.h"
#include "hydrate.h"
#include "mounts.h"
#include "opts.h"

#define CMD "hydrate"

enum {
	OPT_UPPER = WSNAP_OPT_FIRST_PRIVATE,
	OPT_FORCE,
	OPT_OVERLAY,
};

struct hydrate_args {
	struct wsnap_policy policy;
	const char *upper; /* --upper, or NULL */
	bool force;
	bool verbose;
	enum wsnap_overlay kind;
	const char *archive;
	const char *workspace;
};

static void usage(FILE *f)
{
	fprintf(f,
		"usage: wsnap hydrate [POLICY] [--upper DIR] [--force] "
		"[--overlay KIND] ARCHIVE\n"
		"                     WORKSPACE\n\n"
		"A writable workspace over a snapshot: ARCHIVE is validated "
		"and "
		"mounted\nread-only as the lower layer, an overlay of an upper "
		"directory over it is\nmounted at WORKSPACE (made if missing). "
		"Files are read from the archive\nlazily; every change lands "
		"in "
		"the upper directory. Returns once WORKSPACE\nanswers; 'wsnap "
		"unmount WORKSPACE' takes it all down.\n\n"
		"State: WORKSPACE's sibling .NAME.wsnap/ (lower/, upper/, "
		"work/, state).\n\n"
		"  --upper DIR     keep changes in DIR (kept by unmount; a "
		"fresh upper\n"
		"                  directory in the state directory is "
		"removed)\n"
		"  --force         mount over a WORKSPACE that is not empty "
		"(its "
		"files are\n"
		"                  hidden until unmounted)\n"
		"  --overlay KIND  auto (default: the kernel's overlayfs where "
		"permitted,\n"
		"                  else fuse-overlayfs), kernel or fuse\n"
		"  -v, --verbose   say what was mounted where\n"
		"  -h, --help      this help\n\n"
		"%s\n"
		"exit status: 0 ready, 2 usage, 3 archive rejected, 4 I/O "
		"error "
		"or mount failure\n",
		wsnap_policy_help);
}

static int parse_args(struct hydrate_args *a, int argc, char **argv)
{
	static const struct option longopts[] = {
		WSNAP_POLICY_LONGOPTS,
		{"upper", required_argument, NULL, OPT_UPPER},
		{"force", no_argument, NULL, OPT_FORCE},
		{"overlay", required_argument, NULL, OPT_OVERLAY},
		{"verbose", no_argument, NULL, 'v'},
		{"help", no_argument, NULL, WSNAP_OPT_HELP},
		{NULL, 0, NULL, 0},
	};
	int opt, rc;

	optind = 1;
	opterr = 0;
	while ((opt = getopt_long(argc, argv, ":vh", longopts, NULL)) != -1) {
		switch (opt) {
		case OPT_UPPER:
			a->upper = optarg;
			break;
		case OPT_FORCE:
			a->force = true;
			break;
		case OPT_OVERLAY:
			if (strcmp(optarg, "auto") == 0)
				a->kind = WSNAP_OVERLAY_AUTO;
			else if (strcmp(optarg, "kernel") == 0)
				a->kind = WSNAP_OVERLAY_KERNEL;
			else if (strcmp(optarg, "fuse") == 0)
				a->kind = WSNAP_OVERLAY_FUSE;
			else
				return wsnap_usage_error(
					CMD,
					"bad --overlay %s (want auto, "
					"kernel or fuse)",
					optarg);
			break;
		case 'v':
			a->verbose = true;
			break;
		case 'h':
		case WSNAP_OPT_HELP:
			usage(stdout);
			return -1;
		default:
			rc = wsnap_opts_rest(CMD, &a->policy, opt, optarg,
					     argv);
			if (rc != 1)
				return rc;
		}
	}
	if (argc - optind != 2)
		return wsnap_usage_error(CMD, "want ARCHIVE and WORKSPACE");
	a->archive = argv[optind];
	a->workspace = argv[optind + 1];
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
	const char *slash;
	char *out;
	size_t plen;

	if (st->own_upper ||
	    (stat(st->upper, &su) == 0 && stat(st->dir, &sd) == 0 &&
	     su.st_dev == sd.st_dev)) {
		out = wsnap_path_join(st->dir, "work");
		goto done;
	}
	slash = strrchr(st->upper, '/');
	plen = (size_t)(slash - st->upper);
	out = malloc(strlen(st->upper) + sizeof("/..wsnap-work"));
	if (out)
		snprintf(out, strlen(st->upper) + sizeof("/..wsnap-work"),
			 "%.*s/.%s.wsnap-work", (int)plen, st->upper,
			 slash + 1);
done:
	if (!out)
		wsnap_error_io(err, ENOMEM, st->dir, "out of memory");
	return out;
}

static enum wsnap_status make_dir(const char *path, mode_t mode,
				  struct wsnap_error *err)
{
	if (mkdir(path, mode) != 0)
		return wsnap_error_io(err, errno, path,
				      "cannot make directory");
	return WSNAP_OK;
}

/*
 * A fresh upper directory starts with the snapshot root's mode and mtime:
 * the workspace root then looks like the snapshot's until changed.
 */
static enum wsnap_status init_upper(const char *upper,
				    const struct wsnap_index *idx,
				    struct wsnap_error *err)
{
	const struct wsnap_node *root = wsnap_index_node(idx, WSNAP_ROOT_INO);
	struct timespec ts[2];
	enum wsnap_status status = make_dir(upper, 0755, err);

	if (status != WSNAP_OK)
		return status;
	ts[0].tv_sec = root->mtime_sec;
	ts[0].tv_nsec = root->mtime_nsec;
	ts[1] = ts[0];
	if (chmod(upper, root->mode & 07777) != 0 ||
	    utimensat(AT_FDCWD, upper, ts, AT_SYMLINK_NOFOLLOW) != 0)
		return wsnap_error_io(err, errno, upper, "cannot set up");
	return WSNAP_OK;
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
		status = make_dir(st->lower, 0755, err);
	if (status == WSNAP_OK && st->own_upper)
		status = init_upper(st->upper, idx, err);
	if (status == WSNAP_OK)
		status = make_dir(st->work, 0700, err);
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
	else
		st.archive = realpath(a.archive, NULL);
	if (!st.archive) {
		status = wsnap_error_io(&err, errno, a.archive, "cannot open");
		goto report;
	}
	status = wsnap_hydrate_archive_id(a.archive, &st.arc, &err);
	if (status == WSNAP_OK)
		status = wsnap_load_index(a.archive, &a.policy, true, &idx,
					  &err);
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
		status = make_dir(st.dir, 0700, &err);
	if (status != WSNAP_OK)
		goto report;
	made = true;
	status = make_state(&st, idx, &err);
	if (status == WSNAP_OK)
		status = wsnap_mount_snapshot(idx, st.lower, &err);
	if (status == WSNAP_OK) {
		enum wsnap_overlay saved = st.kind;

		st.kind = a.kind;
		status = wsnap_hydrate_mount_overlay(&st, &err);
		if (status != WSNAP_OK)
			st.kind = saved;
		else if (st.kind != saved)
			status = wsnap_hydrate_state_save(&st, &err);
	}
	if (status == WSNAP_OK && a.verbose)
		printf("hydrated %s: %s overlay of %s over %s (state in %s)\n",
		       st.workspace,
		       st.kind == WSNAP_OVERLAY_KERNEL ? "kernel"
						       : "fuse-overlayfs",
		       st.upper, st.lower, st.dir);

report:
	rc = status == WSNAP_OK ? 0 : wsnap_report(&err, false);
	if (status != WSNAP_OK && err.errnum == ENOTEMPTY)
		fprintf(stderr, "wsnap: hint: --force mounts over a workspace "
				"that is not empty (its files are hidden until "
				"unmounted)\n");
	if (status != WSNAP_OK && made)
		roll_back(&st);
out:
	wsnap_index_free(idx);
	wsnap_hydrate_state_release(&st);
	wsnap_policy_release(&a.policy);
	return rc;
}
