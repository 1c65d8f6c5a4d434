#include <sqlite3.h>

/* SQLite (Debian libsqlite3-dev; `apt-get install libsqlite3-dev`): the router's state
 * database. Linked statically (see module.modulemap). */

/* SQLITE_TRANSIENT is a macro casting -1 to a function pointer: Swift cannot import it. */
static inline sqlite3_destructor_type csqlite_transient(void) { return SQLITE_TRANSIENT; }

/* sqlite3_db_config is variadic: Swift cannot call it. */
static inline int csqlite_no_checkpoint_on_close(sqlite3 *db) {
    return sqlite3_db_config(db, SQLITE_DBCONFIG_NO_CKPT_ON_CLOSE, 1, (int *)0);
}
