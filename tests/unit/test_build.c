/* SPDX-License-Identifier: MIT */
/*
 * Unit tests of core/index/build.c: the reader and the builder run as a
 * pipeline (batches of members handed between two threads), and the outcome
 * must be that of the sequential loop whatever the batch boundaries: every
 * member reaches the builder in archive order, a rejection of an earlier member
 * wins over a stream error further on, members bigger than a batch's bytes
 * pass whole, and the reader stops once the builder has failed, before it
 * decodes the data after the member that failed.
 */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include <cmocka.h>

#include "index.h"
#include "policy.h"
#include "support.h"

/* More members than several batches hold (a batch is 1024 members). */
#define MANY 5000

static void add_many(struct ts_archive *a, unsigned from, unsigned to)
{
	char name[64];
	unsigned i;

	for (i = from; i < to; i++) {
		snprintf(name, sizeof(name), "d%02u/f%05u", i % 7, i);
		ts_add_file(a, name, 0644, name, strlen(name));
	}
}

/* Ends the archive with a KiB of garbage instead of the end marker. */
static unsigned char *finish_with_junk(struct ts_archive *a, size_t *len)
{
	unsigned char junk[1024];

	memset(junk, 'j', sizeof(junk));
	ts_add_raw(a, junk, sizeof(junk));
	return ts_archive_finish(a, 0, len);
}

/* Builds the index of the archive bytes from a memfd and from a pipe, and
 * from a memfd without the pipeline (opts.sequential): all must agree on
 * the status and the error, the sequential loop on the member count. */
static enum wsnap_status build(unsigned char *tar, size_t len,
			       struct wsnap_index **out,
			       struct wsnap_error *err)
{
	struct wsnap_reader_opts o = {.keep_data = false};
	struct wsnap_reader_opts so = {.sequential = true};
	struct wsnap_policy p;
	struct wsnap_error perr, serr;
	struct wsnap_index *pidx = NULL, *sidx = NULL;
	enum wsnap_status st, pst, sst;
	int fd;

	wsnap_policy_init(&p);
	fd = ts_memfd(tar, len);
	st = wsnap_index_build(out, fd, &p, &o, err);
	close(fd);
	fd = ts_pipefd(tar, len);
	pst = wsnap_index_build(&pidx, fd, &p, &o, &perr);
	close(fd);
	fd = ts_memfd(tar, len);
	sst = wsnap_index_build(&sidx, fd, &p, &so, &serr);
	close(fd);
	assert_int_equal(st, pst);
	assert_int_equal(st, sst);
	if (st != WSNAP_OK) {
		assert_string_equal(err->member, perr.member);
		assert_string_equal(err->reason, perr.reason);
		assert_string_equal(err->member, serr.member);
		assert_string_equal(err->reason, serr.reason);
	} else {
		assert_int_equal(wsnap_index_count(*out),
				 wsnap_index_count(sidx));
	}
	wsnap_index_free(pidx);
	wsnap_index_free(sidx);
	wsnap_policy_release(&p);
	return st;
}

static void test_build_every_member_in_order(void **state)
{
	struct ts_archive *a = ts_archive_new();
	struct wsnap_index *idx = NULL;
	struct wsnap_error err;
	struct wsnap_index_stats st;
	char name[64];
	unsigned char *tar;
	size_t len;
	unsigned i;

	add_many(a, 0, MANY);
	tar = ts_archive_finish(a, 1, &len);
	assert_int_equal(build(tar, len, &idx, &err), WSNAP_OK);
	wsnap_index_stats(idx, &st);
	assert_int_equal(st.members, MANY);
	assert_int_equal(st.files, MANY);
	for (i = 0; i < MANY; i++) {
		const struct wsnap_node *n;
		uint32_t ino;

		snprintf(name, sizeof(name), "d%02u/f%05u", i % 7, i);
		ino = wsnap_index_lookup(idx, name, strlen(name));
		assert_int_not_equal(ino, 0);
		n = wsnap_index_node(idx, ino);
		/* 'order' is the position the builder saw the member at */
		assert_int_equal(n->order, i + 1);
		assert_int_equal(n->size, strlen(name));
	}
	wsnap_index_free(idx);
	free(tar);
}

/* A rejected member in the fourth batch, garbage thousands of members
 * later: the rejection, as the sequential loop would report it. */
static void test_build_rejection_before_stream_error(void **state)
{
	struct ts_archive *a = ts_archive_new();
	struct wsnap_index *idx = NULL;
	struct wsnap_error err;
	unsigned char *tar;
	size_t len;

	add_many(a, 0, 3500);
	ts_add_file(a, "../escape", 0644, "x", 1);
	add_many(a, 3500, MANY);
	tar = finish_with_junk(a, &len);
	assert_int_equal(build(tar, len, &idx, &err), WSNAP_REJECTED);
	assert_null(idx);
	assert_string_equal(err.member, "../escape");
	assert_string_equal(err.reason, "parent traversal");
	free(tar);
}

/* Garbage after many good members: the stream error, after the builder
 * judged every member before it (a rejection among them would win). */
static void test_build_stream_error_after_batches(void **state)
{
	struct ts_archive *a = ts_archive_new();
	struct wsnap_index *idx = NULL;
	struct wsnap_error err;
	unsigned char *tar;
	size_t len;

	add_many(a, 0, MANY);
	tar = finish_with_junk(a, &len);
	assert_int_equal(build(tar, len, &idx, &err), WSNAP_REJECTED);
	assert_null(idx);
	assert_string_equal(err.member, WSNAP_TAR_MEMBER);
	assert_string_equal(err.reason, WSNAP_REASON_INVALID_STREAM);
	free(tar);
}

/* The last member of the archive is rejected: the final, partial batch
 * reaches the builder too. */
static void test_build_last_partial_batch_judged(void **state)
{
	struct ts_archive *a = ts_archive_new();
	struct wsnap_index *idx = NULL;
	struct wsnap_error err;
	unsigned char *tar;
	size_t len;

	add_many(a, 0, 2049);
	ts_add_file(a, "/etc/passwd", 0644, "x", 1);
	tar = ts_archive_finish(a, 1, &len);
	assert_int_equal(build(tar, len, &idx, &err), WSNAP_REJECTED);
	assert_string_equal(err.member, "/etc/passwd");
	assert_string_equal(err.reason, "absolute path");
	free(tar);
}

static void record_progress(void *ctx, uint64_t done, uint64_t total)
{
	atomic_store((_Atomic uint64_t *)ctx, done);
}

/*
 * A member rejected at its header, 64 MiB of data behind it in a pipe: the
 * builder sees it before the reader decodes the data, and the reader stops
 * (10 KB of bzip2 declaring a 100 GiB member took 20 s of CPU before the
 * rejection was reported). Progress is reported every 4 MiB read.
 */
static void test_build_rejection_stops_the_reader(void **state)
{
	const size_t big = 64u << 20;
	_Atomic uint64_t done = 0;
	struct wsnap_reader_opts o = {.progress = record_progress,
				      .progress_ctx = (void *)&done};
	unsigned char h[WSNAP_TAR_BLOCK], *tar;
	struct ts_archive *a = ts_archive_new();
	struct wsnap_index *idx = NULL;
	struct wsnap_policy p;
	struct wsnap_error err;
	size_t len;
	char *data = calloc(1, big);
	int fd;

	assert_non_null(data);
	ts_add_file(a, "small", 0644, "x", 1);
	ts_raw_header(h, "big", '0', 0644, big, NULL);
	ts_add_raw(a, h, sizeof(h));
	ts_add_raw(a, data, big);
	add_many(a, 0, 10);
	tar = ts_archive_finish(a, 1, &len);
	free(data);
	wsnap_policy_init(&p);
	p.max_file_size = 1000;
	fd = ts_pipefd(tar, len);
	assert_int_equal(wsnap_index_build(&idx, fd, &p, &o, &err),
			 WSNAP_REJECTED);
	assert_string_equal(err.member, "big");
	assert_string_equal(err.reason, "file size exceeds limit");
	assert_true(atomic_load(&done) <= (16u << 20));
	close(fd);
	wsnap_policy_release(&p);
	free(tar);
}

/* A name far bigger than a batch's 64 KiB of bytes, and a long target,
 * between ordinary members: each passes whole, byte for byte. (Rule 3.9:
 * components of at most 255 bytes, targets under 4096.) */
static void test_build_member_bigger_than_a_batch(void **state)
{
	struct wsnap_policy p;
	struct ts_archive *a = ts_archive_new();
	struct wsnap_reader_opts o = {.keep_data = false};
	struct wsnap_index *idx = NULL;
	struct wsnap_error err;
	const struct wsnap_node *n;
	size_t big = 100u << 10, tlen = 4095, i, len;
	char *name = malloc(big + 1), *target = malloc(tlen + 1);
	unsigned char *tar;
	uint32_t ino;
	int fd;

	assert_non_null(name);
	assert_non_null(target);
	/* components of 250 bytes under a directory */
	memcpy(name, "big/", 4);
	for (i = 4; i < big; i++)
		name[i] = (i - 4) % 251 == 250 ? '/' : (char)('a' + i % 26);
	name[big - 1] = 'z';
	name[big] = '\0';
	for (i = 0; i < tlen; i++)
		target[i] = "../"[i % 3];
	memcpy(target + tlen - 3, "x/y", 3);
	target[tlen] = '\0';
	add_many(a, 0, 1500);
	ts_add_file(a, name, 0644, "big", 3);
	add_many(a, 1500, 1600);
	ts_add_symlink(a, "long-link", target);
	add_many(a, 1600, 3000);
	tar = ts_archive_finish(a, 1, &len);

	wsnap_policy_init(&p);
	p.allow_external_symlinks = true;
	p.max_path_length = UINT64_MAX;
	p.max_depth = UINT64_MAX;
	fd = ts_memfd(tar, len);
	if (wsnap_index_build(&idx, fd, &p, &o, &err) != WSNAP_OK)
		fail_msg("rejected '%.40s': %s", err.member, err.reason);
	close(fd);
	ino = wsnap_index_lookup(idx, name, big);
	assert_int_not_equal(ino, 0);
	n = wsnap_index_node(idx, ino);
	assert_int_equal(n->order, 1501);
	assert_int_equal(n->size, 3);
	ino = wsnap_index_lookup(idx, "long-link", 9);
	assert_int_not_equal(ino, 0);
	n = wsnap_index_node(idx, ino);
	assert_int_equal(n->order, 1602);
	assert_non_null(n->target);
	assert_int_equal(strlen(n->target), tlen);
	assert_memory_equal(n->target, target, tlen);
	wsnap_index_free(idx);
	wsnap_policy_release(&p);
	free(tar);
	free(name);
	free(target);
}

/* The progress callback of test_build_archive_changed_while_read. */
struct changer {
	int fd;
	bool change; /* rewrite a byte on the last call */
	bool changed;
};

/* On the last progress call (the whole archive read), one byte of the
 * first member's data is rewritten and the mtime put back: size, inode,
 * mtime all as they were. */
static void change_at_end(void *ctx, uint64_t done, uint64_t total)
{
	struct changer *c = ctx;
	struct timespec t[2];
	struct stat st;

	if (!c->change || c->changed || total == 0 || done < total)
		return;
	c->changed = true;
	assert_int_equal(fstat(c->fd, &st), 0);
	assert_int_equal(pwrite(c->fd, "Z", 1, 513), 1);
	t[0] = st.st_atim;
	t[1] = st.st_mtim;
	assert_int_equal(futimens(c->fd, t), 0);
}

/*
 * The archive's identity was taken after it had been
 * read, so a change made while it was read (here: once it has been read,
 * before the index takes it) was recorded as the archive judged, and its
 * new bytes were served. The identity is taken before the read and must
 * hold after it, with or without keep_data, pipeline or not.
 */
static void test_build_archive_changed_while_read(void **state)
{
	struct ts_archive *a = ts_archive_new();
	struct wsnap_index *idx;
	struct wsnap_policy p;
	struct wsnap_error err;
	unsigned char *tar;
	size_t len;
	unsigned i;

	add_many(a, 0, 50);
	tar = ts_archive_finish(a, 1, &len);
	wsnap_policy_init(&p);
	for (i = 0; i < 8; i++) {
		struct changer c = {.change = (i & 4) != 0};
		struct wsnap_reader_opts o = {.keep_data = (i & 1) != 0,
					      .sequential = (i & 2) != 0,
					      .progress = change_at_end,
					      .progress_ctx = &c};
		enum wsnap_status st;

		c.fd = ts_memfd(tar, len);
		st = wsnap_index_build(&idx, c.fd, &p, &o, &err);
		assert_int_equal(c.changed, c.change);
		if (!c.change) {
			assert_int_equal(st, WSNAP_OK);
			assert_int_equal(wsnap_index_count(idx), 58);
		} else {
			assert_int_equal(st, WSNAP_IO);
			assert_int_equal(err.errnum, EIO);
			assert_string_equal(
				err.reason,
				"archive changed while it was read");
			assert_null(idx);
		}
		wsnap_index_free(idx);
		close(c.fd);
	}
	wsnap_policy_release(&p);
	free(tar);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_build_every_member_in_order),
		cmocka_unit_test(test_build_rejection_before_stream_error),
		cmocka_unit_test(test_build_stream_error_after_batches),
		cmocka_unit_test(test_build_last_partial_batch_judged),
		cmocka_unit_test(test_build_rejection_stops_the_reader),
		cmocka_unit_test(test_build_member_bigger_than_a_batch),
		cmocka_unit_test(test_build_archive_changed_while_read),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
