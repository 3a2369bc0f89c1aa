// OpenSSL's libcrypto, for SHA-256 of downloads and blobs. libcurl links it already; its x86-64
// SHA-256 has an AVX2 + BMI2 path that runs about 13% faster than the AVX one swift-crypto's
// BoringSSL takes on CPUs without SHA extensions, and the hash bounds a large download there.
#ifndef TRANSFERD_COPENSSL_SHIM_H
#define TRANSFERD_COPENSSL_SHIM_H
#include <openssl/evp.h>
#endif
