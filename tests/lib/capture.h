/* SPDX-License-Identifier: MIT */
/*
 * Test support: what a piece of code writes to stdout and stderr, captured
 * (through temporary files dup'ed over the descriptors) between
 * ts_capture_begin and ts_capture_end. Aborts the test (cmocka) when the
 * files cannot be made.
 */
#ifndef WSNAP_TEST_CAPTURE_H
#define WSNAP_TEST_CAPTURE_H

#include <stdio.h>

struct ts_capture {
	FILE *out, *err;
	int saved_out, saved_err;
	/* after ts_capture_end: what was written, cut to fit, NUL-ended */
	char stdout_text[16384], stderr_text[16384];
};

void ts_capture_begin(struct ts_capture *c);
void ts_capture_end(struct ts_capture *c);

#endif
