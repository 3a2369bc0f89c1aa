// OpenSSL's libcrypto: SHA-256 of downloads and blobs, HMAC-SHA256 of webhooks and resume data.
// libcurl links it already, so it is the process's one crypto library; its x86-64 SHA-256 has an
// AVX2 + BMI2 path that matters on CPUs without SHA extensions, where the hash bounds a download.
#ifndef TRANSFERD_COPENSSL_SHIM_H
#define TRANSFERD_COPENSSL_SHIM_H
#include <openssl/evp.h>
#include <openssl/hmac.h>
#endif
