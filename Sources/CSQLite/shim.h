#include <sqlite3.h>

/* sqlite3_config is variadic, which Swift cannot call: one wrapper per setting used. */

/* Turns off SQLite's allocation statistics, which take a global mutex around every allocation
   of every connection. Only before the library is initialised (the first open); later it
   returns SQLITE_MISUSE and changes nothing. */
static inline int keychainfs_sqlite3_disable_memstatus(void) {
    return sqlite3_config(SQLITE_CONFIG_MEMSTATUS, 0);
}
