/* SPDX-License-Identifier: MIT */
/* Unit tests of the test-support library (tests/lib): archives built in
 * memory must be what they claim, read back by libarchive itself. */
#include <archive.h>
#include <archive_entry.h>
#include <errno.h>
#include <fcntl.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include <cmocka.h>

#include "support.h"
#include "array.h"

/* Reads everything from fd until end of file. */
static unsigned char *slurp(int fd, size_t *len)
{
	size_t cap = 4096, n = 0;
	unsigned char *buf = malloc(cap);

	assert_non_null(buf);
	for (;;) {
		ssize_t r;

		if (n == cap) {
			cap *= 2;
			buf = realloc(buf, cap);
			assert_non_null(buf);
		}
		r = read(fd, buf + n, cap - n);
		if (r < 0 && errno == EINTR)
			continue;
		assert_true(r >= 0);
		if (r == 0)
			break;
		n += (size_t)r;
	}
	*len = n;
	return buf;
}

static struct archive *open_reader(const void *data, size_t len)
{
	struct archive *r = archive_read_new();

	assert_non_null(r);
	archive_read_support_filter_all(r);
	archive_read_support_format_tar(r);
	assert_int_equal(archive_read_open_memory(r, data, len), ARCHIVE_OK);
	return r;
}

static void expect_entry(struct archive *r, const char *name, unsigned type,
			 const char *data, size_t len)
{
	struct archive_entry *e;
	char buf[256];
	la_ssize_t n;

	assert_int_equal(archive_read_next_header(r, &e), ARCHIVE_OK);
	assert_string_equal(archive_entry_pathname(e), name);
	assert_int_equal(archive_entry_filetype(e), type);
	assert_int_equal(archive_entry_size(e), len);
	n = archive_read_data(r, buf, sizeof(buf));
	assert_int_equal(n, len);
	if (len)
		assert_memory_equal(buf, data, len);
}

static void test_support_archive_round_trips(void **state)
{
	struct ts_archive *a = ts_archive_new();
	struct archive_entry *e;
	struct archive *r;
	unsigned char *tar;
	size_t len;

	ts_set_mtime(a, 1234567890, 500000000);
	ts_add_file(a, "dir/file", 0640, "hello", 5);
	ts_add_dir(a, "dir", 0755);
	ts_add_raw_member(a, "raw", '0', 0600, "raw data", 8, NULL);
	ts_add_symlink(a, "link", "dir/file");
	ts_add_hardlink(a, "hard", "dir/file");
	ts_add_special(a, "fifo", AE_IFIFO);
	tar = ts_archive_finish(a, 1, &len);
	assert_int_equal(len % WSNAP_TAR_BLOCK, 0);

	r = open_reader(tar, len);
	expect_entry(r, "dir/file", AE_IFREG, "hello", 5);
	expect_entry(r, "dir/", AE_IFDIR, NULL, 0);
	expect_entry(r, "raw", AE_IFREG, "raw data", 8);
	assert_int_equal(archive_read_next_header(r, &e), ARCHIVE_OK);
	assert_string_equal(archive_entry_symlink(e), "dir/file");
	assert_int_equal(archive_entry_mtime(e), 1234567890);
	assert_int_equal(archive_entry_mtime_nsec(e), 500000000);
	assert_int_equal(archive_read_next_header(r, &e), ARCHIVE_OK);
	assert_string_equal(archive_entry_hardlink(e), "dir/file");
	assert_int_equal(archive_read_next_header(r, &e), ARCHIVE_OK);
	assert_int_equal(archive_entry_filetype(e), AE_IFIFO);
	assert_int_equal(archive_read_next_header(r, &e), ARCHIVE_EOF);
	archive_read_free(r);
	free(tar);
}

static void test_support_end_marker_is_optional(void **state)
{
	struct ts_archive *a = ts_archive_new();
	unsigned char *tar;
	size_t len;

	ts_add_raw_member(a, "x", '0', 0644, "abc", 3, NULL);
	tar = ts_archive_finish(a, 0, &len);
	/* header and one padded data block, no trailer */
	assert_int_equal(len, 1024);
	free(tar);

	a = ts_archive_new();
	tar = ts_archive_finish(a, 1, &len);
	assert_int_equal(len, 1024);
	free(tar);
}

static void test_support_raw_header_checksum(void **state)
{
	const size_t ck = WSNAP_TAR_OFF(chksum);
	unsigned char block[WSNAP_TAR_BLOCK];
	unsigned sum = 0;
	size_t i;

	ts_raw_header(block, "name", 'Z', 0755, 12345, "target");
	for (i = 0; i < WSNAP_TAR_BLOCK; i++)
		sum += i >= ck && i < ck + WSNAP_TAR_LEN(chksum) ? ' '
								 : block[i];
	assert_int_equal(
		strtoul((char *)block + WSNAP_TAR_OFF(chksum), NULL, 8), sum);
	assert_int_equal(block[WSNAP_TAR_OFF(typeflag)], 'Z');
	assert_int_equal(strtoull((char *)block + WSNAP_TAR_OFF(size), NULL, 8),
			 12345);
	assert_string_equal((char *)block + WSNAP_TAR_OFF(linkname), "target");
	assert_memory_equal(block + WSNAP_TAR_OFF(magic), WSNAP_TAR_POSIX_MAGIC,
			    WSNAP_TAR_MAGIC_LEN);
}

static void test_support_raw_header_big_size_is_base256(void **state)
{
	unsigned char block[WSNAP_TAR_BLOCK];

	ts_raw_header(block, "big", '0', 0644, 1ULL << 40, NULL);
	assert_int_equal(block[WSNAP_TAR_OFF(size)], 0x80);
	assert_int_equal(block[WSNAP_TAR_OFF(size) + 6], 0x01);
	assert_int_equal(block[WSNAP_TAR_OFF(size) + 11], 0);
}

static void test_support_compress_round_trips(void **state)
{
	static const char *const filters[] = {"gzip", "bzip2", "xz", "zstd",
					      "lz4"};
	struct ts_archive *a = ts_archive_new();
	unsigned char *tar;
	size_t len, i;

	ts_add_file(a, "f", 0644, "compressed", 10);
	tar = ts_archive_finish(a, 1, &len);
	for (i = 0; i < ARRAY_SIZE(filters); i++) {
		size_t clen;
		unsigned char *c = ts_compress(tar, len, filters[i], &clen);
		struct archive *r = open_reader(c, clen);

		expect_entry(r, "f", AE_IFREG, "compressed", 10);
		assert_string_equal(archive_filter_name(r, 0), filters[i]);
		archive_read_free(r);
		free(c);
	}
	free(tar);
}

static void test_support_memfd_is_seekable(void **state)
{
	unsigned char *got;
	size_t len;
	int fd = ts_memfd("0123456789", 10);

	got = slurp(fd, &len);
	assert_int_equal(len, 10);
	assert_memory_equal(got, "0123456789", 10);
	assert_int_equal(lseek(fd, 3, SEEK_SET), 3);
	free(got);
	close(fd);
}

static void test_support_pipe_delivers_all(void **state)
{
	size_t big = 1 << 20, len, i;
	unsigned char *data = malloc(big), *got;
	int fd;

	assert_non_null(data);
	for (i = 0; i < big; i++)
		data[i] = (unsigned char)(i * 7);
	fd = ts_pipefd(data, big);
	assert_int_equal(lseek(fd, 0, SEEK_CUR), -1);
	got = slurp(fd, &len);
	assert_int_equal(len, big);
	assert_memory_equal(got, data, big);
	close(fd);
	free(got);
	free(data);
}

static void test_support_pipe_reader_may_stop_early(void **state)
{
	size_t big = 4 << 20;
	unsigned char *data = calloc(1, big);
	char c;
	int fd;

	assert_non_null(data);
	fd = ts_pipefd(data, big);
	assert_int_equal(read(fd, &c, 1), 1);
	close(fd); /* the feeder gets EPIPE and must not kill us */
	free(data);
}

static void test_support_rmtree_does_not_follow_symlinks(void **state)
{
	char *outside = ts_tempdir(), *dir = ts_tempdir();
	char *keep = ts_write_file(outside, "keep", "k", 1);
	char *sub, *link, *f;
	struct stat st;

	sub = malloc(strlen(dir) + 5);
	assert_non_null(sub);
	memcpy(sub, dir, strlen(dir));
	memcpy(sub + strlen(dir), "/sub", 5);
	assert_int_equal(mkdir(sub, 0755), 0);
	f = ts_write_file(sub, "f", "data", 4);
	link = malloc(strlen(dir) + 6);
	assert_non_null(link);
	memcpy(link, dir, strlen(dir));
	memcpy(link + strlen(dir), "/link", 6);
	assert_int_equal(symlink(outside, link), 0);

	ts_rmtree(dir);
	assert_int_equal(lstat(dir, &st), -1);
	assert_int_equal(stat(keep, &st), 0);
	ts_rmtree(outside);
	assert_int_equal(lstat(outside, &st), -1);
	free(outside);
	free(dir);
	free(keep);
	free(sub);
	free(link);
	free(f);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_support_archive_round_trips),
		cmocka_unit_test(test_support_end_marker_is_optional),
		cmocka_unit_test(test_support_raw_header_checksum),
		cmocka_unit_test(test_support_raw_header_big_size_is_base256),
		cmocka_unit_test(test_support_compress_round_trips),
		cmocka_unit_test(test_support_memfd_is_seekable),
		cmocka_unit_test(test_support_pipe_delivers_all),
		cmocka_unit_test(test_support_pipe_reader_may_stop_early),
		cmocka_unit_test(test_support_rmtree_does_not_follow_symlinks),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
