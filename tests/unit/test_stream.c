/* SPDX-License-Identifier: MIT */
/*
 * Unit tests of core/stream (the file source and the plain stream) and of an
 * index reading its data through a stream (wsnap_index_attach_stream): the
 * bytes come from the stream, a stream that fails or reports a change gives
 * -EIO, and a file source sees its file rewritten under it.
 */
#include <errno.h>
#include <fcntl.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <cmocka.h>

#include "index.h"
#include "policy.h"
#include "reader.h"
#include "stream.h"
#include "support.h"

static int tmpfile_with(const void *data, size_t len, char **path)
{
	char *dir = ts_tempdir();
	int fd;

	*path = ts_write_file(dir, "f", data, len);
	free(dir);
	fd = open(*path, O_RDONLY | O_CLOEXEC);
	assert_true(fd >= 0);
	return fd;
}

static void drop(char *path)
{
	char *slash = strrchr(path, '/');

	unlink(path);
	*slash = '\0';
	rmdir(path);
	free(path);
}

/* Reads come from the file; past its end is 0; exact reads past it -EIO. */
static void test_stream_file_source_reads(void **state)
{
	struct wsnap_source *src;
	struct wsnap_stream *s;
	char buf[16], *path;
	int fd = tmpfile_with("0123456789", 10, &path);

	assert_int_equal(wsnap_source_file(fd, "f", &src), 0);
	assert_int_equal(src->size, 10);
	assert_string_equal(src->label, "f");
	assert_int_equal(src->ops->pread(src, buf, sizeof(buf), 4), 6);
	assert_memory_equal(buf, "456789", 6);
	assert_int_equal(src->ops->pread(src, buf, 4, 10), 0);
	assert_int_equal(wsnap_source_read(src, buf, 3, 7), 0);
	assert_memory_equal(buf, "789", 3);
	assert_int_equal(wsnap_source_read(src, buf, 4, 7), -EIO);
	assert_int_equal(wsnap_source_read(src, buf, 2, UINT64_MAX), -EINVAL);
	assert_int_equal(wsnap_stream_plain(src, &s), 0);
	assert_int_equal(s->size, 10);
	assert_int_equal(wsnap_stream_read(s, buf, 10, 0), 0);
	assert_memory_equal(buf, "0123456789", 10);
	assert_int_equal(wsnap_stream_check(s), 0);
	wsnap_stream_free(s);
	drop(path);
}

/* A file rewritten in place (same size) is not the one validated. */
static void test_stream_file_source_sees_rewrite(void **state)
{
	struct wsnap_source *src;
	char buf[4], *path;
	int fd = tmpfile_with("abcdefgh", 8, &path), w;

	assert_int_equal(wsnap_source_file(fd, "f", &src), 0);
	assert_int_equal(src->ops->check(src), 0);
	w = open(path, O_WRONLY | O_CLOEXEC);
	assert_true(w >= 0);
	assert_int_equal(pwrite(w, "XY", 2, 0), 2);
	close(w);
	assert_int_equal(src->ops->check(src), -EIO);
	/* the read itself does not check (stream.h): the caller's check
	 * after it is what refuses these bytes */
	assert_int_equal(src->ops->pread(src, buf, 4, 0), 4);
	assert_int_equal(src->ops->check(src), -EIO);
	wsnap_source_free(src);
	drop(path);
}

/* A stream of our own: the bytes of buf, or a failure on demand. */
struct fake_stream {
	struct wsnap_stream base;
	const unsigned char *bytes;
	int fail;	 /* pread returns this when non-zero */
	int check;	 /* check returns this */
	int check_after; /* check returns this once a read was made */
	int reads;
};

static ssize_t fake_pread(struct wsnap_stream *s, void *buf, size_t len,
			  uint64_t off)
{
	struct fake_stream *f = (struct fake_stream *)s;

	f->reads++;
	if (f->check_after)
		f->check = f->check_after;
	if (f->fail)
		return f->fail;
	if (off >= s->size)
		return 0;
	if (len > s->size - off)
		len = (size_t)(s->size - off);
	if (len > 7)
		len = 7; /* short reads: the index must loop */
	memcpy(buf, f->bytes + off, len);
	return (ssize_t)len;
}

static int fake_check(struct wsnap_stream *s)
{
	return ((struct fake_stream *)s)->check;
}

static void fake_destroy(struct wsnap_stream *s)
{
	free(s);
}

static const struct wsnap_stream_ops fake_ops = {
	.pread = fake_pread,
	.check = fake_check,
	.destroy = fake_destroy,
};

static struct wsnap_index *index_of(const unsigned char *tar, size_t len)
{
	struct wsnap_reader_opts ro = {.keep_data = true};
	struct wsnap_policy p;
	struct wsnap_index *idx = NULL;
	struct wsnap_error err;
	int fd = ts_memfd(tar, len);

	wsnap_policy_init(&p);
	assert_int_equal(wsnap_index_build(&idx, fd, &p, &ro, &err), WSNAP_OK);
	wsnap_policy_release(&p);
	close(fd);
	return idx;
}

/* An index with a stream reads its files through it, whatever the stream's
 * read sizes; failures and changes are -EIO, never other bytes. */
static void test_stream_index_reads_through_stream(void **state)
{
	static const char body[] =
		"the quick brown fox jumps over the lazy dog";
	struct ts_archive *a = ts_archive_new();
	struct wsnap_index *idx;
	struct fake_stream *f = calloc(1, sizeof(*f));
	unsigned char *tar;
	char buf[64];
	size_t len;
	uint32_t ino;

	ts_add_file(a, "./dir/fox.txt", 0644, body, sizeof(body) - 1);
	tar = ts_archive_finish(a, 1, &len);
	idx = index_of(tar, len);
	ino = wsnap_index_lookup(idx, "dir/fox.txt", 11);
	assert_true(ino != 0);
	assert_true(wsnap_index_has_data(idx));

	assert_non_null(f);
	f->base.ops = &fake_ops;
	f->base.size = len;
	f->bytes = tar;
	wsnap_index_attach_stream(idx, &f->base);
	assert_int_equal(wsnap_index_data_fd(idx), -1);
	assert_true(wsnap_index_has_data(idx));
	assert_int_equal(wsnap_index_data_check(idx), 0);

	memset(buf, 0, sizeof(buf));
	assert_int_equal(wsnap_index_pread(idx, ino, buf, sizeof(buf), 0),
			 sizeof(body) - 1);
	assert_string_equal(buf, body);
	assert_true(f->reads > 1);
	assert_int_equal(wsnap_index_pread(idx, ino, buf, 5, 4), 5);
	assert_memory_equal(buf, "quick", 5);
	/* past the end of the stream: the bytes there are not the file's */
	assert_int_equal(wsnap_index_read_stored(idx, buf, 16, len - 4), 4);

	f->fail = -EIO;
	assert_int_equal(wsnap_index_pread(idx, ino, buf, 5, 0), -EIO);
	f->fail = 0;
	/* the one layer of identity checks: a change during the read, seen
	 * only by the check after it, is -EIO too */
	f->check_after = -EIO;
	assert_int_equal(wsnap_index_data_check(idx), 0);
	assert_int_equal(wsnap_index_pread(idx, ino, buf, 5, 0), -EIO);
	f->check_after = 0;
	f->check = -EIO;
	assert_int_equal(wsnap_index_data_check(idx), -EIO);
	assert_int_equal(wsnap_index_pread(idx, ino, buf, 5, 0), -EIO);

	wsnap_index_free(idx); /* frees the stream */
	free(tar);
}

/* A stream ending before a member's data does is -EIO, not a short file. */
static void test_stream_index_short_stream_is_eio(void **state)
{
	struct ts_archive *a = ts_archive_new();
	struct wsnap_index *idx;
	struct fake_stream *f = calloc(1, sizeof(*f));
	unsigned char *tar;
	char buf[8];
	size_t len;
	uint32_t ino;

	ts_add_file(a, "./a", 0644, "12345678", 8);
	tar = ts_archive_finish(a, 1, &len);
	idx = index_of(tar, len);
	ino = wsnap_index_lookup(idx, "a", 1);
	assert_non_null(f);
	f->base.ops = &fake_ops;
	f->base.size = 512 + 4; /* cut inside the data */
	f->bytes = tar;
	wsnap_index_attach_stream(idx, &f->base);
	assert_int_equal(wsnap_index_pread(idx, ino, buf, 8, 0), -EIO);
	wsnap_index_free(idx);
	free(tar);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_stream_file_source_reads),
		cmocka_unit_test(test_stream_file_source_sees_rewrite),
		cmocka_unit_test(test_stream_index_reads_through_stream),
		cmocka_unit_test(test_stream_index_short_stream_is_eio),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
