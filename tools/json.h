/* SPDX-License-Identifier: MIT */
/*
 * Output helpers for the subcommands: escaped names on a stream, and a
 * writer of one JSON object per line (cli.md --json outputs).
 *
 * Nothing here allocates: escaping goes through a fixed buffer in pieces
 * cut where no UTF-8 sequence is split, so a 4 MiB symlink target prints as
 * exactly as a short one. Write errors are left on the FILE (ferror) for
 * the caller to check once at the end (wsnap_out_finish, opts.h).
 */
#ifndef WSNAP_JSON_H
#define WSNAP_JSON_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

enum wsnap_esc {
	WSNAP_ESC_REPR, /* 'name' (policy.md section 2) */
	WSNAP_ESC_BARE, /* the same without quotes: ls paths, targets */
	WSNAP_ESC_JSON, /* a JSON string literal, quotes included */
};

/* Writes s[0..len) escaped as kind to f. */
void wsnap_put_escaped(FILE *f, enum wsnap_esc kind, const char *s, size_t len);

/*
 * Formats v in decimal into buf (at least 21 bytes), NUL-terminated;
 * returns the length.
 */
size_t wsnap_fmt_u64(char *buf, uint64_t v);

/*
 * Formats a time as seconds with the fraction exactly (no floating point):
 * "1700000000", or with frac "1700000000.123456789" (trailing zeros
 * dropped, at least one digit kept: "1700000000.5", "1700000000.0").
 * nsec must be < 1000000000; a negative sec with a fraction is the instant
 * sec + nsec/1e9 ("-1.5" for sec -2, nsec 500000000). buf holds at least
 * 32 bytes; returns the length.
 */
size_t wsnap_fmt_time(char *buf, int64_t sec, uint32_t nsec, bool frac);

/* Most levels of nested objects in one JSON line. */
#define WSNAP_JSON_MAX_DEPTH 8

/*
 * One JSON object on one line:
 *	struct wsnap_json j;
 *	wsnap_json_begin(&j, stdout);
 *	wsnap_json_bool(&j, "ok", true);
 *	wsnap_json_string(&j, "path", name, len);
 *	wsnap_json_end(&j);		-> {"ok":true,"path":"..."}\n
 * Keys are plain ASCII literals (written as they are).
 */
struct wsnap_json {
	FILE *f;
	unsigned depth;	    /* open objects, the outermost included */
	unsigned non_empty; /* bit d: object at depth d has a member */
};

void wsnap_json_begin(struct wsnap_json *j, FILE *f);
/* Closes every open object and ends the line. */
void wsnap_json_end(struct wsnap_json *j);
/* A nested object as the value of key; close with wsnap_json_close. */
void wsnap_json_open(struct wsnap_json *j, const char *key);
void wsnap_json_close(struct wsnap_json *j);

void wsnap_json_string(struct wsnap_json *j, const char *key, const char *s,
		       size_t len);
/* A NUL-terminated string; NULL writes null. */
void wsnap_json_cstring(struct wsnap_json *j, const char *key, const char *s);
void wsnap_json_u64(struct wsnap_json *j, const char *key, uint64_t v);
void wsnap_json_bool(struct wsnap_json *j, const char *key, bool v);
void wsnap_json_null(struct wsnap_json *j, const char *key);
/* A time as a number, see wsnap_fmt_time. */
void wsnap_json_time(struct wsnap_json *j, const char *key, int64_t sec,
		     uint32_t nsec, bool frac);
/* A file mode as four octal digits in a string: "0755". */
void wsnap_json_mode(struct wsnap_json *j, const char *key, unsigned mode);

#endif
