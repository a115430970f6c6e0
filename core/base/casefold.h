/* SPDX-License-Identifier: MIT */
/*
 * Caseless keys: when two names are the same name on a case-folding,
 * normalization-insensitive filesystem (policy.md 4 and 7.7).
 *
 * The key of a name is NFD(casefold(upper(NFD(name)))) over the Unicode
 * data of core/base/casefold_data.h (scripts/gen_casefold.py): Unicode
 * canonical caseless matching, which also makes precomposed and decomposed
 * spellings equal (NFC 'é' and NFD 'e' + U+0301, as APFS, HFS+ and ext4's
 * utf8 casefolding compare them), full case folding ('ß' = "ss", the
 * Kelvin sign = 'k'), and each character upper-cased first so that dotless
 * 'ı' matches 'I' and 'i' as filesystems comparing through an upcase table
 * do (NTFS, exFAT, FAT). A byte that does not start a valid UTF-8 sequence
 * is kept as it is, as its own unit (0x110000 + byte), equal only to
 * itself. Two names are one on such a filesystem when their keys are
 * equal; a key may merge a little more than a given filesystem does, never
 * less, within the Unicode version of the data.
 */
#ifndef WSNAP_CASEFOLD_H
#define WSNAP_CASEFOLD_H

#include <stddef.h>
#include <stdint.h>

/* Units (code points) that the key of len bytes fits in: at most one and a
 * half per byte (U+01D5, two bytes, folds to three code points). */
#define WSNAP_CASEFOLD_CAP(len) ((size_t)(len) + (size_t)(len) / 2 + 1)

/*
 * Writes the key of s[0..len) to key and returns its length in units. key
 * and scratch each hold WSNAP_CASEFOLD_CAP(len) units. Never fails, never
 * allocates; time is linear in len.
 */
size_t wsnap_casefold_key(uint32_t *key, uint32_t *scratch, const char *s,
			  size_t len);

/* The Unicode version of the data ("14.0.0"). */
const char *wsnap_casefold_unicode(void);

#endif
