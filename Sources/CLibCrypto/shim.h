// OpenSSL's libcrypto (Debian: libssl-dev): SHA-256 through the EVP digest API and one-shot HMAC.
// Only includes; Swift calls these functions as they are.
#ifndef SPLICE_CLIBCRYPTO_SHIM_H
#define SPLICE_CLIBCRYPTO_SHIM_H
#include <openssl/evp.h>
#include <openssl/hmac.h>
#endif
