/* SPDX-License-Identifier: MIT */
/* The progress line of long work (progress.h). */
#include "progress.h"

#include <inttypes.h>
#include <stdio.h>
#include <unistd.h>

static enum wsnap_progress_mode mode = WSNAP_PROGRESS_AUTO;

void wsnap_progress_mode_set(enum wsnap_progress_mode m)
{
	mode = m;
}

static int64_t elapsed_ns(const struct timespec *a, const struct timespec *b)
{
	return (int64_t)(b->tv_sec - a->tv_sec) * 1000000000LL +
	       (b->tv_nsec - a->tv_nsec);
}

void wsnap_progress_begin(struct wsnap_progress *p, bool long_work,
			  int64_t delay_ns)
{
	p->tty = isatty(STDERR_FILENO);
	p->shown = false;
	p->done = false;
	p->on = mode == WSNAP_PROGRESS_ON ||
		(mode == WSNAP_PROGRESS_AUTO && p->tty && long_work);
	p->wait_ns = mode == WSNAP_PROGRESS_ON ? 0 : delay_ns;
	clock_gettime(CLOCK_MONOTONIC, &p->last);
}

bool wsnap_progress_due(struct wsnap_progress *p, bool final)
{
	struct timespec now;

	if (!p->on || p->done)
		return false;
	clock_gettime(CLOCK_MONOTONIC, &now);
	if (final) {
		/* quick work on a terminal shows nothing, not a flash */
		if (!p->shown && mode != WSNAP_PROGRESS_ON)
			return false;
	} else if (elapsed_ns(&p->last, &now) <
		   (p->shown ? WSNAP_PROGRESS_EVERY_NS : p->wait_ns)) {
		return false;
	}
	p->last = now;
	p->shown = true;
	p->done = final;
	fputs(p->tty ? "\rwsnap: " : "wsnap: ", stderr);
	return true;
}

void wsnap_progress_put_end(struct wsnap_progress *p)
{
	fputs(p->tty ? "\033[K" : "\n", stderr);
	fflush(stderr);
}

void wsnap_progress_members(struct wsnap_progress *p, const char *what,
			    uint64_t members_done, uint64_t members_total,
			    uint64_t bytes_done, uint64_t bytes_total)
{
	if (!wsnap_progress_due(p, members_done >= members_total))
		return;
	fprintf(stderr,
		"%s: %" PRIu64 "/%" PRIu64 " members, %" PRIu64 "/%" PRIu64
		" MiB",
		what, members_done, members_total, bytes_done >> 20,
		bytes_total >> 20);
	wsnap_progress_put_end(p);
}

void wsnap_progress_end(struct wsnap_progress *p)
{
	if (p->shown && p->tty) {
		fputs("\r\033[K", stderr);
		fflush(stderr);
	}
	p->shown = false;
}
