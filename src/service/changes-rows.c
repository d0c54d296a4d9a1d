/*
 * The run_changes table (changes-int.h): this file is its only writer.  Each
 * row holds a run's start and latest tree, its counts and why a snapshot
 * lacks part of the workspace.
 */
#include <stdio.h>

#include "changes-int.h"
#include "resource.h"
#include "store.h"
#include "timeutil.h"

bool
changes_row_get(struct store *st, const char *run_id, struct changes_row *row)
{
	sqlite3_stmt *s = store_stmt(st, "SELECT session_id, start_tree, end_tree, steps,"
	    " reverted_at, additions, deletions, start_incomplete, end_incomplete"
	    " FROM run_changes WHERE run_id = ?1");
	bool found = false;

	sqlite3_bind_text(s, 1, run_id, -1, SQLITE_STATIC);
	if (sqlite3_step(s) == SQLITE_ROW) {
		snprintf(row->session_id, sizeof row->session_id, "%s", resource_text(s, 0));
		found = git_oid_fromstr(&row->start, resource_text(s, 1)) == 0 &&
		    git_oid_fromstr(&row->end, resource_text(s, 2)) == 0;
		row->steps = sqlite3_column_int(s, 3);
		row->reverted_at = sqlite3_column_int64(s, 4);
		row->additions = sqlite3_column_int(s, 5);
		row->deletions = sqlite3_column_int(s, 6);
		snprintf(row->start_why, sizeof row->start_why, "%s", resource_text(s, 7));
		snprintf(row->end_why, sizeof row->end_why, "%s", resource_text(s, 8));
	}
	sqlite3_reset(s);
	return found;
}

bool
changes_row_insert(struct store *st, const char *run_id, const char *session_id,
    const git_oid *tree, const char *why)
{
	sqlite3_stmt *s = store_stmt(st, "INSERT INTO run_changes (run_id, session_id,"
	    " start_tree, end_tree, updated_at, start_incomplete, end_incomplete)"
	    " VALUES (?1, ?2, ?3, ?3, ?4, ?5, ?5)");
	char hex[GIT_OID_HEXSZ + 1];
	int rc;

	git_oid_tostr(hex, sizeof hex, tree);
	sqlite3_bind_text(s, 1, run_id, -1, SQLITE_STATIC);
	sqlite3_bind_text(s, 2, session_id, -1, SQLITE_STATIC);
	sqlite3_bind_text(s, 3, hex, -1, SQLITE_TRANSIENT);
	sqlite3_bind_int64(s, 4, clock_wall_ms());
	sqlite3_bind_text(s, 5, why, -1, SQLITE_STATIC);
	rc = sqlite3_step(s);
	sqlite3_reset(s);
	return rc == SQLITE_DONE;
}

bool
changes_row_update(struct store *st, const char *run_id, const git_oid *tree, long files,
    long additions, long deletions, const char *why)
{
	sqlite3_stmt *s = store_stmt(st, "UPDATE run_changes SET end_tree = ?2,"
	    " steps = steps + 1, files = ?3, additions = ?4, deletions = ?5, updated_at = ?6,"
	    " end_incomplete = ?7 WHERE run_id = ?1");
	char hex[GIT_OID_HEXSZ + 1];
	int rc;

	git_oid_tostr(hex, sizeof hex, tree);
	sqlite3_bind_text(s, 1, run_id, -1, SQLITE_STATIC);
	sqlite3_bind_text(s, 2, hex, -1, SQLITE_TRANSIENT);
	sqlite3_bind_int64(s, 3, files);
	sqlite3_bind_int64(s, 4, additions);
	sqlite3_bind_int64(s, 5, deletions);
	sqlite3_bind_int64(s, 6, clock_wall_ms());
	sqlite3_bind_text(s, 7, why, -1, SQLITE_STATIC);
	rc = sqlite3_step(s);
	sqlite3_reset(s);
	return rc == SQLITE_DONE;
}

bool
changes_row_end_why(struct store *st, const char *run_id, const char *why)
{
	sqlite3_stmt *s = store_stmt(st, "UPDATE run_changes SET end_incomplete = ?2"
	    " WHERE run_id = ?1");
	int rc;

	sqlite3_bind_text(s, 1, run_id, -1, SQLITE_STATIC);
	sqlite3_bind_text(s, 2, why, -1, SQLITE_STATIC);
	rc = sqlite3_step(s);
	sqlite3_reset(s);
	return rc == SQLITE_DONE;
}

bool
changes_row_reverted(struct store *st, const char *run_id, int64_t at)
{
	sqlite3_stmt *s = store_stmt(st, "UPDATE run_changes SET reverted_at = ?2,"
	    " updated_at = ?2 WHERE run_id = ?1");
	int rc;

	sqlite3_bind_text(s, 1, run_id, -1, SQLITE_STATIC);
	sqlite3_bind_int64(s, 2, at);
	rc = sqlite3_step(s);
	sqlite3_reset(s);
	return rc == SQLITE_DONE;
}

bool
changes_session_start(struct store *st, const char *session_id, git_oid *tree,
    char why[CHANGES_WHY_MAX])
{
	sqlite3_stmt *s = store_stmt(st, "SELECT start_tree, start_incomplete FROM run_changes"
	    " WHERE session_id = ?1 ORDER BY run_id LIMIT 1");
	bool found = false;

	sqlite3_bind_text(s, 1, session_id, -1, SQLITE_STATIC);
	if (sqlite3_step(s) == SQLITE_ROW) {
		found = git_oid_fromstr(tree, resource_text(s, 0)) == 0;
		snprintf(why, CHANGES_WHY_MAX, "%s", resource_text(s, 1));
	}
	sqlite3_reset(s);
	return found;
}

bool
changes_delete_session(struct store *st, const char *session_id)
{
	return store_exec_text(st, "DELETE FROM run_changes WHERE session_id = ?1"
	    " OR run_id IN (SELECT id FROM runs WHERE session_id = ?1)", session_id);
}

