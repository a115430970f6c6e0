/* SPDX-License-Identifier: MIT */
/*
 * What a remote source parses without the network (remote.h): response
 * header values, AWS credentials files, and the label of a URL. Every
 * input is hostile: lengths are explicit, nothing is assumed
 * NUL-terminated, every number is checked for overflow.
 */
#include "remote.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "curl_dl.h"

static bool is_blank(char ch)
{
	return ch == ' ' || ch == '\t' || ch == '\r' || ch == '\n';
}

int wsnap_http_number(const char *v, size_t len, uint64_t *out)
{
	uint64_t n = 0;
	size_t i;

	if (len == 0 || len > 19)
		return -EINVAL;
	for (i = 0; i < len; i++) {
		if (v[i] < '0' || v[i] > '9')
			return -EINVAL;
		n = n * 10 + (uint64_t)(v[i] - '0');
	}
	if (n > INT64_MAX)
		return -EINVAL;
	*out = n;
	return 0;
}

/* The digits at v[*i..] up to stop: a number. */
static int number_until(const char *v, size_t len, size_t *i, char stop,
			uint64_t *out)
{
	size_t j = *i;

	while (j < len && v[j] != stop)
		j++;
	if (j == len && stop != '\0')
		return -EINVAL;
	if (wsnap_http_number(v + *i, j - *i, out))
		return -EINVAL;
	*i = j;
	return 0;
}

int wsnap_http_content_range(const char *v, size_t len, uint64_t *first,
			     uint64_t *last, uint64_t *total)
{
	static const char unit[] = "bytes ";
	size_t i = sizeof(unit) - 1;

	if (len < i || strncasecmp(v, unit, i) != 0)
		return -EINVAL;
	if (number_until(v, len, &i, '-', first))
		return -EINVAL;
	i++;
	if (number_until(v, len, &i, '/', last) || *first > *last)
		return -EINVAL;
	i++;
	if (len - i == 1 && v[i] == '*') {
		*total = UINT64_MAX;
		return 0;
	}
	if (number_until(v, len, &i, '\0', total) || *last >= *total)
		return -EINVAL;
	return 0;
}

bool wsnap_http_header(const char *line, size_t len, const char *name,
		       const char **val, size_t *vlen)
{
	size_t n = strlen(name), s, e;

	if (len <= n || line[n] != ':' || strncasecmp(line, name, n) != 0)
		return false;
	s = n + 1;
	e = len;
	while (s < e && is_blank(line[s]))
		s++;
	while (e > s && is_blank(line[e - 1]))
		e--;
	*val = line + s;
	*vlen = e - s;
	return true;
}

/* ---- credentials files ------------------------------------------------ */

/* Copies v[0..n) into out (cap bytes with the NUL): false when too long. */
static bool take(char *out, size_t cap, const char *v, size_t n)
{
	if (n >= cap)
		return false;
	memcpy(out, v, n);
	out[n] = '\0';
	return true;
}

static bool is_key(const char *k, size_t n, const char *want)
{
	return strlen(want) == n && memcmp(k, want, n) == 0;
}

int wsnap_aws_creds_parse(const char *buf, size_t len, const char *profile,
			  struct wsnap_aws_creds *c, unsigned *line)
{
	size_t pos = 0, plen = strlen(profile);
	bool in = false, any_key = false;

	memset(c, 0, sizeof(*c));
	*line = 0;
	if (len > WSNAP_AWS_FILE_MAX || memchr(buf, '\0', len))
		return -EINVAL;
	while (pos < len) {
		const char *l = buf + pos, *nl = memchr(l, '\n', len - pos);
		size_t n = nl ? (size_t)(nl - l) : len - pos, s = 0, e = n, eq;

		pos += n + (nl ? 1 : 0);
		++*line;
		if (n > 0 && (l[0] == ' ' || l[0] == '\t')) {
			/* a sub-setting of the key above it, or blank */
			while (s < n && is_blank(l[s]))
				s++;
			if (s < n && !any_key)
				return -EINVAL;
			continue;
		}
		while (e > 0 && is_blank(l[e - 1]))
			e--;
		if (e == 0 || l[0] == '#' || l[0] == ';')
			continue;
		if (l[0] == '[') {
			if (l[e - 1] != ']')
				return -EINVAL;
			s = 1;
			e--;
			while (s < e && is_blank(l[s]))
				s++;
			while (e > s && is_blank(l[e - 1]))
				e--;
			in = e - s == plen && memcmp(l + s, profile, plen) == 0;
			any_key = false;
			continue;
		}
		eq = 0;
		while (eq < e && l[eq] != '=')
			eq++;
		if (eq == e || eq == 0)
			return -EINVAL;
		any_key = true;
		if (!in)
			continue;
		s = eq + 1;
		while (s < e && is_blank(l[s]))
			s++;
		n = eq;
		while (n > 0 && is_blank(l[n - 1]))
			n--;
		if (is_key(l, n, "aws_access_key_id")) {
			if (!take(c->key_id, sizeof(c->key_id), l + s, e - s))
				return -EINVAL;
		} else if (is_key(l, n, "aws_secret_access_key")) {
			if (!take(c->secret, sizeof(c->secret), l + s, e - s))
				return -EINVAL;
		} else if (is_key(l, n, "aws_session_token")) {
			if (!take(c->token, sizeof(c->token), l + s, e - s))
				return -EINVAL;
		}
	}
	*line = 0;
	return c->key_id[0] && c->secret[0] ? 0 : -ENOENT;
}

/* ---- labels ------------------------------------------------------------ */

bool wsnap_remote_is_url(const char *s)
{
	return strncasecmp(s, "http://", 7) == 0 ||
	       strncasecmp(s, "https://", 8) == 0 ||
	       strncasecmp(s, "s3://", 5) == 0;
}

/* s3://BUCKET/KEY as it is: the key is not URL syntax (as for the AWS
 * tools), nothing of it is secret. */
static char *s3_label(const char *url)
{
	size_t n = strlen(url);
	char *out;

	if (n < 8 || !strchr(url + 5, '/'))
		return NULL;
	out = malloc(n + 1);
	if (out) {
		memcpy(out, "s3://", 5);
		memcpy(out + 5, url + 5, n - 5 + 1);
	}
	return out;
}

char *wsnap_remote_label(const char *url)
{
	CURLU *u;
	char *s = NULL, *out = NULL;

	if (strncasecmp(url, "s3://", 5) == 0)
		return s3_label(url);
	if (!wsnap_remote_is_url(url) || wsnap_curl_load(NULL) != 0)
		return NULL;
	u = curl_url();
	if (!u)
		return NULL;
	if (curl_url_set(u, CURLUPART_URL, url, 0) == CURLUE_OK &&
	    curl_url_set(u, CURLUPART_USER, NULL, 0) == CURLUE_OK &&
	    curl_url_set(u, CURLUPART_PASSWORD, NULL, 0) == CURLUE_OK &&
	    curl_url_set(u, CURLUPART_OPTIONS, NULL, 0) == CURLUE_OK &&
	    curl_url_set(u, CURLUPART_QUERY, NULL, 0) == CURLUE_OK &&
	    curl_url_set(u, CURLUPART_FRAGMENT, NULL, 0) == CURLUE_OK &&
	    curl_url_get(u, CURLUPART_URL, &s, 0) == CURLUE_OK)
		out = strdup(s);
	curl_free(s);
	curl_url_cleanup(u);
	return out;
}

bool wsnap_remote_redact(char *arg)
{
	char *p = strstr(arg, "://"), *auth, *end, *at = NULL, *q;
	bool changed = false;

	if (!p)
		return false;
	auth = p + 3;
	for (end = auth; *end && *end != '/' && *end != '?' && *end != '#';
	     end++)
		if (*end == '@')
			at = end;
	if (at) {
		memset(auth, '*', (size_t)(at - auth));
		changed = at > auth;
	}
	q = strchr(end, '?');
	if (q && q[1]) {
		memset(q + 1, '*', strlen(q + 1));
		changed = true;
	}
	return changed;
}
