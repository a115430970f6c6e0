/* SPDX-License-Identifier: MIT */
/*
 * libFuzzer target: arbitrary bytes -> index -> wsnap_export_run into a
 * scratch destination; afterwards nothing outside the destination may exist
 * or have changed (policy.md section 7: "export must never create, modify
 * or remove anything outside the destination root").
 *
 * Scratch layout, made once per process in $TMPDIR (default /dev/shm):
 *
 *   ROOT/victim/           a directory outside the destination
 *   ROOT/victim/file       "untouched\n", 0644
 *   ROOT/box/sibling       a file beside the destination, "sibling\n"
 *   ROOT/box/dest          the destination: absent, or pre-populated
 *
 * Input layout as fuzz_common.h says; the archive is always built with
 * keep_data. Configuration byte 11:
 *   bit 0  dest exists and holds traps named like the seeds' members:
 *          d -> ROOT/victim, link -> ../sibling, x -> ROOT/victim/file,
 *          up -> ../.., a/ (a real directory), f (a file), fifo (a FIFO)
 *   bit 1  export twice into the same destination (the merge path)
 *   bit 2  WSNAP_EXPORT_NO_OPENAT2 (the per-component fallback)
 *   bit 3  WSNAP_EXPORT_NO_COPY_RANGE
 *   bit 4  read the archive from a pipe (the spill file)
 *   bits 5-7 all set: write the files of pass 1 on three threads
 *          (opts.workers), which export chooses by itself only from 1024
 *          files on (rarely: each thread started costs the sanitizers a
 *          few hundred bytes for good; the index is built sequentially
 *          for the same reason, fuzz_index fuzzes the pipeline)
 *
 * Oracles (a violation aborts):
 *  - ROOT holds exactly victim/ and box/, victim/ exactly 'file' with its
 *    content, mode and mtime, box/ exactly 'sibling' (unchanged) and, after
 *    a success or when it existed before, 'dest': no temporary left behind;
 *  - after a success every node of the index is in dest with its type,
 *    symlink target, size and first bytes; with a fresh dest also its mode;
 *  - a failure is a known rejection or WSNAP_IO with ENAMETOOLONG (a
 *    component longer than the filesystem allows is legal in a tar).
 *
 * Found so far: a symlink with an empty target passed validation, was
 * listed and mounted as 'l -> ', and export failed with ENOENT (exit 4);
 * fixed in the reader (d379334), regression case
 * tests/data/malformed/symlink-empty-target.tar.
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "error.h"
#include "export.h"
#include "index.h"
#include "policy.h"
#include "reader.h"

#include "fuzz_common.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

enum fuzz_export_bits {
	FUZZ_EXPORT_TRAPS = 1 << 0,
	FUZZ_EXPORT_TWICE = 1 << 1,
	FUZZ_EXPORT_NO_OPENAT2 = 1 << 2,
	FUZZ_EXPORT_NO_COPY_RANGE = 1 << 3,
	FUZZ_EXPORT_PIPE = 1 << 4,
	FUZZ_EXPORT_THREADS = 7 << 5,
};

#define FUZZ_VICTIM_TEXT  "untouched\n"
#define FUZZ_SIBLING_TEXT "sibling\n"
#define FUZZ_CMP_MAX	  (16u << 10)
#define FUZZ_PATH_MAX	  4096

static char fuzz_root[FUZZ_PATH_MAX];
static char fuzz_dest[FUZZ_PATH_MAX];
static int fuzz_rootfd = -1;
static struct stat fuzz_victim_st, fuzz_file_st, fuzz_sibling_st;

static void fuzz_write_file(int at, const char *name, const char *text)
{
	int fd =
		openat(at, name, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0644);

	FUZZ_CHECK(fd >= 0);
	FUZZ_CHECK(write(fd, text, strlen(text)) == (ssize_t)strlen(text));
	FUZZ_CHECK(fchmod(fd, 0644) == 0);
	close(fd);
}

static void fuzz_rmtree(int at, const char *name);

/* At exit (not after a crash: the scene is kept for the post-mortem). */
static void fuzz_cleanup(void)
{
	char *slash = strrchr(fuzz_root, '/');
	int parent;

	if (fuzz_rootfd < 0 || !slash)
		return;
	*slash = '\0';
	parent = open(fuzz_root, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	*slash = '/';
	if (parent < 0)
		return;
	fuzz_rmtree(parent, slash + 1);
	close(parent);
}

static void fuzz_setup(void)
{
	const char *tmp = getenv("TMPDIR");
	int fd;

	if (fuzz_rootfd >= 0)
		return;
	if (!tmp || !*tmp)
		tmp = access("/dev/shm", W_OK) == 0 ? "/dev/shm" : "/tmp";
	FUZZ_CHECK(snprintf(fuzz_root, sizeof(fuzz_root),
			    "%s/fuzz_export.XXXXXX",
			    tmp) < (int)sizeof(fuzz_root));
	FUZZ_CHECK(mkdtemp(fuzz_root) != NULL);
	fuzz_rootfd = open(fuzz_root, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	FUZZ_CHECK(fuzz_rootfd >= 0);
	FUZZ_CHECK(mkdirat(fuzz_rootfd, "victim", 0755) == 0);
	FUZZ_CHECK(mkdirat(fuzz_rootfd, "box", 0755) == 0);
	fd = openat(fuzz_rootfd, "victim", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	FUZZ_CHECK(fd >= 0);
	fuzz_write_file(fd, "file", FUZZ_VICTIM_TEXT);
	close(fd);
	fd = openat(fuzz_rootfd, "box", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	FUZZ_CHECK(fd >= 0);
	fuzz_write_file(fd, "sibling", FUZZ_SIBLING_TEXT);
	close(fd);
	FUZZ_CHECK(snprintf(fuzz_dest, sizeof(fuzz_dest), "%s/box/dest",
			    fuzz_root) < (int)sizeof(fuzz_dest));
	FUZZ_CHECK(fstatat(fuzz_rootfd, "victim", &fuzz_victim_st,
			   AT_SYMLINK_NOFOLLOW) == 0);
	FUZZ_CHECK(fstatat(fuzz_rootfd, "victim/file", &fuzz_file_st,
			   AT_SYMLINK_NOFOLLOW) == 0);
	FUZZ_CHECK(fstatat(fuzz_rootfd, "box/sibling", &fuzz_sibling_st,
			   AT_SYMLINK_NOFOLLOW) == 0);
	atexit(fuzz_cleanup);
}

/* Removes name in at and everything under it; never follows a symlink.
 * Written here, not borrowed from export, so the harness does not trust
 * the code under test. */
static void fuzz_rmtree(int at, const char *name)
{
	struct dirent *e;
	struct stat st;
	DIR *dir;
	int fd;

	if (fstatat(at, name, &st, AT_SYMLINK_NOFOLLOW) != 0)
		return;
	if (!S_ISDIR(st.st_mode)) {
		FUZZ_CHECK(unlinkat(at, name, 0) == 0);
		return;
	}
	fd = openat(at, name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	FUZZ_CHECK(fd >= 0);
	dir = fdopendir(fd);
	FUZZ_CHECK(dir != NULL);
	while ((e = readdir(dir)) != NULL) {
		if (strcmp(e->d_name, ".") == 0 || strcmp(e->d_name, "..") == 0)
			continue;
		fuzz_rmtree(dirfd(dir), e->d_name);
	}
	closedir(dir);
	FUZZ_CHECK(unlinkat(at, name, AT_REMOVEDIR) == 0);
}

static void fuzz_make_traps(void)
{
	char target[FUZZ_PATH_MAX];
	int fd;

	FUZZ_CHECK(mkdir(fuzz_dest, 0755) == 0);
	fd = open(fuzz_dest, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	FUZZ_CHECK(fd >= 0);
	FUZZ_CHECK(snprintf(target, sizeof(target), "%s/victim", fuzz_root) <
		   (int)sizeof(target));
	FUZZ_CHECK(symlinkat(target, fd, "d") == 0);
	FUZZ_CHECK(snprintf(target, sizeof(target), "%s/victim/file",
			    fuzz_root) < (int)sizeof(target));
	FUZZ_CHECK(symlinkat(target, fd, "x") == 0);
	FUZZ_CHECK(symlinkat("../sibling", fd, "link") == 0);
	FUZZ_CHECK(symlinkat("../..", fd, "up") == 0);
	FUZZ_CHECK(mkdirat(fd, "a", 0700) == 0);
	fuzz_write_file(fd, "f", "trap\n");
	FUZZ_CHECK(mkfifoat(fd, "fifo", 0644) == 0);
	close(fd);
}

/* The directory holds exactly the names given (NULL-terminated). */
static void fuzz_expect_names(int at, const char *path,
			      const char *const *names)
{
	struct dirent *e;
	size_t seen = 0, want = 0, i;
	DIR *dir;
	int fd;

	while (names[want])
		want++;
	fd = openat(at, path, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	FUZZ_CHECK(fd >= 0);
	dir = fdopendir(fd);
	FUZZ_CHECK(dir != NULL);
	while ((e = readdir(dir)) != NULL) {
		if (strcmp(e->d_name, ".") == 0 || strcmp(e->d_name, "..") == 0)
			continue;
		for (i = 0; i < want; i++)
			if (strcmp(e->d_name, names[i]) == 0)
				break;
		if (i == want) {
			fprintf(stderr, "fuzz_export: '%s/%s' appeared\n", path,
				e->d_name);
			abort();
		}
		seen++;
	}
	closedir(dir);
	FUZZ_CHECK(seen == want);
}

static void fuzz_expect_same(const char *path, const struct stat *before,
			     const char *text)
{
	struct stat st;
	char buf[64];
	ssize_t n;
	int fd;

	FUZZ_CHECK(fstatat(fuzz_rootfd, path, &st, AT_SYMLINK_NOFOLLOW) == 0);
	FUZZ_CHECK(st.st_ino == before->st_ino);
	FUZZ_CHECK((st.st_mode & S_IFMT) == (before->st_mode & S_IFMT));
	FUZZ_CHECK(st.st_mode == before->st_mode);
	FUZZ_CHECK(st.st_nlink == before->st_nlink);
	FUZZ_CHECK(st.st_mtim.tv_sec == before->st_mtim.tv_sec &&
		   st.st_mtim.tv_nsec == before->st_mtim.tv_nsec);
	if (!text)
		return;
	fd = openat(fuzz_rootfd, path, O_RDONLY | O_NOFOLLOW | O_CLOEXEC);
	FUZZ_CHECK(fd >= 0);
	n = read(fd, buf, sizeof(buf));
	close(fd);
	FUZZ_CHECK(n == (ssize_t)strlen(text) && memcmp(buf, text, n) == 0);
}

/* Nothing outside the destination exists or changed. */
static void fuzz_check_outside(bool dest_exists)
{
	static const char *const root[] = {"victim", "box", NULL};
	static const char *const victim[] = {"file", NULL};
	static const char *const box_with[] = {"sibling", "dest", NULL};
	static const char *const box_without[] = {"sibling", NULL};

	fuzz_expect_names(fuzz_rootfd, ".", root);
	fuzz_expect_names(fuzz_rootfd, "victim", victim);
	fuzz_expect_names(fuzz_rootfd, "box",
			  dest_exists ? box_with : box_without);
	fuzz_expect_same("victim", &fuzz_victim_st, NULL);
	fuzz_expect_same("victim/file", &fuzz_file_st, FUZZ_VICTIM_TEXT);
	fuzz_expect_same("box/sibling", &fuzz_sibling_st, FUZZ_SIBLING_TEXT);
}

static void fuzz_check_file(const struct wsnap_index *idx, uint32_t ino,
			    const struct wsnap_node *n, int destfd)
{
	static unsigned char want[FUZZ_CMP_MAX], got[FUZZ_CMP_MAX];
	size_t len = n->size < FUZZ_CMP_MAX ? (size_t)n->size : FUZZ_CMP_MAX;
	int fd = openat(destfd, n->path, O_RDONLY | O_NOFOLLOW | O_CLOEXEC);

	FUZZ_CHECK(fd >= 0);
	FUZZ_CHECK(wsnap_index_pread(idx, ino, want, len, 0) == (ssize_t)len);
	FUZZ_CHECK(pread(fd, got, len, 0) == (ssize_t)len);
	FUZZ_CHECK(memcmp(want, got, len) == 0);
	close(fd);
}

/* Every node is in dest as the index says. */
static void fuzz_check_dest(const struct wsnap_index *idx, bool fresh)
{
	uint32_t ino, count = wsnap_index_count(idx);
	char target[FUZZ_PATH_MAX + 1];
	struct stat st;
	ssize_t tn;
	int destfd = open(fuzz_dest, O_RDONLY | O_DIRECTORY | O_CLOEXEC);

	FUZZ_CHECK(destfd >= 0);
	for (ino = 2; ino <= count; ino++) {
		const struct wsnap_node *n = wsnap_index_node(idx, ino);

		if (fstatat(destfd, n->path, &st, AT_SYMLINK_NOFOLLOW) != 0) {
			fprintf(stderr, "fuzz_export: '%s' missing: %s\n",
				n->path, strerror(errno));
			abort();
		}
		switch (n->type) {
		case WSNAP_TYPE_DIR:
			FUZZ_CHECK(S_ISDIR(st.st_mode));
			if (fresh)
				FUZZ_CHECK((st.st_mode & 07777) ==
					   WSNAP_DIR_MODE);
			break;
		case WSNAP_TYPE_FILE:
			FUZZ_CHECK(S_ISREG(st.st_mode));
			FUZZ_CHECK((uint64_t)st.st_size == n->size);
			FUZZ_CHECK((st.st_mode & 07777) == n->mode);
			fuzz_check_file(idx, ino, n, destfd);
			break;
		case WSNAP_TYPE_SYMLINK:
			FUZZ_CHECK(S_ISLNK(st.st_mode));
			tn = readlinkat(destfd, n->path, target,
					sizeof(target) - 1);
			FUZZ_CHECK(tn == (ssize_t)strlen(n->target));
			FUZZ_CHECK(memcmp(target, n->target, tn) == 0);
			break;
		default:
			FUZZ_CHECK(!"node type");
		}
	}
	close(destfd);
}

static bool fuzz_export_reason(const char *reason)
{
	return strcmp(reason, WSNAP_REASON_SYMLINK_PARENT) == 0 ||
	       strncmp(reason, WSNAP_REASON_PARENT_NOT_DIR ": ",
		       strlen(WSNAP_REASON_PARENT_NOT_DIR) + 2) == 0 ||
	       strncmp(reason, WSNAP_REASON_DIRECTORY_EXISTS ": ",
		       strlen(WSNAP_REASON_DIRECTORY_EXISTS) + 2) == 0;
}

static void fuzz_check_failure(enum wsnap_status st,
			       const struct wsnap_error *err, bool exporting)
{
	if (st == WSNAP_REJECTED &&
	    (fuzz_known_reason(err->reason) ||
	     (exporting && fuzz_export_reason(err->reason))))
		return;
	if (st == WSNAP_IO && exporting && err->errnum == ENAMETOOLONG)
		return;
	fprintf(stderr, "fuzz_export: %s: status %d errno %d '%s': %s\n",
		exporting ? "export" : "build", st, err->errnum, err->member,
		err->reason);
	abort();
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct wsnap_reader_opts ropts = {.keep_data = true,
					  .sequential = true};
	struct wsnap_export_opts eopts = {0};
	struct wsnap_policy policy;
	struct wsnap_index *idx = NULL;
	struct wsnap_error err;
	struct fuzz_input in;
	enum wsnap_status st;
	bool existed;
	int fd = -1, round;

	fuzz_setup();
	fuzz_input_parse(&in, &policy, data, size);
	existed = in.extra & FUZZ_EXPORT_TRAPS;
	if (in.extra & FUZZ_EXPORT_NO_OPENAT2)
		eopts.flags |= WSNAP_EXPORT_NO_OPENAT2;
	if (in.extra & FUZZ_EXPORT_NO_COPY_RANGE)
		eopts.flags |= WSNAP_EXPORT_NO_COPY_RANGE;
	eopts.workers =
		(in.extra & FUZZ_EXPORT_THREADS) == FUZZ_EXPORT_THREADS ? 3 : 0;
	if (in.extra & FUZZ_EXPORT_PIPE)
		fd = fuzz_pipe(in.data, in.size);
	if (fd < 0)
		fd = fuzz_memfd(in.data, in.size);
	wsnap_error_clear(&err);
	st = wsnap_index_build(&idx, fd, &policy, &ropts, &err);
	close(fd);
	if (st != WSNAP_OK) {
		fuzz_check_failure(st, &err, false);
		goto out;
	}
	if (existed)
		fuzz_make_traps();
	for (round = 0; round < (in.extra & FUZZ_EXPORT_TWICE ? 2 : 1);
	     round++) {
		wsnap_error_clear(&err);
		st = wsnap_export_run(idx, fuzz_dest, &eopts, NULL, &err);
		if (st != WSNAP_OK) {
			fuzz_check_failure(st, &err, true);
			fuzz_check_outside(existed || round > 0);
			break;
		}
		fuzz_check_outside(true);
		fuzz_check_dest(idx, !existed && round == 0);
	}
	fuzz_rmtree(fuzz_rootfd, "box/dest");
out:
	fuzz_check_outside(false);
	wsnap_index_free(idx);
	wsnap_policy_release(&policy);
	return 0;
}
