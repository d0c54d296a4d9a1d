#include "resource.h"
#include "timeutil.h"

const char *const resource_frameworks[] = { "taskdeck", "claude-code", "codex", NULL };
const char *const resource_efforts[] = { "low", "medium", "high", NULL };
const char *const resource_profiles[] = { "ask", "workspace-write", "read-only",
	"full-access", NULL };

void
resource_add_time(cJSON *obj, const char *key, int64_t ms)
{
	char t[TD_TIME_LEN];

	td_time_format(ms, t);
	cJSON_AddStringToObject(obj, key, t);
}

const char *
resource_text(sqlite3_stmt *s, int i)
{
	const unsigned char *t = sqlite3_column_text(s, i);

	return t ? (const char *)t : "";
}

cJSON *
resource_json_column(sqlite3_stmt *s, int i)
{
	cJSON *j = cJSON_Parse(resource_text(s, i));

	return j ? j : cJSON_CreateObject();
}
