/* SPDX-License-Identifier: MIT */
/* ARRAY_SIZE: the number of elements of an array (never a pointer). */
#ifndef WSNAP_ARRAY_H
#define WSNAP_ARRAY_H

#define ARRAY_SIZE(a) (sizeof(a) / sizeof((a)[0]))

#endif
