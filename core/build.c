/*
 * wsnap_index_build (index.h): the reader feeds the builder member by
 * member, then the builder finishes the policy and the index gets the
 * data descriptor and the reader's figures.
 */
#include <unistd.h>

#include "builder.h"
#include "index.h"
#include "reader.h"

enum wsnap_status wsnap_index_build(struct wsnap_index **out, int fd,
				    const struct wsnap_policy *policy,
				    const struct wsnap_reader_opts *opts,
				    struct wsnap_error *err)
{
	struct wsnap_reader_result res = {.data_fd = -1};
	struct wsnap_builder *b = NULL;
	struct wsnap_index *idx = NULL;
	enum wsnap_status st;

	*out = NULL;
	st = wsnap_builder_new(&b, policy, err);
	if (st != WSNAP_OK)
		return st;
	st = wsnap_reader_run(fd, opts, wsnap_builder_add, b, &res, err);
	if (st != WSNAP_OK) {
		/* the reader keeps no descriptor on failure */
		wsnap_builder_free(b);
		return st;
	}
	st = wsnap_builder_finish(b, &idx, err); /* frees b */
	if (st != WSNAP_OK) {
		if (res.data_fd >= 0)
			close(res.data_fd);
		return st;
	}
	wsnap_index_attach_data(idx, res.data_fd, &res);
	*out = idx;
	return WSNAP_OK;
}
