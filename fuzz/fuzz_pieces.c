/* SPDX-License-Identifier: MIT */
/*
 * libFuzzer target: what the on-disk chunk cache reads back (pieces.h),
 * which anyone who can write the cache directory may have put there. The
 * first byte picks one:
 *  - a file name, through wsnap_piece_name_parse; oracle: a name accepted
 *    is the one wsnap_piece_name makes of what it parsed, and its extent
 *    is within the bounds the parser promises;
 *  - a piece file (the rest of the input), checked against the offset and
 *    length its own header claims (so that checksums are reached) under a
 *    fixed key by wsnap_piece_verify, then written under its name in a
 *    directory of the target's own and read back by a store
 *    (wsnap_pieces_get); oracle: what is accepted has a header that
 *    wsnap_piece_header makes again from its bytes, and the store serves
 *    exactly those bytes when verify accepts and nothing otherwise.
 * Plus: no crash, leak or sanitizer report.
 */
#include <fcntl.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "pieces.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static const unsigned char key[WSNAP_PIECE_KEY] = {0x5a, 1, 2, 3};

static void fuzz_name(const uint8_t *data, size_t size)
{
	char name[64], again[WSNAP_PIECE_NAME_LEN + 1];
	uint64_t off, len;

	if (size >= sizeof(name))
		size = sizeof(name) - 1;
	memcpy(name, data, size);
	name[size] = '\0';
	if (!wsnap_piece_name_parse(name, &off, &len))
		return;
	wsnap_piece_name(off, len, again);
	if (strcmp(name, again) != 0 || len == 0 || len > WSNAP_PIECE_MAX ||
	    off > UINT64_MAX - len)
		abort();
}

static uint64_t le64(const uint8_t *p)
{
	uint64_t v = 0;
	int i;

	for (i = 7; i >= 0; i--)
		v = v << 8 | p[i];
	return v;
}

static char root_path[] = "/tmp/wsnap-fuzz-pieces-XXXXXX";
static char key_hex[2 * WSNAP_PIECE_KEY + 1];

/* At exit: the (empty) directories of root_fd. */
static void root_remove(void)
{
	char sub[sizeof(root_path) + sizeof(key_hex) + 1];

	snprintf(sub, sizeof(sub), "%s/%s", root_path, key_hex);
	rmdir(sub);
	rmdir(root_path);
}

/* The directory pieces are read from: made once. */
static int root_fd(void)
{
	static int fd = -1;
	int i;

	if (fd < 0 && mkdtemp(root_path)) {
		fd = open(root_path, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
		for (i = 0; i < WSNAP_PIECE_KEY; i++)
			snprintf(key_hex + 2 * i, 3, "%02x", key[i]);
		atexit(root_remove);
	}
	return fd;
}

static void fuzz_piece(const uint8_t *data, size_t size)
{
	static unsigned char buf[1 << 16];
	char name[WSNAP_PIECE_NAME_LEN + 1];
	unsigned char hdr[WSNAP_PIECE_HDR];
	struct wsnap_pieces *p;
	uint64_t off, len, next;
	size_t got;
	int ok, root = root_fd(), dir, fd;

	if (size < WSNAP_PIECE_HDR || root < 0)
		return;
	off = le64(data + 48) % (1ull << 40);
	len = le64(data + 56);
	ok = wsnap_piece_verify(data, key, off, len, data + WSNAP_PIECE_HDR,
				size - WSNAP_PIECE_HDR) == 0;
	if (ok) {
		wsnap_piece_header(hdr, key, off, data + WSNAP_PIECE_HDR,
				   (size_t)len);
		if (size - WSNAP_PIECE_HDR != len ||
		    memcmp(hdr, data, sizeof(hdr)) != 0)
			abort();
	}
	/* through a store, as a mount would read it */
	if (len == 0 || len > sizeof(buf))
		return;
	mkdirat(root, key_hex, 0700);
	dir = openat(root, key_hex, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (dir < 0)
		return;
	wsnap_piece_name(off, len, name);
	fd = openat(dir, name, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
	if (fd >= 0) {
		if (write(fd, data, size) != (ssize_t)size)
			ok = -1;
		close(fd);
	}
	if (fd >= 0 && ok >= 0 &&
	    wsnap_pieces_new(root, key, 1ull << 41, 1ull << 30, NULL, &p) ==
		    0) {
		got = wsnap_pieces_get(p, buf, off, sizeof(buf), &next);
		if (ok ? got != len || memcmp(buf, data + WSNAP_PIECE_HDR,
					      len) != 0
		       : got != 0)
			abort();
		wsnap_pieces_free(p);
	}
	unlinkat(dir, name, 0);
	close(dir);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	if (size == 0)
		return 0;
	if (data[0] & 1)
		fuzz_name(data + 1, size - 1);
	else
		fuzz_piece(data + 1, size - 1);
	return 0;
}
