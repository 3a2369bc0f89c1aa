// OpenSSL's libcrypto: digests of downloads and blobs, HMAC-SHA256 of webhooks and resume data.
// libcurl links it already, so it is the process's one crypto library; its x86-64 SHA-256 has an
// AVX2 + BMI2 path that matters on CPUs without SHA extensions, where the hash bounds a download.
#ifndef TRANSFERD_COPENSSL_SHIM_H
#define TRANSFERD_COPENSSL_SHIM_H
// A download's running digests are kept in libcrypto's plain context structs (SHA256_CTX, …), not
// EVP contexts: only plain memory can be saved with a checkpoint and restored after a restart
// (Digests' DigestContext). OpenSSL 3 deprecates those functions in favour of EVP but keeps them,
// on the same assembly; the deprecation warnings are silenced here, for them alone.
#define OPENSSL_SUPPRESS_DEPRECATED
#include <openssl/evp.h>
#include <openssl/hmac.h>
#include <openssl/md5.h>
#include <openssl/sha.h>
#endif
