/*
 * wsnap unmount [--lazy] MOUNTPOINT|WORKSPACE
 *
 * Finds what is mounted at the path (/proc/self/mountinfo, the topmost
 * mount there) and takes it down according to its kind:
 *  - MOUNT_KIND_SNAPSHOT: a 'wsnap mount' (type fuse.wsnap): fusermount3 -u,
 *    or -uz with --lazy. A live daemon sees the unmount and exits; the mount
 *    of a daemon that died (the path answers ENOTCONN) is cleared the same
 *    way. A busy mount is refused by the kernel (EBUSY) with nothing
 *    changed: exit 4, with a hint to --lazy.
 * Kinds are recognized in mount_kind_of() and handled in unmount_path();
 * a new kind (hydrate's overlay over a snapshot mount, with its state)
 * adds a case to both.
 */
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "commands.h"
#include "opts.h"

/* Most bytes of fusermount3's error output kept for the message. */
#define UNMOUNT_MSG_MAX 1024

enum {
	OPT_LAZY = WSNAP_OPT_FIRST_PRIVATE,
};

enum mount_kind {
	MOUNT_KIND_NONE,     /* nothing mounted at the path */
	MOUNT_KIND_SNAPSHOT, /* wsnap mount: FUSE, subtype wsnap */
	MOUNT_KIND_OTHER,    /* not ours: refused */
};

static void usage(FILE *f)
{
	fprintf(f, "usage: wsnap unmount [--lazy] MOUNTPOINT|WORKSPACE\n\n"
		   "Takes down what 'wsnap mount' set up at MOUNTPOINT; also "
		   "clears the mount of\na filesystem daemon that died. A busy "
		   "mount (a process has a file open or\nits working directory "
		   "in it) is refused with nothing changed.\n\n"
		   "  -z, --lazy   detach a busy mount now; it goes away when "
		   "its last user leaves\n"
		   "  -h, --help   this help\n\n"
		   "exit status: 0 unmounted, 2 usage, 4 not mounted, busy or "
		   "I/O error\n");
}

/*
 * The absolute path of path without following its last component, which
 * may be a dead mount that answers ENOTCONN (realpath() would fail there).
 * Returns a malloc'd string, or NULL with err set.
 */
static char *resolve_path(const char *path, struct wsnap_error *err)
{
	char *copy = NULL, *dir = NULL, *out = NULL;
	const char *base, *parent;
	char *slash;
	size_t len, n;

	out = realpath(path, NULL);
	if (out || errno != ENOTCONN) {
		if (!out)
			wsnap_error_io(err, errno, path, "cannot access");
		return out;
	}
	copy = strdup(path);
	if (!copy)
		goto oom;
	len = strlen(copy);
	while (len > 1 && copy[len - 1] == '/')
		copy[--len] = '\0';
	slash = strrchr(copy, '/');
	if (slash) {
		*slash = '\0';
		base = slash + 1;
		parent = slash == copy ? "/" : copy;
	} else {
		base = copy;
		parent = ".";
	}
	if (!*base || strcmp(base, ".") == 0 || strcmp(base, "..") == 0) {
		wsnap_error_io(err, ENOTCONN, path, "cannot access");
		goto out;
	}
	dir = realpath(parent, NULL);
	if (!dir) {
		wsnap_error_io(err, errno, parent, "cannot access");
		goto out;
	}
	n = strlen(dir) + strlen(base) + 2;
	out = malloc(n);
	if (!out)
		goto oom;
	snprintf(out, n, "%s%s%s", dir, strcmp(dir, "/") == 0 ? "" : "/", base);
	goto out;
oom:
	wsnap_error_io(err, ENOMEM, path, "out of memory");
out:
	free(copy);
	free(dir);
	return out;
}

/* Undoes mountinfo's octal escapes (\040 for a space ...) in place. */
static void unescape_octal(char *s)
{
	char *d = s;

	while (*s) {
		if (s[0] == '\\' && s[1] >= '0' && s[1] <= '3' && s[2] >= '0' &&
		    s[2] <= '7' && s[3] >= '0' && s[3] <= '7') {
			*d++ = (char)((s[1] - '0') * 64 + (s[2] - '0') * 8 +
				      (s[3] - '0'));
			s += 4;
		} else {
			*d++ = *s++;
		}
	}
	*d = '\0';
}

/* The next space-separated field of *p (NUL-terminated in place), or NULL. */
static char *next_field(char **p)
{
	char *s = *p, *e;

	while (*s == ' ')
		s++;
	if (!*s || *s == '\n')
		return NULL;
	e = s + strcspn(s, " \n");
	if (*e)
		*e++ = '\0';
	*p = e;
	return s;
}

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
	int kind = MOUNT_KIND_NONE;
	char *line = NULL;
	size_t linecap = 0;
	FILE *f;

	f = fopen("/proc/self/mountinfo", "re");
	if (!f) {
		wsnap_error_io(err, errno, "/proc/self/mountinfo",
			       "cannot read");
		return -1;
	}
	/* id parent maj:min root MOUNTPOINT opts [optional...] - TYPE ... */
	while (getline(&line, &linecap, f) > 0) {
		char *p = line, *tok, *mnt = NULL, *type = NULL;
		int field = 0;
		bool dash = false;

		while ((tok = next_field(&p)) != NULL) {
			if (field == 4)
				mnt = tok;
			else if (dash) {
				type = tok;
				break;
			} else if (field > 5 && strcmp(tok, "-") == 0)
				dash = true;
			field++;
		}
		if (!mnt || !type)
			continue;
		unescape_octal(mnt);
		if (strcmp(mnt, abs) != 0)
			continue;
		/* later lines are mounted on top of earlier ones */
		unescape_octal(type);
		snprintf(fstype, cap, "%s", type);
		kind = kind_of_type(type);
	}
	free(line);
	fclose(f);
	return kind;
}

/*
 * Runs fusermount3 -u (-uz when lazy) on abs. Its error output, if it
 * fails, goes into err's reason. Returns the status.
 */
static enum wsnap_status run_fusermount(const char *abs, bool lazy,
					struct wsnap_error *err)
{
	char msg[UNMOUNT_MSG_MAX];
	size_t len = 0;
	int fds[2], wstatus = 0;
	ssize_t n;
	pid_t pid;
	char *nl;

	if (pipe2(fds, O_CLOEXEC) != 0)
		return wsnap_error_io(err, errno, abs, "cannot create a pipe");
	fflush(stdout);
	fflush(stderr);
	pid = fork();
	if (pid < 0) {
		close(fds[0]);
		close(fds[1]);
		return wsnap_error_io(err, errno, abs, "cannot fork");
	}
	if (pid == 0) {
		char *argv[] = {"fusermount3", lazy ? "-uz" : "-u", "--",
				(char *)abs, NULL};

		dup2(fds[1], STDERR_FILENO);
		execvp(argv[0], argv);
		fprintf(stderr, "cannot run fusermount3: %s\n",
			strerror(errno));
		_exit(127);
	}
	close(fds[1]);
	while ((n = read(fds[0], msg + len, sizeof(msg) - 1 - len)) != 0) {
		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0)
			break;
		len += (size_t)n;
		if (len == sizeof(msg) - 1) {
			char sink[256];

			/* keep the start; drain the rest */
			while (read(fds[0], sink, sizeof(sink)) > 0)
				;
			break;
		}
	}
	msg[len] = '\0';
	close(fds[0]);
	while (waitpid(pid, &wstatus, 0) < 0 && errno == EINTR)
		;
	if (WIFEXITED(wstatus) && WEXITSTATUS(wstatus) == 0)
		return WSNAP_OK;
	nl = strchr(msg, '\n');
	if (nl)
		*nl = '\0';
	/* the refusal users meet most gets its errno, so that it reads
	 * 'cannot unmount 'X': Device or resource busy' */
	if (strstr(msg, strerror(EBUSY)))
		return wsnap_error_io(err, EBUSY, abs, "cannot unmount");
	return wsnap_error_io(err, 0, abs, "cannot unmount (%s)",
			      len ? msg : "fusermount3 failed");
}

static enum wsnap_status unmount_path(const char *abs, enum mount_kind kind,
				      const char *fstype, bool lazy,
				      struct wsnap_error *err)
{
	switch (kind) {
	case MOUNT_KIND_SNAPSHOT:
		return run_fusermount(abs, lazy, err);
	case MOUNT_KIND_NONE:
		return wsnap_error_io(err, 0, abs, "nothing is mounted at");
	default:
		return wsnap_error_io(err, 0, abs, "not a wsnap mount (%s) at",
				      fstype);
	}
}

int wsnap_cmd_unmount(int argc, char **argv)
{
	static const struct option longopts[] = {
		{"lazy", no_argument, NULL, OPT_LAZY},
		{"help", no_argument, NULL, WSNAP_OPT_HELP},
		{NULL, 0, NULL, 0},
	};
	static struct wsnap_error err; /* large: not on the stack */
	enum wsnap_status status;
	char fstype[64] = "";
	bool lazy = false;
	char *abs = NULL;
	int opt, kind;

	wsnap_error_clear(&err);
	optind = 1;
	opterr = 0;
	while ((opt = getopt_long(argc, argv, ":zh", longopts, NULL)) != -1) {
		switch (opt) {
		case 'z':
		case OPT_LAZY:
			lazy = true;
			break;
		case 'h':
		case WSNAP_OPT_HELP:
			usage(stdout);
			return 0;
		default:
			return wsnap_opts_bad_option("unmount", opt, argv);
		}
	}
	if (argc - optind != 1)
		return wsnap_usage_error("unmount", "want one MOUNTPOINT");

	abs = resolve_path(argv[optind], &err);
	if (!abs)
		return wsnap_report(&err, false);
	kind = mount_kind_of(abs, fstype, sizeof(fstype), &err);
	if (kind < 0)
		status = WSNAP_IO;
	else
		status = unmount_path(abs, (enum mount_kind)kind, fstype, lazy,
				      &err);
	free(abs);
	if (status == WSNAP_OK)
		return 0;
	status = (enum wsnap_status)wsnap_report(&err, false);
	if (err.errnum == EBUSY)
		fprintf(stderr, "wsnap: hint: --lazy detaches a busy mount; it "
				"goes away when its last user leaves\n");
	return (int)status;
}
