// libpsl, the Public Suffix List library curl itself links: which domains are public suffixes
// (`co.uk`, `github.io`), so a cookie may not be set for them (RFC 6265 §5.3 step 5).
#ifndef TRANSFERD_CPSL_SHIM_H
#define TRANSFERD_CPSL_SHIM_H
#include <libpsl.h>
#endif
