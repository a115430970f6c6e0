/* SPDX-License-Identifier: MIT */
/*
 * wsnap unmount [--lazy] [--discard] [OPTIONS] MOUNTPOINT|WORKSPACE
 *
 * Finds what is mounted at the path (/proc/self/mountinfo, the topmost
 * mount there) and takes it down according to its kind:
 *  - MOUNT_KIND_SNAPSHOT: a 'wsnap mount' (type fuse.wsnap): fusermount3 -u,
 *    or -uz with --lazy. A live daemon sees the unmount and exits; the mount
 *    of a daemon that died (the path answers ENOTCONN) is cleared the same
 *    way. A busy mount is refused by the kernel (EBUSY) with nothing
 *    changed: exit 4, with a hint to --lazy. A mountpoint the mount made
 *    is removed once unmounted (mountpoint.h).
 *  - a hydrated workspace (it has a state directory, hydrate.h): the
 *    overlay, then the snapshot under it, then the state, by
 *    wsnap_hydrate_unmount(); also when the overlay is already gone. Its
 *    own (fresh) upper directory goes with the state, so a workspace whose
 *    upper directory holds changes (what 'wsnap diff ARCHIVE WORKSPACE'
 *    would list) is refused with nothing changed, unless --discard.
 * Kinds of plain mounts are recognized in mount_kind_of() and handled in
 * unmount_path().
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "commands.h"
#include "hydrate.h"
#include "json.h"
#include "mountpoint.h"
#include "mounts.h"
#include "opts.h"

enum mount_kind {
	MOUNT_KIND_NONE,     /* nothing mounted at the path */
	MOUNT_KIND_SNAPSHOT, /* wsnap mount: FUSE, subtype wsnap */
	MOUNT_KIND_OTHER,    /* not ours: refused */
};

struct unmount_args {
	struct wsnap_common common;
	bool lazy;
	bool discard;
};

/* clang-format off */
static const struct wsnap_option unmount_options[] = {
	WSNAP_OPT_BOOL('z', "lazy", struct unmount_args, lazy,
		       "detach a busy mount now; it goes away when its last "
		       "user leaves"),
	WSNAP_OPT_BOOL(0, "discard", struct unmount_args, discard,
		       "drop the changes of a hydrated workspace (its own "
		       "upper directory); without it, a workspace with "
		       "changes is refused"),
	WSNAP_OPT_COMMON(struct unmount_args, common),
	WSNAP_OPT_END(),
};

static const struct wsnap_cmd_usage unmount_usage = {
	.name = "unmount",
	.operands = "MOUNTPOINT|WORKSPACE",
	.description =
		"Takes down what 'wsnap mount' set up at MOUNTPOINT, or what "
		"'wsnap hydrate' set up at WORKSPACE (the overlay, then the "
		"snapshot under it, then its state directory); also clears "
		"the mounts of filesystem daemons that died. A busy mount (a "
		"process has a file open or its working directory in it) is "
		"refused with nothing changed.\n"
		"\n"
		"A hydrated workspace whose own upper directory holds changes "
		"(paths added, removed, or with other content, mode, type or "
		"symlink target than in the snapshot: what 'wsnap diff "
		"ARCHIVE WORKSPACE' lists) is refused with nothing changed: "
		"'wsnap pack WORKSPACE OUT' keeps them, --discard drops them. "
		"An upper directory the user gave to hydrate is never "
		"removed.",
	.exit_status =
		"0 unmounted, 2 usage, 4 not mounted, busy or I/O error",
	.options = unmount_options,
};
/* clang-format on */

static enum mount_kind kind_of_type(const char *fstype)
{
	return strcmp(fstype, "fuse.wsnap") == 0 ? MOUNT_KIND_SNAPSHOT
						 : MOUNT_KIND_OTHER;
}

/*
 * The kind of the topmost mount at abs (an absolute, resolved path), and
 * its type in fstype (capacity cap). MOUNT_KIND_NONE when nothing is
 * mounted there; -1 when mountinfo cannot be read (err set).
 */
static int mount_kind_of(const char *abs, char *fstype, size_t cap,
			 struct wsnap_error *err)
{
	int found = wsnap_mounts_type_at(abs, fstype, cap, err);

	if (found <= 0)
		return found < 0 ? -1 : MOUNT_KIND_NONE;
	return kind_of_type(fstype);
}

static enum wsnap_status unmount_path(const char *abs, enum mount_kind kind,
				      const char *fstype, bool lazy,
				      struct wsnap_error *err)
{
	enum wsnap_status s;

	switch (kind) {
	case MOUNT_KIND_SNAPSHOT:
		s = wsnap_mounts_fusermount(abs, lazy, err);
		/* a mountpoint that 'wsnap mount' made goes too (its
		 * daemon, if alive, tries the same once it sees the
		 * unmount) */
		if (s == WSNAP_OK)
			wsnap_mountpoint_remove(abs, NULL);
		return s;
	case MOUNT_KIND_NONE:
		return wsnap_error_io(err, 0, abs, "nothing is mounted at");
	default:
		return wsnap_error_io(err, 0, abs, "not a wsnap mount (%s) at",
				      fstype);
	}
}

static const char hint_busy[] =
	"--lazy detaches a busy mount; it goes away when its last user leaves";

/* -v and --json: what was taken down at abs. */
static void announce(const struct unmount_args *a, const char *abs,
		     bool workspace)
{
	struct wsnap_json j;

	if (a->common.verbose) {
		fprintf(stderr, "wsnap: unmount: %s ",
			workspace ? "took down the workspace" : "unmounted");
		wsnap_put_escaped(stderr, WSNAP_ESC_REPR, abs, strlen(abs));
		fputc('\n', stderr);
	}
	if (!a->common.json)
		return;
	wsnap_json_begin(&j, stdout);
	wsnap_json_bool(&j, "ok", true);
	wsnap_json_cstring(&j, workspace ? "workspace" : "mountpoint", abs);
	wsnap_json_end(&j);
	fflush(stdout);
}

int wsnap_cmd_unmount(int argc, char **argv)
{
	static struct wsnap_error err; /* large: not on the stack */
	struct unmount_args a = {0};
	enum wsnap_status status;
	char fstype[WSNAP_FSTYPE_MAX] = "";
	unsigned flags;
	bool lazy, workspace;
	char *abs = NULL;
	int kind, rc;

	wsnap_error_clear(&err);
	rc = wsnap_options_parse(&unmount_usage, &a, &argc, argv);
	if (rc != WSNAP_OPTIONS_RUN)
		return rc;
	wsnap_common_apply(&a.common);
	if (argc != 1)
		return wsnap_usage_error("unmount", "want one MOUNTPOINT");
	lazy = a.lazy;
	flags = (lazy ? WSNAP_HYDRATE_LAZY : 0) |
		(a.discard ? WSNAP_HYDRATE_DISCARD : 0);

	abs = wsnap_mounts_resolve(argv[0], NULL, &err);
	if (!abs)
		return wsnap_report(&err, a.common.json);
	workspace = wsnap_hydrate_unmount(abs, flags, &status, &err);
	if (workspace) {
		/* a hydrated workspace: overlay, snapshot, state */
	} else {
		kind = mount_kind_of(abs, fstype, sizeof(fstype), &err);
		if (kind < 0)
			status = WSNAP_IO;
		else
			status = unmount_path(abs, (enum mount_kind)kind,
					      fstype, lazy, &err);
	}
	if (status == WSNAP_OK)
		announce(&a, abs, workspace);
	free(abs);
	if (status == WSNAP_OK)
		return 0;
	return wsnap_report_hint(&err, a.common.json,
				 err.errnum == EBUSY ? hint_busy : NULL);
}
