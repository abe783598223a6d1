// Loads libsqlite3 with dlopen when the disk cache's index first opens (see COspreySQLite.h for why).
#include "COspreySQLite.h"

#include <dlfcn.h>
#include <pthread.h>
#include <string.h>

/// Looks `name` up in `handle` into `table->name`; on failure, says which function is missing.
#define LOOK_UP(name)                                                                                                  \
    do {                                                                                                               \
        void *symbol = dlsym(handle, #name);                                                                           \
        if (symbol == NULL) return "a function Osprey needs is missing from libsqlite3 (" #name ")";                   \
        memcpy(&table->name, &symbol, sizeof(symbol));                                                                 \
    } while (0)

// The run-time library's name on Linux (its ABI has been 0 since SQLite 3.0), macOS, then the development link.
static const char *const sqlite_names[] = {"libsqlite3.so.0", "libsqlite3.dylib", "libsqlite3.so", NULL};

static const char *fill(void *handle, osprey_sqlite_functions *table) {
    LOOK_UP(sqlite3_libversion_number);
    if (table->sqlite3_libversion_number() < 3008007) return "the installed libsqlite3 is older than 3.8.7";
    LOOK_UP(sqlite3_bind_blob64);
    LOOK_UP(sqlite3_bind_double);
    LOOK_UP(sqlite3_bind_int64);
    LOOK_UP(sqlite3_bind_null);
    LOOK_UP(sqlite3_bind_text);
    LOOK_UP(sqlite3_bind_zeroblob);
    LOOK_UP(sqlite3_busy_timeout);
    LOOK_UP(sqlite3_clear_bindings);
    LOOK_UP(sqlite3_close);
    LOOK_UP(sqlite3_column_blob);
    LOOK_UP(sqlite3_column_bytes);
    LOOK_UP(sqlite3_column_count);
    LOOK_UP(sqlite3_column_double);
    LOOK_UP(sqlite3_column_int64);
    LOOK_UP(sqlite3_column_text);
    LOOK_UP(sqlite3_column_type);
    LOOK_UP(sqlite3_errmsg);
    LOOK_UP(sqlite3_exec);
    LOOK_UP(sqlite3_finalize);
    LOOK_UP(sqlite3_free);
    LOOK_UP(sqlite3_open_v2);
    LOOK_UP(sqlite3_prepare_v2);
    LOOK_UP(sqlite3_reset);
    LOOK_UP(sqlite3_step);
    return NULL;
}

static osprey_sqlite_functions table;
static const char *failure;
static pthread_once_t once = PTHREAD_ONCE_INIT;

static void load(void) {
    failure = "libsqlite3 is not installed (Debian and Ubuntu: libsqlite3-0)";
    for (const char *const *name = sqlite_names; *name != NULL; name++) {
        void *handle = dlopen(*name, RTLD_NOW | RTLD_LOCAL);
        if (handle == NULL) continue;
        failure = fill(handle, &table);
        if (failure == NULL) return;  // kept open for the life of the process
        dlclose(handle);
    }
}

const osprey_sqlite_functions *osprey_sqlite_functions_load(const char **reason) {
    pthread_once(&once, load);
    if (failure != NULL) {
        if (reason != NULL) *reason = failure;
        return NULL;
    }
    return &table;
}
