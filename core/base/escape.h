/*
 * Escaping member names and targets for people and for scripts
 * (policy.md section 2, cli.md). Pure functions over bytes; they write into
 * a caller's buffer and never allocate.
 */
#ifndef WSNAP_ESCAPE_H
#define WSNAP_ESCAPE_H

#include <stddef.h>
#include <stdint.h>

/*
 * Length of the valid UTF-8 sequence at s[0..len) (len > 0), or 0 when s[0]
 * does not start one (the invariants of escape.c say which do). *cp
 * receives the code point. Also used by casefold.c.
 */
size_t wsnap_utf8_seq(const unsigned char *s, size_t len, uint32_t *cp);

/* Capacity that any escaping of len input bytes fits in (with NUL). */
#define WSNAP_ESCAPE_CAP(len) (6 * (len) + 3)

/*
 * Python-repr-like quoting (section 2): '...' normally, "..." when the
 * name contains ' but no "; \\ \t \n \r escaped; other control bytes (C0,
 * DEL, and the C1 code points U+0080-U+009F) and bytes that are not valid
 * UTF-8 as \xHH. Writes at most WSNAP_ESCAPE_CAP(len) bytes including the
 * NUL; returns the length written.
 */
size_t wsnap_escape_repr(char *out, const char *s, size_t len);

/* The same escaping without the surrounding quotes (and without escaping
 * quote characters): for 'ls' paths and targets inside reason strings. */
size_t wsnap_escape_bare(char *out, const char *s, size_t len);

/*
 * A JSON string literal, quotes included: valid UTF-8 as is (control
 * characters as \uXXXX, " and \\ escaped), each byte that is not valid
 * UTF-8 as the lone surrogate \udcXX (Python's os.fsdecode).
 */
size_t wsnap_escape_json(char *out, const char *s, size_t len);

#endif
