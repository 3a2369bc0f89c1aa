// Typed wrappers for libcurl's variadic calls: Swift cannot call C varargs functions, and a
// typed wrapper per argument kind keeps each call site honest about what it passes
// (curl reads the argument as long, curl_off_t, pointer or function pointer by option number).
#ifndef TRANSFERD_CCURL_SHIM_H
#define TRANSFERD_CCURL_SHIM_H
#include <curl/curl.h>
#include <dlfcn.h>

static inline CURLcode transferd_easy_setopt_long(CURL *h, CURLoption o, long v) { return curl_easy_setopt(h, o, v); }
static inline CURLcode transferd_easy_setopt_off(CURL *h, CURLoption o, curl_off_t v) { return curl_easy_setopt(h, o, v); }
static inline CURLcode transferd_easy_setopt_ptr(CURL *h, CURLoption o, const void *v) { return curl_easy_setopt(h, o, v); }
static inline CURLcode transferd_easy_setopt_string(CURL *h, CURLoption o, const char *v) { return curl_easy_setopt(h, o, v); }
static inline CURLcode transferd_easy_setopt_slist(CURL *h, CURLoption o, struct curl_slist *v) { return curl_easy_setopt(h, o, v); }

typedef size_t (*transferd_data_callback)(char *, size_t, size_t, void *);
typedef int (*transferd_xferinfo_callback)(void *, curl_off_t, curl_off_t, curl_off_t, curl_off_t);
typedef curl_socket_t (*transferd_opensocket_callback)(void *, curlsocktype, struct curl_sockaddr *);
typedef int (*transferd_closesocket_callback)(void *, curl_socket_t);
typedef int (*transferd_sockopt_callback)(void *, curl_socket_t, curlsocktype);
typedef int (*transferd_seek_callback)(void *, curl_off_t, int);
typedef int (*transferd_debug_callback)(CURL *, curl_infotype, char *, size_t, void *);
typedef int (*transferd_prereq_callback)(void *, char *, char *, int, int);

static inline CURLcode transferd_easy_setopt_data_cb(CURL *h, CURLoption o, transferd_data_callback f) { return curl_easy_setopt(h, o, f); }
static inline CURLcode transferd_easy_setopt_xferinfo_cb(CURL *h, transferd_xferinfo_callback f) { return curl_easy_setopt(h, CURLOPT_XFERINFOFUNCTION, f); }
static inline CURLcode transferd_easy_setopt_opensocket_cb(CURL *h, transferd_opensocket_callback f) { return curl_easy_setopt(h, CURLOPT_OPENSOCKETFUNCTION, f); }
static inline CURLcode transferd_easy_setopt_closesocket_cb(CURL *h, transferd_closesocket_callback f) { return curl_easy_setopt(h, CURLOPT_CLOSESOCKETFUNCTION, f); }
static inline CURLcode transferd_easy_setopt_sockopt_cb(CURL *h, transferd_sockopt_callback f) { return curl_easy_setopt(h, CURLOPT_SOCKOPTFUNCTION, f); }
static inline CURLcode transferd_easy_setopt_seek_cb(CURL *h, transferd_seek_callback f) { return curl_easy_setopt(h, CURLOPT_SEEKFUNCTION, f); }
static inline CURLcode transferd_easy_setopt_prereq_cb(CURL *h, transferd_prereq_callback f) { return curl_easy_setopt(h, CURLOPT_PREREQFUNCTION, f); }

static inline CURLcode transferd_easy_getinfo_long(CURL *h, CURLINFO i, long *v) { return curl_easy_getinfo(h, i, v); }
static inline CURLcode transferd_easy_getinfo_off(CURL *h, CURLINFO i, curl_off_t *v) { return curl_easy_getinfo(h, i, v); }
static inline CURLcode transferd_easy_getinfo_string(CURL *h, CURLINFO i, char **v) { return curl_easy_getinfo(h, i, v); }
static inline CURLcode transferd_easy_getinfo_ptr(CURL *h, CURLINFO i, void **v) { return curl_easy_getinfo(h, i, v); }
static inline CURLcode transferd_easy_getinfo_socket(CURL *h, CURLINFO i, curl_socket_t *v) { return curl_easy_getinfo(h, i, v); }

typedef int (*transferd_multi_socket_callback)(CURL *, curl_socket_t, int, void *, void *);
typedef int (*transferd_multi_timer_callback)(CURLM *, long, void *);

static inline CURLMcode transferd_multi_setopt_long(CURLM *m, CURLMoption o, long v) { return curl_multi_setopt(m, o, v); }
static inline CURLMcode transferd_multi_setopt_ptr(CURLM *m, CURLMoption o, void *v) { return curl_multi_setopt(m, o, v); }
static inline CURLMcode transferd_multi_setopt_socket_cb(CURLM *m, transferd_multi_socket_callback f) { return curl_multi_setopt(m, CURLMOPT_SOCKETFUNCTION, f); }
static inline CURLMcode transferd_multi_setopt_timer_cb(CURLM *m, transferd_multi_timer_callback f) { return curl_multi_setopt(m, CURLMOPT_TIMERFUNCTION, f); }

static inline CURLSHcode transferd_share_setopt_long(CURLSH *s, CURLSHoption o, long v) { return curl_share_setopt(s, o, v); }

// A blob option (CURLOPT_CAINFO_BLOB, CURLOPT_SSLCERT_BLOB, …) with the bytes copied by curl.
static inline CURLcode transferd_easy_setopt_blob(CURL *h, CURLoption o, const void *data, size_t len) {
    struct curl_blob blob = { (void *)data, len, CURL_BLOB_COPY };
    return curl_easy_setopt(h, o, &blob);
}

// Swift imports CURL_SOCKET_BAD and friends only when they are plain literals; spell them here.
static inline curl_socket_t transferd_socket_bad(void) { return CURL_SOCKET_BAD; }
static inline size_t transferd_writefunc_pause(void) { return CURL_WRITEFUNC_PAUSE; }
static inline size_t transferd_readfunc_pause(void) { return CURL_READFUNC_PAUSE; }
static inline CURLcode transferd_easy_unpause(CURL *h) { return curl_easy_pause(h, CURLPAUSE_CONT); }
static inline long transferd_auth_basic(void) { return (long)CURLAUTH_BASIC; }
static inline long transferd_auth_digest(void) { return (long)CURLAUTH_DIGEST; }
static inline long transferd_auth_bearer(void) { return (long)CURLAUTH_BEARER; }

// CURLOPT_SSL_CTX_FUNCTION: called with OpenSSL's SSL_CTX before each TLS handshake.
typedef CURLcode (*transferd_ssl_ctx_callback)(CURL *, void *, void *);
static inline CURLcode transferd_easy_setopt_ssl_ctx_cb(CURL *h, transferd_ssl_ctx_callback f) { return curl_easy_setopt(h, CURLOPT_SSL_CTX_FUNCTION, f); }

// OpenSSL's SSL_CTX_set_cert_cb, from the libssl that libcurl already loaded (found with dlsym, so
// building needs no OpenSSL headers and links nothing more). In client mode OpenSSL calls the
// callback when the server sends a CertificateRequest. Returns 0 when libssl is not there.
typedef int (*transferd_cert_callback)(void *ssl, void *arg);
static inline int transferd_ssl_ctx_set_cert_cb(void *ctx, transferd_cert_callback cb, void *arg) {
    typedef void (*setter)(void *, transferd_cert_callback, void *);
    static setter set = NULL;  // the same value whichever thread looks it up first
    if (!set) set = (setter)dlsym(RTLD_DEFAULT, "SSL_CTX_set_cert_cb");
    if (!set) return 0;
    set(ctx, cb, arg);
    return 1;
}
#endif
