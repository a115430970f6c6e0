/* SPDX-License-Identifier: MIT */
/* Capturing stdout and stderr (capture.h). */
#include "capture.h"

#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <unistd.h>
#include <cmocka.h>

void ts_capture_begin(struct ts_capture *c)
{
	fflush(stdout);
	fflush(stderr);
	c->out = tmpfile();
	c->err = tmpfile();
	assert_non_null(c->out);
	assert_non_null(c->err);
	c->saved_out = dup(STDOUT_FILENO);
	c->saved_err = dup(STDERR_FILENO);
	dup2(fileno(c->out), STDOUT_FILENO);
	dup2(fileno(c->err), STDERR_FILENO);
}

static void slurp(FILE *f, char *buf, size_t cap)
{
	size_t n;

	rewind(f);
	n = fread(buf, 1, cap - 1, f);
	buf[n] = '\0';
	fclose(f);
}

void ts_capture_end(struct ts_capture *c)
{
	fflush(stdout);
	fflush(stderr);
	dup2(c->saved_out, STDOUT_FILENO);
	dup2(c->saved_err, STDERR_FILENO);
	close(c->saved_out);
	close(c->saved_err);
	slurp(c->out, c->stdout_text, sizeof(c->stdout_text));
	slurp(c->err, c->stderr_text, sizeof(c->stderr_text));
}
