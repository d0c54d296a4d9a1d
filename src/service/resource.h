/* Small helpers shared by the route-*.c files. */
#ifndef TD_SERVICE_RESOURCE_H
#define TD_SERVICE_RESOURCE_H

#include <sqlite3.h>
#include <stdbool.h>
#include <stdint.h>

#include <cjson/cJSON.h>

#include "ids.h"

/* Longest provider, model or project name, in characters. */
#define NAME_MAX_CHARS 200

/* NULL-terminated lists of the values the API accepts. */
extern const char *const resource_frameworks[];
extern const char *const resource_efforts[];
extern const char *const resource_profiles[];

/*
 * SQL for the new updated_at of a row, given the current time as parameter
 * ?N: now, or one millisecond past the old value if the clock has not moved
 * on, so that updatedAt strictly increases on each write.
 */
#define RESOURCE_NEXT_TIME(n) "MAX(?" #n ", updated_at + 1)"
/* Which rows of an archivable list (?archived=false|true|all, docs/http-api.md). */
enum resource_archived {
	RESOURCE_ARCHIVED_HIDE,	/* those not archived (the default) */
	RESOURCE_ARCHIVED_ONLY,	/* the archived ones */
	RESOURCE_ARCHIVED_ALL,
};
/* SQL true for a row that parameter ?N (an enum resource_archived) keeps. */
#define RESOURCE_ARCHIVED_WHERE(col, n) \
	"(?" #n " = 2 OR (" col " IS NOT NULL) = (?" #n " = 1))"
/* Parses the archived query parameter (NULL: hide); false when it is no such word. */
bool resource_archived_parse(const char *text, enum resource_archived *which);
/* Adds key: RFC 3339 time of ms. */
void resource_add_time(cJSON *obj, const char *key, int64_t ms);
/* Text column i, "" for NULL. */
const char *resource_text(sqlite3_stmt *s, int i);
/* Adds key: text column i, or null. */
void resource_add_text_or_null(cJSON *obj, const char *key, sqlite3_stmt *s, int i);
/* Adds key: RFC 3339 time of the ms column i, or null. */
void resource_add_time_or_null(cJSON *obj, const char *key, sqlite3_stmt *s, int i);
/*
 * The row of the query s (from store_stmt, the store locked) whose ?1 is key,
 * made by row(s), or NULL when there is none.  Resets s.
 */
cJSON *resource_load(sqlite3_stmt *s, const char *key, cJSON *(*row)(sqlite3_stmt *s));
/* Parses a JSON text column that we wrote ourselves; an empty object if it does not parse. */
cJSON *resource_json_column(sqlite3_stmt *s, int i);

/*
 * Keyset paging of a list ordered by id DESC (id in column 0), limit rows a
 * page.  resource_page_start binds the cursor (the last id of the page before,
 * NULL for the first page) to ?param and limit + 1 to ?param+1;
 * resource_page_row steps to the next row of the page and is false after the
 * last one.  When rows remain past the page, next is then the id to give as
 * the cursor of the next page, else "".  The caller resets the statement.
 */
struct resource_page {
	int limit, n;
	char next[TD_ID_MAX];
};
void resource_page_start(struct resource_page *pg, sqlite3_stmt *s, int param,
    const char *cursor, int limit);
bool resource_page_row(struct resource_page *pg, sqlite3_stmt *s);

#endif
