/*
 * The numbered schema migrations.  Append only: a released migration is
 * never edited; a change of schema is a new entry.  Times are integer
 * milliseconds since the epoch; JSON members are stored as text.
 */
#include "store.h"

const struct migration store_migrations[] = {
	{ 1,
	  "CREATE TABLE projects ("
	  "  id TEXT PRIMARY KEY,"
	  "  name TEXT NOT NULL,"
	  "  description TEXT NOT NULL DEFAULT '',"
	  "  context TEXT NOT NULL DEFAULT '',"
	  "  metadata TEXT NOT NULL DEFAULT '{}',"
	  "  created_at INTEGER NOT NULL,"
	  "  updated_at INTEGER NOT NULL"
	  ");"
	  "CREATE TABLE project_defaults ("
	  "  project_id TEXT PRIMARY KEY REFERENCES projects(id) ON DELETE CASCADE,"
	  "  defaults TEXT NOT NULL,"
	  "  updated_at INTEGER NOT NULL"
	  ");"
	  "CREATE TABLE settings ("
	  "  key TEXT PRIMARY KEY,"
	  "  value TEXT NOT NULL,"
	  "  updated_at INTEGER NOT NULL"
	  ");"
	  "INSERT INTO settings (key, value, updated_at) VALUES ('agent-routing',"
	  "  '{\"framework\":\"taskdeck\","
	  "\"reviewer\":{\"enabled\":false,\"framework\":null,\"provider\":null,\"model\":null},"
	  "\"subagent\":{\"enabled\":false,\"provider\":null,\"model\":null,\"maxConcurrent\":2}}',"
	  "  CAST((julianday('now') - 2440587.5) * 86400000 AS INTEGER));" },
};

const int store_migrations_count =
    (int)(sizeof store_migrations / sizeof store_migrations[0]);
