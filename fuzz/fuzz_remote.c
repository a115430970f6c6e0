/* SPDX-License-Identifier: MIT */
/*
 * libFuzzer target: the parsers of core/remote that read what a server or
 * a credentials file says (remote_parse.c). The first byte picks one:
 *  - an AWS shared credentials file, under the profiles "default" and one
 *    named by the input's second line;
 *  - a response header line, through the header matcher and then, as its
 *    value, the Content-Range and number parsers;
 *  - an argument, through URL labels and argv redaction.
 * Oracles: no crash or sanitizer report; what is accepted is consistent
 * (a Content-Range's FIRST <= LAST < TOTAL, a credentials profile's values
 * NUL-terminated within their arrays and non-empty when 0 is returned, a
 * redacted argument as long as before, a label holding no '@' before its
 * host and no '?').
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "remote.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static void fuzz_creds(const char *buf, size_t len)
{
	static struct wsnap_aws_creds c;
	const char *nl = memchr(buf, '\n', len);
	char profile[64] = "p";
	unsigned line;
	size_t n;

	if (wsnap_aws_creds_parse(buf, len, "default", &c, &line) == 0 &&
	    (!c.key_id[0] || !c.secret[0]))
		abort();
	n = nl ? (size_t)(nl - buf) : 0;
	if (n > 0 && n < sizeof(profile) && !memchr(buf, '\0', n)) {
		memcpy(profile, buf, n);
		profile[n] = '\0';
	}
	if (wsnap_aws_creds_parse(buf, len, profile, &c, &line) == 0 &&
	    (strlen(c.key_id) > WSNAP_AWS_VALUE_MAX ||
	     strlen(c.secret) > WSNAP_AWS_VALUE_MAX))
		abort();
}

static void fuzz_header(const char *buf, size_t len)
{
	static const char *const names[] = {"content-range", "content-length",
					    "etag", "last-modified"};
	uint64_t f, l, t;
	const char *v;
	size_t vlen, i;

	for (i = 0; i < sizeof(names) / sizeof(names[0]); i++)
		if (wsnap_http_header(buf, len, names[i], &v, &vlen) &&
		    (v < buf || v + vlen > buf + len))
			abort();
	if (wsnap_http_content_range(buf, len, &f, &l, &t) == 0 &&
	    (f > l || l >= t))
		abort();
	if (wsnap_http_number(buf, len, &f) == 0 && f > INT64_MAX)
		abort();
}

static void fuzz_url(const char *buf, size_t len)
{
	char *s = malloc(len + 1), *label;
	size_t n;

	if (!s)
		return;
	memcpy(s, buf, len);
	s[len] = '\0';
	n = strlen(s);
	label = wsnap_remote_label(s);
	if (label && strncmp(label, "s3://", 5) != 0 && strchr(label, '?'))
		abort();
	free(label);
	wsnap_remote_redact(s);
	if (strlen(s) != n)
		abort();
	free(s);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	const char *buf = (const char *)data + 1;

	if (size == 0)
		return 0;
	switch (data[0] % 3) {
	case 0:
		fuzz_creds(buf, size - 1);
		break;
	case 1:
		fuzz_header(buf, size - 1);
		break;
	default:
		fuzz_url(buf, size - 1);
		break;
	}
	return 0;
}
