// SQLite's variadic and macro-only pieces, typed for Swift.
#ifndef TRANSFERD_CSQLITE_SHIM_H
#define TRANSFERD_CSQLITE_SHIM_H
#include <sqlite3.h>

// SQLITE_TRANSIENT is a cast of -1 to a function pointer, which Swift cannot import: it tells
// sqlite3_bind_* to copy the bytes before returning.
static inline sqlite3_destructor_type transferd_sqlite_transient(void) { return SQLITE_TRANSIENT; }
static inline int transferd_sqlite_config_log(void (*f)(void *, int, const char *), void *ctx) { return sqlite3_config(SQLITE_CONFIG_LOG, f, ctx); }
static inline int transferd_sqlite_db_config_int(sqlite3 *db, int op, int value, int *out) { return sqlite3_db_config(db, op, value, out); }
#endif
