// libpq's macro-only pieces, typed for Swift.
#ifndef TRANSFERD_CPOSTGRES_SHIM_H
#define TRANSFERD_CPOSTGRES_SHIM_H
#include <libpq-fe.h>

// PG_DIAG_SQLSTATE and PG_DIAG_MESSAGE_PRIMARY are character constants in postgres_ext.h, which
// Swift does not import as the `int` PQresultErrorField takes: name them.
static inline int transferd_pq_diag_sqlstate(void) { return PG_DIAG_SQLSTATE; }
static inline int transferd_pq_diag_message_primary(void) { return PG_DIAG_MESSAGE_PRIMARY; }
#endif
