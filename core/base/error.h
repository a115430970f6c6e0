/* SPDX-License-Identifier: MIT */
/*
 * The one error type of wsnap.
 *
 * A fallible core function returns an enum wsnap_status and takes a
 * struct wsnap_error * as its last argument. The error is filled where the
 * problem is detected and passed up unchanged: callers never re-word it.
 * Status values equal the program's exit codes (cli.md), so the tools map a
 * status to an exit code by value.
 *
 * Reporting never allocates: member and reason are fixed buffers holding raw
 * bytes (a member name may be any bytes but NUL). Escaping for a terminal or
 * for JSON is done when printing (escape.h), never here.
 */
#ifndef WSNAP_ERROR_H
#define WSNAP_ERROR_H

#include <stddef.h>

enum wsnap_status {
	WSNAP_OK = 0,
	WSNAP_USAGE = 2,    /* bad option or argument */
	WSNAP_REJECTED = 3, /* policy rejection or invalid tar stream */
	WSNAP_IO = 4,	    /* I/O or system error, out of memory */
};

/* Member reported for a stream the reader cannot parse, and its reason. */
#define WSNAP_TAR_MEMBER	    "<tar>"
#define WSNAP_REASON_INVALID_STREAM "invalid tar stream"

#define WSNAP_ERROR_TEXT_MAX 8192

struct wsnap_error {
	enum wsnap_status status;
	/* errno for WSNAP_IO where one applies, else 0 */
	int errnum;
	/*
	 * WSNAP_REJECTED: the member name (raw bytes) and the reason string of
	 * policy.md, byte for byte (a target inside it is raw too).
	 * WSNAP_IO / WSNAP_USAGE: member is the path concerned ("" if none),
	 * reason says what failed ("cannot open", "no space left writing").
	 * Both are NUL-terminated; text past WSNAP_ERROR_TEXT_MAX - 1 bytes is
	 * cut and 'truncated' is set.
	 */
	char member[WSNAP_ERROR_TEXT_MAX];
	char reason[WSNAP_ERROR_TEXT_MAX];
	int truncated;
};

/* Resets err to status WSNAP_OK with empty texts. */
void wsnap_error_clear(struct wsnap_error *err);

/*
 * Records a rejection of member (raw name) with a reason built from fmt.
 * Returns WSNAP_REJECTED so that callers can write
 * 'return wsnap_error_reject(err, name, "path too long");'.
 */
enum wsnap_status wsnap_error_reject(struct wsnap_error *err,
				     const char *member, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));

/* Records "<tar>": "invalid tar stream"; returns WSNAP_REJECTED. */
enum wsnap_status wsnap_error_stream(struct wsnap_error *err);

/*
 * Records an I/O or system error: errnum (0 if none), the path concerned
 * (may be NULL) and what failed. Returns WSNAP_IO.
 */
enum wsnap_status wsnap_error_io(struct wsnap_error *err, int errnum,
				 const char *path, const char *fmt, ...)
	__attribute__((format(printf, 4, 5)));

/* Records a usage error (message in reason); returns WSNAP_USAGE. */
enum wsnap_status wsnap_error_usage(struct wsnap_error *err, const char *fmt,
				    ...) __attribute__((format(printf, 2, 3)));

#endif
