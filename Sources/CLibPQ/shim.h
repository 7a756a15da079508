// The system PostgreSQL client library (libpq, Debian's libpq-dev), with no package
// dependency: the hub's PostgreSQL storage talks to the server through it.
#include <libpq-fe.h>
