/* SPDX-License-Identifier: MIT */
/* Shared by the files of fs/ only. */
#ifndef WSNAP_FS_PRIVATE_H
#define WSNAP_FS_PRIVATE_H

#include <stdbool.h>

/*
 * libfuse reports option and mount errors through its log function. With
 * capture on, the last error line is kept (instead of going to stderr) so
 * that it can travel in a struct wsnap_error, to a parent process too.
 * Not thread-safe: for setting up, before the loop runs.
 */
void wsnap_fs_log_capture(bool on);

/* The last captured line, or a placeholder when there is none. */
const char *wsnap_fs_log_text(void);

#endif
