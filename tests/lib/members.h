/* SPDX-License-Identifier: MIT */
/*
 * Raw members fed straight into the builder, for the policy and index
 * tests: every rule can be exercised without writing an archive.
 * Include after cmocka.h.
 */
#ifndef WSNAP_TEST_MEMBERS_H
#define WSNAP_TEST_MEMBERS_H

#include <string.h>

#include "engine.h"
#include "array.h"

struct tm_member {
	char type; /* f file, d dir, l symlink, h hardlink, o other */
	const char *name;
	const char *target; /* l, h */
	uint64_t size;
	uint64_t offset;
	int64_t mtime;
	uint32_t nsec;
	unsigned mode;
	const struct wsnap_sparse_run *sparse;
	size_t nsparse;
	uint64_t ext; /* extension header bytes (ext_bytes); 0 in the macros */
};

#define TM_F(n)                                                                \
	{                                                                      \
		'f', (n), NULL, 0, 0, 0, 0, 0644, NULL, 0, 0                   \
	}
#define TM_D(n)                                                                \
	{                                                                      \
		'd', (n), NULL, 0, 0, 0, 0, 0755, NULL, 0, 0                   \
	}
#define TM_L(n, t)                                                             \
	{                                                                      \
		'l', (n), (t), 0, 0, 0, 0, 0777, NULL, 0, 0                    \
	}
#define TM_H(n, t)                                                             \
	{                                                                      \
		'h', (n), (t), 0, 0, 0, 0, 0644, NULL, 0, 0                    \
	}
#define TM_O(n)                                                                \
	{                                                                      \
		'o', (n), NULL, 0, 0, 0, 0, 0644, NULL, 0, 0                   \
	}
#define TM_FS(n, s)                                                            \
	{                                                                      \
		'f', (n), NULL, (s), 0, 0, 0, 0644, NULL, 0, 0                 \
	}
#define TM_N(a) ARRAY_SIZE(a)

static inline void tm_raw(const struct tm_member *t, struct wsnap_raw_member *m)
{
	memset(m, 0, sizeof(*m));
	m->name = t->name;
	m->name_len = strlen(t->name);
	switch (t->type) {
	case 'f':
		m->type = WSNAP_RAW_FILE;
		m->typeflag = '0';
		break;
	case 'd':
		m->type = WSNAP_RAW_DIR;
		m->typeflag = '5';
		break;
	case 'l':
		m->type = WSNAP_RAW_SYMLINK;
		m->typeflag = '2';
		break;
	case 'h':
		m->type = WSNAP_RAW_HARDLINK;
		m->typeflag = '1';
		break;
	default:
		m->type = WSNAP_RAW_OTHER;
		m->typeflag = '6';
		break;
	}
	if (t->target) {
		m->linkname = t->target;
		m->linkname_len = strlen(t->target);
	}
	m->mode = t->mode;
	m->size = t->size;
	m->data_offset = t->offset;
	m->mtime_sec = t->mtime;
	m->mtime_nsec = t->nsec;
	m->sparse = t->sparse;
	m->nsparse = t->nsparse;
	m->ext_bytes = t->ext;
}

/* Runs the members through a builder under policy p (NULL: defaults).
 * On success *out is the index (else NULL). */
static inline enum wsnap_status tm_build(const struct wsnap_policy *p,
					 const struct tm_member *ms, size_t n,
					 struct wsnap_index **out,
					 struct wsnap_error *err)
{
	struct wsnap_policy def;
	struct wsnap_builder *b;
	enum wsnap_status st;
	size_t i;

	*out = NULL;
	wsnap_policy_init(&def);
	st = wsnap_builder_new(&b, p ? p : &def, err);
	wsnap_policy_release(&def);
	if (st != WSNAP_OK)
		return st;
	for (i = 0; i < n; i++) {
		struct wsnap_raw_member m;

		tm_raw(&ms[i], &m);
		st = wsnap_builder_add(b, &m, err);
		if (st != WSNAP_OK) {
			wsnap_builder_free(b);
			return st;
		}
	}
	return wsnap_builder_finish(b, out, err);
}

#endif
