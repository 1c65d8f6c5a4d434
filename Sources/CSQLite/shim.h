#include <sqlite3.h>

/* SQLite (Debian libsqlite3-dev; `apt-get install libsqlite3-dev`): the router's state
 * database. Linked dynamically by default (see module.modulemap). */

/* SQLITE_TRANSIENT is a macro casting -1 to a function pointer: Swift cannot import it. */
static inline sqlite3_destructor_type csqlite_transient(void) { return SQLITE_TRANSIENT; }


/* sqlite3_config is variadic: Swift cannot call it. Memory statistics off: with them on,
 * every allocation takes a global mutex to count bytes that nothing here reads. */
static inline int csqlite_configure(void) {
    int status = sqlite3_config(SQLITE_CONFIG_MEMSTATUS, 0);
    /* No bulk page-cache allocation per connection: it sets up 20 page slots, touching
     * each (a page fault apiece), where a send reads about five pages. */
    if (status == SQLITE_OK) status = sqlite3_config(SQLITE_CONFIG_PAGECACHE, (void *)0, 0, 0);
    return status;
}
