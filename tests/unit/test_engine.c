/* SPDX-License-Identifier: MIT */
/*
 * Unit tests of the policy engine (core/policy: engine.c, rules.c,
 * resolve.c) through engine.h: every rule of policy.md sections 3, 4, 5 and
 * 8 with its reason string byte for byte, members fed directly. The rules
 * and the resolver are tested here through the engine, as the spec states
 * them: in context, with the evaluation order that decides which rule wins.
 *
 * Over 800 lines: one test program per unit (the style guide), and the
 * policy engine has a rule per section of policy.md, each with its cases.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>

#include "engine.h"
#include "index.h"
#include "index_impl.h"
#include "members.h"
#include "policy.h"

static struct wsnap_policy pol;

static int setup(void **state)
{
	wsnap_policy_init(&pol);
	return 0;
}

static int teardown(void **state)
{
	wsnap_policy_release(&pol);
	return 0;
}

static struct wsnap_index *expect_ok_(const struct tm_member *ms, size_t n,
				      int line)
{
	struct wsnap_index *idx;
	struct wsnap_error err;

	if (tm_build(&pol, ms, n, &idx, &err) != WSNAP_OK)
		fail_msg("line %d: rejected '%s': %s", line, err.member,
			 err.reason);
	assert_non_null(idx);
	return idx;
}

static void expect_reject_(const struct tm_member *ms, size_t n,
			   const char *member, const char *reason, int line)
{
	struct wsnap_index *idx;
	struct wsnap_error err;
	enum wsnap_status st = tm_build(&pol, ms, n, &idx, &err);

	if (st != WSNAP_REJECTED)
		fail_msg("line %d: expected '%s': %s, got status %d", line,
			 member, reason, st);
	assert_null(idx);
	assert_int_equal(err.status, WSNAP_REJECTED);
	if (strcmp(err.member, member) || strcmp(err.reason, reason))
		fail_msg("line %d: expected '%s': %s\n   got '%s': %s", line,
			 member, reason, err.member, err.reason);
}

#define OK(...)                                                                \
	do {                                                                   \
		const struct tm_member ms_[] = {__VA_ARGS__};                  \
		wsnap_index_free(expect_ok_(ms_, TM_N(ms_), __LINE__));        \
	} while (0)

#define REJECT(member, reason, ...)                                            \
	do {                                                                   \
		const struct tm_member ms_[] = {__VA_ARGS__};                  \
		expect_reject_(ms_, TM_N(ms_), member, reason, __LINE__);      \
	} while (0)

/* Section 3 */

static void test_engine_root_entries(void **state)
{
	/* every spelling of the root, any number of them */
	OK(TM_D(""), TM_D("."), TM_D("./"), TM_D("./."), TM_D(".//"), TM_D("/"),
	   TM_D("//"), TM_D("./././"), TM_F("a"));
	REJECT("./", "archive root member must be directory", TM_F("./"));
	REJECT(".", "archive root member must be directory", TM_F("."));
	REJECT("", "archive root member must be directory", TM_F(""));
	REJECT("./.", "archive root member must be directory", TM_O("./."));
	REJECT(".", "archive root symlink", TM_L(".", "a"));
	REJECT("./", "archive root symlink", TM_L("./", "."));
	REJECT(".//", "archive root hardlink", TM_H(".//", "a"));
	/* a file named "/" is absolute, not the root */
	REJECT("/", "absolute path", TM_F("/"));
	REJECT("/.", "absolute path", TM_D("/."));
}

static void test_engine_root_metadata_last_entry_wins(void **state)
{
	struct tm_member ms[] = {TM_D("./"), TM_F("a"), TM_D(".")};
	const struct wsnap_node *r;
	struct wsnap_index *idx;

	ms[0].mtime = 100;
	ms[2].mtime = 200;
	ms[2].nsec = 5;
	ms[2].mode = 0700;
	idx = expect_ok_(ms, TM_N(ms), __LINE__);
	r = wsnap_index_node(idx, WSNAP_ROOT_INO);
	assert_int_equal(r->mtime_sec, 200);
	assert_int_equal(r->mtime_nsec, 5);
	assert_true(r->flags & WSNAP_NODE_MTIME_FRAC);
	assert_false(r->flags & WSNAP_NODE_IMPLICIT);
	assert_int_equal(r->mode, 0755);
	assert_int_equal(r->order, 0);
	wsnap_index_free(idx);

	/* without a root entry the root is implicit */
	idx = expect_ok_(ms + 1, 1, __LINE__);
	r = wsnap_index_node(idx, WSNAP_ROOT_INO);
	assert_true(r->flags & WSNAP_NODE_IMPLICIT);
	assert_int_equal(r->mtime_sec, 0);
	wsnap_index_free(idx);
}

static void test_engine_windows_drive(void **state)
{
	REJECT("C:x", "windows drive path", TM_F("C:x"));
	REJECT("1:x", "windows drive path", TM_F("1:x"));
	REJECT("a:", "windows drive path", TM_F("a:"));
	REJECT("C:", "windows drive path", TM_D("C:/"));
	REJECT("//server/share", "windows drive path", TM_F("//server/share"));
	REJECT("//x", "windows drive path", TM_D("//x/"));
	REJECT("\\\\?\\C:", "windows drive path", TM_F("\\\\?\\C:"));
	REJECT("\\/x", "windows drive path", TM_F("\\/x"));
	REJECT("/\\x", "windows drive path", TM_F("/\\x"));
	/* the second character, not byte: U+00E9 is two bytes */
	REJECT("\xc3\xa9:x", "windows drive path", TM_F("\xc3\xa9:x"));
	/* an invalid byte is one character */
	REJECT("\xff:x", "windows drive path", TM_F("\xff:x"));
	REJECT("\xc3:x", "windows drive path", TM_F("\xc3:x"));
	OK(TM_F("ab:c"), TM_F("a"), TM_F("ab:"));
}

static void test_engine_backslash(void **state)
{
	REJECT("a\\b", "windows path separator", TM_F("a\\b"));
	REJECT("a\\", "windows path separator", TM_D("a\\"));
	REJECT("\\a", "windows path separator", TM_F("\\a"));
	/* rule 3 comes before rules 4 and 5 */
	REJECT("/a\\b", "windows path separator", TM_F("/a\\b"));
	REJECT("../a\\b", "windows path separator", TM_F("../a\\b"));
}

static void test_engine_absolute(void **state)
{
	REJECT("/etc/passwd", "absolute path", TM_F("/etc/passwd"));
	REJECT("/etc", "absolute path", TM_D("/etc/"));
	REJECT("/x", "absolute path", TM_L("/x", "y"));
	REJECT("/../x", "absolute path", TM_F("/../x"));
	/* a hardlink is absolute before it is a hardlink */
	REJECT("/h", "absolute path", TM_H("/h", "a"));
}

static void test_engine_parent_traversal(void **state)
{
	REJECT("../x", "parent traversal", TM_F("../x"));
	REJECT("a/../b", "parent traversal", TM_F("a/../b"));
	REJECT("a/..", "parent traversal", TM_D("a/../"));
	REJECT("..", "parent traversal", TM_D(".."));
	/* rule 5 before rule 6 */
	pol.no_symlinks = true;
	REJECT("../l", "parent traversal", TM_L("../l", "x"));
	OK(TM_F("..a"), TM_F("a.."), TM_F(".../x"));
}

static void test_engine_symlink_opt_in(void **state)
{
	OK(TM_L("l", "x"));
	pol.no_symlinks = true;
	REJECT("l", "symlink member not allowed", TM_F("a"), TM_L("l", "a"));
	REJECT("./d/l", "symlink member not allowed", TM_L("./d/l", "/x"));
}

static void test_engine_hardlink_and_types(void **state)
{
	REJECT("h", "hardlink member not allowed", TM_F("a"), TM_H("h", "a"));
	REJECT("fifo", "unsupported member type", TM_O("fifo"));
	REJECT("dev/null", "unsupported member type", TM_O("dev/null"));
}

/* 3.9: a component of 256 bytes or a symlink target of 4096 bytes was
 * accepted, listed and mounted, and then export failed halfway (ENAMETOOLONG)
 * or the mount's readlink gave EIO. N is accepted, N + 1 is not. */
static void test_engine_representable_on_linux(void **state)
{
	char c255[256], c256[257], name[600], t4095[4096], t4096[4097];
	char msg[700];

	memset(c255, 'c', 255);
	c255[255] = '\0';
	memset(c256, 'c', 256);
	c256[256] = '\0';
	memset(t4095, 't', 4095);
	t4095[4095] = '\0';
	memset(t4096, 't', 4096);
	t4096[4096] = '\0';
	OK(TM_F(c255), TM_F("d/x"));
	OK(TM_D(c255));
	REJECT(c256, "path component too long", TM_F(c256));
	/* any component, of any type; empty and '.' components do not count */
	snprintf(name, sizeof(name), "d/%s/f", c256);
	REJECT(name, "path component too long", TM_F(name));
	snprintf(name, sizeof(name), "%s/", c256);
	snprintf(msg, sizeof(msg), "%s", c256);
	REJECT(msg, "path component too long", TM_D(name));
	snprintf(name, sizeof(name), ".//%s/./", c255);
	OK(TM_D(name));
	/* targets: as many bytes as symlink(2) takes */
	pol.allow_external_symlinks = true;
	OK(TM_L("l", t4095));
	REJECT("l", "symlink target too long", TM_L("l", t4096));
	/* the earlier rules win: 3.8 before 3.9, and 3.9 before section 4 */
	REJECT(c256, "hardlink member not allowed", TM_H(c256, "a"));
	REJECT(c256, "unsupported member type", TM_O(c256));
	REJECT(c256, "path component too long", TM_F(c256), TM_F(c256));
}

static void test_engine_directory_name_loses_slashes(void **state)
{
	/* the member named in a message is the raw name, a directory's
	 * without its trailing slashes */
	REJECT("a", "duplicate archive path: a", TM_F("a"), TM_D("a//"));
	REJECT("./a", "duplicate archive path: a", TM_F("a"), TM_D("./a/"));
	REJECT("a//", "duplicate archive path: a", TM_D("a"), TM_F("a//"));
}

/* Section 4.1 */

static void test_engine_skip(void **state)
{
	struct wsnap_index *idx;
	const struct tm_member ms[] = {
		TM_F("a"),	TM_F("./a/b"),	  TM_F("/a/c"),
		TM_O("a/fifo"), TM_H("a/h", "x"), TM_F("a/../../x"),
		TM_F("ok"),	TM_F("ab"),	  TM_L("a/l", "/abs"),
	};

	assert_int_equal(wsnap_policy_add_skip(&pol, "./a/", NULL), WSNAP_OK);
	idx = expect_ok_(ms, TM_N(ms), __LINE__);
	assert_int_equal(wsnap_index_count(idx), 3);
	assert_int_equal(wsnap_index_lookup(idx, "a", 1), 0);
	assert_int_not_equal(wsnap_index_lookup(idx, "ok", 2), 0);
	assert_int_not_equal(wsnap_index_lookup(idx, "ab", 2), 0);
	wsnap_index_free(idx);
	/* a\b is one component: not within a */
	REJECT("a\\b", "windows path separator", TM_F("a\\b"));
}

static void test_engine_skip_everything(void **state)
{
	struct wsnap_index *idx;
	const struct tm_member ms[] = {
		TM_L("./", "x"), TM_F("../x"), TM_H("h", "a"),
		TM_F("/abs"),	 TM_D("d"),    TM_O("f"),
	};

	assert_int_equal(wsnap_policy_add_skip(&pol, ".", NULL), WSNAP_OK);
	idx = expect_ok_(ms, TM_N(ms), __LINE__);
	assert_int_equal(wsnap_index_count(idx), 1);
	wsnap_index_free(idx);
}

static void test_engine_skip_root_name_variants(void **state)
{
	struct wsnap_index *idx;
	const struct tm_member ms[] = {
		TM_D("ws/"),	 TM_F("ws/cache/x"),  TM_F("cache/y"),
		TM_F("ws/keep"), TM_F("other/cache"),
	};

	assert_int_equal(wsnap_policy_add_skip(&pol, "cache", NULL), WSNAP_OK);
	assert_int_equal(wsnap_policy_set_root_name(&pol, "ws", NULL),
			 WSNAP_OK);
	idx = expect_ok_(ms, TM_N(ms), __LINE__);
	assert_int_equal(wsnap_index_lookup(idx, "ws/cache", 8), 0);
	assert_int_equal(wsnap_index_lookup(idx, "ws/cache/x", 10), 0);
	assert_int_equal(wsnap_index_lookup(idx, "cache", 5), 0);
	assert_int_not_equal(wsnap_index_lookup(idx, "ws/keep", 7), 0);
	assert_int_not_equal(wsnap_index_lookup(idx, "other/cache", 11), 0);
	wsnap_index_free(idx);
}

static void test_engine_skip_is_component_wise(void **state)
{
	struct wsnap_index *idx;
	const struct tm_member ms[] = {TM_F("workspace/x"),
				       TM_F("workspace2/x")};

	assert_int_equal(wsnap_policy_add_skip(&pol, "workspace", NULL),
			 WSNAP_OK);
	idx = expect_ok_(ms, TM_N(ms), __LINE__);
	assert_int_equal(wsnap_index_lookup(idx, "workspace", 9), 0);
	assert_int_not_equal(wsnap_index_lookup(idx, "workspace2/x", 12), 0);
	wsnap_index_free(idx);
	/* without --root-name the first component is not dropped */
	wsnap_policy_release(&pol);
	wsnap_policy_init(&pol);
	assert_int_equal(wsnap_policy_add_skip(&pol, "x", NULL), WSNAP_OK);
	REJECT("ws/x", "duplicate archive path: ws/x", TM_F("ws/x"),
	       TM_F("ws/x"));
}

/* Section 4.3 */

static void test_engine_protected_path_matrix(void **state)
{
	const char *r = "archive member overlaps protected path: "
			"remote/nested";

	assert_int_equal(
		wsnap_policy_add_reject_path(&pol, "/remote/nested/", NULL),
		WSNAP_OK);
	/* a directory above R passes, a non-directory there is rejected */
	OK(TM_D("remote"), TM_D("./remote/"), TM_F("remote/other"),
	   TM_F("remote2"), TM_F("remote/nested2"), TM_D("other"));
	REJECT("remote", r, TM_F("remote"));
	REJECT("remote", r, TM_L("remote", "other"));
	REJECT("./remote", r, TM_F("./remote"));
	/* at or below R, any type */
	REJECT("remote/nested", r, TM_D("remote/nested/"));
	REJECT("remote/nested", r, TM_F("remote/nested"));
	REJECT("remote/nested/deep/x", r, TM_F("remote/nested/deep/x"));
	REJECT("remote/nested/l", r, TM_L("remote/nested/l", "x"));
	/* root entries are not checked */
	OK(TM_D("./"), TM_D("remote/"));
}

static void test_engine_protected_path_root_name(void **state)
{
	const char *r = "archive member overlaps protected path: "
			"remote/nested";

	assert_int_equal(
		wsnap_policy_add_reject_path(&pol, "remote/nested", NULL),
		WSNAP_OK);
	assert_int_equal(wsnap_policy_set_root_name(&pol, "ws", NULL),
			 WSNAP_OK);
	OK(TM_D("ws"), TM_D("ws/remote"), TM_F("ws/remote/x"));
	REJECT("ws/remote/nested/x", r, TM_F("ws/remote/nested/x"));
	REJECT("ws/remote", r, TM_F("ws/remote"));
	/* the variant of a file 'ws' is the root, above R */
	REJECT("ws", r, TM_F("ws"));
	REJECT("remote/nested", r, TM_D("remote/nested"));
}

static void test_engine_protected_root(void **state)
{
	assert_int_equal(wsnap_policy_add_reject_path(&pol, "/", NULL),
			 WSNAP_OK);
	REJECT("a", "archive member overlaps protected path: .", TM_D("./"),
	       TM_D("a"));
}

/* Section 4.4 */

static void test_engine_duplicate_matrix(void **state)
{
	static const char types[] = {'f', 'd', 'l'};
	static const char *first[] = {"a", "a/", "a"};
	static const char *second[] = {"./a", "./a/", "a"};
	static const char *shown[] = {"./a", "./a", "a"};
	size_t i, j;

	for (i = 0; i < 3; i++)
		for (j = 0; j < 3; j++) {
			struct tm_member ms[2] = {TM_F(first[i]),
						  TM_F(second[j])};
			struct wsnap_index *idx;
			struct wsnap_error err;
			enum wsnap_status st;

			ms[0].type = types[i];
			ms[1].type = types[j];
			ms[0].target = ms[1].target = "x";
			st = tm_build(&pol, ms, 2, &idx, &err);
			if (i == 1 && j == 1) {
				assert_int_equal(st, WSNAP_OK);
				wsnap_index_free(idx);
				continue;
			}
			assert_int_equal(st, WSNAP_REJECTED);
			assert_string_equal(err.member, shown[j]);
			assert_string_equal(err.reason,
					    "duplicate archive path: a");
		}
}

static void test_engine_duplicate_dirs_later_metadata(void **state)
{
	struct tm_member ms[] = {TM_D("d/"), TM_F("d/x"), TM_D("./d")};
	const struct wsnap_node *n;
	struct wsnap_index *idx;

	ms[0].mtime = 10;
	ms[2].mtime = 20;
	ms[2].nsec = 7;
	idx = expect_ok_(ms, TM_N(ms), __LINE__);
	n = wsnap_index_node(idx, wsnap_index_lookup(idx, "d", 1));
	assert_int_equal(n->mtime_sec, 20);
	assert_int_equal(n->mtime_nsec, 7);
	assert_true(n->flags & WSNAP_NODE_MTIME_FRAC);
	/* the position is the first one */
	assert_int_equal(n->order, 1);
	wsnap_index_free(idx);
}

static void test_engine_implicit_then_member_is_no_duplicate(void **state)
{
	struct wsnap_index *idx;
	const struct tm_member ms[] = {TM_F("a/b"), TM_D("a"), TM_F("c/d/e"),
				       TM_D("c/d/")};
	const struct wsnap_node *n;

	idx = expect_ok_(ms, TM_N(ms), __LINE__);
	n = wsnap_index_node(idx, wsnap_index_lookup(idx, "a", 1));
	assert_false(n->flags & WSNAP_NODE_IMPLICIT);
	assert_int_equal(n->order, 2);
	n = wsnap_index_node(idx, wsnap_index_lookup(idx, "c", 1));
	assert_true(n->flags & WSNAP_NODE_IMPLICIT);
	n = wsnap_index_node(idx, wsnap_index_lookup(idx, "c/d", 3));
	assert_false(n->flags & WSNAP_NODE_IMPLICIT);
	wsnap_index_free(idx);
	/* an implicit directory replaced by a file: phase two, not 4.4 */
	REJECT("a/b", "archive path descends through non-directory: a",
	       TM_F("a/b"), TM_F("a"));
}

/* Section 4.5 */

static void test_engine_symlink_targets_lexical(void **state)
{
	REJECT("l", "absolute symlink target not allowed: /usr/bin/python3",
	       TM_L("l", "/usr/bin/python3"));
	REJECT("l", "symlink target escapes archive root: ../x",
	       TM_L("l", "../x"));
	REJECT("a/b/l", "symlink target escapes archive root: ../../../x",
	       TM_L("a/b/l", "../../../x"));
	REJECT("a/l", "symlink target escapes archive root: x/../../..",
	       TM_L("a/l", "x/../../.."));
	REJECT("./a/l", "symlink target escapes archive root: .././/../x",
	       TM_L("./a/l", ".././/../x"));
	/* lexical checks are phase one: before a later member's error */
	REJECT("l", "symlink target escapes archive root: ../x",
	       TM_L("l", "../x"), TM_F("/abs"));
	REJECT("l", "absolute symlink target not allowed: /x", TM_L("l", "/x"),
	       TM_F("/abs"));
	/* the target is printed raw */
	REJECT("l", "absolute symlink target not allowed: /bad\nname",
	       TM_L("l", "/bad\nname"));
	OK(TM_L("a/b/l", "../../x"), TM_L("l", "."), TM_L("m", ""),
	   TM_L("n", "./x/.././y//z"), TM_L("o", "a\\..\\..\\x"));
	pol.allow_external_symlinks = true;
	OK(TM_L("l", "/usr/bin/python3"), TM_L("m", "../../x"));
}

/* The [wsnap] resolution walk */

static void test_engine_walk_venv_python_passes(void **state)
{
	OK(TM_D("bin"), TM_F("bin/python3.11"),
	   TM_L("bin/python3", "python3.11"), TM_D("nested"),
	   TM_L("nested/python", "../bin/python3"),
	   TM_L("nested/dangling", "../nothing/here/../../x"));
}

static void test_engine_walk_link_escape(void **state)
{
	const char *r = "symlink target escapes archive root: "
			"link/link/../../x";

	REJECT("escape", r, TM_L("link", "./"),
	       TM_L("escape", "link/link/../../x"));
	/* the order of the members does not matter */
	REJECT("escape", r, TM_L("escape", "link/link/../../x"),
	       TM_L("link", "./"));
	pol.allow_external_symlinks = true;
	OK(TM_L("link", "./"), TM_L("escape", "link/link/../../x"));
}

static void test_engine_walk_shallower_link(void **state)
{
	/* a/b/up resolves to the root, two levels above where it stands */
	REJECT("x", "symlink target escapes archive root: a/b/up/../y",
	       TM_D("a/b"), TM_L("a/b/up", "../.."), TM_L("x", "a/b/up/../y"));
	OK(TM_D("a/b"), TM_L("a/b/up", "../.."), TM_L("x", "a/b/up/y"));
}

static void test_engine_walk_loops(void **state)
{
	REJECT("a", "symlink target escapes archive root: b", TM_L("a", "b"),
	       TM_L("b", "a"));
	REJECT("a", "symlink target escapes archive root: a", TM_L("a", "a"));
	REJECT("a", "symlink target escapes archive root: a/..",
	       TM_L("a", "a/.."));
	REJECT("d/a", "symlink target escapes archive root: b/x",
	       TM_L("d/a", "b/x"), TM_L("d/b", "c"), TM_L("d/c", "../d/a"));
	/* not a loop: the same directory reached again */
	OK(TM_D("d"), TM_L("x", "d/../d/../d"), TM_L("y", "x/../x/../x"));
}

/* A chain l0 -> l1 -> ... -> l<n> -> d: n replacements for l0. */
static enum wsnap_status chain(size_t n, struct wsnap_error *err)
{
	struct tm_member *ms = calloc(n + 2, sizeof(*ms));
	char(*names)[16] = calloc(n + 1, sizeof(*names));
	struct wsnap_index *idx;
	enum wsnap_status st;
	size_t i;

	assert_non_null(ms);
	assert_non_null(names);
	for (i = 0; i <= n; i++)
		snprintf(names[i], sizeof(names[i]), "l%zu", i);
	for (i = 0; i <= n; i++) {
		struct tm_member m = TM_L(names[i], i < n ? names[i + 1] : "d");

		ms[i] = m;
	}
	ms[n + 1] = (struct tm_member)TM_D("d");
	st = tm_build(&pol, ms, n + 2, &idx, err);
	wsnap_index_free(idx);
	free(ms);
	free(names);
	return st;
}

static void test_engine_walk_forty_replacements(void **state)
{
	struct wsnap_error err;

	assert_int_equal(chain(40, &err), WSNAP_OK);
	assert_int_equal(chain(41, &err), WSNAP_REJECTED);
	assert_string_equal(err.member, "l0");
	assert_string_equal(err.reason,
			    "symlink target escapes archive root: l1");
	/* a long chain ends quickly: recursion stops past 40 */
	assert_int_equal(chain(200000, &err), WSNAP_REJECTED);
	assert_string_equal(err.member, "l0");
}

static void test_engine_walk_exponential_is_bounded(void **state)
{
	/* l<k> -> l<k-1>/../l<k-1> doubles the replacements per level;
	 * memoized, each link is walked once; l6 needs 62 */
	struct tm_member ms[21];
	char names[21][8], targets[21][24];
	struct wsnap_index *idx;
	struct wsnap_error err;
	size_t i;

	ms[0] = (struct tm_member)TM_D("l0");
	for (i = 1; i < 21; i++) {
		snprintf(names[i], sizeof(names[i]), "l%zu", i);
		snprintf(targets[i], sizeof(targets[i]), "l%zu/../l%zu", i - 1,
			 i - 1);
		ms[i] = (struct tm_member)TM_L(names[i], targets[i]);
	}
	assert_int_equal(tm_build(&pol, ms, 21, &idx, &err), WSNAP_REJECTED);
	assert_string_equal(err.member, "l6");
	assert_string_equal(err.reason,
			    "symlink target escapes archive root: l5/../l5");
}

static void test_engine_walk_many_links_share_work(void **state)
{
	/* 100,000 links through one hub: linear with the memo */
	size_t n = 100000, i;
	struct tm_member *ms = calloc(n + 3, sizeof(*ms));
	char(*names)[16] = calloc(n, sizeof(*names));
	struct wsnap_index *idx;
	struct wsnap_error err;

	assert_non_null(ms);
	assert_non_null(names);
	ms[0] = (struct tm_member)TM_D("d");
	ms[1] = (struct tm_member)TM_L("hub", ".");
	for (i = 0; i < n; i++) {
		snprintf(names[i], sizeof(names[i]), "s/%zu", i);
		ms[i + 2] =
			(struct tm_member)TM_L(names[i], "../hub/d/../hub/d");
	}
	/* lexically inside; hub is the root itself, so this climbs out */
	ms[n + 2] = (struct tm_member)TM_L("s/bad", "../hub/hub/../../x");
	assert_int_equal(tm_build(&pol, ms, n + 2, &idx, &err), WSNAP_OK);
	wsnap_index_free(idx);
	assert_int_equal(tm_build(&pol, ms, n + 3, &idx, &err), WSNAP_REJECTED);
	assert_string_equal(err.member, "s/bad");
	assert_string_equal(
		err.reason,
		"symlink target escapes archive root: ../hub/hub/../../x");
	free(ms);
	free(names);
}

static void test_engine_walk_parent_through_symlink(void **state)
{
	/* d -> . makes d/e/x's directory the root's e: the walk rejects it
	 * before phase two would */
	REJECT("d/e/x", "symlink target escapes archive root: ../../y",
	       TM_L("d", "."), TM_L("d/e/x", "../../y"));
	/* when the walk passes, phase two still rejects */
	REJECT("d/x", "archive path descends through symlink: d", TM_D("e"),
	       TM_L("d", "e"), TM_L("d/x", "../e"));
}

/*
 * The walk compared names byte for byte only, so this pair
 * passed, and exported onto a case-insensitive directory 'S' is 's' and
 * 'link' leads two levels above the root.
 */
static void test_engine_walk_case_folded_escape(void **state)
{
	const char *r = "symlink target escapes archive root: S/../../outside";

	REJECT("p1/p2/link", r, TM_L("p1/p2/s", "../.."),
	       TM_L("p1/p2/link", "S/../../outside"));
	REJECT("p1/p2/link", r, TM_L("p1/p2/link", "S/../../outside"),
	       TM_L("p1/p2/s", "../.."));
	REJECT("a/l", "symlink target escapes archive root: S/..",
	       TM_L("a/s", ".."), TM_L("a/l", "S/.."));
	/* deeper, every component in another case */
	REJECT("l", "symlink target escapes archive root: dir/SUB/Up/../x",
	       TM_D("Dir/Sub"), TM_L("Dir/Sub/up", "../.."),
	       TM_L("l", "dir/SUB/Up/../x"));
	/* an implicit directory matched by case */
	REJECT("a/l", "symlink target escapes archive root: b/up/../x",
	       TM_L("a/B/up", "../.."), TM_L("a/l", "b/up/../x"));
	/* a loop that exists only when folded */
	REJECT("a", "symlink target escapes archive root: B", TM_L("a", "B"),
	       TM_L("b", "A"));
	pol.allow_external_symlinks = true;
	OK(TM_L("p1/p2/s", "../.."), TM_L("p1/p2/link", "S/../../outside"));
}

static void test_engine_walk_case_folded_unicode(void **state)
{
	/* precomposed and decomposed, upper and lower: one name folded */
	static const char *const spellings[] = {
		"\xc3\x89",  /* É, U+00C9 */
		"E\xcc\x81", /* E + U+0301 */
		"e\xcc\x81", /* e + U+0301 */
	};
	size_t i;

	for (i = 0; i < 3; i++) {
		char t[32], r[96];

		snprintf(t, sizeof(t), "%s/up/..", spellings[i]);
		snprintf(r, sizeof(r),
			 "symlink target escapes archive root: %s", t);
		REJECT("p/l", r, TM_L("p/\xc3\xa9/up", "../.."),
		       TM_L("p/l", t));
	}
	/* full folding: sharp s, the Kelvin sign; dotless i as upcase
	 * tables compare it */
	REJECT("l", "symlink target escapes archive root: STRASSE/up/..",
	       TM_L("stra\303\237e/up", ".."), TM_L("l", "STRASSE/up/.."));
	REJECT("l", "symlink target escapes archive root: k/up/..",
	       TM_L("\xe2\x84\xaa/up", ".."), TM_L("l", "k/up/.."));
	REJECT("l", "symlink target escapes archive root: I/up/..",
	       TM_L("\xc4\xb1/up", ".."), TM_L("l", "I/up/.."));
	/* bytes that are not UTF-8 only match themselves */
	OK(TM_L("\xff/up", ".."), TM_L("l", "\xfe/up/.."));
}

/* The (link, member) pairs of the folded walk, one per directory. */
static size_t case_deps(const struct wsnap_index *idx, const char *link,
			const char *member)
{
	const struct wsnap_index_case_dep *d;
	size_t n = wsnap_index_case_deps(idx, &d);

	if (n) {
		assert_int_equal(d[0].link,
				 wsnap_index_lookup(idx, link, strlen(link)));
		assert_int_equal(
			d[0].member,
			wsnap_index_lookup(idx, member, strlen(member)));
	}
	return n;
}

static void test_engine_walk_case_dependencies(void **state)
{
	struct tm_member same[] = {TM_D("Dir"), TM_L("l", "dir/../x")};
	struct tm_member files[] = {TM_F("Makefile"), TM_F("makefile"),
				    TM_L("l", "MAKEFILE")};
	struct tm_member exact[] = {TM_D("a"), TM_L("l", "a/../a")};
	struct wsnap_index *idx;

	/* safe either way, but case decides where it leads */
	idx = expect_ok_(same, TM_N(same), __LINE__);
	assert_int_equal(case_deps(idx, "l", "Dir"), 1);
	wsnap_index_free(idx);
	/* interchangeable spellings (files): any stands for all */
	idx = expect_ok_(files, TM_N(files), __LINE__);
	assert_int_equal(case_deps(idx, "l", "Makefile"), 1);
	wsnap_index_free(idx);
	idx = expect_ok_(exact, TM_N(exact), __LINE__);
	assert_int_equal(case_deps(idx, "l", "a"), 0);
	wsnap_index_free(idx);
	/* two members folding alike, one a symlink: either may be the one a
	 * folding filesystem holds */
	REJECT("a/l", "symlink target escapes archive root: s/x",
	       TM_L("a/S", ".."), TM_D("a/s"), TM_F("a/s/x"),
	       TM_L("a/l", "s/x"));
	/* not walked through: no matter */
	OK(TM_L("a/S", ".."), TM_D("a/s"), TM_L("a/l", "x"));
	pol.allow_external_symlinks = true;
	idx = expect_ok_(same, TM_N(same), __LINE__);
	assert_int_equal(case_deps(idx, "l", "Dir"), 0);
	wsnap_index_free(idx);
}

/* Section 4.6 */

static void test_engine_named_symlinks(void **state)
{
	assert_int_equal(wsnap_policy_add_reject_symlink(&pol, "/a/b/", NULL),
			 WSNAP_OK);
	REJECT("./a/b", "symlink member not allowed: a/b", TM_D("a"),
	       TM_L("./a/b", "c"));
	REJECT("a/b", "symlink member not allowed: a/b", TM_L("a/b", "."));
	/* non-symlinks at P and children of P are unaffected */
	OK(TM_F("a/b"));
	OK(TM_D("a/b"), TM_L("a/b/c", "x"), TM_L("a/bc", "x"), TM_L("b", "a"));
}

/* Phase two */

static void test_engine_phase_two(void **state)
{
	REJECT("a/x", "archive path descends through symlink: a", TM_D("d"),
	       TM_L("a", "d"), TM_F("a/x"));
	REJECT("f/g", "archive path descends through non-directory: f",
	       TM_F("f"), TM_F("f/g"));
	REJECT("./f/g/h", "archive path descends through non-directory: f",
	       TM_F("f"), TM_F("./f/g/h"));
}

static void test_engine_phase_two_order_independent(void **state)
{
	REJECT("a/x", "archive path descends through symlink: a", TM_F("a/x"),
	       TM_D("d"), TM_L("a", "d"));
	REJECT("f/g", "archive path descends through non-directory: f",
	       TM_F("f/g"), TM_F("f"));
	/* the nearest ancestor is named; archive order picks the member */
	REJECT("a/b/c", "archive path descends through symlink: a/b",
	       TM_F("a/b/c"), TM_F("a"), TM_L("a/b", "x"));
	REJECT("a/b", "archive path descends through non-directory: a",
	       TM_F("a"), TM_L("a/b", "x"), TM_F("a/b/c"));
}

static void test_engine_phase_one_error_wins(void **state)
{
	/* f/x fails phase two, but the later /abs fails phase one */
	REJECT("/abs", "absolute path", TM_F("f"), TM_F("f/x"), TM_F("/abs"));
	REJECT("l2", "symlink target escapes archive root: ../x", TM_F("f"),
	       TM_F("f/x"), TM_L("l2", "../x"));
	/* and the walk comes before phase two */
	REJECT("e", "symlink target escapes archive root: k/../x", TM_F("f"),
	       TM_F("f/x"), TM_L("k", "."), TM_L("e", "k/../x"));
}

/* Section 5 */

static void test_engine_limit_members(void **state)
{
	pol.max_members = 3;
	OK(TM_D("./"), TM_F("a"), TM_F("b"), TM_D("."), TM_F("c"));
	REJECT("d", "archive member count exceeds limit", TM_F("a"), TM_F("b"),
	       TM_F("c"), TM_F("d"));
	/* repeated directories are members */
	REJECT("a", "archive member count exceeds limit", TM_D("a"), TM_D("a/"),
	       TM_D("./a"), TM_D("a"));
	assert_int_equal(wsnap_policy_add_skip(&pol, "s", NULL), WSNAP_OK);
	OK(TM_F("a"), TM_F("s/1"), TM_F("b"), TM_F("s/2"), TM_F("c"),
	   TM_F("s"));
}

static void test_engine_limit_implicit_dirs(void **state)
{
	/* [wsnap] implicit directories are not members: a low limit does
	 * not stop one deep name */
	pol.max_members = 1;
	OK(TM_F("a/b/c/d/e/f/g"));
	pol.max_members = 2;
	OK(TM_F("a/b/c/d"), TM_F("a/b/x/y/z"));
	REJECT("c", "archive member count exceeds limit", TM_F("a/b/c/d"),
	       TM_F("a/b/x/y/z"), TM_F("c"));
}

/*
 * [wsnap] The index size (--max-index-size): every entry a member adds is
 * charged (index_impl.h), at N allowed, at N + 1 not. 50,000 symlinks with
 * 4 KB paths and targets took 600 MB.
 */
static void test_engine_limit_index_size(void **state)
{
	static const struct wsnap_sparse_run runs[] = {{0, 5}, {10, 5}};
	const uint64_t e = WSNAP_INDEX_ENTRY_BYTES;
	/* "a" (implicit) and "a/b", then "l" with its target "a/b" */
	const uint64_t n = e + 2 + e + 4 + e + 2 + 4;
	const struct tm_member two[] = {TM_F("a/b"), TM_L("l", "a/b")};
	struct tm_member sp = TM_FS("s", 20);
	struct wsnap_index_stats st;
	struct wsnap_index *idx;

	pol.max_index_size = n;
	idx = expect_ok_(two, 2, __LINE__);
	/* what the index holds: the charge, its fixed part and the root,
	 * and the rest of the targets arena's first chunk */
	wsnap_index_stats(idx, &st);
	assert_true(st.memory_bytes <=
		    n + sizeof(struct wsnap_index) + e + 1 + (257u << 10));
	wsnap_index_free(idx);
	/* an implicit directory that becomes a member, a repeated directory
	 * and skipped members add nothing */
	assert_int_equal(wsnap_policy_add_skip(&pol, "x", NULL), WSNAP_OK);
	OK(TM_F("a/b"), TM_D("a"), TM_D("a/"), TM_F("x/y/z"), TM_L("l", "a/b"));
	pol.max_index_size = n - 1;
	REJECT("l", "archive index size exceeds limit", TM_F("a/b"),
	       TM_L("l", "a/b"));
	pol.max_index_size = 2 * e + 2 + 4 - 1;
	REJECT("./a/b", "archive index size exceeds limit", TM_F("./a/b"));
	pol.max_index_size = 0;
	REJECT("a", "archive index size exceeds limit", TM_D("a"));
	OK(TM_D("./"), TM_F("x"));
	/* a sparse map: the map and its runs */
	sp.sparse = runs;
	sp.nsparse = 2;
	pol.max_index_size =
		e + 2 + WSNAP_INDEX_SPARSE_BYTES + 2 * WSNAP_INDEX_RUN_BYTES;
	OK(sp);
	pol.max_index_size--;
	REJECT("s", "archive index size exceeds limit", sp);
}

/*
 * [wsnap] Deep names whose implicit directories hold far more path bytes
 * than the names themselves (each member: 3.8 KB of name, 255 implicit
 * directories, 490 KB of paths) are stopped by the index size after about
 * 130 members under a 64 MiB bound, long before the index is frozen.
 */
static void test_engine_limit_index_deep_names(void **state)
{
	struct wsnap_builder *b;
	struct wsnap_error err;
	static char name[4096];
	size_t i, k, len;
	enum wsnap_status st = WSNAP_OK;

	pol.max_index_size = 64u << 20;
	assert_int_equal(wsnap_builder_new(&b, &pol, &err), WSNAP_OK);
	for (i = 0; i < 1000 && st == WSNAP_OK; i++) {
		struct tm_member t = TM_F(name);
		struct wsnap_raw_member m;

		len = (size_t)snprintf(name, sizeof(name), "x%05zu/", i);
		for (k = 0; k < 254; k++) {
			memcpy(name + len, "aaaaaaaaaaaaaa/", 15);
			len += 15;
		}
		name[len++] = 'f';
		name[len] = '\0';
		tm_raw(&t, &m);
		st = wsnap_builder_add(b, &m, &err);
	}
	wsnap_builder_free(b);
	assert_int_equal(st, WSNAP_REJECTED);
	assert_string_equal(err.reason, "archive index size exceeds limit");
	assert_true(i > 100 && i < 200);
	assert_memory_equal(err.member, name, len + 1);
}

/*
 * [wsnap] Extension headers count against --max-total-size with file data
 * (what a spill file stores): 1000 members with 500 KB pax comments spilled
 * 500 MB under --max-total-size 0. Root entries count their
 * extension headers too; skipped members count nothing.
 */
static void test_engine_limit_total_size_ext_bytes(void **state)
{
	struct tm_member ms[] = {TM_FS("a", 60), TM_D("d"), TM_D("./"),
				 TM_F("s/x")};

	pol.max_total_size = 100;
	ms[0].ext = 20;
	ms[1].ext = 10;
	ms[2].ext = 10;
	ms[3].ext = 1000;
	assert_int_equal(wsnap_policy_add_skip(&pol, "s", NULL), WSNAP_OK);
	wsnap_index_free(expect_ok_(ms, 4, __LINE__));
	ms[1].ext = 11;
	expect_reject_(ms, 4, ".", "archive extracted size exceeds limit",
		       __LINE__);
	ms[0].ext = 30;
	expect_reject_(ms, 2, "d", "archive extracted size exceeds limit",
		       __LINE__);
	ms[0].ext = 41;
	expect_reject_(ms, 1, "a", "archive extracted size exceeds limit",
		       __LINE__);
	pol.max_total_size = 0;
	REJECT("a", "archive extracted size exceeds limit", ms[0]);
	/* more than one member's headers can hold: not from a reader */
	ms[1].ext = WSNAP_READER_MAX_HEADER_BYTES + 1;
	pol.max_total_size = UINT64_MAX;
	REJECT("<tar>", "invalid tar stream", ms[1]);
}

/*
 * [wsnap] Root entries are accepted in any number and count as no member,
 * but each is a header a spill file stores: at most max(--max-members,
 * 2,000,000) of them are read.
 */
static void test_engine_limit_root_entries(void **state)
{
	struct tm_member t = TM_D("./");
	struct wsnap_raw_member m;
	struct wsnap_builder *b;
	struct wsnap_error err;
	uint64_t i;

	pol.max_members = 0;
	assert_int_equal(wsnap_builder_new(&b, &pol, &err), WSNAP_OK);
	tm_raw(&t, &m);
	for (i = 0; i < WSNAP_DEFAULT_MAX_MEMBERS; i++)
		if (wsnap_builder_add(b, &m, &err) != WSNAP_OK)
			fail_msg("root entry %llu: %s", (unsigned long long)i,
				 err.reason);
	assert_int_equal(wsnap_builder_add(b, &m, &err), WSNAP_REJECTED);
	assert_string_equal(err.member, "."); /* a directory, no '/' */
	assert_string_equal(err.reason, "archive member count exceeds limit");
	wsnap_builder_free(b);
}

static void test_engine_limit_total_size(void **state)
{
	pol.max_total_size = 100;
	OK(TM_FS("a", 60), TM_FS("b", 40), TM_FS("c", 0));
	REJECT("b", "archive extracted size exceeds limit", TM_FS("a", 60),
	       TM_FS("b", 41));
	assert_int_equal(wsnap_policy_add_skip(&pol, "s", NULL), WSNAP_OK);
	OK(TM_FS("a", 60), TM_FS("s/big", 1000), TM_FS("b", 40));
}

static void test_engine_limit_file_size(void **state)
{
	pol.max_file_size = 10;
	OK(TM_FS("a", 10));
	REJECT("a", "file size exceeds limit", TM_FS("a", 11));
	assert_int_equal(wsnap_policy_add_skip(&pol, "s", NULL), WSNAP_OK);
	OK(TM_FS("s", 11));
}

static void test_engine_limit_path_length(void **state)
{
	pol.max_path_length = 5;
	OK(TM_F("abcde"), TM_F("./x/./y//z"), TM_D("v/w/"), TM_F("v/w/x"),
	   TM_L("l", "abcde"));
	REJECT("abcdef", "path too long", TM_F("abcdef"));
	REJECT("./a/bcde", "path too long", TM_F("./a/bcde"));
	/* [wsnap] a target is bounded too */
	REJECT("l", "path too long", TM_L("l", "abcdef"));
	assert_int_equal(wsnap_policy_add_skip(&pol, "s", NULL), WSNAP_OK);
	OK(TM_F("s/abcdef"));
}

static void test_engine_limit_depth(void **state)
{
	pol.max_depth = 2;
	OK(TM_F("a/b"), TM_F("./a/./c/"), TM_D("d/e/"));
	REJECT("a/b/c", "path too deep", TM_F("a/b/c"));
	REJECT("a/b/c", "path too deep", TM_D("a/b/c/"));
	assert_int_equal(wsnap_policy_add_skip(&pol, "s", NULL), WSNAP_OK);
	OK(TM_F("s/b/c"));
}

static void test_engine_invalid_member_is_stream_error(void **state)
{
	static const struct wsnap_sparse_run bad_runs[] = {{0, 10}, {5, 10}};
	static const struct wsnap_sparse_run out_runs[] = {{0, 10}, {20, 10}};
	struct tm_member ms[] = {TM_FS("a", 100)};

	ms[0].nsec = 1000000000u;
	REJECT("<tar>", "invalid tar stream", ms[0]);
	ms[0].nsec = 0;
	ms[0].offset = INT64_MAX - 50;
	REJECT("<tar>", "invalid tar stream", ms[0]);
	ms[0].offset = 0;
	ms[0].sparse = bad_runs;
	ms[0].nsparse = 2;
	REJECT("<tar>", "invalid tar stream", ms[0]);
	ms[0].size = 25;
	ms[0].sparse = out_runs;
	REJECT("<tar>", "invalid tar stream", ms[0]);
	ms[0].size = 30;
	OK(ms[0]);
}

/* Section 8 */

static void test_engine_strip_prefix(void **state)
{
	const struct tm_member ms[] = {
		TM_D("./"),
		TM_D("workspace/"),
		TM_D("./workspace/pkg/"),
		TM_F("workspace/pkg/main.py"),
		TM_L("workspace/pkg/link", "main.py"),
	};
	struct wsnap_index *idx;
	const struct wsnap_node *n;

	assert_int_equal(wsnap_policy_set_strip_prefix(&pol, "workspace", NULL),
			 WSNAP_OK);
	idx = expect_ok_(ms, TM_N(ms), __LINE__);
	assert_int_equal(wsnap_index_count(idx), 4);
	n = wsnap_index_node(idx, 2);
	assert_string_equal(n->path, "pkg");
	assert_false(n->flags & WSNAP_NODE_IMPLICIT);
	assert_string_equal(wsnap_index_node(idx, 3)->path, "pkg/link");
	assert_string_equal(wsnap_index_node(idx, 4)->path, "pkg/main.py");
	assert_false(wsnap_index_node(idx, 1)->flags & WSNAP_NODE_IMPLICIT);
	wsnap_index_free(idx);

	REJECT("other/x", "member does not start with prefix: workspace",
	       TM_D("workspace"), TM_F("other/x"));
	REJECT("workspace2/x", "member does not start with prefix: workspace",
	       TM_F("workspace2/x"));
	REJECT("workspacex", "member does not start with prefix: workspace",
	       TM_D("workspacex/"));
	/* the single-member rules run first, on the original name */
	REJECT("workspace/../x", "parent traversal", TM_F("workspace/../x"));
	REJECT("/workspace/x", "absolute path", TM_F("/workspace/x"));
	REJECT("workspace/h", "hardlink member not allowed",
	       TM_H("workspace/h", "x"));
	REJECT("./", "archive root symlink", TM_L("./", "workspace"));
	/* then the whole policy on the new names */
	REJECT(".", "archive root member must be directory", TM_F("workspace"));
	REJECT("a", "duplicate archive path: a", TM_F("workspace/a"),
	       TM_F("./workspace/a"));
	REJECT("l", "symlink target escapes archive root: ../x",
	       TM_L("workspace/l", "../x"));
}

static void test_engine_strip_prefix_then_policy(void **state)
{
	struct wsnap_index *idx;
	const struct tm_member ms[] = {TM_F("a/b/pkg/x"), TM_F("a/b/keep"),
				       TM_F("a/b/c/d")};

	assert_int_equal(wsnap_policy_set_strip_prefix(&pol, "./a/b/", NULL),
			 WSNAP_OK);
	assert_int_equal(wsnap_policy_add_skip(&pol, "pkg", NULL), WSNAP_OK);
	idx = expect_ok_(ms, TM_N(ms), __LINE__);
	assert_int_equal(wsnap_index_lookup(idx, "pkg", 3), 0);
	assert_int_not_equal(wsnap_index_lookup(idx, "keep", 4), 0);
	assert_int_not_equal(wsnap_index_lookup(idx, "c/d", 3), 0);
	wsnap_index_free(idx);
	REJECT("a/bc", "member does not start with prefix: a/b", TM_F("a/bc"));
	/* symlinks are allowed for the first pass, not after */
	pol.no_symlinks = true;
	REJECT("elsewhere", "member does not start with prefix: a/b",
	       TM_L("elsewhere", "x"));
	REJECT("l", "symlink member not allowed", TM_L("a/b/l", "x"));
	pol.max_depth = 1;
	REJECT("c/d", "path too deep", TM_F("a/b/c/d"));
}

int main(void)
{
#define T(f) cmocka_unit_test_setup_teardown(f, setup, teardown)
	const struct CMUnitTest tests[] = {
		T(test_engine_root_entries),
		T(test_engine_root_metadata_last_entry_wins),
		T(test_engine_windows_drive),
		T(test_engine_backslash),
		T(test_engine_absolute),
		T(test_engine_parent_traversal),
		T(test_engine_symlink_opt_in),
		T(test_engine_hardlink_and_types),
		T(test_engine_representable_on_linux),
		T(test_engine_directory_name_loses_slashes),
		T(test_engine_skip),
		T(test_engine_skip_everything),
		T(test_engine_skip_root_name_variants),
		T(test_engine_skip_is_component_wise),
		T(test_engine_protected_path_matrix),
		T(test_engine_protected_path_root_name),
		T(test_engine_protected_root),
		T(test_engine_duplicate_matrix),
		T(test_engine_duplicate_dirs_later_metadata),
		T(test_engine_implicit_then_member_is_no_duplicate),
		T(test_engine_symlink_targets_lexical),
		T(test_engine_walk_venv_python_passes),
		T(test_engine_walk_link_escape),
		T(test_engine_walk_shallower_link),
		T(test_engine_walk_loops),
		T(test_engine_walk_forty_replacements),
		T(test_engine_walk_exponential_is_bounded),
		T(test_engine_walk_many_links_share_work),
		T(test_engine_walk_parent_through_symlink),
		T(test_engine_walk_case_folded_escape),
		T(test_engine_walk_case_folded_unicode),
		T(test_engine_walk_case_dependencies),
		T(test_engine_named_symlinks),
		T(test_engine_phase_two),
		T(test_engine_phase_two_order_independent),
		T(test_engine_phase_one_error_wins),
		T(test_engine_limit_members),
		T(test_engine_limit_implicit_dirs),
		T(test_engine_limit_index_size),
		T(test_engine_limit_index_deep_names),
		T(test_engine_limit_total_size_ext_bytes),
		T(test_engine_limit_root_entries),
		T(test_engine_limit_total_size),
		T(test_engine_limit_file_size),
		T(test_engine_limit_path_length),
		T(test_engine_limit_depth),
		T(test_engine_invalid_member_is_stream_error),
		T(test_engine_strip_prefix),
		T(test_engine_strip_prefix_then_policy),
	};
#undef T
	return cmocka_run_group_tests(tests, NULL, NULL);
}
