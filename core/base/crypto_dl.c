/* SPDX-License-Identifier: MIT */
#define WSNAP_CRYPTO_DL_SELF
#include "crypto_dl.h"

#include <stddef.h>

#include "array.h"
#include "dynlib.h"

/* the soname of Debian 12's libssl-dev (the ABI openssl/evp.h describes) */
#define CRYPTO_SONAME "libcrypto.so.3"

#define WSNAP_CRYPTO_SYM(f) {#f, offsetof(struct wsnap_crypto_api, f)},
static const struct wsnap_dynsym crypto_syms[] = {
	WSNAP_CRYPTO_FUNCS(WSNAP_CRYPTO_SYM)};
#undef WSNAP_CRYPTO_SYM

_Static_assert(ARRAY_SIZE(crypto_syms) * sizeof(void (*)(void)) ==
		       sizeof(struct wsnap_crypto_api),
	       "every pointer of wsnap_crypto_api has its name");

struct wsnap_crypto_api wsnap_crypto_table;
atomic_bool wsnap_crypto_loaded;

static struct wsnap_dynlib lib =
	WSNAP_DYNLIB_INIT(CRYPTO_SONAME, crypto_syms, &wsnap_crypto_table);

void wsnap_crypto_load(void)
{
	wsnap_dynlib_require(&lib, &wsnap_crypto_loaded);
}
