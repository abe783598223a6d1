// SQLite 3: the disk cache's index (WAL mode: crash-safe, readers never wait for the writer, and file locks keep
// several processes sharing one cache directory consistent).
//
// Loaded when the first index opens rather than when the process starts: linked normally, libsqlite3 is one more
// shared object for every process to map and relocate (about 0.2 ms), which `osprey --version`, `osprey info` and
// `osprey convert` of a local file pay for nothing. The functions Osprey calls are looked up in a table; the header's
// types and constants are used as they are. Any libsqlite3 from 3.8.7 (the first with `sqlite3_bind_blob64`) is
// accepted: SQLite keeps its interface backwards compatible.
#ifndef OSPREY_SQLITE_H
#define OSPREY_SQLITE_H

#include <sqlite3.h>

#define OSPREY_SQLITE_FUNCTION(name) __typeof__(name) *_Nonnull name

/// The SQLite functions Osprey calls.
typedef struct {
    OSPREY_SQLITE_FUNCTION(sqlite3_bind_blob64);
    OSPREY_SQLITE_FUNCTION(sqlite3_bind_double);
    OSPREY_SQLITE_FUNCTION(sqlite3_bind_int64);
    OSPREY_SQLITE_FUNCTION(sqlite3_bind_null);
    OSPREY_SQLITE_FUNCTION(sqlite3_bind_text);
    OSPREY_SQLITE_FUNCTION(sqlite3_bind_zeroblob);
    OSPREY_SQLITE_FUNCTION(sqlite3_busy_timeout);
    OSPREY_SQLITE_FUNCTION(sqlite3_clear_bindings);
    OSPREY_SQLITE_FUNCTION(sqlite3_close);
    OSPREY_SQLITE_FUNCTION(sqlite3_column_blob);
    OSPREY_SQLITE_FUNCTION(sqlite3_column_bytes);
    OSPREY_SQLITE_FUNCTION(sqlite3_column_count);
    OSPREY_SQLITE_FUNCTION(sqlite3_column_double);
    OSPREY_SQLITE_FUNCTION(sqlite3_column_int64);
    OSPREY_SQLITE_FUNCTION(sqlite3_column_text);
    OSPREY_SQLITE_FUNCTION(sqlite3_column_type);
    OSPREY_SQLITE_FUNCTION(sqlite3_errmsg);
    OSPREY_SQLITE_FUNCTION(sqlite3_exec);
    OSPREY_SQLITE_FUNCTION(sqlite3_finalize);
    OSPREY_SQLITE_FUNCTION(sqlite3_free);
    OSPREY_SQLITE_FUNCTION(sqlite3_libversion_number);
    OSPREY_SQLITE_FUNCTION(sqlite3_open_v2);
    OSPREY_SQLITE_FUNCTION(sqlite3_prepare_v2);
    OSPREY_SQLITE_FUNCTION(sqlite3_reset);
    OSPREY_SQLITE_FUNCTION(sqlite3_step);
} osprey_sqlite_functions;

/// libsqlite3's table, loaded on the first call (thread-safe, once per process); `NULL` with `*reason` (when not
/// `NULL`) set to a static message when no acceptable libsqlite3 can be opened.
const osprey_sqlite_functions *_Nullable osprey_sqlite_functions_load(const char *_Nullable *_Nullable reason);

#endif
