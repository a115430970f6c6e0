/* SPDX-License-Identifier: MIT */
/*
 * libarchive, loaded on first use (dynlib.h says why: with libarchive on the
 * link line, every run of wsnap also mapped and relocated libxml2, ICU,
 * libstdc++, nettle, libacl, liblz4 and libbz2 before main; measured, an
 * empty program linked as wsnap was: 10 ms of wall and 3.7 ms of CPU per
 * start, 1.3 ms and 0.9 ms without libarchive and libcrypto). A remount of a
 * plain archive from its cache entry calls no libarchive function and now
 * never loads it.
 *
 * Include this instead of <archive.h> and <archive_entry.h>: the archive_*
 * functions wsnap calls then go through wsnap_archive's pointers, and the
 * first call loads the library (thread-safe). A function not listed in
 * WSNAP_ARCHIVE_FUNCS does not link (libarchive is not on the link line):
 * add it there. Test programs that build archives link libarchive itself;
 * both reach the same loaded library.
 */
#ifndef WSNAP_ARCHIVE_DL_H
#define WSNAP_ARCHIVE_DL_H

#include <archive.h>
#include <archive_entry.h>
#include <stdatomic.h>

#define WSNAP_ARCHIVE_FUNCS(X)                                                 \
	X(archive_entry_clear)                                                 \
	X(archive_entry_clone)                                                 \
	X(archive_entry_copy_pathname)                                         \
	X(archive_entry_copy_symlink)                                          \
	X(archive_entry_filetype)                                              \
	X(archive_entry_free)                                                  \
	X(archive_entry_hardlink)                                              \
	X(archive_entry_mtime)                                                 \
	X(archive_entry_mtime_nsec)                                            \
	X(archive_entry_new)                                                   \
	X(archive_entry_pathname)                                              \
	X(archive_entry_perm)                                                  \
	X(archive_entry_set_filetype)                                          \
	X(archive_entry_set_gid)                                               \
	X(archive_entry_set_mtime)                                             \
	X(archive_entry_set_perm)                                              \
	X(archive_entry_set_size)                                              \
	X(archive_entry_set_uid)                                               \
	X(archive_entry_size)                                                  \
	X(archive_entry_sparse_next)                                           \
	X(archive_entry_sparse_reset)                                          \
	X(archive_entry_symlink)                                               \
	X(archive_entry_xattr_add_entry)                                       \
	X(archive_entry_xattr_clear)                                           \
	X(archive_entry_xattr_next)                                            \
	X(archive_entry_xattr_reset)                                           \
	X(archive_errno)                                                       \
	X(archive_error_string)                                                \
	X(archive_filter_bytes)                                                \
	X(archive_filter_code)                                                 \
	X(archive_filter_count)                                                \
	X(archive_filter_name)                                                 \
	X(archive_format)                                                      \
	X(archive_read_data_block)                                             \
	X(archive_read_data_skip)                                              \
	X(archive_read_free)                                                   \
	X(archive_read_header_position)                                        \
	X(archive_read_new)                                                    \
	X(archive_read_next_header)                                            \
	X(archive_read_open1)                                                  \
	X(archive_read_open2)                                                  \
	X(archive_read_set_callback_data)                                      \
	X(archive_read_set_read_callback)                                      \
	X(archive_read_set_skip_callback)                                      \
	X(archive_read_support_filter_bzip2)                                   \
	X(archive_read_support_filter_gzip)                                    \
	X(archive_read_support_filter_lz4)                                     \
	X(archive_read_support_filter_xz)                                      \
	X(archive_read_support_filter_zstd)                                    \
	X(archive_read_support_format_raw)                                     \
	X(archive_read_support_format_tar)                                     \
	X(archive_set_error)                                                   \
	X(archive_version_details)                                             \
	X(archive_version_string)                                              \
	X(archive_write_add_filter_bzip2)                                      \
	X(archive_write_add_filter_gzip)                                       \
	X(archive_write_add_filter_lz4)                                        \
	X(archive_write_add_filter_none)                                       \
	X(archive_write_close)                                                 \
	X(archive_write_data)                                                  \
	X(archive_write_finish_entry)                                          \
	X(archive_write_free)                                                  \
	X(archive_write_header)                                                \
	X(archive_write_new)                                                   \
	X(archive_write_open)                                                  \
	X(archive_write_set_bytes_in_last_block)                               \
	X(archive_write_set_filter_option)                                     \
	X(archive_write_set_format_pax)

struct wsnap_archive_api {
#define WSNAP_ARCHIVE_PTR(f) __typeof__(f) *f;
	WSNAP_ARCHIVE_FUNCS(WSNAP_ARCHIVE_PTR)
#undef WSNAP_ARCHIVE_PTR
};

extern struct wsnap_archive_api wsnap_archive_table;
extern atomic_bool wsnap_archive_loaded;

/*
 * Loads libarchive once (it is a dependency of the package, as the dynamic
 * loader required it before): if it cannot be loaded, the process ends with
 * the loader's message and status 127, as it did then.
 */
void wsnap_archive_load(void);

/* The table, loaded on first use. */
static inline const struct wsnap_archive_api *wsnap_archive_api(void)
{
	if (!atomic_load_explicit(&wsnap_archive_loaded, memory_order_acquire))
		wsnap_archive_load();
	return &wsnap_archive_table;
}

#ifndef WSNAP_ARCHIVE_DL_SELF
#define WSNAP_ARCHIVE_CALL(f) (wsnap_archive_api()->f)
#define archive_entry_clear   WSNAP_ARCHIVE_CALL(archive_entry_clear)
#define archive_entry_clone   WSNAP_ARCHIVE_CALL(archive_entry_clone)
#define archive_entry_copy_pathname                                            \
	WSNAP_ARCHIVE_CALL(archive_entry_copy_pathname)
#define archive_entry_copy_symlink                                             \
	WSNAP_ARCHIVE_CALL(archive_entry_copy_symlink)
#define archive_entry_filetype	 WSNAP_ARCHIVE_CALL(archive_entry_filetype)
#define archive_entry_free	 WSNAP_ARCHIVE_CALL(archive_entry_free)
#define archive_entry_hardlink	 WSNAP_ARCHIVE_CALL(archive_entry_hardlink)
#define archive_entry_mtime	 WSNAP_ARCHIVE_CALL(archive_entry_mtime)
#define archive_entry_mtime_nsec WSNAP_ARCHIVE_CALL(archive_entry_mtime_nsec)
#define archive_entry_new	 WSNAP_ARCHIVE_CALL(archive_entry_new)
#define archive_entry_pathname	 WSNAP_ARCHIVE_CALL(archive_entry_pathname)
#define archive_entry_perm	 WSNAP_ARCHIVE_CALL(archive_entry_perm)
#define archive_entry_set_filetype                                             \
	WSNAP_ARCHIVE_CALL(archive_entry_set_filetype)
#define archive_entry_set_gid	  WSNAP_ARCHIVE_CALL(archive_entry_set_gid)
#define archive_entry_set_mtime	  WSNAP_ARCHIVE_CALL(archive_entry_set_mtime)
#define archive_entry_set_perm	  WSNAP_ARCHIVE_CALL(archive_entry_set_perm)
#define archive_entry_set_size	  WSNAP_ARCHIVE_CALL(archive_entry_set_size)
#define archive_entry_set_uid	  WSNAP_ARCHIVE_CALL(archive_entry_set_uid)
#define archive_entry_size	  WSNAP_ARCHIVE_CALL(archive_entry_size)
#define archive_entry_sparse_next WSNAP_ARCHIVE_CALL(archive_entry_sparse_next)
#define archive_entry_sparse_reset                                             \
	WSNAP_ARCHIVE_CALL(archive_entry_sparse_reset)
#define archive_entry_symlink WSNAP_ARCHIVE_CALL(archive_entry_symlink)
#define archive_entry_xattr_add_entry                                          \
	WSNAP_ARCHIVE_CALL(archive_entry_xattr_add_entry)
#define archive_entry_xattr_clear WSNAP_ARCHIVE_CALL(archive_entry_xattr_clear)
#define archive_entry_xattr_next  WSNAP_ARCHIVE_CALL(archive_entry_xattr_next)
#define archive_entry_xattr_reset WSNAP_ARCHIVE_CALL(archive_entry_xattr_reset)
#define archive_errno		  WSNAP_ARCHIVE_CALL(archive_errno)
#define archive_error_string	  WSNAP_ARCHIVE_CALL(archive_error_string)
#define archive_filter_bytes	  WSNAP_ARCHIVE_CALL(archive_filter_bytes)
#define archive_filter_code	  WSNAP_ARCHIVE_CALL(archive_filter_code)
#define archive_filter_count	  WSNAP_ARCHIVE_CALL(archive_filter_count)
#define archive_filter_name	  WSNAP_ARCHIVE_CALL(archive_filter_name)
#define archive_format		  WSNAP_ARCHIVE_CALL(archive_format)
#define archive_read_data_block	  WSNAP_ARCHIVE_CALL(archive_read_data_block)
#define archive_read_data_skip	  WSNAP_ARCHIVE_CALL(archive_read_data_skip)
#define archive_read_free	  WSNAP_ARCHIVE_CALL(archive_read_free)
#define archive_read_header_position                                           \
	WSNAP_ARCHIVE_CALL(archive_read_header_position)
#define archive_read_new	 WSNAP_ARCHIVE_CALL(archive_read_new)
#define archive_read_next_header WSNAP_ARCHIVE_CALL(archive_read_next_header)
#define archive_read_open1	 WSNAP_ARCHIVE_CALL(archive_read_open1)
#define archive_read_open2	 WSNAP_ARCHIVE_CALL(archive_read_open2)
#define archive_read_set_callback_data                                         \
	WSNAP_ARCHIVE_CALL(archive_read_set_callback_data)
#define archive_read_set_read_callback                                         \
	WSNAP_ARCHIVE_CALL(archive_read_set_read_callback)
#define archive_read_set_skip_callback                                         \
	WSNAP_ARCHIVE_CALL(archive_read_set_skip_callback)
#define archive_read_support_filter_bzip2                                      \
	WSNAP_ARCHIVE_CALL(archive_read_support_filter_bzip2)
#define archive_read_support_filter_gzip                                       \
	WSNAP_ARCHIVE_CALL(archive_read_support_filter_gzip)
#define archive_read_support_filter_lz4                                        \
	WSNAP_ARCHIVE_CALL(archive_read_support_filter_lz4)
#define archive_read_support_filter_xz                                         \
	WSNAP_ARCHIVE_CALL(archive_read_support_filter_xz)
#define archive_read_support_filter_zstd                                       \
	WSNAP_ARCHIVE_CALL(archive_read_support_filter_zstd)
#define archive_read_support_format_raw                                        \
	WSNAP_ARCHIVE_CALL(archive_read_support_format_raw)
#define archive_read_support_format_tar                                        \
	WSNAP_ARCHIVE_CALL(archive_read_support_format_tar)
#define archive_set_error	WSNAP_ARCHIVE_CALL(archive_set_error)
#define archive_version_details WSNAP_ARCHIVE_CALL(archive_version_details)
#define archive_version_string	WSNAP_ARCHIVE_CALL(archive_version_string)
#define archive_write_add_filter_bzip2                                         \
	WSNAP_ARCHIVE_CALL(archive_write_add_filter_bzip2)
#define archive_write_add_filter_gzip                                          \
	WSNAP_ARCHIVE_CALL(archive_write_add_filter_gzip)
#define archive_write_add_filter_lz4                                           \
	WSNAP_ARCHIVE_CALL(archive_write_add_filter_lz4)
#define archive_write_add_filter_none                                          \
	WSNAP_ARCHIVE_CALL(archive_write_add_filter_none)
#define archive_write_close WSNAP_ARCHIVE_CALL(archive_write_close)
#define archive_write_data  WSNAP_ARCHIVE_CALL(archive_write_data)
#define archive_write_finish_entry                                             \
	WSNAP_ARCHIVE_CALL(archive_write_finish_entry)
#define archive_write_free   WSNAP_ARCHIVE_CALL(archive_write_free)
#define archive_write_header WSNAP_ARCHIVE_CALL(archive_write_header)
#define archive_write_new    WSNAP_ARCHIVE_CALL(archive_write_new)
#define archive_write_open   WSNAP_ARCHIVE_CALL(archive_write_open)
#define archive_write_set_bytes_in_last_block                                  \
	WSNAP_ARCHIVE_CALL(archive_write_set_bytes_in_last_block)
#define archive_write_set_filter_option                                        \
	WSNAP_ARCHIVE_CALL(archive_write_set_filter_option)
#define archive_write_set_format_pax                                           \
	WSNAP_ARCHIVE_CALL(archive_write_set_format_pax)
#endif

#endif
