/* SPDX-License-Identifier: MIT */
#include "error.h"

#include <stdarg.h>
#include <stdio.h>
#include <string.h>

void wsnap_error_clear(struct wsnap_error *err)
{
	err->status = WSNAP_OK;
	err->errnum = 0;
	err->member[0] = '\0';
	err->reason[0] = '\0';
	err->truncated = 0;
}

static void set_text(struct wsnap_error *err, char *dst, const char *src)
{
	size_t n = src ? strlen(src) : 0;

	if (n >= WSNAP_ERROR_TEXT_MAX) {
		n = WSNAP_ERROR_TEXT_MAX - 1;
		err->truncated = 1;
	}
	if (n)
		memcpy(dst, src, n);
	dst[n] = '\0';
}

static void set_reason(struct wsnap_error *err, const char *fmt, va_list ap)
{
	int n = vsnprintf(err->reason, sizeof(err->reason), fmt, ap);

	if (n < 0)
		err->reason[0] = '\0';
	else if ((size_t)n >= sizeof(err->reason))
		err->truncated = 1;
}

enum wsnap_status wsnap_error_reject(struct wsnap_error *err,
				     const char *member, const char *fmt, ...)
{
	va_list ap;

	wsnap_error_clear(err);
	err->status = WSNAP_REJECTED;
	set_text(err, err->member, member);
	va_start(ap, fmt);
	set_reason(err, fmt, ap);
	va_end(ap);
	return WSNAP_REJECTED;
}

enum wsnap_status wsnap_error_stream(struct wsnap_error *err)
{
	return wsnap_error_reject(err, WSNAP_TAR_MEMBER, "%s",
				  WSNAP_REASON_INVALID_STREAM);
}

enum wsnap_status wsnap_error_io(struct wsnap_error *err, int errnum,
				 const char *path, const char *fmt, ...)
{
	va_list ap;

	wsnap_error_clear(err);
	err->status = WSNAP_IO;
	err->errnum = errnum;
	set_text(err, err->member, path);
	va_start(ap, fmt);
	set_reason(err, fmt, ap);
	va_end(ap);
	return WSNAP_IO;
}

enum wsnap_status wsnap_error_usage(struct wsnap_error *err, const char *fmt,
				    ...)
{
	va_list ap;

	wsnap_error_clear(err);
	err->status = WSNAP_USAGE;
	va_start(ap, fmt);
	set_reason(err, fmt, ap);
	va_end(ap);
	return WSNAP_USAGE;
}
