/* Small helpers shared by the route-*.c files. */
#ifndef TD_SERVICE_RESOURCE_H
#define TD_SERVICE_RESOURCE_H

#include <sqlite3.h>
#include <stdint.h>

#include <cjson/cJSON.h>

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
/* Adds key: RFC 3339 time of ms. */
void resource_add_time(cJSON *obj, const char *key, int64_t ms);
/* Text column i, "" for NULL. */
const char *resource_text(sqlite3_stmt *s, int i);
/* Parses a JSON text column that we wrote ourselves; an empty object if it does not parse. */
cJSON *resource_json_column(sqlite3_stmt *s, int i);

#endif
