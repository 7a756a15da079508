// The system SQLite library (libsqlite3), with no package dependency.
#include <sqlite3.h>

// sqlite3_db_config is variadic, which Swift cannot call: a fixed-argument wrapper for the
// one option Converge sets (whether closing the connection checkpoints the WAL).
static inline int converge_sqlite3_checkpoint_on_close(sqlite3 *db, int enabled) {
    return sqlite3_db_config(db, SQLITE_DBCONFIG_NO_CKPT_ON_CLOSE, enabled ? 0 : 1, (int *)0);
}
