/* SPDX-License-Identifier: MIT */
/*
 * The rules that judge one member by its name and type alone: the
 * single-member rules of policy.md section 3 and the steps of section 4
 * phase one that need no tree (4.1 skip, 4.3 protected paths, 4.6 named
 * symlinks), and the taking apart of a member name that they all read
 * (section 1). The engine (engine.c) calls them in the order of section 4;
 * the lexical target check of 4.5 is with the strict walk in resolve.c.
 *
 * Each rule is a small function that returns WSNAP_OK or sets the
 * rejection of policy.md byte for byte, and its comment names the attack
 * it blocks. wsnap_rule_single runs the rules of section 3 in the spec's
 * order; the first failing one wins.
 *
 * Invariants: a rule reads the member and the policy only, never the tree
 * or an earlier member, so its answer is the same wherever the member
 * stands in the archive; nothing here allocates except wsnap_name_parse,
 * into the caller's scratch.
 */
#include <string.h>

#include "escape.h"
#include "policy_private.h"

/* Names */

/* Bytes of the character at s (1 to 4) as Python's UTF-8 decoder with
 * surrogateescape sees it: an invalid byte is a character of its own. */
static size_t utf8_char_len(const unsigned char *s, size_t len)
{
	uint32_t cp;
	size_t n = wsnap_utf8_seq(s, len, &cp);

	return n ? n : 1;
}

enum wsnap_status wsnap_name_parse(struct wsnap_name *nm,
				   struct wsnap_name_buf *buf, const char *name,
				   size_t len, enum wsnap_raw_type type,
				   struct wsnap_error *err)
{
	size_t i = 0, n = 0;
	char *rel;

	/* section 1: a directory's name loses all trailing '/' */
	if (type == WSNAP_RAW_DIR)
		while (len && name[len - 1] == '/')
			len--;
	nm->disp = name;
	if (name[len] != '\0') {
		if (!wsnap_engine_scratch(&buf->disp, &buf->dispcap, len + 1))
			return wsnap_engine_oom(err);
		memcpy(buf->disp, name, len);
		buf->disp[len] = '\0';
		nm->disp = buf->disp;
	}
	nm->len = len;
	nm->type = type;
	if (!wsnap_engine_scratch(&buf->rel, &buf->relcap, len + 1))
		return wsnap_engine_oom(err);
	rel = buf->rel;
	nm->depth = 0;
	nm->first_len = 0;
	nm->last_off = 0;
	nm->dotdot = false;
	while (i < len) {
		size_t j = i, cl;

		while (j < len && name[j] != '/')
			j++;
		cl = j - i;
		if (cl && !(cl == 1 && name[i] == '.')) {
			if (n)
				rel[n++] = '/';
			nm->last_off = n;
			memcpy(rel + n, name + i, cl);
			n += cl;
			if (!nm->depth)
				nm->first_len = cl;
			nm->depth++;
			if (cl == 2 && name[i] == '.' && name[i + 1] == '.')
				nm->dotdot = true;
		}
		i = j + 1;
	}
	rel[n] = '\0';
	nm->rel = rel;
	nm->rel_len = n;
	return WSNAP_OK;
}

/* Section 3 */

static bool is_sep(char c)
{
	return c == '/' || c == '\\';
}

/* 3.1 applies: a name that does not start with '/' and has no components
 * ("", ".", "./.", a directory named "/"). */
static bool is_root_entry(const struct wsnap_name *nm)
{
	return (nm->len == 0 || nm->disp[0] != '/') && nm->rel_len == 0;
}

/* 3.1: what claims to be the root can only be a directory; a symlink or
 * hardlink there would redirect the whole tree. */
static enum wsnap_status rule_root_entry(const struct wsnap_name *nm,
					 bool *root, struct wsnap_error *err)
{
	switch (nm->type) {
	case WSNAP_RAW_DIR:
		*root = true;
		return WSNAP_OK;
	case WSNAP_RAW_SYMLINK:
		return wsnap_error_reject(err, nm->disp,
					  "archive root symlink");
	case WSNAP_RAW_HARDLINK:
		return wsnap_error_reject(err, nm->disp,
					  "archive root hardlink");
	default:
		return wsnap_error_reject(
			err, nm->disp, "archive root member must be directory");
	}
}

/* 3.2: a drive letter ('C:x', any first character) or a UNC name
 * ('//server/share', '\\?\C:') escapes the root on Windows. */
static enum wsnap_status rule_windows_drive(const struct wsnap_name *nm,
					    struct wsnap_error *err)
{
	const char *s = nm->disp;
	size_t c;

	if (nm->len < 2)
		return WSNAP_OK;
	c = utf8_char_len((const unsigned char *)s, nm->len);
	if ((c < nm->len && s[c] == ':') || (is_sep(s[0]) && is_sep(s[1])))
		return wsnap_error_reject(err, s, "windows drive path");
	return WSNAP_OK;
}

/* 3.3: '\' is a separator to Windows tools, so 'a\..\..\x' would climb
 * out there whatever it means here. */
static enum wsnap_status rule_backslash(const struct wsnap_name *nm,
					struct wsnap_error *err)
{
	if (memchr(nm->disp, '\\', nm->len))
		return wsnap_error_reject(err, nm->disp,
					  "windows path separator");
	return WSNAP_OK;
}

/* 3.4: '/etc/passwd' names a file outside the snapshot. */
static enum wsnap_status rule_absolute(const struct wsnap_name *nm,
				       struct wsnap_error *err)
{
	if (nm->len && nm->disp[0] == '/')
		return wsnap_error_reject(err, nm->disp, "absolute path");
	return WSNAP_OK;
}

/* 3.5: a '..' component climbs out of the snapshot ('../x'), or makes
 * two names mean one path ('a/../b'). */
static enum wsnap_status rule_parent_traversal(const struct wsnap_name *nm,
					       struct wsnap_error *err)
{
	if (nm->dotdot)
		return wsnap_error_reject(err, nm->disp, "parent traversal");
	return WSNAP_OK;
}

/* 3.6: with --no-symlinks nothing in the snapshot may point anywhere. */
static enum wsnap_status rule_symlink_opt_in(const struct wsnap_name *nm,
					     bool symlinks,
					     struct wsnap_error *err)
{
	if (nm->type == WSNAP_RAW_SYMLINK && !symlinks)
		return wsnap_error_reject(err, nm->disp,
					  "symlink member not allowed");
	return WSNAP_OK;
}

/* 3.7: a hardlink shares another file's inode: extracted, writing one
 * writes the other, and its target may name a file outside the tree. */
static enum wsnap_status rule_hardlink(const struct wsnap_name *nm,
				       struct wsnap_error *err)
{
	if (nm->type == WSNAP_RAW_HARDLINK)
		return wsnap_error_reject(err, nm->disp,
					  "hardlink member not allowed");
	return WSNAP_OK;
}

/* 3.8: devices and FIFOs have no business in a workspace (a device node
 * opens hardware, a FIFO blocks its reader), and an unknown typeflag means
 * something else to every reader. */
static enum wsnap_status rule_type(const struct wsnap_name *nm,
				   struct wsnap_error *err)
{
	if (nm->type != WSNAP_RAW_DIR && nm->type != WSNAP_RAW_FILE &&
	    nm->type != WSNAP_RAW_SYMLINK)
		return wsnap_error_reject(err, nm->disp,
					  "unsupported member type");
	return WSNAP_OK;
}

/*
 * 3.9: no Linux directory holds a name component over NAME_MAX (255)
 * bytes, and symlink(2) takes a target of at most PATH_MAX - 1 (4095):
 * such a member would be listed and mounted, then fail halfway through an
 * export (or read as EIO), so mount, ls and export could not agree on it.
 */
static enum wsnap_status rule_representable(const struct wsnap_name *nm,
					    size_t target_len,
					    struct wsnap_error *err)
{
	const char *rel = nm->rel, *end = nm->rel + nm->rel_len;

	while (rel < end) {
		const char *slash = memchr(rel, '/', (size_t)(end - rel));
		size_t cl = (size_t)((slash ? slash : end) - rel);

		if (cl > WSNAP_NAME_MAX)
			return wsnap_error_reject(err, nm->disp,
						  "path component too long");
		rel += cl + 1;
	}
	if (nm->type == WSNAP_RAW_SYMLINK && target_len >= WSNAP_TARGET_MAX)
		return wsnap_error_reject(err, nm->disp,
					  "symlink target too long");
	return WSNAP_OK;
}

enum wsnap_status wsnap_rule_single(const struct wsnap_name *nm, bool symlinks,
				    size_t target_len, bool *root,
				    struct wsnap_error *err)
{
	enum wsnap_status st;

	*root = false;
	if (is_root_entry(nm))
		return rule_root_entry(nm, root, err);
	st = rule_windows_drive(nm, err);
	if (st == WSNAP_OK)
		st = rule_backslash(nm, err);
	if (st == WSNAP_OK)
		st = rule_absolute(nm, err);
	if (st == WSNAP_OK)
		st = rule_parent_traversal(nm, err);
	if (st == WSNAP_OK)
		st = rule_symlink_opt_in(nm, symlinks, err);
	if (st == WSNAP_OK)
		st = rule_hardlink(nm, err);
	if (st == WSNAP_OK)
		st = rule_type(nm, err);
	if (st == WSNAP_OK)
		st = rule_representable(nm, target_len, err);
	return st;
}

/* Section 4, phase one, the steps that need no tree */

/* The variants of 4.1: the components, and the components after the first
 * when it is the root name. Returns how many (1 or 2). */
static int variants(const struct wsnap_policy *p, const struct wsnap_name *nm,
		    const char *v[2], size_t vl[2])
{
	v[0] = nm->rel;
	vl[0] = nm->rel_len;
	if (p->root_name && nm->depth &&
	    nm->first_len == strlen(p->root_name) &&
	    memcmp(nm->rel, p->root_name, nm->first_len) == 0) {
		size_t cut = nm->first_len + (nm->depth > 1);

		v[1] = nm->rel + cut;
		vl[1] = nm->rel_len - cut;
		return 2;
	}
	return 1;
}

/*
 * The first path of l that a variant of nm is within or, with reverse, that
 * is within a variant; NULL when there is none.
 */
static const char *overlap(const struct wsnap_policy *p,
			   const struct wsnap_name *nm,
			   const struct wsnap_pathlist *l, bool reverse)
{
	const char *v[2];
	size_t vl[2], i;
	int k, nv;

	if (!l->count)
		return NULL;
	nv = variants(p, nm, v, vl);
	for (k = 0; k < nv; k++)
		for (i = 0; i < l->count; i++) {
			const char *r = l->items[i];
			size_t rl = strlen(r);

			if (wsnap_path_within(v[k], vl[k], r, rl) ||
			    (reverse && wsnap_path_within(r, rl, v[k], vl[k])))
				return r;
		}
	return NULL;
}

/* 4.1: not an attack but the user's choice: what is skipped is neither
 * checked nor indexed, so it counts for nothing. */
bool wsnap_rule_skip(const struct wsnap_policy *p, const struct wsnap_name *nm)
{
	return overlap(p, nm, &p->skip, false) != NULL;
}

/* 4.3: a protected path must not be written into, nor replaced by a
 * non-directory at or above it (a file 'remote' would stand where the
 * protected 'remote/nested' has to be). */
enum wsnap_status wsnap_rule_protected(const struct wsnap_policy *p,
				       const struct wsnap_name *nm,
				       struct wsnap_error *err)
{
	const char *r =
		overlap(p, nm, &p->reject_path, nm->type != WSNAP_RAW_DIR);

	if (!r)
		return WSNAP_OK;
	return wsnap_error_reject(err, nm->disp,
				  "archive member overlaps protected path: %s",
				  r[0] ? r : ".");
}

/* 4.6: a symlink at a path the user named (one a tool would follow, say)
 * could send it anywhere; children and non-symlinks there are fine. */
enum wsnap_status wsnap_rule_named_symlink(const struct wsnap_policy *p,
					   const struct wsnap_name *nm,
					   struct wsnap_error *err)
{
	const struct wsnap_pathlist *l = &p->reject_symlink;
	size_t i;

	if (nm->type != WSNAP_RAW_SYMLINK)
		return WSNAP_OK;
	for (i = 0; i < l->count; i++)
		if (strlen(l->items[i]) == nm->rel_len &&
		    memcmp(l->items[i], nm->rel, nm->rel_len) == 0)
			return wsnap_error_reject(
				err, nm->disp, "symlink member not allowed: %s",
				nm->rel);
	return WSNAP_OK;
}
