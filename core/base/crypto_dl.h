/* SPDX-License-Identifier: MIT */
/*
 * OpenSSL's libcrypto (SHA-256 of sidecar digests and S3 signatures),
 * loaded on first use as libarchive is (archive_dl.h, dynlib.h): linked, it
 * cost every start of wsnap about 2 ms. Include this instead of
 * <openssl/evp.h>; the first call of a listed function loads the library,
 * and a function not listed does not link.
 */
#ifndef WSNAP_CRYPTO_DL_H
#define WSNAP_CRYPTO_DL_H

#include <openssl/evp.h>
#include <stdatomic.h>

#define WSNAP_CRYPTO_FUNCS(X)                                                  \
	X(EVP_Digest)                                                          \
	X(EVP_DigestFinal_ex)                                                  \
	X(EVP_DigestInit_ex)                                                   \
	X(EVP_DigestUpdate)                                                    \
	X(EVP_MD_CTX_free)                                                     \
	X(EVP_MD_CTX_new)                                                      \
	X(EVP_sha256)

struct wsnap_crypto_api {
#define WSNAP_CRYPTO_PTR(f) __typeof__(f) *f;
	WSNAP_CRYPTO_FUNCS(WSNAP_CRYPTO_PTR)
#undef WSNAP_CRYPTO_PTR
};

extern struct wsnap_crypto_api wsnap_crypto_table;
extern atomic_bool wsnap_crypto_loaded;

/* Loads libcrypto once; if it cannot be, the process ends as when the
 * dynamic loader could not find it (wsnap_dynlib_fatal). */
void wsnap_crypto_load(void);

/* The table, loaded on first use. */
static inline const struct wsnap_crypto_api *wsnap_crypto_api(void)
{
	if (!atomic_load_explicit(&wsnap_crypto_loaded, memory_order_acquire))
		wsnap_crypto_load();
	return &wsnap_crypto_table;
}

#ifndef WSNAP_CRYPTO_DL_SELF
#define EVP_Digest	   (wsnap_crypto_api()->EVP_Digest)
#define EVP_DigestFinal_ex (wsnap_crypto_api()->EVP_DigestFinal_ex)
#define EVP_DigestInit_ex  (wsnap_crypto_api()->EVP_DigestInit_ex)
#define EVP_DigestUpdate   (wsnap_crypto_api()->EVP_DigestUpdate)
#define EVP_MD_CTX_free	   (wsnap_crypto_api()->EVP_MD_CTX_free)
#define EVP_MD_CTX_new	   (wsnap_crypto_api()->EVP_MD_CTX_new)
#define EVP_sha256	   (wsnap_crypto_api()->EVP_sha256)
#endif

#endif
