// libpq's macro-only pieces, typed for Swift.
#ifndef TRANSFERD_CPOSTGRES_SHIM_H
#define TRANSFERD_CPOSTGRES_SHIM_H
#include <libpq-fe.h>

// PG_DIAG_SQLSTATE is a character constant in postgres_ext.h, which Swift imports as an Int32
// only by accident of its spelling: name it.
static inline int transferd_pq_diag_sqlstate(void) { return PG_DIAG_SQLSTATE; }
#endif
