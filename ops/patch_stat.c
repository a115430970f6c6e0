/* SPDX-License-Identifier: MIT */
/*
 * git's --stat of a patch (patch_private.h), laid out as git lays it out:
 *
 *  - one line per file, ' NAME | COUNT +++---' or ' NAME | Bin OLD -> NEW
 *    bytes', names quoted as in the patch (so plain ASCII: a column is a
 *    byte), the names padded to one column and the counts right-aligned
 *    (at least 3 wide when a binary file is listed, so 'Bin' fits);
 *  - the whole fits into width columns: the bars get what the widest name
 *    and count leave, but no more than 3/8 of the width (at least 6) when
 *    both cannot fit; a name that is still too wide loses its start to
 *    '...' and then starts at its next '/';
 *  - bars are scaled linearly to the largest change when it does not fit,
 *    every non-zero count keeping at least one mark, and a file with both
 *    insertions and deletions at least two;
 *  - the last line counts files, insertions and deletions (binary files
 *    count as files only), singular for one, leaving out a zero count
 *    unless both are zero.
 */
#include <inttypes.h>
#include <stdio.h>
#include <string.h>

#include "patch_private.h"

struct layout {
	uint64_t max_change; /* the largest insertions + deletions of a text */
	int64_t number_width;
	int64_t name_width;
	int64_t graph_width;
};

static int64_t decimal_width(uint64_t v)
{
	int64_t w = 1;

	while (v >= 10) {
		v /= 10;
		w++;
	}
	return w;
}

static void lay_out(const struct wsnap_patch_file *f, size_t n, int width,
		    struct layout *l)
{
	int64_t max_len = 0, bin_width = 0, w = width, fixed;
	size_t i;

	memset(l, 0, sizeof(*l));
	for (i = 0; i < n; i++) {
		if ((int64_t)f[i].name_len > max_len)
			max_len = (int64_t)f[i].name_len;
		if (f[i].binary) {
			int64_t bw = 14 + decimal_width(f[i].new_size) +
				     decimal_width(f[i].old_size);

			if (bw > bin_width)
				bin_width = bw;
			l->number_width = 3;
		} else if (f[i].added + f[i].deleted > l->max_change) {
			l->max_change = f[i].added + f[i].deleted;
		}
	}
	if (decimal_width(l->max_change) > l->number_width)
		l->number_width = decimal_width(l->max_change);
	if (w < 16 + 6 + l->number_width)
		w = 16 + 6 + l->number_width;
	if (l->max_change + 4 > (uint64_t)bin_width)
		l->graph_width = l->max_change > (uint64_t)INT32_MAX
					 ? INT32_MAX
					 : (int64_t)l->max_change;
	else
		l->graph_width = bin_width - 4;
	l->name_width = max_len;
	fixed = l->number_width + 6;
	if (l->name_width + fixed + l->graph_width <= w)
		return;
	if (l->graph_width > w * 3 / 8 - fixed) {
		l->graph_width = w * 3 / 8 - fixed;
		if (l->graph_width < 6)
			l->graph_width = 6;
	}
	if (l->name_width > w - fixed - l->graph_width)
		l->name_width = w - fixed - l->graph_width;
	else
		l->graph_width = w - fixed - l->name_width;
}

static uint64_t scale(uint64_t it, const struct layout *l)
{
	if (!it)
		return 0;
	return 1 + it * (uint64_t)(l->graph_width - 1) / l->max_change;
}

static enum wsnap_status put_marks(struct wsnap_patch_buf *b, char c,
				   uint64_t count, struct wsnap_error *err)
{
	char run[64];
	enum wsnap_status s = WSNAP_OK;

	memset(run, c, sizeof(run));
	while (s == WSNAP_OK && count) {
		size_t k = count < sizeof(run) ? (size_t)count : sizeof(run);

		s = wsnap_patch_buf_put(b, run, k, err);
		count -= k;
	}
	return s;
}

/* One file's line into b. */
static enum wsnap_status stat_line(struct wsnap_patch_buf *b,
				   const struct wsnap_patch_file *f,
				   const struct layout *l,
				   struct wsnap_error *err)
{
	const char *name = f->name, *prefix = "", *slash;
	int64_t len = l->name_width, name_len = (int64_t)f->name_len;
	int64_t padding;
	uint64_t add = f->added, del = f->deleted, total;
	char num[96];
	enum wsnap_status s;

	if (l->name_width < name_len) {
		prefix = "...";
		len = len > 3 ? len - 3 : 0;
		name += name_len - len;
		name_len = len;
		slash = strchr(name, '/');
		if (slash) {
			name_len -= slash - name;
			name = slash;
		}
	}
	padding = len > name_len ? len - name_len : 0;
	s = wsnap_patch_buf_str(b, " ", err);
	if (s == WSNAP_OK)
		s = wsnap_patch_buf_str(b, prefix, err);
	if (s == WSNAP_OK)
		s = wsnap_patch_buf_put(b, name, (size_t)name_len, err);
	if (s == WSNAP_OK)
		s = put_marks(b, ' ', (uint64_t)padding, err);
	if (s != WSNAP_OK)
		return s;
	if (f->binary) {
		if (!f->old_size && !f->new_size)
			snprintf(num, sizeof(num), " | %*s\n",
				 (int)l->number_width, "Bin");
		else
			snprintf(num, sizeof(num),
				 " | %*s %" PRIu64 " -> %" PRIu64 " bytes\n",
				 (int)l->number_width, "Bin", f->old_size,
				 f->new_size);
		return wsnap_patch_buf_str(b, num, err);
	}
	if ((uint64_t)l->graph_width <= l->max_change) {
		total = scale(add + del, l);
		if (total < 2 && add && del)
			total = 2;
		if (add < del) {
			add = scale(add, l);
			del = total - add;
		} else {
			del = scale(del, l);
			add = total - del;
		}
	}
	snprintf(num, sizeof(num), " | %*" PRIu64 "%s", (int)l->number_width,
		 f->added + f->deleted, f->added + f->deleted ? " " : "");
	s = wsnap_patch_buf_str(b, num, err);
	if (s == WSNAP_OK)
		s = put_marks(b, '+', add, err);
	if (s == WSNAP_OK)
		s = put_marks(b, '-', del, err);
	if (s == WSNAP_OK)
		s = wsnap_patch_buf_str(b, "\n", err);
	return s;
}

static void summary(char *line, size_t cap, size_t files, uint64_t ins,
		    uint64_t del)
{
	int k = snprintf(line, cap, " %zu file%s changed", files,
			 files == 1 ? "" : "s");

	if (ins || !del)
		k += snprintf(line + k, cap - (size_t)k,
			      ", %" PRIu64 " insertion%s(+)", ins,
			      ins == 1 ? "" : "s");
	if (del || !ins)
		k += snprintf(line + k, cap - (size_t)k,
			      ", %" PRIu64 " deletion%s(-)", del,
			      del == 1 ? "" : "s");
	snprintf(line + k, cap - (size_t)k, "\n");
}

enum wsnap_status wsnap_patch_stat_write(const struct wsnap_patch_file *files,
					 size_t n, int width,
					 wsnap_patch_write_fn write, void *wctx,
					 struct wsnap_error *err)
{
	struct wsnap_patch_buf b = {0};
	struct layout l;
	uint64_t ins = 0, del = 0;
	char line[160];
	size_t i;
	enum wsnap_status s = WSNAP_OK;

	if (!n)
		return WSNAP_OK;
	lay_out(files, n, width, &l);
	for (i = 0; s == WSNAP_OK && i < n; i++) {
		b.len = 0;
		s = stat_line(&b, &files[i], &l, err);
		if (s == WSNAP_OK)
			s = write(wctx, b.p, b.len, err);
		if (!files[i].binary) {
			ins += files[i].added;
			del += files[i].deleted;
		}
	}
	wsnap_patch_buf_release(&b);
	if (s != WSNAP_OK)
		return s;
	summary(line, sizeof(line), n, ins, del);
	return write(wctx, line, strlen(line), err);
}
