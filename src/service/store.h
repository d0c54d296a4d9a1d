/*
 * The SQLite store: one connection, WAL, foreign keys, numbered migrations
 * and a cache of prepared statements.  Callers take the lock, run their
 * statements and release it before any network I/O.
 */
#ifndef TD_SERVICE_STORE_H
#define TD_SERVICE_STORE_H

#include <sqlite3.h>
#include <stdbool.h>

struct store;

struct migration {
	int version;
	const char *sql;
};
extern const struct migration store_migrations[];
extern const int store_migrations_count;

/* Opens (creating with mode 0600) and migrates; NULL with *err set. */
struct store *store_open(const char *path, char **err);
void store_close(struct store *st);

/* Takes the store's lock and returns the connection. */
sqlite3 *store_lock(struct store *st);
void store_unlock(struct store *st);

/*
 * A cached prepared statement for sql, which must be a string literal (the
 * cache is keyed by its address).  Only while locked.  The statement comes
 * back reset with its bindings cleared.
 */
sqlite3_stmt *store_stmt(struct store *st, const char *sql);
/*
 * Runs sql (a string literal, as for store_stmt, whose one parameter is ?1)
 * with text bound; true when it is done.  Only while locked.
 */
bool store_exec_text(struct store *st, const char *sql, const char *text);

/* Transactions, while locked.  begin is BEGIN IMMEDIATE. */
bool store_begin(struct store *st);
bool store_commit(struct store *st);
void store_rollback(struct store *st);

/*
 * A full disk: a write of this thread that failed with SQLITE_FULL,
 * ENOSPC or EDQUOT is noted, so that the request's 500 becomes 507
 * insufficient_storage (http.c clears the note before each handler).  The
 * store notes its own failures (a failed statement or commit, seen when the
 * transaction is rolled back or the lock released); other writers call
 * store_note_errno with the errno of a failed write.
 */
void store_note_errno(int e);
bool store_disk_full_seen(void);
void store_disk_full_clear(void);
/* True for ENOSPC and EDQUOT. */
bool store_errno_full(int e);

/* The schema version in the file (PRAGMA user_version). */
int store_schema_version(struct store *st);
/* PRAGMA quick_check; true when "ok".  Takes the lock itself. */
bool store_quick_check(struct store *st, char **detail);
int store_latest_version(void);

#endif
