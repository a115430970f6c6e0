/* SPDX-License-Identifier: MIT */
/*
 * Unit tests of core/base/fileid.c: which changes an identity tells apart,
 * when a ctime is too recent to be trusted, and that a settled identity
 * sees an in-place rewrite whose mtime was put back.
 */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include <cmocka.h>

#include "fileid.h"
#include "support.h"

static struct wsnap_fileid sample(void)
{
	struct wsnap_fileid id;

	memset(&id, 0, sizeof(id));
	id.dev = 8;
	id.ino = 1234;
	id.size = 10240;
	id.mtime.tv_sec = 1700000000;
	id.mtime.tv_nsec = 123456789;
	id.ctime.tv_sec = 1700000100;
	id.ctime.tv_nsec = 987654321;
	return id;
}

/* Each field alone makes another identity; the ctime is one of them. */
static void test_fileid_same_compares_every_field(void **state)
{
	struct wsnap_fileid a = sample(), b;
	int i;

	b = a;
	assert_true(wsnap_fileid_same(&a, &b));
	for (i = 0; i < 8; i++) {
		b = a;
		switch (i) {
		case 0:
			b.dev++;
			break;
		case 1:
			b.ino++;
			break;
		case 2:
			b.size++;
			break;
		case 3:
			b.mtime.tv_sec++;
			break;
		case 4:
			b.mtime.tv_nsec++;
			break;
		case 5:
			b.ctime.tv_sec++;
			break;
		case 6:
			b.ctime.tv_nsec++;
			break;
		default:
			b.ctime.tv_nsec = 0;
			break;
		}
		assert_false(wsnap_fileid_same(&a, &b));
		assert_false(wsnap_fileid_same(&b, &a));
	}
}

static struct timespec at(const struct timespec *t, int64_t ns)
{
	struct timespec r = *t;
	int64_t n = (int64_t)r.tv_nsec + ns;

	r.tv_sec += (time_t)(n / 1000000000);
	n %= 1000000000;
	if (n < 0) {
		n += 1000000000;
		r.tv_sec--;
	}
	r.tv_nsec = (long)n;
	return r;
}

static bool racy_at(const struct wsnap_fileid *id, int64_t ns)
{
	struct timespec now = at(&id->ctime, ns);

	return wsnap_fileid_racy(id, &now);
}

static void test_fileid_racy_until_the_clock_passes_the_granule(void **state)
{
	struct wsnap_fileid id = sample();

	/* nanoseconds: racy until the clock is past the ctime */
	assert_true(racy_at(&id, -500000000));
	assert_true(racy_at(&id, 0));
	assert_false(racy_at(&id, 1));
	assert_false(racy_at(&id, 3000000000));
	/* whole seconds: two of them (FAT) */
	id.ctime.tv_nsec = 0;
	assert_true(racy_at(&id, 0));
	assert_true(racy_at(&id, 1999999999));
	assert_false(racy_at(&id, 2000000000));
	/* a multiple of 10 ms: a filesystem of 10 ms (exFAT) */
	id.ctime.tv_nsec = 120000000;
	assert_true(racy_at(&id, 9999999));
	assert_false(racy_at(&id, 10000000));
	/* a multiple of 0.1 s: the coarsest sub-second granule assumed */
	id.ctime.tv_nsec = 500000000;
	assert_true(racy_at(&id, 99999999));
	assert_false(racy_at(&id, 100000000));
}

/* A ctime from the future (clock set back, another machine's clock): a
 * change now would date the file earlier, and nothing overflows. */
static void test_fileid_future_and_absurd_ctimes_are_not_racy(void **state)
{
	struct wsnap_fileid id = sample();
	struct timespec now = {1700000000, 5};

	id.ctime = at(&now, 1000000001);
	assert_false(wsnap_fileid_racy(&id, &now));
	id.ctime = at(&now, 999999999);
	assert_true(wsnap_fileid_racy(&id, &now));
	id.ctime.tv_sec = INT64_MIN;
	assert_false(wsnap_fileid_racy(&id, &now));
	id.ctime.tv_sec = INT64_MAX;
	assert_false(wsnap_fileid_racy(&id, &now));
	id.ctime.tv_sec = now.tv_sec;
	id.ctime.tv_nsec = 999999999;
	assert_true(wsnap_fileid_racy(&id, &now));
}

/*
 * The attack on a real file: written, its identity
 * settled, then rewritten in place with the same size and its mtime put
 * back (rsync --inplace -t). The identity taken afterwards differs.
 */
static void
test_fileid_settled_identity_sees_rewrite_with_mtime_back(void **state)
{
	static const char data[] = "0123456789abcdef";
	struct wsnap_fileid then, now;
	struct timespec t[2];
	int fd = ts_memfd(data, sizeof(data));

	assert_int_equal(wsnap_fileid_settle(fd, &then), 0);
	assert_int_equal(wsnap_fileid_get(fd, &now), 0);
	assert_true(wsnap_fileid_same(&then, &now));
	assert_int_equal(pwrite(fd, "X", 1, 4), 1);
	t[0] = then.mtime; /* atime: anything */
	t[1] = then.mtime;
	assert_int_equal(futimens(fd, t), 0);
	assert_int_equal(wsnap_fileid_get(fd, &now), 0);
	assert_int_equal(now.size, then.size);
	assert_int_equal(now.mtime.tv_sec, then.mtime.tv_sec);
	assert_int_equal(now.mtime.tv_nsec, then.mtime.tv_nsec);
	assert_false(wsnap_fileid_same(&then, &now));
	close(fd);
	assert_int_equal(wsnap_fileid_get(fd, &now), -EBADF);
	assert_int_equal(wsnap_fileid_settle(fd, &now), -EBADF);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_fileid_same_compares_every_field),
		cmocka_unit_test(
			test_fileid_racy_until_the_clock_passes_the_granule),
		cmocka_unit_test(
			test_fileid_future_and_absurd_ctimes_are_not_racy),
		cmocka_unit_test(
			test_fileid_settled_identity_sees_rewrite_with_mtime_back),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
