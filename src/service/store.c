#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "log.h"
#include "store.h"
#include "xalloc.h"

#define STORE_MAX_STMTS 256
#define STORE_BUSY_TIMEOUT_MS 5000

struct cached_stmt {
	const char *sql;
	sqlite3_stmt *stmt;
};

struct store {
	sqlite3 *db;
	pthread_mutex_t lock;
	struct cached_stmt stmts[STORE_MAX_STMTS];
	int nstmts;
};

int
store_latest_version(void)
{
	return store_migrations[store_migrations_count - 1].version;
}

static bool
exec(sqlite3 *db, const char *sql, char **err)
{
	char *msg = NULL;

	if (sqlite3_exec(db, sql, NULL, NULL, &msg) == SQLITE_OK)
		return true;
	if (err)
		*err = xasprintf("%s", msg ? msg : sqlite3_errmsg(db));
	sqlite3_free(msg);
	return false;
}

int
store_schema_version(struct store *st)
{
	sqlite3_stmt *s;
	int v = -1;

	if (sqlite3_prepare_v2(st->db, "PRAGMA user_version", -1, &s, NULL) != SQLITE_OK)
		return -1;
	if (sqlite3_step(s) == SQLITE_ROW)
		v = sqlite3_column_int(s, 0);
	sqlite3_finalize(s);
	return v;
}

/* Applies every migration newer than the file's version, each in its own transaction. */
static bool
migrate(struct store *st, char **err)
{
	int have = store_schema_version(st);

	if (have < 0) {
		*err = xasprintf("cannot read the schema version: %s", sqlite3_errmsg(st->db));
		return false;
	}
	if (have > store_latest_version()) {
		*err = xasprintf("the database has schema version %d, newer than this "
		    "taskdeckd knows (%d); run a newer taskdeckd", have,
		    store_latest_version());
		return false;
	}
	for (int i = 0; i < store_migrations_count; i++) {
		const struct migration *m = &store_migrations[i];
		char *setver, *why = NULL;

		if (m->version <= have)
			continue;
		setver = xasprintf("PRAGMA user_version = %d", m->version);
		if (!exec(st->db, "BEGIN IMMEDIATE", &why) ||
		    !exec(st->db, m->sql, &why) || !exec(st->db, setver, &why) ||
		    !exec(st->db, "COMMIT", &why)) {
			exec(st->db, "ROLLBACK", NULL);
			*err = xasprintf("migration %d failed: %s", m->version, why);
			free(why);
			free(setver);
			return false;
		}
		free(setver);
		log_info("database migrated to schema version %d", m->version);
	}
	return true;
}

struct store *
store_open(const char *path, char **err)
{
	struct store *st = xcalloc(1, sizeof *st);
	int fd;

	/* Create the file ourselves so that it is 0600 from the start. */
	fd = open(path, O_RDWR | O_CREAT | O_CLOEXEC | O_NOFOLLOW, 0600);
	if (fd < 0) {
		*err = xasprintf("cannot open the database %s", path);
		free(st);
		return NULL;
	}
	close(fd);
	if (sqlite3_open_v2(path, &st->db, SQLITE_OPEN_READWRITE |
	    SQLITE_OPEN_NOMUTEX, NULL) != SQLITE_OK) {
		*err = xasprintf("cannot open the database %s: %s", path,
		    st->db ? sqlite3_errmsg(st->db) : "out of memory");
		sqlite3_close(st->db);
		free(st);
		return NULL;
	}
	sqlite3_busy_timeout(st->db, STORE_BUSY_TIMEOUT_MS);
	/*
	 * locking_mode=EXCLUSIVE: only this process opens the database (the
	 * lock file sees to that), so SQLite may keep its locks and the WAL
	 * index in memory instead of taking file locks on every read.
	 * synchronous=FULL: a write acknowledged to a client is on disk, even
	 * if the machine, not just the process, goes down right after.
	 */
	if (!exec(st->db, "PRAGMA locking_mode=EXCLUSIVE; PRAGMA journal_mode=WAL;"
	    " PRAGMA synchronous=FULL;"
	    "PRAGMA foreign_keys=ON; PRAGMA secure_delete=ON;", err) ||
	    !migrate(st, err)) {
		sqlite3_close(st->db);
		free(st);
		return NULL;
	}
	pthread_mutex_init(&st->lock, NULL);
	return st;
}

void
store_close(struct store *st)
{
	if (st == NULL)
		return;
	for (int i = 0; i < st->nstmts; i++)
		sqlite3_finalize(st->stmts[i].stmt);
	if (sqlite3_close(st->db) != SQLITE_OK)
		log_warn("database did not close cleanly: %s", sqlite3_errmsg(st->db));
	pthread_mutex_destroy(&st->lock);
	free(st);
}

sqlite3 *
store_lock(struct store *st)
{
	pthread_mutex_lock(&st->lock);
	return st->db;
}

static _Thread_local bool disk_full;

bool
store_errno_full(int e)
{
	return e == ENOSPC || e == EDQUOT;
}

void
store_note_errno(int e)
{
	if (store_errno_full(e))
		disk_full = true;
}

bool
store_disk_full_seen(void)
{
	return disk_full;
}

void
store_disk_full_clear(void)
{
	disk_full = false;
}

/* Notes a full disk when the last call on db failed for want of space. */
static void
note_full(sqlite3 *db)
{
	int rc = sqlite3_extended_errcode(db);

	if ((rc & 0xff) == SQLITE_FULL ||
	    ((rc & 0xff) == SQLITE_IOERR && store_errno_full(sqlite3_system_errno(db))))
		disk_full = true;
}

void
store_unlock(struct store *st)
{
	note_full(st->db);
	pthread_mutex_unlock(&st->lock);
}

sqlite3_stmt *
store_stmt(struct store *st, const char *sql)
{
	sqlite3_stmt *s;

	for (int i = 0; i < st->nstmts; i++) {
		if (st->stmts[i].sql == sql) {
			s = st->stmts[i].stmt;
			sqlite3_reset(s);
			sqlite3_clear_bindings(s);
			return s;
		}
	}
	if (sqlite3_prepare_v3(st->db, sql, -1, SQLITE_PREPARE_PERSISTENT, &s,
	    NULL) != SQLITE_OK) {
		/* A statement of ours that does not compile is a bug. */
		log_error("cannot prepare statement: %s", sqlite3_errmsg(st->db));
		abort();
	}
	if (st->nstmts == STORE_MAX_STMTS) {
		log_error("statement cache full; raise STORE_MAX_STMTS");
		abort();
	}
	st->stmts[st->nstmts].sql = sql;
	st->stmts[st->nstmts].stmt = s;
	st->nstmts++;
	return s;
}

bool
store_exec_text(struct store *st, const char *sql, const char *text)
{
	sqlite3_stmt *s = store_stmt(st, sql);
	bool ok;

	sqlite3_bind_text(s, 1, text, -1, SQLITE_STATIC);
	ok = sqlite3_step(s) == SQLITE_DONE;
	sqlite3_reset(s);
	return ok;
}

bool
store_begin(struct store *st)
{
	char *err = NULL;

	if (exec(st->db, "BEGIN IMMEDIATE", &err))
		return true;
	log_error("cannot begin a transaction: %s", err);
	free(err);
	return false;
}

bool
store_commit(struct store *st)
{
	char *err = NULL;

	if (exec(st->db, "COMMIT", &err))
		return true;
	note_full(st->db);
	log_error("cannot commit: %s", err);
	free(err);
	store_rollback(st);
	return false;
}

void
store_rollback(struct store *st)
{
	note_full(st->db);
	exec(st->db, "ROLLBACK", NULL);
}

bool
store_quick_check(struct store *st, char **detail)
{
	sqlite3_stmt *s;
	bool ok = false;

	pthread_mutex_lock(&st->lock);
	if (sqlite3_prepare_v2(st->db, "PRAGMA quick_check", -1, &s, NULL) == SQLITE_OK) {
		if (sqlite3_step(s) == SQLITE_ROW) {
			const char *r = (const char *)sqlite3_column_text(s, 0);
			ok = r != NULL && strcmp(r, "ok") == 0;
			if (!ok && detail)
				*detail = xstrdup(r ? r : "no answer");
		}
		sqlite3_finalize(s);
	} else if (detail) {
		*detail = xstrdup(sqlite3_errmsg(st->db));
	}
	pthread_mutex_unlock(&st->lock);
	return ok;
}
