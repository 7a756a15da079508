// The system SQLite library (libsqlite3), with no package dependency.
#include <sqlite3.h>
