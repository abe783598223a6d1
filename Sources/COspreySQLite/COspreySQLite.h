// SQLite 3: the disk cache's index (WAL mode: crash-safe, readers never wait for the writer, and file locks keep
// several processes sharing one cache directory consistent).
#include <sqlite3.h>
