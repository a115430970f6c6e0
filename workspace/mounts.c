/* SPDX-License-Identifier: MIT */
/*
 * Mount helpers shared by the subcommands (mounts.h). The snapshot mount
 * itself, wsnap_mount_snapshot(), lives in snapshot.c with the background
 * mount of 'wsnap mount' it shares.
 */
#include "mounts.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "fsutil.h"

/* Keeps the last non-empty line of a stream fed in pieces. */
struct last_line {
	char *out; /* the last complete non-empty line */
	size_t cap;
	char cur[WSNAP_RUN_MSG_MAX]; /* the line being read */
	size_t len;
};

static void last_line_feed(struct last_line *l, const char *buf, size_t n)
{
	size_t i;

	for (i = 0; i < n; i++) {
		if (buf[i] != '\n') {
			if (l->len < sizeof(l->cur) - 1)
				l->cur[l->len++] = buf[i];
			continue;
		}
		if (l->len) {
			l->cur[l->len] = '\0';
			snprintf(l->out, l->cap, "%s", l->cur);
		}
		l->len = 0;
	}
}

int wsnap_run(char *const argv[], char *msg, size_t cap,
	      struct wsnap_error *err)
{
	struct last_line ll = {.out = msg, .cap = cap};
	int fds[2], wstatus = 0;
	char buf[512];
	ssize_t n;
	pid_t pid;

	if (cap)
		msg[0] = '\0';
	if (pipe2(fds, O_CLOEXEC) != 0) {
		wsnap_error_io(err, errno, argv[0], "cannot create a pipe for");
		return -1;
	}
	fflush(stdout);
	fflush(stderr);
	pid = fork();
	if (pid < 0) {
		wsnap_error_io(err, errno, argv[0], "cannot fork to run");
		close(fds[0]);
		close(fds[1]);
		return -1;
	}
	if (pid == 0) {
		int null = open("/dev/null", O_RDONLY | O_CLOEXEC);

		if (null >= 0)
			dup2(null, STDIN_FILENO);
		dup2(fds[1], STDERR_FILENO);
		execvp(argv[0], argv);
		fprintf(stderr, "cannot run %s: %s\n", argv[0],
			strerror(errno));
		_exit(127);
	}
	close(fds[1]);
	for (;;) {
		WSNAP_RETRY_EINTR(n, read(fds[0], buf, sizeof(buf)));
		if (n <= 0)
			break;
		if (cap)
			last_line_feed(&ll, buf, (size_t)n);
	}
	if (cap)
		last_line_feed(&ll, "\n", 1);
	close(fds[0]);
	wsnap_waitpid(pid, &wstatus);
	if (WIFSIGNALED(wstatus))
		return 128 + WTERMSIG(wstatus);
	return WIFEXITED(wstatus) ? WEXITSTATUS(wstatus) : 127;
}

char *wsnap_path_join(const char *a, const char *b)
{
	size_t la = strlen(a), lb = strlen(b);
	char *out = malloc(la + lb + 2);

	if (!out)
		return NULL;
	memcpy(out, a, la);
	out[la] = '/';
	memcpy(out + la + 1, b, lb + 1);
	return out;
}

char *wsnap_mounts_resolve(const char *path, bool *missing,
			   struct wsnap_error *err)
{
	char *copy = NULL, *dir = NULL, *out = NULL;
	const char *base, *parent;
	char *slash;
	size_t len, n;
	int e;

	if (missing)
		*missing = false;
	out = realpath(path, NULL);
	e = errno;
	if (out || (e != ENOTCONN && (e != ENOENT || !missing))) {
		if (!out)
			wsnap_error_io(err, e, path, "cannot access");
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
		wsnap_error_io(err, e, path, "cannot access");
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
	if (missing)
		*missing = e == ENOENT;
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

int wsnap_mounts_type_at(const char *abs, char *fstype, size_t cap,
			 struct wsnap_error *err)
{
	int found = 0;
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
		found = 1;
	}
	free(line);
	fclose(f);
	return found;
}

enum wsnap_status wsnap_mounts_fusermount(const char *abs, bool lazy,
					  struct wsnap_error *err)
{
	char *argv[] = {"fusermount3", lazy ? "-uz" : "-u", "--", (char *)abs,
			NULL};
	char msg[WSNAP_RUN_MSG_MAX];
	int rc;

	rc = wsnap_run(argv, msg, sizeof(msg), err);
	if (rc < 0)
		return err->status;
	if (rc == 0)
		return WSNAP_OK;
	/* the refusal users meet most gets its errno, so that it reads
	 * 'cannot unmount 'X': Device or resource busy' */
	if (strstr(msg, strerror(EBUSY)))
		return wsnap_error_io(err, EBUSY, abs, "cannot unmount");
	return wsnap_error_io(err, 0, abs, "cannot unmount (%s)",
			      msg[0] ? msg : "fusermount3 failed");
}
