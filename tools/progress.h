/* SPDX-License-Identifier: MIT */
/*
 * The progress line of long work (cli.md 'Common options'): reading a
 * large archive, export, pack. On a terminal it is one line on stderr,
 * rewritten in place ('\r') and erased when the work ends; forced on
 * elsewhere (--progress), each update is a line of its own, so that a log
 * file holds no terminal control sequences. Updates come at most every
 * WSNAP_PROGRESS_EVERY_NS, plus the final one.
 *
 * Whether a line is shown at all is the process's progress mode: auto (the
 * default: on a terminal, for work the caller guesses to be long), on
 * (--progress) or off (--no-progress, -q).
 */
#ifndef WSNAP_PROGRESS_H
#define WSNAP_PROGRESS_H

#include <stdbool.h>
#include <stdint.h>
#include <time.h>

#define WSNAP_PROGRESS_EVERY_NS 200000000LL

enum wsnap_progress_mode {
	WSNAP_PROGRESS_AUTO,
	WSNAP_PROGRESS_ON,
	WSNAP_PROGRESS_OFF,
};

/* Sets the mode for the rest of the process (wsnap_common_apply). */
void wsnap_progress_mode_set(enum wsnap_progress_mode mode);

/* One progress line; fill with wsnap_progress_begin. */
struct wsnap_progress {
	bool on;	      /* shown at all */
	bool tty;	      /* stderr is a terminal: rewritten in place */
	bool shown;	      /* a line was written */
	bool done;	      /* the final line was written */
	int64_t wait_ns;      /* before the first line (auto mode only) */
	struct timespec last; /* the start, then the last line */
};

/*
 * Starts a line for work that auto mode shows when long is true and
 * stderr is a terminal, after delay_ns (so that quick work shows
 * nothing). --progress shows it from the first update, whatever long.
 */
void wsnap_progress_begin(struct wsnap_progress *p, bool long_work,
			  int64_t delay_ns);

/*
 * True when a line is due now (always for the first final update of a line
 * that is on; never after it): the caller then writes its text to stderr and
 * calls wsnap_progress_put_end. The lead 'wsnap: ' (after '\r' on a terminal)
 * is already written.
 */
bool wsnap_progress_due(struct wsnap_progress *p, bool final);

/* Ends the text of a line that was due. */
void wsnap_progress_put_end(struct wsnap_progress *p);

/*
 * The line of work over members, when due: 'WHAT: 12/345 members, 6/78
 * MiB'; final once members_done reaches members_total.
 */
void wsnap_progress_members(struct wsnap_progress *p, const char *what,
			    uint64_t members_done, uint64_t members_total,
			    uint64_t bytes_done, uint64_t bytes_total);

/* The work is over (or failed): on a terminal, the line is erased. */
void wsnap_progress_end(struct wsnap_progress *p);

#endif
