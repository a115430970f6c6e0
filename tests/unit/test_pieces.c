/* SPDX-License-Identifier: MIT */
/*
 * Unit tests of the on-disk chunk cache (core/remote/pieces.h): the piece
 * format (header, checksum, names) and the store in a directory of the
 * test's own: what is put is got back, by another store of the same key
 * too; what is bad on disk (bytes flipped, truncated, another piece's or
 * another object's file put in its place, a symlink, a FIFO) is a miss and
 * removed, never served; the bound over all objects is kept.
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include <cmocka.h>

#include "pieces.h"

#define SIZE (64ull << 20)

static const unsigned char key_a[WSNAP_PIECE_KEY] = {1, 2, 3};
static const unsigned char key_b[WSNAP_PIECE_KEY] = {9, 9, 9};

static unsigned char byte_at(uint64_t off)
{
	return (unsigned char)(off * 2654435761u >> 11);
}

static void fill(unsigned char *buf, size_t len, uint64_t off)
{
	size_t i;

	for (i = 0; i < len; i++)
		buf[i] = byte_at(off + i);
}

static void test_pieces_header(void **state)
{
	unsigned char hdr[WSNAP_PIECE_HDR], bad[WSNAP_PIECE_HDR];
	unsigned char data[1000];
	size_t i;

	fill(data, sizeof(data), 4096);
	wsnap_piece_header(hdr, key_a, 4096, data, sizeof(data));
	assert_int_equal(wsnap_piece_verify(hdr, key_a, 4096, sizeof(data),
					    data, sizeof(data)),
			 0);
	/* another key, offset, length, or fewer bytes than it says */
	assert_int_equal(wsnap_piece_verify(hdr, key_b, 4096, sizeof(data),
					    data, sizeof(data)),
			 -EINVAL);
	assert_int_equal(wsnap_piece_verify(hdr, key_a, 0, sizeof(data), data,
					    sizeof(data)),
			 -EINVAL);
	assert_int_equal(wsnap_piece_verify(hdr, key_a, 4096, 999, data, 999),
			 -EINVAL);
	assert_int_equal(
		wsnap_piece_verify(hdr, key_a, 4096, sizeof(data), data, 999),
		-EINVAL);
	/* every byte of the header matters */
	for (i = 0; i < sizeof(hdr); i++) {
		memcpy(bad, hdr, sizeof(hdr));
		bad[i] ^= 0x20;
		assert_true(wsnap_piece_verify(bad, key_a, 4096, sizeof(data),
					       data, sizeof(data)) != 0);
	}
	/* and of the bytes */
	data[500] ^= 1;
	assert_int_equal(wsnap_piece_verify(hdr, key_a, 4096, sizeof(data),
					    data, sizeof(data)),
			 -EBADMSG);
	(void)state;
}

static void test_pieces_names(void **state)
{
	char name[WSNAP_PIECE_NAME_LEN + 1];
	uint64_t off, len;

	wsnap_piece_name(0x123456789abull, 0x4000, name);
	assert_string_equal(name, "00000123456789ab-0000000000004000");
	assert_true(wsnap_piece_name_parse(name, &off, &len));
	assert_int_equal(off, 0x123456789abull);
	assert_int_equal(len, 0x4000);
	assert_false(wsnap_piece_name_parse("00000123456789AB-0000000000004000",
					    &off, &len));
	assert_false(wsnap_piece_name_parse("00000123456789ab-000000000000400",
					    &off, &len));
	assert_false(wsnap_piece_name_parse(
		"00000123456789ab-00000000000040000", &off, &len));
	assert_false(wsnap_piece_name_parse("00000123456789ab+0000000000004000",
					    &off, &len));
	assert_false(wsnap_piece_name_parse("00000123456789ab-0000000000000000",
					    &off, &len));
	/* above WSNAP_PIECE_MAX, past the end of offsets */
	assert_false(wsnap_piece_name_parse("0000000000000000-0000000000800001",
					    &off, &len));
	assert_false(wsnap_piece_name_parse("ffffffffffffffff-0000000000000002",
					    &off, &len));
	assert_false(
		wsnap_piece_name_parse(".tmp-0123456789abcdef", &off, &len));
	(void)state;
}

struct dir {
	char path[64];
	int fd;
};

static void dir_make(struct dir *d)
{
	snprintf(d->path, sizeof(d->path), "/tmp/wsnap-pieces-XXXXXX");
	assert_non_null(mkdtemp(d->path));
	d->fd = open(d->path, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	assert_true(d->fd >= 0);
}

static void dir_remove(struct dir *d)
{
	char cmd[128];

	close(d->fd);
	snprintf(cmd, sizeof(cmd), "rm -rf '%s'", d->path);
	assert_int_equal(system(cmd), 0);
}

/* The path of a piece of key under d. */
static void piece_path(const struct dir *d, const unsigned char *key,
		       uint64_t off, uint64_t len, char *out, size_t cap)
{
	char name[WSNAP_PIECE_NAME_LEN + 1], hex[2 * WSNAP_PIECE_KEY + 1];
	int i;

	for (i = 0; i < WSNAP_PIECE_KEY; i++)
		snprintf(hex + 2 * i, 3, "%02x", key[i]);
	wsnap_piece_name(off, len, name);
	snprintf(out, cap, "%s/%s/%s", d->path, hex, name);
}

static uint64_t file_bytes(const char *path)
{
	struct stat sb;

	return stat(path, &sb) == 0 ? (uint64_t)sb.st_size : 0;
}

static void put_at(struct wsnap_pieces *p, uint64_t off, size_t len)
{
	unsigned char *buf = malloc(len);

	assert_non_null(buf);
	fill(buf, len, off);
	wsnap_pieces_put(p, off, buf, len);
	free(buf); /* put keeps a copy */
	wsnap_pieces_flush(p);
}

/* Whether p serves exactly the right len bytes at off. */
static bool serves(struct wsnap_pieces *p, uint64_t off, size_t len)
{
	unsigned char *buf = malloc(len), *want = malloc(len);
	uint64_t next;
	bool ok;

	assert_non_null(buf);
	assert_non_null(want);
	fill(want, len, off);
	ok = wsnap_pieces_get(p, buf, off, len, &next) == len &&
	     memcmp(buf, want, len) == 0;
	free(buf);
	free(want);
	return ok;
}

static void test_pieces_store(void **state)
{
	char path[256];
	unsigned char buf[100];
	struct wsnap_pieces *p, *q;
	struct dir d;
	uint64_t next, hit, put;

	dir_make(&d);
	assert_int_equal(
		wsnap_pieces_new(d.fd, key_a, SIZE, 64 << 20, NULL, &p), 0);
	/* nothing there, nothing made */
	assert_int_equal(wsnap_pieces_get(p, buf, 0, sizeof(buf), &next), 0);
	assert_int_equal(next, UINT64_MAX);
	put_at(p, 1 << 20, 1 << 20);
	put_at(p, 5 << 20, 16 << 10);
	assert_true(serves(p, 1 << 20, 1 << 20));
	/* from inside a piece, and a read shorter than it */
	assert_true(serves(p, (1 << 20) + 100, 50));
	assert_int_equal(wsnap_pieces_get(p, buf, 3 << 20, 100, &next), 0);
	assert_int_equal(next, 5 << 20);
	wsnap_pieces_stats(p, &hit, &put);
	assert_int_equal(hit, (1 << 20) + 50);
	assert_int_equal(put, (1 << 20) + (16 << 10));
	piece_path(&d, key_a, 1 << 20, 1 << 20, path, sizeof(path));
	assert_int_equal(file_bytes(path), WSNAP_PIECE_HDR + (1 << 20));
	/* another process of the same object finds them; of another not */
	assert_int_equal(
		wsnap_pieces_new(d.fd, key_a, SIZE, 64 << 20, NULL, &q), 0);
	assert_true(serves(q, 5 << 20, 16 << 10));
	wsnap_pieces_free(q);
	assert_int_equal(
		wsnap_pieces_new(d.fd, key_b, SIZE, 64 << 20, NULL, &q), 0);
	assert_int_equal(wsnap_pieces_get(q, buf, 5 << 20, 100, &next), 0);
	wsnap_pieces_free(q);
	/* a piece past the end of the object is not stored */
	put_at(p, SIZE - 10, 20);
	piece_path(&d, key_a, SIZE - 10, 20, path, sizeof(path));
	assert_int_equal(access(path, F_OK), -1);
	wsnap_pieces_free(p);
	dir_remove(&d);
	(void)state;
}

/* What a store of key_a serves after the file of the piece at off is
 * changed by how: never wrong bytes; the bad file is removed. */
enum damage { FLIP, TRUNCATE, SWAP, OTHER_KEY, SYMLINK, FIFO };

static void damaged(enum damage how)
{
	char path[256], other[256], cmd[600];
	struct wsnap_pieces *p, *q;
	unsigned char buf[100];
	uint64_t next;
	struct dir d;
	int fd;

	dir_make(&d);
	assert_int_equal(
		wsnap_pieces_new(d.fd, key_a, SIZE, 64 << 20, NULL, &p), 0);
	put_at(p, 0, 64 << 10);
	put_at(p, 64 << 10, 64 << 10);
	assert_int_equal(
		wsnap_pieces_new(d.fd, key_b, SIZE, 64 << 20, NULL, &q), 0);
	put_at(q, 0, 64 << 10);
	wsnap_pieces_free(q);
	piece_path(&d, key_a, 0, 64 << 10, path, sizeof(path));
	switch (how) {
	case FLIP:
		fd = open(path, O_WRONLY);
		assert_true(fd >= 0);
		assert_int_equal(pwrite(fd, "x", 1, WSNAP_PIECE_HDR + 1000), 1);
		close(fd);
		break;
	case TRUNCATE:
		assert_int_equal(truncate(path, WSNAP_PIECE_HDR + 1000), 0);
		break;
	case SWAP: /* the next piece's file under this name */
		piece_path(&d, key_a, 64 << 10, 64 << 10, other, sizeof(other));
		snprintf(cmd, sizeof(cmd), "cp '%s' '%s'", other, path);
		assert_int_equal(system(cmd), 0);
		break;
	case OTHER_KEY: /* another object's piece of the same extent */
		piece_path(&d, key_b, 0, 64 << 10, other, sizeof(other));
		snprintf(cmd, sizeof(cmd), "cp '%s' '%s'", other, path);
		assert_int_equal(system(cmd), 0);
		break;
	case SYMLINK: /* to a good piece: still not followed */
		piece_path(&d, key_a, 64 << 10, 64 << 10, other, sizeof(other));
		assert_int_equal(unlink(path), 0);
		assert_int_equal(symlink(other, path), 0);
		break;
	case FIFO: /* must not hang the read */
		assert_int_equal(unlink(path), 0);
		assert_int_equal(mkfifo(path, 0600), 0);
		break;
	}
	assert_int_equal(wsnap_pieces_get(p, buf, 0, sizeof(buf), &next), 0);
	assert_int_equal(next, 64 << 10);
	if (how != FIFO && how != SYMLINK)
		assert_int_equal(access(path, F_OK), -1);
	/* the other piece is untouched, and this one can be put again */
	assert_true(serves(p, 64 << 10, 64 << 10));
	if (how != FIFO && how != SYMLINK) {
		put_at(p, 0, 64 << 10);
		assert_true(serves(p, 0, 64 << 10));
	}
	wsnap_pieces_free(p);
	dir_remove(&d);
}

static void test_pieces_flipped(void **state)
{
	damaged(FLIP);
	(void)state;
}

static void test_pieces_truncated(void **state)
{
	damaged(TRUNCATE);
	(void)state;
}

static void test_pieces_swapped(void **state)
{
	damaged(SWAP);
	(void)state;
}

static void test_pieces_other_object(void **state)
{
	damaged(OTHER_KEY);
	(void)state;
}

static void test_pieces_symlink(void **state)
{
	damaged(SYMLINK);
	(void)state;
}

static void test_pieces_fifo(void **state)
{
	damaged(FIFO);
	(void)state;
}

/* Bytes of every regular file under path (one level of directories). */
static uint64_t tree_bytes(const char *path)
{
	char sub[512], f[1024];
	uint64_t total = 0;
	struct dirent *de, *fe;
	DIR *d = opendir(path), *s;

	assert_non_null(d);
	while ((de = readdir(d))) {
		if (de->d_name[0] == '.')
			continue;
		snprintf(sub, sizeof(sub), "%s/%s", path, de->d_name);
		s = opendir(sub);
		if (!s)
			continue;
		while ((fe = readdir(s))) {
			snprintf(f, sizeof(f), "%s/%s", sub, fe->d_name);
			if (fe->d_name[0] != '.')
				total += file_bytes(f);
		}
		closedir(s);
	}
	closedir(d);
	return total;
}

/* The bound holds over the pieces of all objects together; the most
 * recently used stay. */
static void test_pieces_bound(void **state)
{
	const uint64_t max = 1 << 20, piece = 100 << 10;
	struct wsnap_pieces *p, *q;
	struct dir d;
	uint64_t i;

	dir_make(&d);
	assert_int_equal(wsnap_pieces_new(d.fd, key_b, SIZE, max, NULL, &q), 0);
	for (i = 0; i < 5; i++)
		put_at(q, i * piece, piece);
	assert_int_equal(wsnap_pieces_new(d.fd, key_a, SIZE, max, NULL, &p), 0);
	for (i = 0; i < 40; i++) {
		put_at(p, i * piece, piece);
		assert_true(tree_bytes(d.path) <= max);
	}
	/* the last one put is there, the first of the other object not */
	assert_true(serves(p, 39 * piece, piece));
	assert_false(serves(q, 0, piece));
	wsnap_pieces_free(q);
	wsnap_pieces_free(p);
	dir_remove(&d);
	(void)state;
}

/* A directory of the object that is not ours to use (writable by others)
 * is not used: nothing served from it, nothing written. */
static void test_pieces_bad_dir(void **state)
{
	char path[256], sub[256];
	struct wsnap_pieces *p;
	unsigned char buf[10];
	uint64_t next;
	struct dir d;

	dir_make(&d);
	assert_int_equal(
		wsnap_pieces_new(d.fd, key_a, SIZE, 64 << 20, NULL, &p), 0);
	put_at(p, 0, 1000);
	wsnap_pieces_free(p);
	piece_path(&d, key_a, 0, 1000, path, sizeof(path));
	snprintf(sub, sizeof(sub), "%s", path);
	*strrchr(sub, '/') = '\0';
	assert_int_equal(chmod(sub, 0777), 0);
	assert_int_equal(
		wsnap_pieces_new(d.fd, key_a, SIZE, 64 << 20, NULL, &p), 0);
	assert_int_equal(wsnap_pieces_get(p, buf, 0, sizeof(buf), &next), 0);
	put_at(p, 5000, 1000);
	piece_path(&d, key_a, 5000, 1000, path, sizeof(path));
	assert_int_equal(access(path, F_OK), -1);
	wsnap_pieces_free(p);
	dir_remove(&d);
	(void)state;
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_pieces_header),
		cmocka_unit_test(test_pieces_names),
		cmocka_unit_test(test_pieces_store),
		cmocka_unit_test(test_pieces_flipped),
		cmocka_unit_test(test_pieces_truncated),
		cmocka_unit_test(test_pieces_swapped),
		cmocka_unit_test(test_pieces_other_object),
		cmocka_unit_test(test_pieces_symlink),
		cmocka_unit_test(test_pieces_fifo),
		cmocka_unit_test(test_pieces_bound),
		cmocka_unit_test(test_pieces_bad_dir),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
