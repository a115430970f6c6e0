/* SPDX-License-Identifier: MIT */
/*
 * Making a snapshot of a directory (cli.md 'wsnap pack'), the inverse of
 * export.
 *
 * Three steps, each finished before the next begins:
 *  1. plan: the tree is walked (tree.h) into the index builder, so the
 *     policy runs on exactly the members that will be written; a FIFO, a
 *     device, a symlink leaving the directory (unless allowed) is rejected
 *     here, before anything is written, with the message 'check' prints;
 *  2. write: members '.' and './<rel>' in bytewise path order (a directory
 *     before its contents), pax format through libarchive, uid/gid 0 and no
 *     owner names, mtimes with their fraction, no atime/ctime, symlinks as
 *     symlinks, every hardlink as a regular file of its own, no socket;
 *     permission bits as on disk without setuid/setgid/sticky. Files are
 *     opened through the cursor (no link followed) and must keep the size
 *     the walk saw from open to end of file, else 'file changed while being
 *     read' (WSNAP_IO) and the output is abandoned. A second thread reads
 *     the files ahead of the writer (at most 8 MiB ahead);
 *  3. check: the written archive is read back and validated under the same
 *     policy, and must hold the members planned.
 *
 * The output is a pure function of the tree (names, types, modes, sizes,
 * mtimes, targets, bytes) and the options: no time, user, locale or process
 * id enters it (gzip without timestamp, no pax attributes beyond path,
 * linkpath, size, mtime and hdrcharset), so packing the same tree twice
 * gives byte-identical archives for every compression.
 */
#ifndef WSNAP_PACK_H
#define WSNAP_PACK_H

#include <stdint.h>

#include "error.h"
#include "policy.h"

/* Every compression wsnap reads (libarchive's write filters of those). */
enum wsnap_pack_compress {
	WSNAP_PACK_NONE,
	WSNAP_PACK_GZIP,
	WSNAP_PACK_ZSTD,
	WSNAP_PACK_XZ,
	WSNAP_PACK_BZIP2,
	WSNAP_PACK_LZ4,
};

/* How far the writing (step 2) is. */
struct wsnap_pack_progress {
	uint64_t members_done; /* written, root excluded */
	uint64_t members_total;
	uint64_t bytes_done; /* file bytes written */
	uint64_t bytes_total;
};

/* The names --compress takes, as its usage line shows them. */
#define WSNAP_PACK_COMPRESS_NAMES "none|gzip|bzip2|xz|zstd|lz4"

/* The extensions wsnap_pack_compress_for knows, for messages. */
#define WSNAP_PACK_EXTENSIONS                                                  \
	".tar, .tar.gz, .tgz, .tar.bz2, .tbz2, .tar.xz, .txz, .tar.zst, "      \
	".tzst or .tar.lz4"

struct wsnap_pack_opts {
	const struct wsnap_policy *policy;
	enum wsnap_pack_compress compress;
	const char *tmpdir; /* for OUT '-': NULL means $TMPDIR, else /tmp */
	/*
	 * Optional: called once between the plan and the writing, after the
	 * policy accepted the tree (tests change the tree here to check that
	 * a file changed after the walk is caught).
	 */
	void (*after_plan)(void *ctx);
	void *after_plan_ctx;
	/* Optional: called after each member written (the caller decides
	 * when to show it); last with members_done == members_total. */
	void (*progress)(void *ctx, const struct wsnap_pack_progress *p);
	void *progress_ctx;
};

struct wsnap_pack_stats {
	uint64_t members; /* written, root excluded */
	uint64_t dirs;
	uint64_t files;
	uint64_t symlinks;
	uint64_t file_bytes; /* sum of file sizes */
	uint64_t out_bytes;  /* bytes of the (compressed) archive */
	/* as read back by the check ("none", "gzip", ...; static) */
	const char *compression;
};

/*
 * The compression an output name asks for, into *c: '.tar' none,
 * '.tar.gz'/'.tgz' gzip, '.tar.bz2'/'.tbz2' bzip2, '.tar.xz'/'.txz' xz,
 * '.tar.zst'/'.tzst' zstd, '.tar.lz4' lz4, and '-' (standard output) none.
 * The extension is matched without regard to ASCII case ('X.TAR.GZ' is
 * gzip): a name in capitals asks for the same thing. Returns 0, or -1 for
 * any other name (then OUT needs --compress: 'p.zip', 'p.tar.gz.part',
 * 'p').
 */
int wsnap_pack_compress_for(const char *out, enum wsnap_pack_compress *c);

/* Parses a name of WSNAP_PACK_COMPRESS_NAMES; returns 0, or -1 for another
 * name. */
int wsnap_pack_compress_parse(const char *name, enum wsnap_pack_compress *c);

/*
 * Packs the tree under root_fd (not closed; label names it in messages)
 * into out_fd (written from its position; not closed), all three steps,
 * the check reading out_fd back (so out_fd must be a readable, seekable
 * regular file). On failure the content of out_fd is undefined. Fills *st
 * (may be NULL). Errors: WSNAP_REJECTED (policy, before anything is
 * written; or the final check), WSNAP_IO (reading the tree, a file that
 * changed, writing).
 */
enum wsnap_status wsnap_pack_fd(int root_fd, const char *label, int out_fd,
				const struct wsnap_pack_opts *opts,
				struct wsnap_pack_stats *st,
				struct wsnap_error *err);

/*
 * The whole command: packs directory dir into out. For a file, out is
 * written under a temporary name beside it and renamed into place only once
 * checked (mode 0666 less the umask); for '-' the archive is built and
 * checked in an unlinked temporary file, then copied to standard output.
 * Nothing is created when the policy rejects the tree.
 */
enum wsnap_status wsnap_pack_run(const char *dir, const char *out,
				 const struct wsnap_pack_opts *opts,
				 struct wsnap_pack_stats *st,
				 struct wsnap_error *err);

#endif
