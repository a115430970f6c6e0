/* SPDX-License-Identifier: MIT */
/*
 * Unit tests of index files (core/index/indexfile.c, sidecar.c, ixf.c) and
 * the cache directory (core/cache/cache.c): a cache entry gives back the
 * very index it was written from; an entry with another key, truncated or
 * damaged anywhere is refused whole (and one whose checksums were redone
 * after the damage still cannot point outside itself); a sidecar is judged
 * again by the policy and its digests are checked on read; a cache
 * directory with the wrong owner or modes is not used; pruning removes the
 * least recently used entries. (Somewhat over 800 lines: the entries, the
 * sidecars and the directory share their fixtures, and one unit keeps them
 * together.)
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/time.h>
#include <unistd.h>
#include <cmocka.h>

#include "cache.h"
#include "chunks.h"
#include "fsutil.h"
#include "indexfile.h"
#include "index_impl.h"
#include "ixf.h"
#include "members.h"
#include "seek.h"
#include "stream.h"
#include "support.h"

static const struct wsnap_sparse_run runs[] = {{0, 10}, {100, 5}};

static struct wsnap_index *tree_index(const struct wsnap_policy *p)
{
	struct tm_member ms[] = {
		TM_D("d/"),
		TM_FS("d/a", 7),
		TM_F("d/e/deep"),
		TM_L("l", "d/a"),
		TM_FS("sp", 200),
		TM_FS("z", 3),
		TM_L("d/e/up", "../a"),
	};
	struct wsnap_index *idx;
	struct wsnap_error err;

	ms[1].offset = 512;
	ms[4].sparse = runs;
	ms[4].nsparse = 2;
	ms[4].offset = 1536;
	ms[5].nsec = 5;
	if (tm_build(p, ms, TM_N(ms), &idx, &err) != WSNAP_OK)
		fail_msg("rejected '%s': %s", err.member, err.reason);
	return idx;
}

static void some_id(struct wsnap_fileid *id)
{
	memset(id, 0, sizeof(*id));
	id->dev = 1;
	id->ino = 2;
	id->size = 10240;
	id->mtime.tv_sec = 1700000000;
	id->mtime.tv_nsec = 5;
	id->ctime.tv_sec = 1700000001;
	id->ctime.tv_nsec = 6;
}

/* The entry of idx for (id, p) in a memfd. */
static int entry_fd(const struct wsnap_index *idx,
		    const struct wsnap_fileid *id, const struct wsnap_policy *p)
{
	int fd = memfd_create("entry", MFD_CLOEXEC);
	struct wsnap_error err;

	assert_true(fd >= 0);
	if (wsnap_indexfile_write(fd, idx, id, p, &err) != WSNAP_OK)
		fail_msg("write: %s", err.reason);
	return fd;
}

static void assert_same_index(const struct wsnap_index *a,
			      const struct wsnap_index *b)
{
	struct wsnap_index_stats sa, sb;
	uint32_t ino;

	assert_int_equal(wsnap_index_count(a), wsnap_index_count(b));
	for (ino = 1; ino <= wsnap_index_count(a); ino++) {
		const struct wsnap_node *x = wsnap_index_node(a, ino);
		const struct wsnap_node *y = wsnap_index_node(b, ino);
		const uint32_t *cx, *cy;
		uint32_t nx = wsnap_index_children(a, ino, &cx);
		uint32_t ny = wsnap_index_children(b, ino, &cy);

		assert_string_equal(x->path, y->path);
		assert_int_equal(!x->target, !y->target);
		if (x->target)
			assert_string_equal(x->target, y->target);
		assert_int_equal(x->size, y->size);
		assert_int_equal(x->offset, y->offset);
		assert_int_equal(x->mode, y->mode);
		assert_int_equal(x->type, y->type);
		assert_int_equal(x->flags, y->flags);
		assert_int_equal(x->parent, y->parent);
		assert_int_equal(x->mtime_sec, y->mtime_sec);
		assert_int_equal(x->mtime_nsec, y->mtime_nsec);
		assert_int_equal(nx, ny);
		assert_int_equal(wsnap_index_nsubdirs(a, ino),
				 wsnap_index_nsubdirs(b, ino));
		if (nx)
			assert_memory_equal(cx, cy, nx * sizeof(*cx));
		assert_int_equal(
			wsnap_index_lookup(b, x->path, strlen(x->path)), ino);
	}
	wsnap_index_stats(a, &sa);
	wsnap_index_stats(b, &sb);
	assert_int_equal(sa.members, sb.members);
	assert_int_equal(sa.dirs, sb.dirs);
	assert_int_equal(sa.implicit, sb.implicit);
	assert_int_equal(sa.files, sb.files);
	assert_int_equal(sa.symlinks, sb.symlinks);
	assert_int_equal(sa.total_bytes, sb.total_bytes);
	assert_string_equal(sa.compression, sb.compression);
}

static void test_indexfile_roundtrip(void **state)
{
	struct wsnap_index *idx = tree_index(NULL), *back;
	struct wsnap_fileid id;
	struct wsnap_policy p;
	struct wsnap_error err;
	struct wsnap_extent ext;
	const struct wsnap_node *d;
	int fd;

	wsnap_policy_init(&p);
	some_id(&id);
	fd = entry_fd(idx, &id, &p);
	assert_int_equal(wsnap_indexfile_load(&back, fd, &id, &p, &err),
			 WSNAP_OK);
	close(fd); /* the mapping outlives the descriptor */
	assert_same_index(idx, back);
	d = wsnap_index_node(back, wsnap_index_lookup(back, "d", 1));
	assert_int_equal(wsnap_index_child(back, 2, "a", 1),
			 wsnap_index_lookup(back, "d/a", 3));
	assert_non_null(d);
	/* the sparse map came back too */
	assert_int_equal(wsnap_index_extent(back,
					    wsnap_index_lookup(back, "sp", 2),
					    102, &ext),
			 0);
	assert_int_equal(ext.physical, 1536 + 10 + 2);
	wsnap_index_free(back);
	wsnap_index_free(idx);
	wsnap_policy_release(&p);
}

static void test_indexfile_key_mismatch(void **state)
{
	struct wsnap_index *idx = tree_index(NULL), *back;
	struct wsnap_fileid id, other;
	struct wsnap_policy p, q;
	struct wsnap_error err;
	char n1[WSNAP_INDEXFILE_NAME_LEN + 1], n2[WSNAP_INDEXFILE_NAME_LEN + 1];
	int fd;

	wsnap_policy_init(&p);
	wsnap_policy_init(&q);
	assert_int_equal(wsnap_policy_add_skip(&q, "x", &err), WSNAP_OK);
	some_id(&id);
	fd = entry_fd(idx, &id, &p);
	/* a rewrite in place that put size and mtime back: ctime differs */
	other = id;
	other.ctime.tv_nsec++;
	assert_int_equal(wsnap_indexfile_load(&back, fd, &other, &p, &err),
			 WSNAP_IO);
	assert_string_equal(err.reason, "key mismatch");
	assert_null(back);
	other = id;
	other.ino++;
	assert_int_equal(wsnap_indexfile_load(&back, fd, &other, &p, &err),
			 WSNAP_IO);
	assert_int_equal(wsnap_indexfile_load(&back, fd, &id, &q, &err),
			 WSNAP_IO);
	assert_string_equal(err.reason, "key mismatch");
	/* the names differ with the key */
	wsnap_indexfile_name(&id, &p, n1);
	wsnap_indexfile_name(&other, &p, n2);
	assert_string_not_equal(n1, n2);
	wsnap_indexfile_name(&id, &q, n2);
	assert_string_not_equal(n1, n2);
	wsnap_indexfile_name(&id, &p, n2);
	assert_string_equal(n1, n2);
	assert_int_equal(strlen(n1), WSNAP_INDEXFILE_NAME_LEN);
	close(fd);
	wsnap_index_free(idx);
	wsnap_policy_release(&p);
	wsnap_policy_release(&q);
}

/* The entry's bytes. */
static unsigned char *slurp(int fd, size_t *len)
{
	struct stat sb;
	unsigned char *b;
	size_t got;

	assert_int_equal(fstat(fd, &sb), 0);
	*len = (size_t)sb.st_size;
	b = malloc(*len);
	assert_non_null(b);
	assert_int_equal(wsnap_pread_full(fd, b, *len, 0, &got), 0);
	assert_int_equal(got, *len);
	return b;
}

/* The bytes of idx's entry for some id and the default policy p (set up
 * here), parsed into *v. */
static unsigned char *entry_bytes(const struct wsnap_index *idx,
				  struct wsnap_fileid *id,
				  struct wsnap_policy *p, struct ixf_view *v,
				  size_t *len)
{
	const char *why;
	unsigned char *b;
	int fd;

	wsnap_policy_init(p);
	some_id(id);
	fd = entry_fd(idx, id, p);
	b = slurp(fd, len);
	close(fd);
	assert_true(ixf_parse(v, b, *len, IXF_KIND_ENTRY, &why));
	return b;
}

/* Loads bytes as an entry: the status, the reason into why. */
static enum wsnap_status load_bytes(const void *b, size_t len,
				    const struct wsnap_fileid *id,
				    const struct wsnap_policy *p, char *why,
				    size_t whylen)
{
	struct wsnap_index *idx = NULL;
	struct wsnap_error err;
	enum wsnap_status st;
	int fd = ts_memfd(b, len);

	st = wsnap_indexfile_load(&idx, fd, id, p, &err);
	close(fd);
	if (st == WSNAP_OK) {
		/* whatever was loaded can be walked without leaving it */
		uint32_t ino;

		for (ino = 1; ino <= wsnap_index_count(idx); ino++) {
			const struct wsnap_node *n = wsnap_index_node(idx, ino);

			/* a read outside the mapping would fault (or ASan
			 * would say so) */
			volatile size_t l = strlen(wsnap_node_name(n));

			(void)l;
			if (n->target)
				l = strlen(n->target);
			wsnap_index_lookup(idx, n->path, strlen(n->path));
		}
		wsnap_index_free(idx);
	} else {
		size_t n = strnlen(err.reason, whylen - 1);

		memcpy(why, err.reason, n);
		why[n] = '\0';
	}
	return st;
}

static void test_indexfile_corrupt(void **state)
{
	struct wsnap_index *idx = tree_index(NULL);
	struct wsnap_fileid id;
	struct wsnap_policy p;
	struct ixf_view v;
	unsigned char *b, *c;
	size_t len, cut, i;
	char why[256];

	b = entry_bytes(idx, &id, &p, &v, &len);
	assert_int_equal(load_bytes(b, len, &id, &p, why, sizeof(why)),
			 WSNAP_OK);
	/* truncated anywhere: in the header, the table, each section */
	for (cut = 0; cut < len; cut += cut < 200 ? 7 : 61)
		assert_int_equal(load_bytes(b, cut, &id, &p, why, sizeof(why)),
				 WSNAP_IO);
	assert_int_equal(load_bytes(b, len - 1, &id, &p, why, sizeof(why)),
			 WSNAP_IO);
	/* one byte flipped in the header, the table and every section */
	c = malloc(len);
	assert_non_null(c);
	for (i = 0; i < len; i++) {
		memcpy(c, b, len);
		c[i] ^= 0x40;
		assert_int_equal(load_bytes(c, len, &id, &p, why, sizeof(why)),
				 WSNAP_IO);
	}
	/* appended bytes */
	c = realloc(c, len + 8);
	assert_non_null(c);
	memcpy(c, b, len);
	memset(c + len, 0, 8);
	assert_int_equal(load_bytes(c, len + 8, &id, &p, why, sizeof(why)),
			 WSNAP_IO);
	assert_string_equal(why, "truncated");
	free(c);
	free(b);
	wsnap_index_free(idx);
	wsnap_policy_release(&p);
}

/* Damage that keeps the checksums right (ixf_seal redone): the tables are
 * checked, so nothing points outside the mapping. */
static void test_indexfile_resealed_damage(void **state)
{
	struct wsnap_index *idx = tree_index(NULL);
	struct wsnap_fileid id;
	struct wsnap_policy p;
	struct ixf_view v;
	const struct ixf_section *ns;
	unsigned char *b, *c;
	size_t len, i;
	char why[256];
	int bit;

	b = entry_bytes(idx, &id, &p, &v, &len);
	ns = ixf_find(&v, IXF_NODES);
	assert_non_null(ns);
	c = malloc(len);
	assert_non_null(c);
	/* a node's path offset far past the paths */
	memcpy(c, b, len);
	ixf_put64(c + ns->offset + sizeof(struct wsnap_node), 1u << 30);
	ixf_seal(c, len);
	assert_int_equal(load_bytes(c, len, &id, &p, why, sizeof(why)),
			 WSNAP_IO);
	assert_string_equal(why, "inconsistent tables");
	/* the root's count of subdirectories past its count of children */
	memcpy(c, b, len);
	ixf_put64(c + ns->offset + offsetof(struct wsnap_node, offset),
		  wsnap_index_children(idx, 1, &(const uint32_t *){NULL}) + 1);
	ixf_seal(c, len);
	assert_int_equal(load_bytes(c, len, &id, &p, why, sizeof(why)),
			 WSNAP_IO);
	assert_string_equal(why, "inconsistent tables");
	/* every bit of every section after META and POLICY, resealed: loads
	 * or not, but never reads outside (load_bytes walks what loads) */
	for (i = ixf_find(&v, IXF_NODES)->offset; i < len; i++)
		for (bit = 0; bit < 8; bit += 3) {
			memcpy(c, b, len);
			c[i] ^= (unsigned char)(1u << bit);
			ixf_seal(c, len);
			load_bytes(c, len, &id, &p, why, sizeof(why));
		}
	free(c);
	free(b);
	wsnap_index_free(idx);
	wsnap_policy_release(&p);
}

/* Whether idx's nodes are its entry's records, used in place. */
static bool nodes_in_place(const struct wsnap_index *idx)
{
	const char *m = idx->map, *n = (const char *)idx->nodes;

	return idx->nodes_map_len == 0 && n >= m && n < m + idx->map_len;
}

/*
 * An entry mapped at its base address serves its node records in place
 * (no copy); with that range taken, it is mapped elsewhere and its nodes
 * copied and moved, the same index either way. (TSan's shadow covers the
 * bases: there every load takes the second way.)
 */
static void test_indexfile_in_place(void **state)
{
	struct wsnap_index *idx = tree_index(NULL), *a, *b;
	struct wsnap_fileid id;
	struct wsnap_policy p;
	struct wsnap_error err;
	void *base, *taken;
	int fd;

	wsnap_policy_init(&p);
	some_id(&id);
	fd = entry_fd(idx, &id, &p);
	assert_int_equal(wsnap_indexfile_load(&a, fd, &id, &p, &err), WSNAP_OK);
#ifndef __SANITIZE_THREAD__
	assert_true(nodes_in_place(a));
#endif
	assert_same_index(idx, a);
	base = a->map;
	wsnap_index_free(a);
	taken = mmap(base, 4096, PROT_NONE,
		     MAP_PRIVATE | MAP_ANONYMOUS | MAP_FIXED_NOREPLACE, -1, 0);
	assert_true(taken == base);
	assert_int_equal(wsnap_indexfile_load(&b, fd, &id, &p, &err), WSNAP_OK);
	assert_false(nodes_in_place(b));
	assert_true(b->map != base);
	assert_same_index(idx, b);
	wsnap_index_free(b);
	munmap(taken, 4096);
	close(fd);
	wsnap_index_free(idx);
	wsnap_policy_release(&p);
}

/* An entry of an older revision (3: directories without their count of
 * subdirectories; 2: node records with offsets, not the pointers of a
 * mapping at their base) is a miss, rebuilt, never read. */
static void test_indexfile_old_revision(void **state)
{
	struct wsnap_index *idx = tree_index(NULL);
	struct wsnap_fileid id;
	struct wsnap_policy p;
	struct ixf_view v;
	unsigned char *b;
	size_t len;
	char why[256];
	uint64_t abi;

	b = entry_bytes(idx, &id, &p, &v, &len);
	assert_int_equal(load_bytes(b, len, &id, &p, why, sizeof(why)),
			 WSNAP_OK);
	abi = ixf_get64(b + 24);
	assert_int_equal(abi >> 28, 4);
	ixf_put64(b + 24, (abi & 0x0fffffffu) | (uint64_t)3 << 28);
	ixf_seal(b, len);
	assert_int_equal(load_bytes(b, len, &id, &p, why, sizeof(why)),
			 WSNAP_IO);
	assert_string_equal(why, "key mismatch");
	free(b);
	wsnap_index_free(idx);
	wsnap_policy_release(&p);
}

/*
 * An entry of a gzip archive carries its seek table (SEEK, SEEK_WINDOWS)
 * and loads it back as it was; every byte of the table's sections changed
 * and resealed is refused or loads a table that keeps the invariants (the
 * loader checks it as hostile input); a table of an unknown kind, or one
 * whose sizes are not the stream's, is refused.
 */
static void test_indexfile_seek_sections(void **state)
{
	struct ts_archive *a = ts_archive_new();
	struct wsnap_reader_opts opts = {.sequential = true};
	struct wsnap_index *idx = NULL, *back = NULL;
	const struct wsnap_seek_table *t, *u;
	const struct ixf_section *ss;
	struct wsnap_error err;
	struct wsnap_fileid id;
	struct wsnap_policy p;
	struct ixf_view v;
	unsigned char *tar, *gz, *b, *c;
	size_t len, glen, blen, i;
	char why[256];
	int fd;

	ts_add_file(a, "f", 0644, "hello", 5);
	tar = ts_archive_finish(a, 1, &len);
	gz = ts_compress(tar, len, "gzip", &glen);
	fd = ts_memfd(gz, glen);
	wsnap_policy_init(&p);
	assert_int_equal(wsnap_index_build(&idx, fd, &p, &opts, &err),
			 WSNAP_OK);
	close(fd);
	wsnap_policy_release(&p);
	t = wsnap_index_seek_table(idx);
	assert_non_null(t);
	assert_int_equal(t->stream_size, len);
	b = entry_bytes(idx, &id, &p, &v, &blen);
	ss = ixf_find(&v, IXF_SEEK);
	assert_non_null(ss);
	assert_non_null(ixf_find(&v, IXF_SEEK_WINDOWS));
	fd = ts_memfd(b, blen);
	assert_int_equal(wsnap_indexfile_load(&back, fd, &id, &p, &err),
			 WSNAP_OK);
	close(fd);
	u = wsnap_index_seek_table(back);
	assert_non_null(u);
	assert_int_equal(u->n, t->n);
	assert_int_equal(u->in_size, t->in_size);
	assert_memory_equal(u->points, t->points, t->n * sizeof(*t->points));
	wsnap_index_free(back);
	c = malloc(blen);
	assert_non_null(c);
	/* the kind, the stream's size */
	memcpy(c, b, blen);
	ixf_put64(c + ss->offset, 7);
	ixf_seal(c, blen);
	assert_int_equal(load_bytes(c, blen, &id, &p, why, sizeof(why)),
			 WSNAP_IO);
	assert_string_equal(why, "seek table of an unknown kind");
	memcpy(c, b, blen);
	ixf_put64(c + ss->offset + 24, len + 1);
	ixf_seal(c, blen);
	assert_int_equal(load_bytes(c, blen, &id, &p, why, sizeof(why)),
			 WSNAP_IO);
	/* every byte of both sections */
	for (i = ss->offset; i < blen; i++) {
		memcpy(c, b, blen);
		c[i] ^= 0x21;
		ixf_seal(c, blen);
		fd = ts_memfd(c, blen);
		if (wsnap_indexfile_load(&back, fd, &id, &p, &err) ==
		    WSNAP_OK) {
			u = wsnap_index_seek_table(back);
			assert_true(!u || (u->n >= 1 && u->stream_size == len &&
					   u->in_size <= (uint64_t)id.size));
			wsnap_index_free(back);
		}
		close(fd);
	}
	free(c);
	free(b);
	free(gz);
	free(tar);
	wsnap_index_free(idx);
	wsnap_policy_release(&p);
}

/* ---- sidecars ---------------------------------------------------------- */

struct sc_fixture {
	unsigned char *tar;
	size_t tar_len;
	int archive_fd;
	uint64_t archive_size;
	unsigned char *sc; /* the sidecar's bytes */
	size_t sc_len;
};

static const char big_tag[] = "BIG";

/* An archive with a small file, a 2.5 MiB one (three chunks), a symlink
 * and a directory, and its sidecar. */
static void sc_make(struct sc_fixture *f)
{
	struct ts_archive *a = ts_archive_new();
	size_t blen = (5u << 20) / 2, len, i;
	unsigned char *big = malloc(blen), *tar;
	struct wsnap_reader_opts ro = {.keep_data = true};
	struct wsnap_policy p;
	struct wsnap_error err;
	int out;

	assert_non_null(big);
	for (i = 0; i < blen; i++)
		big[i] = (unsigned char)(i * 7 + i / 4096);
	memcpy(big, big_tag, 3);
	ts_add_dir(a, "dir", 0755);
	ts_add_file(a, "dir/small", 0644, "hello", 5);
	ts_add_file(a, "dir/big", 0644, big, blen);
	ts_add_file(a, "dir/other", 0644, "other", 5);
	ts_add_symlink(a, "link", "dir/small");
	tar = ts_archive_finish(a, 1, &len);
	f->archive_fd = ts_memfd(tar, len);
	f->archive_size = len;
	f->tar = tar;
	f->tar_len = len;
	free(big);
	wsnap_policy_init(&p);
	out = memfd_create("sidecar", MFD_CLOEXEC);
	assert_true(out >= 0);
	if (wsnap_sidecar_write(out, f->archive_fd, &p, &ro, &err) != WSNAP_OK)
		fail_msg("sidecar: %s", err.reason);
	f->sc = slurp(out, &f->sc_len);
	close(out);
	wsnap_policy_release(&p);
}

static void sc_free(struct sc_fixture *f)
{
	close(f->archive_fd);
	free(f->sc);
	free(f->tar);
}

/*
 * The seek points an index keeps (a build without data) serve its data
 * through any source (remote.h attaches a remote one this way): once, from
 * an object of the size they were made for; a shorter one is refused.
 */
static void test_index_attach_seek_source(void **state)
{
	struct ts_archive *a = ts_archive_new();
	struct wsnap_reader_opts opts = {.sequential = true};
	struct wsnap_index *idx = NULL;
	struct wsnap_source *src;
	struct wsnap_error err;
	struct wsnap_policy p;
	unsigned char *tar, *gz, *big;
	size_t len, glen, i;
	char buf[64];
	uint32_t ino;
	int fd, pass;

	(void)state;
	big = malloc(300000);
	assert_non_null(big);
	for (i = 0; i < 300000; i++)
		big[i] = (unsigned char)(i * 7 + i / 251);
	ts_add_file(a, "big", 0644, (const char *)big, 300000);
	ts_add_file(a, "f", 0644, "hello", 5);
	tar = ts_archive_finish(a, 1, &len);
	gz = ts_compress(tar, len, "gzip", &glen);
	wsnap_policy_init(&p);
	for (pass = 0; pass < 2; pass++) {
		fd = ts_memfd(gz, glen);
		assert_int_equal(wsnap_index_build(&idx, fd, &p, &opts, &err),
				 WSNAP_OK);
		close(fd);
		assert_false(wsnap_index_has_data(idx));
		assert_true(wsnap_index_has_seek_table(idx));
		/* pass 0: an object one byte shorter than the points say */
		assert_int_equal(
			wsnap_source_memory(gz, pass ? glen : glen - 1, &src),
			0);
		if (pass == 0) {
			assert_int_equal(
				wsnap_index_attach_seek_source(idx, src, 0),
				-EINVAL);
			assert_false(wsnap_index_has_data(idx));
			wsnap_index_free(idx);
			continue;
		}
		assert_int_equal(wsnap_index_attach_seek_source(idx, src, 0),
				 0);
		assert_true(wsnap_index_has_data(idx));
		assert_false(wsnap_index_has_seek_table(idx));
		ino = wsnap_index_lookup(idx, "f", 1);
		assert_true(ino > 0);
		assert_int_equal(
			wsnap_index_pread(idx, ino, buf, sizeof(buf), 0), 5);
		assert_memory_equal(buf, "hello", 5);
		ino = wsnap_index_lookup(idx, "big", 3);
		assert_int_equal(
			wsnap_index_pread(idx, ino, buf, sizeof(buf), 123456),
			sizeof(buf));
		assert_memory_equal(buf, big + 123456, sizeof(buf));
		/* the points went to the stream: a second attach has none */
		assert_int_equal(wsnap_source_memory(gz, glen, &src), 0);
		assert_int_equal(wsnap_index_attach_seek_source(idx, src, 0),
				 -ENOENT);
		wsnap_index_free(idx);
	}
	wsnap_policy_release(&p);
	free(gz);
	free(tar);
	free(big);
}

/* The index from sidecar bytes under p (NULL: defaults), with the archive
 * attached when attach. */
static enum wsnap_status sc_index_with(const struct sc_fixture *f,
				       const void *b, size_t len,
				       const struct wsnap_policy *p,
				       bool attach, struct wsnap_index **out,
				       struct wsnap_error *err)
{
	struct wsnap_reader_opts ro = {.keep_data = true};
	struct wsnap_sidecar *sc;
	struct wsnap_policy def;
	enum wsnap_status st;
	int fd = ts_memfd(b, len);

	*out = NULL;
	wsnap_policy_init(&def);
	st = wsnap_sidecar_read(&sc, fd, "x.wsnapidx", err);
	close(fd);
	if (st == WSNAP_OK) {
		assert_int_equal(wsnap_sidecar_archive_size(sc),
				 f->archive_size);
		st = wsnap_sidecar_index(sc, p ? p : &def, f->archive_size, out,
					 err);
		wsnap_sidecar_free(sc);
	}
	if (st == WSNAP_OK && attach)
		assert_int_equal(wsnap_index_attach_archive(*out, f->archive_fd,
							    &ro, err),
				 WSNAP_OK);
	wsnap_policy_release(&def);
	return st;
}

static enum wsnap_status sc_index(const struct sc_fixture *f, const void *b,
				  size_t len, const struct wsnap_policy *p,
				  struct wsnap_index **out,
				  struct wsnap_error *err)
{
	return sc_index_with(f, b, len, p, true, out, err);
}

static uint32_t ino_of(const struct wsnap_index *idx, const char *path)
{
	uint32_t ino = wsnap_index_lookup(idx, path, strlen(path));

	assert_int_not_equal(ino, 0);
	return ino;
}

static void test_sidecar_roundtrip(void **state)
{
	struct wsnap_reader_opts ro = {.keep_data = true};
	struct wsnap_index *idx, *ref;
	struct sc_fixture f;
	struct wsnap_policy p;
	struct wsnap_error err;
	char buf[16];

	sc_make(&f);
	assert_int_equal(sc_index(&f, f.sc, f.sc_len, NULL, &idx, &err),
			 WSNAP_OK);
	assert_true(wsnap_index_has_digests(idx));
	wsnap_policy_init(&p);
	assert_int_equal(wsnap_index_build(&ref, f.archive_fd, &p, &ro, &err),
			 WSNAP_OK);
	assert_false(wsnap_index_has_digests(ref));
	assert_same_index(ref, idx);
	assert_int_equal(wsnap_index_pread(idx, ino_of(idx, "dir/small"), buf,
					   sizeof(buf), 0),
			 5);
	assert_memory_equal(buf, "hello", 5);
	/* a read in the last chunk of the big file checks that chunk only */
	assert_int_equal(wsnap_index_pread(idx, ino_of(idx, "dir/big"), buf, 4,
					   (5u << 20) / 2 - 4),
			 4);
	assert_int_equal(
		wsnap_index_verify(
			idx, ino_of(idx, "dir/big"),
			wsnap_index_node(idx, ino_of(idx, "dir/big"))->offset,
			3),
		0);
	wsnap_index_free(ref);
	wsnap_index_free(idx);
	wsnap_policy_release(&p);
	sc_free(&f);
}

/* An archive of the same size whose bytes differ from those the sidecar
 * was written from: reads of the chunk that holds them are EIO, the other
 * chunks still read. */
static void test_sidecar_wrong_digest(void **state)
{
	struct wsnap_index *idx;
	struct sc_fixture f;
	struct wsnap_error err;
	uint64_t off;
	uint32_t ino;
	char buf[8];

	sc_make(&f);
	assert_int_equal(sc_index(&f, f.sc, f.sc_len, NULL, &idx, &err),
			 WSNAP_OK);
	off = wsnap_index_node(idx, ino_of(idx, "dir/big"))->offset;
	wsnap_index_free(idx);
	/* a byte of the second chunk of dir/big differs */
	f.tar[off + (1u << 20) + 9] ^= 0xff;
	close(f.archive_fd);
	f.archive_fd = ts_memfd(f.tar, f.tar_len);
	assert_int_equal(sc_index(&f, f.sc, f.sc_len, NULL, &idx, &err),
			 WSNAP_OK);
	ino = ino_of(idx, "dir/big");
	assert_int_equal(wsnap_index_pread(idx, ino, buf, 3, 0), 3);
	assert_memory_equal(buf, big_tag, 3);
	assert_int_equal(wsnap_index_pread(idx, ino, buf, 4, (1u << 20) + 8),
			 -EIO);
	/* not remembered as verified */
	assert_int_equal(wsnap_index_verify(idx, ino, off + (1u << 20), 1),
			 -EIO);
	assert_int_equal(wsnap_index_verify(idx, ino, off + (2u << 20), 1), 0);
	wsnap_index_free(idx);
	sc_free(&f);
}

/* Many threads verifying the same chunks at once (single-flight). */
#define VT_THREADS 12

struct vt_job {
	const struct wsnap_index *idx;
	pthread_barrier_t *start;
	uint32_t ino;
	uint64_t phys, len;
	int rc;
};

static void *vt_run(void *arg)
{
	struct vt_job *j = arg;

	pthread_barrier_wait(j->start);
	j->rc = wsnap_index_verify(j->idx, j->ino, j->phys, j->len);
	return NULL;
}

/* VT_THREADS threads verify [phys, phys + len) of ino together; each
 * result must be want. */
static void vt_all(const struct wsnap_index *idx, uint32_t ino, uint64_t phys,
		   uint64_t len, int want)
{
	struct vt_job jobs[VT_THREADS];
	pthread_t t[VT_THREADS];
	pthread_barrier_t start;
	int i;

	assert_int_equal(pthread_barrier_init(&start, NULL, VT_THREADS), 0);
	for (i = 0; i < VT_THREADS; i++) {
		jobs[i] = (struct vt_job){idx, &start, ino, phys, len, 1};
		assert_int_equal(pthread_create(&t[i], NULL, vt_run, &jobs[i]),
				 0);
	}
	for (i = 0; i < VT_THREADS; i++) {
		assert_int_equal(pthread_join(t[i], NULL), 0);
		assert_int_equal(jobs[i].rc, want);
	}
	pthread_barrier_destroy(&start);
}

static void test_sidecar_verify_threads(void **state)
{
	struct wsnap_index *idx;
	struct sc_fixture f;
	struct wsnap_error err;
	uint64_t off, blen = (5u << 20) / 2;
	uint32_t ino;
	int round;

	sc_make(&f);
	/* every chunk is hashed once, however many threads ask for it */
	for (round = 0; round < 8; round++) {
		assert_int_equal(sc_index(&f, f.sc, f.sc_len, NULL, &idx, &err),
				 WSNAP_OK);
		ino = ino_of(idx, "dir/big");
		off = wsnap_index_node(idx, ino)->offset;
		vt_all(idx, ino, off, blen, 0);
		assert_int_equal(wsnap_index_digest_reads(idx), 3);
		vt_all(idx, ino, off + blen - 1, 1, 0);
		assert_int_equal(wsnap_index_digest_reads(idx), 3);
		wsnap_index_free(idx);
	}
	/* a wrong second chunk fails for every thread, each time, and no
	 * thread hashes it twice in one go; the others still verify */
	f.tar[off + (1u << 20) + 9] ^= 0xff;
	close(f.archive_fd);
	f.archive_fd = ts_memfd(f.tar, f.tar_len);
	for (round = 0; round < 8; round++) {
		assert_int_equal(sc_index(&f, f.sc, f.sc_len, NULL, &idx, &err),
				 WSNAP_OK);
		vt_all(idx, ino, off + (1u << 20), 4096, -EIO);
		assert_in_range(wsnap_index_digest_reads(idx), 1, VT_THREADS);
		vt_all(idx, ino, off + (1u << 20) + 5, 1, -EIO);
		assert_in_range(wsnap_index_digest_reads(idx), 2,
				2 * VT_THREADS);
		vt_all(idx, ino, off, blen, -EIO);
		vt_all(idx, ino, off, 1u << 20, 0);
		vt_all(idx, ino, off + (2u << 20), blen - (2u << 20), 0);
		wsnap_index_free(idx);
	}
	sc_free(&f);
}

/* ---- verify on fill: a stream that keeps what it fetches -------------- */

/* A source over the fixture's tar through a chunk cache, as a remote
 * object's is, counting what is fetched and what is copied out. */
struct keep_src {
	struct wsnap_source base;
	struct wsnap_chunks *c;
	const unsigned char *tar;
	atomic_uint fetches;
	atomic_ullong copied; /* bytes pread copied out */
};

static int keep_fetch(void *ctx, void *buf, uint64_t off, size_t len,
		      void (*filled)(void *fctx, size_t n), void *fctx)
{
	struct keep_src *k = ctx;

	atomic_fetch_add(&k->fetches, 1);
	memcpy(buf, k->tar + off, len);
	filled(fctx, len);
	return 0;
}

static ssize_t keep_pread(struct wsnap_source *src, void *buf, size_t len,
			  uint64_t off)
{
	struct keep_src *k = (struct keep_src *)src;
	ssize_t r = wsnap_chunks_read(k->c, buf, len, off);

	if (r > 0)
		atomic_fetch_add(&k->copied, (unsigned long long)r);
	return r;
}

static int keep_check(struct wsnap_source *src)
{
	(void)src;
	return 0;
}

static void keep_destroy(struct wsnap_source *src)
{
	struct keep_src *k = (struct keep_src *)src;

	wsnap_chunks_free(k->c);
	free(k);
}

static void keep_set_check(struct wsnap_source *src, wsnap_data_check_fn fn,
			   void *ctx)
{
	wsnap_chunks_set_check(((struct keep_src *)src)->c, fn, ctx);
}

static int keep_fill(struct wsnap_source *src, size_t len, uint64_t off)
{
	return wsnap_chunks_fill(((struct keep_src *)src)->c, len, off);
}

static const struct wsnap_source_ops keep_ops = {
	.pread = keep_pread,
	.check = keep_check,
	.destroy = keep_destroy,
	.set_data_check = keep_set_check,
	.fill = keep_fill,
};

/* The sidecar's index with its data through a keep_src over f's tar
 * (*kp, owned by the index). */
static struct wsnap_index *keep_index(const struct sc_fixture *f,
				      struct keep_src **kp)
{
	struct keep_src *k = calloc(1, sizeof(*k));
	struct wsnap_index *idx;
	struct wsnap_stream *s;
	struct wsnap_error err;

	assert_non_null(k);
	k->base.ops = &keep_ops;
	k->base.size = f->tar_len;
	k->base.label = "keep";
	k->tar = f->tar;
	assert_int_equal(
		wsnap_chunks_new(f->tar_len, 64u << 20, keep_fetch, k, &k->c),
		0);
	assert_int_equal(
		sc_index_with(f, f->sc, f->sc_len, NULL, false, &idx, &err),
		WSNAP_OK);
	assert_int_equal(wsnap_stream_plain(&k->base, &s), 0);
	wsnap_index_attach_stream(idx, s);
	*kp = k;
	return idx;
}

/* Sequential reads of a file through a stream that keeps what it fetches:
 * each chunk hashed once, from the bytes fetched, and copied out once (to
 * be served), not a second time to be hashed (issue 14: each chunk was
 * read twice with a sidecar). */
static void test_sidecar_verify_on_fill(void **state)
{
	static char buf[128u << 10];
	struct keep_src *k;
	struct wsnap_index *idx;
	struct sc_fixture f;
	uint64_t blen = (5u << 20) / 2, off, n;
	uint32_t ino;

	sc_make(&f);
	idx = keep_index(&f, &k);
	ino = ino_of(idx, "dir/big");
	for (off = 0; off < blen; off += n) {
		n = blen - off < sizeof(buf) ? blen - off : sizeof(buf);
		assert_int_equal(wsnap_index_pread(idx, ino, buf, n, off),
				 (ssize_t)n);
		assert_memory_equal(
			buf, f.tar + wsnap_index_node(idx, ino)->offset + off,
			n);
	}
	/* dir/big's 3 chunks, and maybe the small files' one each when a
	 * piece fetched holds them whole: every digest at most once */
	assert_in_range(wsnap_index_digest_reads(idx), 3, 5);
	assert_int_equal(atomic_load(&k->copied), blen);
	wsnap_index_free(idx); /* joins the read-ahead */
	sc_free(&f);
	(void)state;
}

/* A chunk that does not match its digest never enters the cache: each
 * read of it is EIO and fetches it again; the other chunks read; and many
 * threads at once hash each chunk once (single-flight kept). */
static void test_sidecar_verify_on_fill_wrong(void **state)
{
	struct keep_src *k;
	struct wsnap_index *idx;
	struct sc_fixture f;
	uint64_t off, blen = (5u << 20) / 2;
	unsigned before;
	uint32_t ino;
	char buf[8];
	int round;

	sc_make(&f);
	for (round = 0; round < 4; round++) {
		idx = keep_index(&f, &k);
		ino = ino_of(idx, "dir/big");
		off = wsnap_index_node(idx, ino)->offset;
		vt_all(idx, ino, off, blen, 0);
		assert_in_range(wsnap_index_digest_reads(idx), 3, 5);
		wsnap_index_free(idx);
	}
	f.tar[off + (1u << 20) + 9] ^= 0xff;
	idx = keep_index(&f, &k);
	assert_int_equal(wsnap_index_pread(idx, ino, buf, 3, 0), 3);
	assert_memory_equal(buf, big_tag, 3);
	before = atomic_load(&k->fetches);
	assert_int_equal(wsnap_index_pread(idx, ino, buf, 4, (1u << 20) + 8),
			 -EIO);
	assert_true(atomic_load(&k->fetches) > before);
	before = atomic_load(&k->fetches);
	assert_int_equal(wsnap_index_pread(idx, ino, buf, 4, (1u << 20) + 8),
			 -EIO);
	assert_true(atomic_load(&k->fetches) > before);
	vt_all(idx, ino, off + (1u << 20), 4096, -EIO);
	assert_int_equal(wsnap_index_pread(idx, ino, buf, 4, (2u << 20) + 8),
			 4);
	assert_memory_equal(buf, f.tar + off + (2u << 20) + 8, 4);
	wsnap_index_free(idx);
	sc_free(&f);
	(void)state;
}

static unsigned task_count(void)
{
	DIR *d = opendir("/proc/self/task");
	struct dirent *e;
	unsigned n = 0;

	assert_non_null(d);
	while ((e = readdir(d)) != NULL)
		n += e->d_name[0] != '.';
	closedir(d);
	return n;
}

/* Sequential reads of a local archive with its sidecar: a thread verifies
 * the chunks ahead of the reader (started by the second read that
 * continues the first, joined when the index is freed), each chunk still
 * hashed once; a wrong chunk ahead is still EIO for the reader, and the
 * chunks before it read. */
static void test_sidecar_verify_ahead(void **state)
{
	static char buf[256u << 10];
	struct wsnap_index *idx;
	struct sc_fixture f;
	struct wsnap_error err;
	uint64_t blen = (5u << 20) / 2, off, n, doff;
	unsigned before;
	uint32_t ino;

	sc_make(&f);
	assert_int_equal(sc_index(&f, f.sc, f.sc_len, NULL, &idx, &err),
			 WSNAP_OK);
	ino = ino_of(idx, "dir/big");
	doff = wsnap_index_node(idx, ino)->offset;
	before = task_count();
	assert_int_equal(wsnap_index_pread(idx, ino, buf, 4096, 0), 4096);
	assert_int_equal(task_count(), before);
	for (off = 4096; off < blen; off += n) {
		n = blen - off < sizeof(buf) ? blen - off : sizeof(buf);
		assert_int_equal(wsnap_index_pread(idx, ino, buf, n, off),
				 (ssize_t)n);
		assert_memory_equal(buf, f.tar + doff + off, n);
		assert_int_equal(task_count(), before + 1);
	}
	assert_int_equal(wsnap_index_digest_reads(idx), 3);
	wsnap_index_free(idx);
	assert_int_equal(task_count(), before);

	f.tar[doff + (2u << 20) + 9] ^= 0xff;
	close(f.archive_fd);
	f.archive_fd = ts_memfd(f.tar, f.tar_len);
	assert_int_equal(sc_index(&f, f.sc, f.sc_len, NULL, &idx, &err),
			 WSNAP_OK);
	for (off = 0; off < (2u << 20); off += sizeof(buf))
		assert_int_equal(
			wsnap_index_pread(idx, ino, buf, sizeof(buf), off),
			(ssize_t)sizeof(buf));
	assert_int_equal(wsnap_index_pread(idx, ino, buf, 16, 2u << 20), -EIO);
	assert_int_equal(wsnap_index_pread(idx, ino, buf, 16, 2u << 20), -EIO);
	wsnap_index_free(idx);
	sc_free(&f);
	(void)state;
}

/* Field k of member record i of a sidecar in b (and its section). */
static unsigned char *rec_field(unsigned char *b, size_t len, size_t i, int k)
{
	struct ixf_view v;
	const char *why;
	const struct ixf_section *s;

	assert_true(ixf_parse(&v, b, len, IXF_KIND_SIDECAR, &why) ||
		    (ixf_seal(b, len),
		     ixf_parse(&v, b, len, IXF_KIND_SIDECAR, &why)));
	s = ixf_find(&v, IXF_MEMBERS);
	assert_non_null(s);
	assert_true((i + 1) * IXF_REC_SIZE <= s->length);
	return b + s->offset + i * IXF_REC_SIZE + 8 * (size_t)k;
}

/* The record number of the member named name. */
static size_t rec_named(unsigned char *b, size_t len, const char *name)
{
	struct ixf_view v;
	const char *why;
	const struct ixf_section *s, *strs;
	size_t i;

	assert_true(ixf_parse(&v, b, len, IXF_KIND_SIDECAR, &why));
	s = ixf_find(&v, IXF_MEMBERS);
	strs = ixf_find(&v, IXF_STRINGS);
	for (i = 0; i < s->length / IXF_REC_SIZE; i++) {
		uint64_t off = ixf_get64(rec_field(b, len, i, IXF_R_NAME_OFF));

		if (strcmp((char *)b + strs->offset + off, name) == 0)
			return i;
	}
	fail_msg("no member '%s'", name);
	return 0;
}

/* Renames a member in place (same length) and reseals. */
static void rename_member(unsigned char *b, size_t len, const char *from,
			  const char *to)
{
	struct ixf_view v;
	const char *why;
	size_t i = rec_named(b, len, from);
	uint64_t off = ixf_get64(rec_field(b, len, i, IXF_R_NAME_OFF));

	assert_int_equal(strlen(from), strlen(to));
	assert_true(ixf_parse(&v, b, len, IXF_KIND_SIDECAR, &why));
	memcpy(b + ixf_find(&v, IXF_STRINGS)->offset + off, to, strlen(to));
	ixf_seal(b, len);
}

static void expect_refused(const struct sc_fixture *f, const unsigned char *b,
			   size_t len, enum wsnap_status want,
			   const char *reason)
{
	struct wsnap_index *idx;
	struct wsnap_error err;

	assert_int_equal(sc_index(f, b, len, NULL, &idx, &err), want);
	assert_null(idx);
	if (reason && strcmp(err.reason, reason) != 0)
		fail_msg("reason '%s', wanted '%s'", err.reason, reason);
}

static void test_sidecar_lies(void **state)
{
	struct sc_fixture f;
	unsigned char *c;
	size_t big, small;
	uint64_t off;

	sc_make(&f);
	c = malloc(f.sc_len);
	assert_non_null(c);

	/* a name the policy rejects ('..' leaves the root) */
	memcpy(c, f.sc, f.sc_len);
	rename_member(c, f.sc_len, "dir/small", "../smalls");
	expect_refused(&f, c, f.sc_len, WSNAP_REJECTED, NULL);

	/* an absolute name */
	memcpy(c, f.sc, f.sc_len);
	rename_member(c, f.sc_len, "dir/small", "/etc/pass");
	expect_refused(&f, c, f.sc_len, WSNAP_REJECTED, NULL);

	/* a duplicate: dir/other renamed to small's name */
	memcpy(c, f.sc, f.sc_len);
	rename_member(c, f.sc_len, "dir/other", "dir/small");
	expect_refused(&f, c, f.sc_len, WSNAP_REJECTED, NULL);

	/* data past the end of the archive */
	memcpy(c, f.sc, f.sc_len);
	big = rec_named(c, f.sc_len, "dir/big");
	ixf_put64(rec_field(c, f.sc_len, big, IXF_R_DATA_OFFSET),
		  f.archive_size);
	ixf_seal(c, f.sc_len);
	expect_refused(&f, c, f.sc_len, WSNAP_IO,
		       "invalid index file (member data past the end of the "
		       "archive)");

	/* overlapping extents: small's data moved into big's */
	memcpy(c, f.sc, f.sc_len);
	small = rec_named(c, f.sc_len, "dir/small");
	big = rec_named(c, f.sc_len, "dir/big");
	off = ixf_get64(rec_field(c, f.sc_len, big, IXF_R_DATA_OFFSET));
	ixf_put64(rec_field(c, f.sc_len, small, IXF_R_DATA_OFFSET), off);
	ixf_seal(c, f.sc_len);
	expect_refused(&f, c, f.sc_len, WSNAP_IO,
		       "invalid index file (member data overlaps)");

	/* a size that runs into the next member */
	memcpy(c, f.sc, f.sc_len);
	ixf_put64(rec_field(c, f.sc_len, small, IXF_R_SIZE), 4096);
	ixf_seal(c, f.sc_len);
	expect_refused(&f, c, f.sc_len, WSNAP_IO, NULL);

	/* a member type the reader never gives */
	memcpy(c, f.sc, f.sc_len);
	ixf_put64(rec_field(c, f.sc_len, small, IXF_R_TYPE), 99);
	ixf_seal(c, f.sc_len);
	expect_refused(&f, c, f.sc_len, WSNAP_IO,
		       "invalid index file (bad member record)");

	/* a name offset outside the strings */
	memcpy(c, f.sc, f.sc_len);
	ixf_put64(rec_field(c, f.sc_len, small, IXF_R_NAME_OFF), 1u << 30);
	ixf_seal(c, f.sc_len);
	expect_refused(&f, c, f.sc_len, WSNAP_IO,
		       "invalid index file (bad member name)");

	/* damaged without resealing: the checksum */
	memcpy(c, f.sc, f.sc_len);
	c[f.sc_len - 1] ^= 1;
	expect_refused(&f, c, f.sc_len, WSNAP_IO,
		       "invalid index file (checksum mismatch)");
	expect_refused(&f, f.sc, f.sc_len / 2, WSNAP_IO,
		       "invalid index file (truncated)");
	free(c);
	sc_free(&f);
}

/* A sidecar under a stricter policy than it was written with: judged by
 * the caller's policy. */
static void test_sidecar_policy_again(void **state)
{
	struct wsnap_index *idx;
	struct sc_fixture f;
	struct wsnap_policy p;
	struct wsnap_error err;

	sc_make(&f);
	wsnap_policy_init(&p);
	p.no_symlinks = true;
	assert_int_equal(sc_index(&f, f.sc, f.sc_len, &p, &idx, &err),
			 WSNAP_REJECTED);
	wsnap_policy_release(&p);
	wsnap_policy_init(&p);
	assert_int_equal(wsnap_policy_add_skip(&p, "dir/big", &err), WSNAP_OK);
	assert_int_equal(sc_index(&f, f.sc, f.sc_len, &p, &idx, &err),
			 WSNAP_OK);
	assert_int_equal(wsnap_index_lookup(idx, "dir/big", 7), 0);
	wsnap_index_free(idx);
	wsnap_policy_release(&p);
	sc_free(&f);
}

/* ---- the cache directory ---------------------------------------------- */

static bool open_cache_at(const char *dir, struct wsnap_cache *c, char *why)
{
	setenv("WSNAP_CACHE_DIR", dir, 1);
	return wsnap_cache_open(c, why, WSNAP_CACHE_WHY_MAX);
}

static void test_cache_dir_modes(void **state)
{
	char *tmp = ts_tempdir(), path[512], link[512],
	     why[WSNAP_CACHE_WHY_MAX];
	struct wsnap_cache c;
	struct stat sb;

	snprintf(path, sizeof(path), "%s/a/b/cache", tmp);
	assert_true(open_cache_at(path, &c, why));
	assert_int_equal(fstat(c.dirfd, &sb), 0);
	assert_int_equal(sb.st_mode & 0777, 0700);
	wsnap_cache_close(&c);
	snprintf(path, sizeof(path), "%s/a", tmp);
	assert_int_equal(stat(path, &sb), 0);
	assert_int_equal(sb.st_mode & 0777, 0700);

	snprintf(path, sizeof(path), "%s/a/b/cache", tmp);
	assert_int_equal(chmod(path, 0777), 0);
	assert_false(open_cache_at(path, &c, why));
	assert_int_equal(c.dirfd, -1);
	assert_non_null(strstr(why, "writable by group or others"));
	assert_int_equal(chmod(path, 0770), 0);
	assert_false(open_cache_at(path, &c, why));
	/* readable by the group is not writable */
	assert_int_equal(chmod(path, 0750), 0);
	assert_true(open_cache_at(path, &c, why));
	wsnap_cache_close(&c);
	if (geteuid() == 0) {
		assert_int_equal(chown(path, 65534, 65534), 0);
		assert_false(open_cache_at(path, &c, why));
		assert_non_null(strstr(why, "owned by uid 65534"));
	}
	/* a symlink to a good directory is not followed */
	snprintf(path, sizeof(path), "%s/good", tmp);
	assert_int_equal(mkdir(path, 0700), 0);
	snprintf(link, sizeof(link), "%s/link", tmp);
	assert_int_equal(symlink(path, link), 0);
	assert_false(open_cache_at(link, &c, why));
	assert_true(open_cache_at(path, &c, why));
	wsnap_cache_close(&c);
	unsetenv("WSNAP_CACHE_DIR");
	ts_rmtree(tmp);
	free(tmp);
}

/* An entry named name of len bytes, last used at t. */
static void put_entry(struct wsnap_cache *c, const char *name, size_t len,
		      time_t t)
{
	char tmp[WSNAP_CACHE_TMP_LEN + 1];
	struct timespec ts[2] = {{t, 0}, {t, 0}};
	char *zeros = calloc(1, len);
	int fd = wsnap_cache_tmp(c, tmp);

	assert_true(fd >= 0);
	assert_non_null(zeros);
	assert_int_equal(write(fd, zeros, len), (ssize_t)len);
	assert_int_equal(futimens(fd, ts), 0);
	close(fd);
	assert_int_equal(renameat(c->dirfd, tmp, c->dirfd, name), 0);
	free(zeros);
}

static bool has(struct wsnap_cache *c, const char *name)
{
	return faccessat(c->dirfd, name, F_OK, AT_SYMLINK_NOFOLLOW) == 0;
}

static void test_cache_prune_lru(void **state)
{
	char *tmp = ts_tempdir(), why[WSNAP_CACHE_WHY_MAX];
	char stale[WSNAP_CACHE_TMP_LEN + 1];
	struct timespec old[2] = {{1000, 0}, {1000, 0}};
	struct wsnap_cache c;
	int fd;

	setenv("WSNAP_CACHE_MAX", "10K", 1);
	assert_true(open_cache_at(tmp, &c, why));
	assert_int_equal(c.max_bytes, 10240);
	put_entry(&c, "a.idx", 4096, 1000);
	put_entry(&c, "b.idx", 4096, 3000);
	put_entry(&c, "c.idx", 4096, 2000);
	fd = wsnap_cache_tmp(&c, stale); /* a writer that died long ago */
	assert_true(fd >= 0);
	assert_int_equal(futimens(fd, old), 0);
	close(fd);
	put_entry(&c, "d.idx", 4096, 500); /* just written, oldest mtime */
	wsnap_cache_prune(&c, "d.idx");
	/* 16 KiB > 10 KiB: a (1000) and c (2000) go, d is kept */
	assert_false(has(&c, "a.idx"));
	assert_false(has(&c, "c.idx"));
	assert_true(has(&c, "b.idx"));
	assert_true(has(&c, "d.idx"));
	assert_false(has(&c, stale));
	/* using an entry makes it the most recent */
	fd = wsnap_cache_get(&c, "d.idx");
	assert_true(fd >= 0);
	close(fd);
	put_entry(&c, "e.idx", 4096, 4000);
	wsnap_cache_prune(&c, "e.idx");
	assert_false(has(&c, "b.idx"));
	assert_true(has(&c, "d.idx"));
	wsnap_cache_close(&c);
	unsetenv("WSNAP_CACHE_MAX");
	unsetenv("WSNAP_CACHE_DIR");
	ts_rmtree(tmp);
	free(tmp);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_indexfile_roundtrip),
		cmocka_unit_test(test_indexfile_in_place),
		cmocka_unit_test(test_indexfile_old_revision),
		cmocka_unit_test(test_indexfile_key_mismatch),
		cmocka_unit_test(test_indexfile_corrupt),
		cmocka_unit_test(test_indexfile_resealed_damage),
		cmocka_unit_test(test_indexfile_seek_sections),
		cmocka_unit_test(test_index_attach_seek_source),
		cmocka_unit_test(test_sidecar_roundtrip),
		cmocka_unit_test(test_sidecar_wrong_digest),
		cmocka_unit_test(test_sidecar_verify_threads),
		cmocka_unit_test(test_sidecar_verify_on_fill),
		cmocka_unit_test(test_sidecar_verify_on_fill_wrong),
		cmocka_unit_test(test_sidecar_verify_ahead),
		cmocka_unit_test(test_sidecar_lies),
		cmocka_unit_test(test_sidecar_policy_again),
		cmocka_unit_test(test_cache_dir_modes),
		cmocka_unit_test(test_cache_prune_lru),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
