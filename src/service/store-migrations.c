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
	{ 2,
	  "CREATE TABLE sessions ("
	  "  id TEXT PRIMARY KEY,"
	  "  project_id TEXT NOT NULL,"
	  "  title TEXT NOT NULL,"
	  "  cwd TEXT NOT NULL,"
	  "  workspace TEXT NOT NULL CHECK (workspace IN ('managed', 'external')),"
	  "  config TEXT NOT NULL,"		/* {framework, provider, model, effort} */
	  "  config_revision INTEGER NOT NULL DEFAULT 1,"
	  "  config_updated_at INTEGER NOT NULL,"
	  "  created_at INTEGER NOT NULL,"
	  "  updated_at INTEGER NOT NULL"
	  ");"
	  "CREATE INDEX sessions_by_project ON sessions (project_id, id);"
	  "CREATE TABLE runs ("
	  "  id TEXT PRIMARY KEY,"
	  "  session_id TEXT NOT NULL REFERENCES sessions(id),"
	  "  project_id TEXT NOT NULL,"
	  "  status TEXT NOT NULL CHECK (status IN"
	  "    ('queued', 'running', 'completed', 'failed', 'cancelled')),"
	  "  prompt TEXT NOT NULL,"
	  "  permission_profile TEXT NOT NULL,"
	  "  turn_intent TEXT,"
	  "  config TEXT NOT NULL,"
	  "  cwd TEXT NOT NULL,"
	  "  created_at INTEGER NOT NULL,"
	  "  started_at INTEGER,"
	  "  finished_at INTEGER,"
	  "  cancel_requested_at INTEGER,"
	  "  progress_phase TEXT,"
	  "  progress_at INTEGER,"
	  "  attention TEXT,"
	  "  output TEXT,"
	  "  error_code TEXT,"
	  "  error_message TEXT,"
	  "  input_tokens INTEGER NOT NULL DEFAULT 0,"
	  "  output_tokens INTEGER NOT NULL DEFAULT 0,"
	  "  updated_at INTEGER NOT NULL"
	  ");"
	  "CREATE INDEX runs_by_session ON runs (session_id, id);"
	  "CREATE INDEX runs_by_project ON runs (project_id, id);"
	  "CREATE INDEX runs_by_status ON runs (status, id);"
	  /* visible is 0 while the saving run is not final (DESIGN section 5). */
	  "CREATE TABLE artifacts ("
	  "  id TEXT PRIMARY KEY,"
	  "  session_id TEXT NOT NULL REFERENCES sessions(id),"
	  "  run_id TEXT NOT NULL REFERENCES runs(id),"
	  "  name TEXT NOT NULL,"
	  "  path TEXT NOT NULL,"
	  "  version TEXT NOT NULL,"
	  "  size INTEGER NOT NULL,"
	  "  media_type TEXT NOT NULL,"
	  "  visible INTEGER NOT NULL DEFAULT 0,"
	  "  created_at INTEGER NOT NULL"
	  ");"
	  "CREATE INDEX artifacts_by_session ON artifacts (session_id, path, id);"
	  "CREATE INDEX artifacts_by_run ON artifacts (run_id);" },
	/* The durable history of each run (docs/events.md); seq restarts with the stream. */
	{ 3,
	  "CREATE TABLE run_events ("
	  "  id INTEGER PRIMARY KEY,"
	  "  seq INTEGER NOT NULL,"
	  "  stream_id TEXT NOT NULL,"
	  "  run_id TEXT NOT NULL,"
	  "  session_id TEXT,"
	  "  project_id TEXT,"
	  "  type TEXT NOT NULL,"
	  "  time TEXT NOT NULL,"
	  "  data TEXT NOT NULL"
	  ");"
	  "CREATE INDEX run_events_by_run ON run_events (run_id, seq);" },
	/*
	 * Plans (one current plan per session; request_id is the agent's pending
	 * plan.propose while awaiting-approval) and permission prompts.
	 */
	{ 4,
	  "CREATE TABLE plans ("
	  "  session_id TEXT PRIMARY KEY REFERENCES sessions(id),"
	  "  run_id TEXT NOT NULL REFERENCES runs(id),"
	  "  version INTEGER NOT NULL,"
	  "  revision INTEGER NOT NULL,"
	  "  status TEXT NOT NULL CHECK (status IN ('awaiting-approval', 'approved',"
	  "    'superseded', 'rejected', 'completed', 'abandoned')),"
	  "  summary TEXT NOT NULL,"
	  "  feedback TEXT,"
	  "  steps TEXT NOT NULL,"		/* [{id, title, status}] */
	  "  request_id INTEGER,"
	  "  created_at INTEGER NOT NULL,"
	  "  updated_at INTEGER NOT NULL"
	  ");"
	  "CREATE INDEX plans_by_run ON plans (run_id);"
	  "CREATE TABLE permission_prompts ("
	  "  id TEXT PRIMARY KEY,"
	  "  run_id TEXT NOT NULL REFERENCES runs(id),"
	  "  session_id TEXT NOT NULL,"
	  "  project_id TEXT NOT NULL,"
	  "  request_id INTEGER NOT NULL,"
	  "  tool TEXT NOT NULL,"
	  "  summary TEXT NOT NULL,"
	  "  input TEXT NOT NULL,"
	  "  status TEXT NOT NULL CHECK (status IN ('pending', 'allowed', 'denied', 'expired')),"
	  "  decision TEXT,"
	  "  created_at INTEGER NOT NULL,"
	  "  answered_at INTEGER"
	  ");"
	  "CREATE INDEX permission_prompts_by_status ON permission_prompts (status, id);"
	  "CREATE INDEX permission_prompts_by_run ON permission_prompts (run_id, id);"
	  "ALTER TABLE runs ADD COLUMN allow_run INTEGER NOT NULL DEFAULT 0;" },
	/* The sandbox: may the run's commands reach the network (docs/agent.md). */
	{ 5,
	  "ALTER TABLE runs ADD COLUMN network INTEGER NOT NULL DEFAULT 0;" },
	/*
	 * Connectors and credentials (docs/connectors.md).  secret is the
	 * crypto_secretbox nonce, MAC and ciphertext (secrets.h), never plain.
	 * con_web is the built-in web connector, disabled until enabled.
	 */
	{ 6,
	  "CREATE TABLE credentials ("
	  "  id TEXT PRIMARY KEY,"
	  "  name TEXT NOT NULL,"
	  "  kind TEXT NOT NULL CHECK (kind IN ('api-key', 'bearer', 'basic', 'secret')),"
	  "  description TEXT NOT NULL DEFAULT '',"
	  "  secret BLOB NOT NULL,"
	  "  created_at INTEGER NOT NULL,"
	  "  updated_at INTEGER NOT NULL"
	  ");"
	  "CREATE TABLE connectors ("
	  "  id TEXT PRIMARY KEY,"
	  "  name TEXT NOT NULL UNIQUE COLLATE NOCASE,"
	  "  kind TEXT NOT NULL CHECK (kind IN ('builtin', 'custom')),"
	  "  enabled INTEGER NOT NULL DEFAULT 0,"
	  "  transport TEXT NOT NULL,"		/* the stored transport object */
	  "  created_at INTEGER NOT NULL,"
	  "  updated_at INTEGER NOT NULL"
	  ");"
	  "CREATE TABLE connector_bindings ("
	  "  connector_id TEXT NOT NULL REFERENCES connectors(id) ON DELETE CASCADE,"
	  "  position INTEGER NOT NULL,"
	  "  credential_id TEXT NOT NULL REFERENCES credentials(id),"
	  "  target TEXT NOT NULL,"
	  "  PRIMARY KEY (connector_id, target)"
	  ");"
	  "CREATE INDEX connector_bindings_by_credential ON connector_bindings (credential_id);"
	  "INSERT INTO connectors (id, name, kind, enabled, transport, created_at, updated_at)"
	  "  VALUES ('con_web', 'web', 'builtin', 0, '{\"type\":\"builtin\"}',"
	  "  CAST((julianday('now') - 2440587.5) * 86400000 AS INTEGER),"
	  "  CAST((julianday('now') - 2440587.5) * 86400000 AS INTEGER));" },
	/*
	 * Runs that survive a restart.  checkpoint is the
	 * agent's last checkpoint (docs/host-protocol.md), resumes how often the
	 * run has been resumed after a restart (runs.resumeLimit); service_state
	 * records a clean stop (docs/events.md, the history after a crash).
	 */
	{ 7,
	  "ALTER TABLE runs ADD COLUMN checkpoint TEXT;"
	  "ALTER TABLE runs ADD COLUMN checkpoint_at INTEGER;"
	  "ALTER TABLE runs ADD COLUMN resumes INTEGER NOT NULL DEFAULT 0;"
	  /* clean_stop: the last process stopped after writing all its events */
	  "CREATE TABLE service_state (key TEXT PRIMARY KEY, value TEXT NOT NULL);" },
	/*
	 * The messages of version 2 checkpoints (checkpoints.c), one
	 * row each, appended as a run goes; runs.checkpoint holds the rest.
	 * They go when the run is final.
	 */
	{ 8,
	  "CREATE TABLE run_messages ("
	  "  run_id TEXT NOT NULL REFERENCES runs(id) ON DELETE CASCADE,"
	  "  idx INTEGER NOT NULL,"
	  "  body TEXT NOT NULL,"
	  "  PRIMARY KEY (run_id, idx)"
	  ") WITHOUT ROWID;"
	  "CREATE TRIGGER run_messages_final AFTER UPDATE OF status ON runs"
	  "  WHEN NEW.status IN ('completed', 'failed', 'cancelled')"
	  "  BEGIN DELETE FROM run_messages WHERE run_id = NEW.id; END;" },
	/* routing.reviewer: the verdict of the run's latest review (docs/agent.md "Review") */
	{ 9,
	  "ALTER TABLE runs ADD COLUMN review TEXT;" },
	/* Cost: the tokens of input_tokens read from a provider's prompt cache, and written to it */
	{ 10,
	  "ALTER TABLE runs ADD COLUMN cache_read_tokens INTEGER NOT NULL DEFAULT 0;"
	  "ALTER TABLE runs ADD COLUMN cache_write_tokens INTEGER NOT NULL DEFAULT 0;" },
	/*
	 * A run's workspace changes (changes.c): its first and latest snapshot
	 * (git tree ids in the session's store), the counts of the changes
	 * between them, and when it was reverted.
	 */
	{ 11,
	  "CREATE TABLE run_changes ("
	  "  run_id TEXT PRIMARY KEY REFERENCES runs(id) ON DELETE CASCADE,"
	  "  session_id TEXT NOT NULL,"
	  "  start_tree TEXT NOT NULL,"
	  "  end_tree TEXT NOT NULL,"
	  "  steps INTEGER NOT NULL DEFAULT 0,"
	  "  files INTEGER NOT NULL DEFAULT 0,"
	  "  additions INTEGER NOT NULL DEFAULT 0,"
	  "  deletions INTEGER NOT NULL DEFAULT 0,"
	  "  reverted_at INTEGER,"
	  "  updated_at INTEGER NOT NULL"
	  ");"
	  "CREATE INDEX run_changes_by_session ON run_changes (session_id, run_id);" },
	/* Archived projects and sessions: hidden from their lists (docs/http-api.md, Archiving) */
	{ 12,
	  "ALTER TABLE projects ADD COLUMN archived_at INTEGER;"
	  "ALTER TABLE sessions ADD COLUMN archived_at INTEGER;" },
	/* Why a run's first or latest snapshot lacks part of the workspace (changes.c) */
	{ 13,
	  "ALTER TABLE run_changes ADD COLUMN start_incomplete TEXT;"
	  "ALTER TABLE run_changes ADD COLUMN end_incomplete TEXT;" },
	/* A server's form, as the agent's permission.ask says, not as a tool's name reads */
	{ 14,
	  "ALTER TABLE permission_prompts ADD COLUMN form INTEGER NOT NULL DEFAULT 0;" },
	/*
	 * Attempts (attempts.c): a group of runs of one prompt, each in a git
	 * worktree of the group's directory on its own branch, and which one
	 * was applied.  A row is written before its worktree is made and
	 * changed after it is removed, so a start-up sweep finds every one.
	 */
	{ 15,
	  "CREATE TABLE attempt_groups ("
	  "  id TEXT PRIMARY KEY,"
	  "  project_id TEXT NOT NULL,"
	  "  prompt TEXT NOT NULL,"
	  "  cwd TEXT NOT NULL,"
	  "  top TEXT NOT NULL,"
	  "  git_dir TEXT NOT NULL,"
	  "  kind TEXT NOT NULL,"
	  "  base TEXT,"
	  "  check_command TEXT,"
	  "  status TEXT NOT NULL,"
	  "  applied_run TEXT,"
	  "  applied_at INTEGER,"
	  "  reverted_at INTEGER,"
	  "  created_at INTEGER NOT NULL,"
	  "  updated_at INTEGER NOT NULL"
	  ");"
	  "CREATE INDEX attempt_groups_by_project ON attempt_groups (project_id, id);"
	  "CREATE TABLE attempts ("
	  "  group_id TEXT NOT NULL REFERENCES attempt_groups(id) ON DELETE CASCADE,"
	  "  idx INTEGER NOT NULL,"
	  "  session_id TEXT NOT NULL,"
	  "  run_id TEXT NOT NULL,"
	  "  model TEXT,"
	  "  branch TEXT NOT NULL,"
	  "  path TEXT NOT NULL,"
	  "  cwd TEXT NOT NULL,"
	  "  state TEXT NOT NULL,"
	  "  files INTEGER,"
	  "  additions INTEGER,"
	  "  deletions INTEGER,"
	  "  check_status TEXT,"
	  "  check_exit INTEGER,"
	  "  check_output TEXT,"
	  "  PRIMARY KEY (group_id, idx)"
	  ");"
	  "CREATE INDEX attempts_by_run ON attempts (run_id);" },
	/*
	 * The MCP servers an editor gives one session (session-connectors.c):
	 * that session's runs get them beside the global connectors.  The
	 * environment and header values are sealed (secrets.c), their names not.
	 */
	{ 16,
	  "CREATE TABLE session_connectors ("
	  "  id TEXT PRIMARY KEY,"
	  "  session_id TEXT NOT NULL REFERENCES sessions(id),"
	  "  position INTEGER NOT NULL,"
	  "  name TEXT NOT NULL,"
	  "  type TEXT NOT NULL CHECK (type IN ('stdio', 'http')),"
	  "  command TEXT,"
	  "  args TEXT NOT NULL DEFAULT '[]',"
	  "  url TEXT,"
	  "  env_names TEXT NOT NULL DEFAULT '[]',"
	  "  header_names TEXT NOT NULL DEFAULT '[]',"
	  "  sealed BLOB,"
	  "  created_at INTEGER NOT NULL"
	  ");"
	  "CREATE INDEX session_connectors_by_session ON session_connectors"
	  "  (session_id, position);" },
	/*
	 * A forced delete waiting for the session's cancelled runs to end
	 * (session-delete.c): kept so that a restart finishes it.
	 */
	{ 17,
	  "ALTER TABLE sessions ADD COLUMN deleting_at INTEGER;" },
};

const int store_migrations_count =
    (int)(sizeof store_migrations / sizeof store_migrations[0]);
