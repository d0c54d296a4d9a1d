/// <reference lib="esnext.disposable" />
// Type declarations of @taskdeck/sdk (written by hand; checked by tsc --noEmit in tests/js).

/** The SDK's version ("0.1.0"); the default User-Agent is "@taskdeck/sdk/" + VERSION. */
export declare const VERSION: string;
/** The default deadline of every request, in milliseconds (30,000). */
export declare const DEFAULT_REQUEST_TIMEOUT_MS: number;
/** Unconsumed events an iterator holds before it fails with event_stream_overflow (1,024). */
export declare const EVENT_BACKLOG: number;
/** No frame for this long fails an event iterator with code "timeout" (30,000 ms). */
export declare const DEFAULT_IDLE_TIMEOUT_MS: number;

/** A code of the service (docs/http-api.md), or one found on the client's side. */
export type TaskdeckErrorCode =
  | 'invalid_request' | 'invalid_cwd' | 'unauthorized' | 'forbidden' | 'not_found'
  | 'method_not_allowed' | 'stale_write' | 'stale_plan' | 'plan_not_pending' | 'permission_not_pending'
  | 'session_busy' | 'cwd_mismatch' | 'credential_in_use' | 'payload_too_large' | 'uri_too_long'
  | 'idempotency_conflict' | 'invalid_configuration' | 'rate_limited'
  | 'internal_error' | 'idempotency_unavailable' | 'service_unavailable' | 'sandbox_unavailable'
  | 'provider_unavailable'
  | 'insufficient_storage' | 'permission_denied' | 'configuration_conflict' | 'runtime_missing'
  | 'run_active' | 'revert_conflict' | 'workspace_replaced' | 'attempt_conflict' | 'attempt_group_closed'
  | 'timeout' | 'aborted' | 'unreachable' | 'invalid_response' | 'invalid_argument'
  | 'service_not_found' | 'io_error' | 'event_stream_overflow' | 'event_stream_invalid_message';

/** Typed `details` of the documented codes (docs/http-api.md); others: a plain record. */
export interface ErrorDetailsByCode {
  /** field: the path of the bad body member (e.g. "patch.model"); parameter: the bad query parameter. */
  invalid_request: { field?: string; parameter?: string };
  /** reason: not-absolute, not-found, not-a-directory, not-readable, not-writable, too-long, filesystem-root, taskdeck-directory or session-workspace. */
  invalid_cwd: { reason?: string; field?: string };
  /** resource: the kind of the unknown thing (e.g. "connector", "plan"); id: its id. */
  not_found: { resource?: string; id?: string };
  /** details.current is the resource as it is now: re-read from it, then write again. */
  stale_write: { current: SessionConfiguration | SessionDefaults };
  /** details.current is the session's plan as it is now: decide again on its version and revision. */
  stale_plan: { current: Plan };
  /** The ids of the connectors (or names of the providers) that still use the credential. */
  credential_in_use: { connectors?: string[]; providers?: string[] };
  /** field: the configuration member that is not valid (e.g. "model"). */
  invalid_configuration: { field?: string };
  /** waitForRun's deadline: the run as last read (it goes on). */
  timeout: { runId?: string; run?: Run | null; idleTimeoutMs?: number };
  /** seq: the last seq the service had issued when it cut a slow consumer; absent when the iterator's own backlog overflowed. */
  event_stream_overflow: { seq?: number };
  /** The files the run changed that differ now from its end (or from its start once reverted), and why. */
  revert_conflict: { conflicts: { path: string; reason: string }[] };
}

/** The details of one documented code; of any other code, or of a code not narrowed yet, a plain record. */
export type ErrorDetails<C extends string> =
  [C] extends [keyof ErrorDetailsByCode] ? ErrorDetailsByCode[C] : Record<string, unknown>;

/**
 * Every failure of the SDK (a subclass names its family). Its message never holds the token.
 * `e.is('stale_write')` narrows `details`.
 */
export declare class TaskdeckError<C extends TaskdeckErrorCode = TaskdeckErrorCode> extends Error {
  /** Made by the SDK; code is the service's or the client's code, message a sentence without the token. */
  constructor(code: string, message: string, extra?: {
    status?: number; requestId?: string | null; details?: Record<string, unknown>; cause?: unknown;
    headers?: Headers | null; retryAfterMs?: number | null;
  });
  /** The class's name: TaskdeckError, NotFoundError, ..., AbortError. */
  readonly name: string;
  /** The service's code, or timeout, aborted, unreachable, invalid_response, ... */
  code: C;
  /** The HTTP status; 0 when no answer arrived. */
  status: number;
  /** X-Request-Id of the answer: quote it when reporting a problem. */
  requestId: string | null;
  /** The error's details ({} when none). */
  details: ErrorDetails<C>;
  /** The answer's headers (null when no answer arrived). */
  headers: Headers | null;
  /** Retry-After of the answer in ms (null when it had none). */
  retryAfterMs: number | null;
  /** Whether the code is code; narrows details. */
  is<K extends TaskdeckErrorCode>(code: K): this is TaskdeckError<K>;
}
/** 400, 414, 422: invalid_request, invalid_cwd, uri_too_long, idempotency_conflict, invalid_configuration. */
export declare class BadRequestError extends TaskdeckError {}
/** 401 unauthorized. */
export declare class AuthenticationError extends TaskdeckError {}
/** 403 forbidden. */
export declare class PermissionDeniedError extends TaskdeckError {}
/** 404 not_found. */
export declare class NotFoundError extends TaskdeckError<'not_found'> {}
/** 409: stale_write, stale_plan, plan_not_pending, permission_not_pending, session_busy, cwd_mismatch, credential_in_use, run_active, revert_conflict, workspace_replaced. */
export declare class ConflictError extends TaskdeckError {}
/** 429: retryAfterMs says when to come back. */
export declare class RateLimitError extends TaskdeckError {}
/** 5xx: internal_error, service_unavailable, idempotency_unavailable, sandbox_unavailable, insufficient_storage. */
export declare class InternalServerError extends TaskdeckError {}
/** unreachable (no connection, or it broke) and service_not_found. */
export declare class ConnectionError extends TaskdeckError {}
/** timeout: a request's or a wait's deadline, or an event stream's idle timeout. */
export declare class TimeoutError extends ConnectionError {}
/** aborted: an AbortSignal fired or the stream was closed; name "AbortError". */
export declare class AbortError extends TaskdeckError<'aborted'> {}
/** event_stream_overflow and event_stream_invalid_message. */
export declare class EventStreamError extends TaskdeckError {}

/** What an answer said beside its data (withResponse()). */
export interface ResponseInfo {
  /** The HTTP status (200, 201, 206, ...). */
  status: number;
  /** The answer's headers. */
  headers: Headers;
  /** X-Request-Id. */
  requestId: string | null;
  /** Idempotent-Replayed: true: the answer of an earlier request with the same Idempotency-Key; nothing new was created. */
  idempotentReplayed: boolean;
  /** Retry-After in ms, or null. */
  retryAfterMs: number | null;
  /** How many times the request was sent again before this answer. */
  retries: number;
}

/** The promise of every request method; withResponse() adds what the answer said. */
export declare class ApiPromise<T> extends Promise<T> {
  /** The same answer: its data and what the answer said (status, headers, request id, replay, retries). */
  withResponse(): Promise<{ data: T; response: ResponseInfo }>;
}

/** Retries of a request that may be repeated (2): see maxRetries. */
export declare const DEFAULT_MAX_RETRIES: number;

/** Options of connectToTaskdeck(); every one may be omitted. */
export interface ConnectOptions {
  /** http://127.0.0.1:PORT; else TASKDECK_URL, else the discovery file. */
  baseUrl?: string;
  /** The bearer token; else TASKDECK_TOKEN, else the token file. */
  token?: string;
  /** Deadline of each request in ms, of any size (default 30,000), retries included; Infinity or null: none. */
  requestTimeoutMs?: number | null;
  /**
   * Retries of a request the service could not take (unreachable, 503, 429), with backoff
   * and Retry-After honoured, where repeating is safe: a GET, a request with an
   * Idempotency-Key, or one the service never acted on (default 2; 0 to 10).
   */
  maxRetries?: number;
  /** The User-Agent header of every request (default "@taskdeck/sdk/" + VERSION). */
  userAgent?: string;
}

/** The last argument of every method. */
export interface RequestOptions {
  /** Aborting it ends the call with an AbortError (code "aborted"); an aborted signal sends nothing. */
  signal?: AbortSignal;
  /**
   * This call's deadline in ms, of any size (undefined or 0: the client's requestTimeoutMs);
   * Infinity or null: none. It covers the body.
   */
  timeoutMs?: number | null;
  /** This call's retries (default: the client's maxRetries). */
  maxRetries?: number;
}

/** The options of startRun and createProject, which may carry an Idempotency-Key. */
export interface IdempotentOptions extends RequestOptions {
  /**
   * Sent as Idempotency-Key: the same key and body return the first result again
   * (withResponse(): idempotentReplayed). Without one, a retry gets a key of its own.
   */
  idempotencyKey?: string;
}

/** The options of a list method: a page's size and start, or every page. */
export interface ListOptions extends RequestOptions {
  /** Page size, 1 to 1000 (the service's default is 100). */
  limit?: number;
  /** Where to start: the nextCursor of a previous page. */
  cursor?: string;
  /** Follow the Link header through every page (one deadline for all). */
  all?: boolean;
}

/** A list answer: the items, and the cursor of the next page (null on the last one). */
export type Page<T> = T[] & { readonly nextCursor: string | null };

/** A JSON value (a project's metadata). */
export type Json = null | boolean | number | string | Json[] | { [key: string]: Json };

/** A project (GET /api/v1/projects/:id): it groups sessions and holds their shared context. */
export interface Project {
  /** "prj_" and 24 hex digits. */
  id: string;
  /** 1 to 200 characters. */
  name: string;
  /** Up to 10,000 characters ("" when none). */
  description: string;
  /** Up to 100,000 characters given to the project's runs ("" when none). */
  context: string;
  /** Free-form members, merged by a patch ({} when none). */
  metadata: Record<string, Json>;
  /** RFC 3339 UTC with milliseconds. */
  createdAt: string;
  /** RFC 3339 UTC with milliseconds; strictly increases on each write. */
  updatedAt: string;
  /** When it was archived (RFC 3339), or null: an archived project is left out of listProjects unless asked for. */
  archivedAt: string | null;
}

/** The options of listRuns: a session or a project (at least one), and a status. */
export interface RunListOptions extends ListOptions {
  /** The runs of this session ("ses_…"). */
  session?: string;
  /** The runs of this project ("prj_…"). */
  project?: string;
  /** Only the runs in this status. */
  status?: 'queued' | 'running' | 'completed' | 'failed' | 'cancelled';
}

/** The options of getRunEvents: where to start and how many a page. */
export interface RunEventsOptions extends ListOptions {
  /** The events after this one: a seq, or an event id STREAM:SEQ (the page's nextCursor is one). */
  after?: string;
}

/** The options of listProjects and listSessions: which items, archived or not. */
export interface ArchivedListOptions extends ListOptions {
  /** false (the default): those not archived; true: only the archived ones; 'all': both. */
  archived?: boolean | 'all';
}

/** The body of createProject (POST /api/v1/projects). */
export interface NewProject {
  /** 1 to 200 characters, without control or bidirectional characters. */
  name: string;
  /** Up to 10,000 characters (default ""). */
  description?: string;
  /** Up to 100,000 characters (default ""). */
  context?: string;
  /** An object of at most 1,000 members (default {}). */
  metadata?: Record<string, Json>;
}

/** A JSON merge patch of a project (PATCH /api/v1/projects/:id): an omitted member is kept. */
export type ProjectPatch = {
  /** 1 to 200 characters; never null. */
  name?: string;
  /** null clears it to "". */
  description?: string | null;
  /** null clears it to "". */
  context?: string | null;
  /** Merged into the metadata; null resets it to {}. */
  metadata?: Record<string, Json> | null;
  /** true archives the project (its sessions and runs still work), false brings it back. */
  archived?: boolean;
};

/** The body of updateSession (PATCH /api/v1/sessions/:id). */
export interface SessionPatch {
  /** true archives the session (runs started in it still work), false brings it back. */
  archived: boolean;
}

/** The agent that runs a session: taskdeck (the built-in loop), claude-code or codex. */
export type Framework = 'taskdeck' | 'claude-code' | 'codex' | 'acp' | (string & {});
/** How hard the model thinks (a cleared effort is medium). */
export type Effort = 'low' | 'medium' | 'high';
/** What a run's commands may do: ask (a prompt per action), workspace-write (the default), read-only or full-access. */
export type PermissionProfile = 'ask' | 'workspace-write' | 'read-only' | 'full-access' | (string & {});

/** A project's defaults; null: not set (the application settings decide). */
export interface SessionDefaultsValues {
  /** The framework of new sessions. */
  framework: Framework | null;
  /** A provider name of the application settings (1 to 200 characters). */
  provider: string | null;
  /** A model name (1 to 200 characters). */
  model: string | null;
  /** The effort of new sessions. */
  effort: Effort | null;
  /** The permission profile of new runs. */
  permissionProfile: PermissionProfile | null;
  /** Whether runs may reach the network (null: the service's default). */
  network: boolean | null;
}

/** A project's session defaults (GET /api/v1/projects/:id/session-defaults). */
export interface SessionDefaults {
  /** The project's id. */
  projectId: string;
  /** The compare-and-set token of updateProjectSessionDefaults (at first the project's createdAt). */
  updatedAt: string;
  /** network applies to new runs; the others to new sessions only. */
  defaults: SessionDefaultsValues;
}

/** The body of updateProjectSessionDefaults. */
export interface SessionDefaultsUpdate {
  /** The updatedAt last read; another one fails with stale_write (details.current). */
  expectedUpdatedAt: string;
  /** A merge patch of defaults: an omitted key is kept, null clears it. */
  patch: Partial<SessionDefaultsValues>;
}

/** A session (GET /api/v1/sessions/:id): a conversation of runs in one working directory. */
export interface Session {
  /** "ses_" and 24 hex digits. */
  id: string;
  /** The project's id. */
  projectId: string;
  /** The first 80 characters of the first prompt. */
  title: string;
  /** The absolute, canonical working directory of its runs. */
  cwd: string;
  /** managed: a directory taskdeck made for it; external: the run's cwd (never deleted). */
  workspace: 'managed' | 'external';
  /** RFC 3339 UTC with milliseconds. */
  createdAt: string;
  /** RFC 3339 UTC with milliseconds. */
  updatedAt: string;
  /** Its newest run, or null. */
  lastRun: { id: string; status: RunStatus } | null;
  /** When it was archived (RFC 3339), or null: an archived session is left out of listSessions unless asked for. */
  archivedAt: string | null;
  /** Present while a forced delete waits for its cancelled runs to end (deleteSession). */
  deleting?: true;
}

/** A run's configuration: omitted or null, the session's or the defaults' value. */
export interface RunConfig {
  /** taskdeck, claude-code or codex. */
  framework?: Framework | null;
  /** A provider name of the application settings. */
  provider?: string | null;
  /** 1 to 200 characters; with the replay provider, an installed transcript. */
  model?: string | null;
  /** low, medium or high. */
  effort?: Effort | null;
}

/** A session's configuration (GET /api/v1/sessions/:id/config); it applies to its next run. */
export interface SessionConfiguration {
  /** The session's id. */
  sessionId: string;
  /** 1 for a new session, one more at each change: the compare-and-set token. */
  revision: number;
  /** null: the defaults' framework. */
  framework: Framework | null;
  /** null: the default provider. */
  provider: string | null;
  /** null: the provider's defaultModel. */
  model: string | null;
  /** null: medium. */
  effort: Effort | null;
  /** RFC 3339 UTC with milliseconds. */
  updatedAt: string;
}

/** The body of updateSessionConfiguration. */
export interface SessionConfigurationUpdate {
  /** The revision last read; another one fails with stale_write (details.current). */
  expectedRevision: number;
  /** An omitted key is kept; null clears it. */
  patch: RunConfig;
}

/** Agent routing (GET /api/v1/settings/agent-routing); it applies to taskdeck runs started after a change. */
export interface AgentRouting {
  /** The default framework of new sessions; never null. */
  framework: Framework;
  /**
   * enabled: an answer that would complete a run is reviewed first, on provider and model
   * (null: the run's); framework is not used.
   */
  reviewer: { enabled: boolean; framework: Framework | null; provider: string | null; model: string | null };
  /**
   * enabled: the model gets the run_subagent tool, whose sub-tasks run on provider and model
   * (null: the run's), at most maxConcurrent (1 to 16) at once.
   */
  subagent: { enabled: boolean; provider: string | null; model: string | null; maxConcurrent: number };
  /** RFC 3339 UTC with milliseconds. */
  updatedAt: string;
}

/** A JSON merge patch of agent routing (PATCH /api/v1/settings/agent-routing): an omitted member is kept. */
export type AgentRoutingPatch = {
  /** The default framework of new sessions. */
  framework?: Framework;
  /** The members of reviewer to change. */
  reviewer?: Partial<AgentRouting['reviewer']>;
  /** The members of subagent to change. */
  subagent?: Partial<AgentRouting['subagent']>;
};

/** queued, running, then one of the final ones: completed, failed, cancelled. */
export type RunStatus = 'queued' | 'running' | 'completed' | 'failed' | 'cancelled';

/** What a running run waits for. */
export interface Attention {
  /** plan-approval: the session's plan awaits a decision (respondSessionPlan). */
  kind: 'plan-approval' | (string & {});
  /** plan-approval: the version of the plan to decide on. */
  planVersion?: number;
  /** plan-approval: the revision of the plan to decide on. */
  planRevision?: number;
  /** When the run began to wait (RFC 3339 UTC). */
  since?: string;
  /** Members of other kinds. */
  [key: string]: unknown;
}

/** A run (GET /api/v1/runs/:id): one prompt answered by an agent in a session. */
export interface Run {
  /** "run_" and 24 hex digits. */
  id: string;
  /** Its session's id. */
  sessionId: string;
  /** Its project's id. */
  projectId: string;
  /** completed, failed and cancelled are final. */
  status: RunStatus;
  /** The prompt (1 to 100,000 characters). */
  prompt: string;
  /** What its commands may do. */
  permissionProfile: PermissionProfile;
  /** plan-first: a plan is proposed and approved before anything changes. */
  turnIntent: 'plan-first' | null;
  /** The configuration it runs with. */
  config: RunConfig;
  /** The absolute working directory of its commands. */
  cwd: string;
  /** RFC 3339 UTC with milliseconds. */
  createdAt: string;
  /** When its agent started; null while queued. */
  startedAt: string | null;
  /** When it became final; null before. */
  finishedAt: string | null;
  /** When a cancel was asked for; null when none was. */
  cancelRequestedAt: string | null;
  /** The latest phase (RunPhase) and when it began; null before the first. */
  progress: { phase: string; updatedAt: string } | null;
  /** Present once the run is final. */
  output?: string | null;
  /** Present on a failed run. */
  error?: { code: RunErrorCode; message: string } | null;
  /** Present while the run is running and needs a decision. */
  attention?: Attention | null;
  /** Tokens the run used so far (its subagents' and reviews' included; inputTokens includes the cache reads and writes); null when the service has no count. */
  usage: { inputTokens: number; outputTokens: number; cacheReadTokens?: number; cacheWriteTokens?: number } | null;
  /** USD at the price of settings.json's pricing; null (or absent) without one. */
  cost?: number | null;
  /** The latest review (routing.reviewer); null when the run was not reviewed. */
  review: RunReview | null;
  /** RFC 3339 UTC with milliseconds; strictly increases on each change. */
  updatedAt: string;
  /** Whether the run's commands may reach the network. */
  network: boolean;
  /** Its workspace changes so far (its start snapshot against its latest); null until its first snapshot (an extension beyond the spec). */
  changes: ChangeCounts | null;
}

/** How many files a run changed, and the lines added and deleted in them. */
export interface ChangeCounts {
  /** Files added, modified, deleted or changed in type. */
  files: number;
  /** Lines added (0 for binary files and files not stored). */
  additions: number;
  /** Lines deleted. */
  deletions: number;
}

/** The data of run.changes: a snapshot of the run's workspace differed from the one before. */
export interface RunChangesEvent extends ChangeCounts {
  /** The run. */
  runId: string;
  /** The run's snapshot that differed (1 for the first change). */
  seq: number;
  /** Paths this step changed (at most 20). */
  paths: string[];
}

/**
 * Why a run failed (docs/http-api.md, Runs): from the agent runtime (the first ones) or the
 * service (runtime_*, service_*, resume_limit, checkpoint_invalid). The agent may report others.
 */
export type RunErrorCode =
  | 'replay_failed' | 'provider_error' | 'provider_unreachable' | 'invalid_provider_response'
  | 'replay_not_found' | 'max_turns' | 'tool_loop' | 'context_exhausted' | 'budget_exceeded'
  | 'runtime_crashed'
  | 'runtime_protocol_error' | 'runtime_missing' | 'service_stopped' | 'service_restarted'
  | 'resume_limit' | 'checkpoint_invalid' | (string & {});

/** The usage of the runs of a session or a project, added up and by provider and model. */
export interface Usage {
  /** How many runs are added up. */
  runs: number;
  /** Input tokens, the cache reads and writes included. */
  inputTokens: number;
  /** Output tokens. */
  outputTokens: number;
  /** Input tokens read from the provider's prompt cache. */
  cacheReadTokens: number;
  /** Input tokens written to the provider's prompt cache. */
  cacheWriteTokens: number;
  /** USD; null unless every part with tokens has a price. */
  cost: number | null;
  /** The same counts for each provider and model the runs used (provider or model null: not recorded). */
  byModel: Array<{ provider: string | null; model: string | null; runs: number; inputTokens: number;
    outputTokens: number; cacheReadTokens: number; cacheWriteTokens: number; cost: number | null }>;
}

/** One file a run changed (an extension beyond the spec). */
export interface RunChangedFile {
  /** Relative to the workspace. */
  path: string;
  /** What happened to it. */
  status: 'added' | 'modified' | 'deleted' | 'type-changed';
  /** Lines added (0 for binary and too large files). */
  additions: number;
  /** Lines removed. */
  deletions: number;
  /** A binary file: its diff only says that it differs. */
  binary: boolean;
  /** Over the snapshot's size limit: recorded by size and hash only. */
  tooLarge: boolean;
  /** "100644", "100755" or "120000" (a link); null when the file did not exist. */
  oldMode: string | null;
  /** The mode after the run; null when the file is gone. */
  newMode: string | null;
}

/** What getRunChanges answers (an extension beyond the spec). */
export interface RunChanges {
  /** The run. */
  runId: string;
  /** What it is compared with: runId null for a start (the run's or, with from "start", the session's). */
  from: { runId: string | null };
  /** The run has not ended: more changes may come. */
  live: boolean;
  /** When the run was reverted; null when it was not. */
  revertedAt: string | null;
  /**
   * Files the run changed may be missing from files: a snapshot left part of the
   * workspace out (over 500,000 entries, deeper than 127 levels, names not UTF-8,
   * unreadable entries), none was taken, the latest failed, or the agent started
   * before its start snapshot was read.
   */
  incomplete: boolean;
  /** Why incomplete is true, a sentence; null when it is false. */
  incompleteReason: string | null;
  /** The page's changed files, sorted by path (limit at most, and at most 1 MiB of paths). */
  files: RunChangedFile[];
  /** The counts of every file, not of the page only. */
  totals: ChangeCounts;
  /** The cursor of the next page of files (getRunChanges' cursor option); null on the last. */
  nextCursor: string | null;
}

/** Which changes getRunChanges and getRunDiff compare (an extension beyond the spec). */
export interface RunChangesOptions extends RequestOptions {
  /** "start": since the session's start; a run id: since the end of that run of the session. Default: the run's own start. */
  from?: string;
}

/** Which page of the changed files getRunChanges reads. */
export interface RunChangesPageOptions extends RunChangesOptions {
  /** The nextCursor of the page before; default the first page. */
  cursor?: string;
  /** The most files of the page, 1 to 1000 (default 1000). */
  limit?: number;
}

/** Which diff getRunDiff reads. */
export interface RunDiffOptions extends RunChangesOptions {
  /** One file (relative to the workspace); default: every file the run changed. */
  path?: string;
}

/** What getRunDiff resolves with. */
export interface RunDiff {
  /** A git-style unified diff. */
  text: string;
  /** The service cut the diff of every file at 8 MiB. */
  truncated: boolean;
}

/**
 * One MCP server a session gets as its own connector (createSession, setSessionConnectors):
 * the Agent Client Protocol's McpServer, stdio or Streamable HTTP. The env and header values
 * are secrets: the service seals them and never shows them.
 */
export type SessionConnectorRequest =
  | { name: string; type?: 'stdio'; command: string; args?: string[]; env?: { name: string; value: string }[] }
  | { name: string; type: 'http'; url: string; headers?: { name: string; value: string }[] };

/** A session's own MCP server as the service shows it: the names of its values, never the values. */
export interface SessionConnector {
  /** scn_ and 24 hex digits; a new id each time the session's servers are set. */
  id: string;
  /** The editor's name of the server; its tools are NAME__TOOL. */
  name: string;
  /** The transport. */
  type: 'stdio' | 'http';
  /** stdio: the command. */
  command?: string;
  /** stdio: the command's arguments. */
  args?: string[];
  /** stdio: the names of its environment variables. */
  env?: { name: string }[];
  /** http: the server's URL. */
  url?: string;
  /** http: the names of its headers. */
  headers?: { name: string }[];
  /** When the session's servers were last set (RFC 3339). */
  createdAt: string;
}

/** createSession's request: a session before its first run (an extension beyond the spec). */
export interface NewSession {
  /** The project's id. */
  project: string;
  /** 1 to 80 characters (default "New session"). */
  title?: string;
  /** An absolute directory the service can read and write; default: a managed workspace. */
  cwd?: string;
  /** As startRun's config for a new session: over the project defaults and the application's. */
  config?: RunConfig;
  /** At most 16 MCP servers of the session's own, for its runs only. */
  connectors?: SessionConnectorRequest[];
}

/** deleteSession's options. */
export interface DeleteSessionOptions extends RequestOptions {
  /** Cancel the session's queued and running runs first (default false: ConflictError session_busy); when they have not all ended at once the answer is a SessionDeleting and the service deletes the session when the last one ends. */
  force?: boolean;
}

/** What deleteSession answers (an extension beyond the spec). */
export interface SessionDeleted {
  /** The session deleted. */
  id: string;
  /** The runs deleted with it. */
  runs: number;
  /** The directories removed: the session's changes store, its managed workspace. */
  removed: string[];
  /** The external workspace (a cwd the caller gave), never removed. */
  kept: string[];
}

/** What deleteSession answers with force while cancelled runs are still ending (HTTP 202): the session goes when the last of them ends, and no new run is admitted into it meanwhile. */
export interface SessionDeleting {
  /** The session being deleted. */
  id: string;
  /** Always true: the delete goes on. */
  deleting: true;
  /** The runs force cancelled. */
  cancelled: string[];
}

/** revertRun's options. */
export interface RevertOptions extends RequestOptions {
  /** Overwrite files changed since the run (default false: ConflictError revert_conflict). */
  force?: boolean;
}

/** What revertRun answers. */
export interface RevertResult {
  /** The run. */
  runId: string;
  /** The files put back as they were before the run. */
  reverted: string[];
  /** When. */
  revertedAt: string;
  /** The run's snapshots lack part of the workspace: files the run changed there were neither compared nor put back. */
  incomplete: boolean;
  /** Why incomplete is true, a sentence; null when it is false. */
  incompleteReason: string | null;
}

/** createAttempts' request: one prompt run N times, each in a git worktree of cwd. */
export interface AttemptRequest {
  /** The project the sessions belong to. */
  project: string;
  /** The prompt every attempt runs. */
  prompt: string;
  /** How many runs, 1 to 8. */
  attempts: number;
  /** Spread over the attempts in turn. */
  models?: string[] | null;
  /** A shell command run in each worktree after its attempt, in the sandbox. */
  check?: string | null;
  /** The directory the attempts start from and the apply changes (absolute). */
  cwd: string;
  /** The sessions' configuration (models override its model). */
  config?: RunConfig | null;
  /** The runs' permission profile (default: the project's, the application's). */
  permissionProfile?: PermissionProfile | null;
  /** Network for the runs' commands (default: the project's, the application's). */
  network?: boolean | null;
}

/** One attempt of a group. */
export interface Attempt {
  /** 1 to N. */
  index: number;
  /** Its session (an attempt is a session). */
  sessionId: string;
  /** Its run. */
  runId: string;
  /** The model it runs, or null for the configuration's. */
  model: string | null;
  /** taskdeck/attempt-<group>-<index>. */
  branch: string;
  /** Where its run works: its worktree under the service's workspaces. */
  cwd: string;
  /** removed: its worktree and branch are gone. */
  state: 'preparing' | 'active' | 'removed';
  /** What it changed against the start, once its run ended. */
  changes: { files: number; additions: number; deletions: number } | null;
  /** The check command's result. */
  check: { status: 'none' | 'running' | 'passed' | 'failed' | 'error' | null; exitCode: number | null; output: string | null };
  /** Its run as getRun shows it. */
  run: Run | null;
}

/** A group of attempts (docs/http-api.md, Attempts); also the data of attempts.* events. */
export interface AttemptGroup {
  /** atg_... */
  id: string;
  /** The project. */
  projectId: string;
  /** The prompt. */
  prompt: string;
  /** The user's directory: where the apply goes. */
  cwd: string;
  /** copy: cwd is outside git. */
  kind: 'git' | 'copy';
  /** The commit the attempts start from: HEAD plus the uncommitted and untracked work. */
  base: string | null;
  /** The check command, or null. */
  check: string | null;
  /** applied: one attempt's changes are in cwd. */
  status: 'preparing' | 'active' | 'applied' | 'discarded';
  /** The run applied, or null. */
  appliedRun: string | null;
  /** When, or null. */
  appliedAt: string | null;
  /** When the apply was taken back, or null. */
  revertedAt: string | null;
  /** When the group was made. */
  createdAt: string;
  /** Its last change. */
  updatedAt: string;
  /** Its attempts, by index. */
  attempts: Attempt[];
}

/** applyAttempt's options. */
export interface ApplyOptions extends RequestOptions {
  /** Keep the group's worktrees and branches (default false). */
  keep?: boolean;
}

/** A reviewer's verdict on the run's answer (routing.reviewer); also the data of run.review. */
export interface RunReview {
  /** approved, changes_requested (the run is sent back once) or error (the review failed). */
  verdict: 'approved' | 'changes_requested' | 'error';
  /** What the reviewer asks to change ([] when none). */
  findings: string[];
  /** The reviewer's text, or why the review failed. */
  summary: string;
  /** 1, or 2 after the round the first review asked for. */
  round: number;
}

/** The body of startRun (POST /api/v1/runs). */
export interface RunRequest {
  /** A project id (not_found when unknown). */
  project: string;
  /** 1 to 100,000 characters. */
  prompt: string;
  /** Default: the project's default, else workspace-write. */
  permissionProfile?: PermissionProfile;
  /** plan-first: propose a plan and wait for a decision before changing anything. */
  turnIntent?: 'plan-first' | null;
  /**
   * An absolute directory the service can read and write (else invalid_cwd); with sessionId
   * it must be the session's (else cwd_mismatch). Omitted: a new managed workspace.
   */
  cwd?: string;
  /** Continue this session (session_busy while it has a queued or running run). */
  sessionId?: string;
  /** A new session's configuration; not allowed with sessionId. */
  config?: RunConfig;
  /** Let the run's commands reach the network (default: the project's defaults, else false). */
  network?: boolean;
}

/** The options of waitForRun. */
export interface WaitOptions {
  /**
   * The whole wait, polling requests and delays together; reaching it rejects with "timeout"
   * and never cancels the run. Undefined, 0, Infinity or null: no deadline.
   */
  timeoutMs?: number | null;
  /** Aborting it ends the wait with an AbortError (the run goes on). */
  signal?: AbortSignal;
  /** Return as soon as the run is running with an attention object (plan-approval). */
  returnOnAttention?: boolean;
}

/** One step of a plan. */
export interface PlanStep {
  /** The step's id within the plan (e.g. "s1"). */
  id: string;
  /** What the step does. */
  title: string;
  /** pending, in-progress, completed or failed. */
  status: string;
}

/** A session's plan (GET /api/v1/sessions/:id/plan), proposed by a plan-first run. */
export interface Plan {
  /** The session's id. */
  sessionId: string;
  /** The id of the run that proposed it. */
  runId: string;
  /** Counts proposals in the session (1, 2, ...). */
  version: number;
  /** Counts every change of the session's plan state; never goes back. */
  revision: number;
  /**
   * awaiting-approval (a decision is pending), approved (the run executes it), superseded
   * (revised; a new version follows), rejected, completed, abandoned (the run ended otherwise).
   */
  status: 'awaiting-approval' | 'approved' | 'superseded' | 'rejected' | 'completed' | 'abandoned' | (string & {});
  /** The agent's summary of the plan. */
  summary: string;
  /** The last revise feedback, or null. */
  feedback: string | null;
  /** The steps, in order. */
  steps: PlanStep[];
  /** RFC 3339 UTC with milliseconds. */
  createdAt: string;
  /** RFC 3339 UTC with milliseconds. */
  updatedAt: string;
}

/** The body of respondSessionPlan (POST /api/v1/sessions/:id/plan/respond). */
export interface PlanResponse {
  /** approve: the run executes it; revise: the agent proposes a new version; reject. */
  decision: 'approve' | 'revise' | 'reject';
  /** The plan's current version (else stale_plan). */
  version: number;
  /** The plan's current revision (else stale_plan). */
  revision: number;
  /** Required by revise: 1 to 10,000 characters. */
  feedback?: string;
}

/** A file a run saved (GET /api/v1/artifacts/:id); its bytes are downloadArtifact's. */
export interface Artifact {
  /** "art_" and 24 hex digits. */
  id: string;
  /** The file's name (e.g. "report.md"). */
  name: string;
  /** Its path relative to the workspace (e.g. "out/report.md"). */
  path: string;
  /** "sha256:" and the content's hash; also the content's ETag. */
  version: string;
  /** In bytes. */
  size: number;
  /** The Content-Type of the content (e.g. "text/markdown"). */
  mediaType: string;
  /** The session's id. */
  sessionId: string;
  /** The id of the run that saved it. */
  runId: string;
  /** RFC 3339 UTC with milliseconds. */
  createdAt: string;
}

/** The options of listArtifacts. */
export interface ArtifactListOptions extends ListOptions {
  /** Every version of each path, not only the newest. */
  allVersions?: boolean;
}

/** The options of downloadArtifact. */
export interface DownloadOptions extends RequestOptions {
  /** Resume: sends Range: bytes=OFFSET- (the answer is 206, or 200 with the whole body). */
  offset?: number;
  /** With offset: the ETag (artifact version) the first part had; another version sends the whole body. */
  ifRange?: string;
}

/** A run's phase: what its agent is doing (docs/host-protocol.md). */
export type RunPhase =
  | 'starting' | 'thinking' | 'tool' | 'writing' | 'reviewing' | 'retrying' | 'compacting'
  | 'finishing' | 'resumed' | (string & {});

/** Why the model is asked again (phase retrying). */
export type RetryReason = 'rate_limited' | 'overloaded' | 'server_error' | 'timeout' | 'conflict' | 'connection';

/** The data of run.progress. */
export interface RunProgress {
  /** What the agent is doing now. */
  phase: RunPhase;
  /** The agent's words on it, or null. */
  message: string | null;
  /** true: a keep-alive every 10 s before the first output; false: a phase change. */
  liveness: boolean;
  /** retrying: 1 for the first retry (attempt, maxRetries, reason and delayMs come together). */
  attempt?: number;
  /** retrying: the most retries of a turn. */
  maxRetries?: number;
  /** retrying: what failed. */
  reason?: RetryReason;
  /** retrying: the wait before the model is asked again. */
  delayMs?: number;
}

/** The payload (`data`) of each event type (docs/events.md, Event types). */
export interface EventPayloads {
  /** A run was admitted: the run as getRun shows it then (absent only when the store could not read it). */
  'run.queued': { status: 'queued'; run?: Run };
  /** Its agent was started. */
  'run.started': { status: RunStatus };
  /**
   * A phase change (liveness false), or every 10 s before the first output (liveness true);
   * each wait before a retry (phase retrying, with attempt, maxRetries, reason, delayMs).
   */
  'run.progress': RunProgress;
  /** Visible assistant text. */
  'run.output': { delta: string };
  /**
   * A tool call started, completed, failed or was denied; subagent: the callId of the
   * run_subagent call whose child loop made it.
   */
  'run.tool': { callId: string | null; name: string; status: string; summary: string | null; subagent?: string };
  /** A snapshot of the run's workspace differed from the one before: the run's changes so far. */
  'run.changes': RunChangesEvent;
  /** A reviewer's verdict on the run's answer; the run's review is the latest. */
  'run.review': RunReview;
  /** A permission prompt. */
  'run.permission': { promptId: string; tool?: string; summary?: string; status?: string };
  /** The run needs (or, null, no longer needs) a decision. */
  'run.attention': { attention: Attention | null };
  /** The session's plan was proposed, decided on or a step changed: the plan as it is now. */
  'plan.updated': Plan;
  /** A save became visible (when its run finalized). */
  'artifact.saved': Artifact;
  /** The run is final. */
  'run.finished': { status: 'completed' | 'failed' | 'cancelled'; error?: { code: string; message: string } };
  /** Events may be missing from this run's history (an unclean stop, or a full disk). */
  'run.history-gap':
    | { reason: string; maxMs: number }
    | { reason: string; events: number; firstSeq: number; lastSeq: number };
  /** A session was created or changed: the session as it is now. */
  'session.updated': Session;
  /** A project was created or changed: the project as it is now. */
  'project.updated': Project;
  /** Never the transport or a secret. */
  'connector.updated': {
    id: string; name: string; kind: 'builtin' | 'custom'; enabled: boolean;
    action: 'created' | 'updated' | 'enabled' | 'disabled' | 'removed';
  };
  /** The session was deleted with its runs (an extension beyond the spec); a stream filtered to it ends after this event. */
  'session.deleted': { id: string; projectId: string };
  /** A group of attempts was made: the group. */
  'attempts.created': AttemptGroup;
  /** An attempt was measured or checked, or the group applied, reverted or discarded: the group. */
  'attempts.updated': AttemptGroup;
  /** Never the secret. */
  'credential.updated': {
    id: string; name: string; kind: CredentialKind; action: 'created' | 'updated' | 'rotated' | 'deleted';
  };
  /**
   * The client must re-read what it shows over HTTP. Its seq is the last one issued; its ids
   * are those of the stream's filter. (slow-consumer never reaches you: the iterator fails
   * with event_stream_overflow instead.)
   */
  'stream.resync-required': { reason: 'stream-changed' | 'expired' | 'slow-consumer' };
}

/** The type of an event yielded to users (run.*, plan.updated, ..., stream.resync-required). */
export type TaskdeckEventType = keyof EventPayloads;

/** One event of one type: `seq`, `type`, `time`, the ids it concerns (else null) and its `data`. */
export interface TaskdeckEventOf<T extends TaskdeckEventType> {
  /** One counter of the service process, strictly increasing from 1 (a filtered stream has gaps). */
  seq: number;
  /** The event's type. */
  type: T;
  /** When it was sent: RFC 3339 UTC with milliseconds. */
  time: string;
  /** The project it concerns, or null. */
  projectId: string | null;
  /** The session it concerns, or null. */
  sessionId: string | null;
  /** The run it concerns, or null. */
  runId: string | null;
  /** The payload of its type. */
  data: EventPayloads[T];
}

/**
 * Every event the iterator yields, discriminated by `type`:
 * `if (e.type === 'run.finished') e.data.status`.
 */
export type TaskdeckEvent = { [T in TaskdeckEventType]: TaskdeckEventOf<T> }[TaskdeckEventType];

/** An event of a run's durable history (getRunEvents): an event and the stream it was published in. */
export type RunHistoryEvent = TaskdeckEvent & { streamId?: string };

/** Which events the stream keeps: those of these ids (all given must match); none: every event. */
export interface EventFilter {
  /** Only events of this project. */
  projectId?: string;
  /** Only events of this session. */
  sessionId?: string;
  /** Only events of this run. */
  runId?: string;
}

/** The options of events(). */
export interface EventOptions {
  /** Aborting it ends the stream: a waiting next() rejects with an AbortError. */
  signal?: AbortSignal;
  /** Deadline of connecting, until stream.hello (default: the client's requestTimeoutMs; Infinity or null: none). */
  timeoutMs?: number | null;
  /** No event or heartbeat for this long fails the iterator with "timeout" (default 30,000; Infinity or null: never). */
  idleTimeoutMs?: number | null;
  /** Resume after this event ("<streamId>:<seq>"), e.g. the lastEventId of an earlier iterator. */
  lastEventId?: string;
  /** Reconnect with Last-Event-ID when the connection drops (default true). */
  reconnect?: boolean;
}

/** The iterator of events(): `for await (const e of stream)`; breaking out of the loop closes it. */
export interface EventStream extends AsyncIterableIterator<TaskdeckEvent> {
  /** Resolves on stream.hello; rejects when the connection fails before it. */
  readonly ready: Promise<void>;
  /** "<streamId>:<seq>" of the last event yielded. */
  readonly lastEventId: string | null;
  /** Ends the stream; every waiting next() resolves as done. */
  close(): void;
  /** close(), for `await using events = td.events(...)`. */
  [Symbol.asyncDispose](): Promise<void>;
  /** close(); what `break` in a `for await` calls. Resolves as done. */
  return(): Promise<IteratorResult<TaskdeckEvent, undefined>>;
}

/** The doctor's report (GET /api/v1/doctor); it never holds the token. */
export interface ReadinessReport {
  /** false when any check fails. */
  ready: boolean;
  /** The service's version. */
  version: string;
  /** Each check (data-directory, database, token-file, sandbox, runtime-*, provider, disk-space, ...); info is a fact (an optional CLI that is absent), a warn or fail one has nextAction. */
  checks: { id: string; status: 'ok' | 'info' | 'warn' | 'fail'; message: string; nextAction?: string }[];
  /** The nextAction of every check that warns or fails. */
  nextActions: string[];
}

/** A model a provider offers (GET /api/v1/providers/{name}/models). */
export interface Model {
  /** What `config.model` (and the CLI's --model) takes. */
  id: string;
  /** The provider's name for people (Anthropic's display_name). */
  displayName?: string;
  /** The context window in tokens: settings.json's contextWindow, else what the provider says (vLLM's max_model_len, Anthropic's max_input_tokens). */
  contextWindow?: number;
  /** The provider's defaultModel in settings.json. */
  default?: boolean;
  /** settings.json names it (providers.<name>.models.<id>). */
  configured?: boolean;
}

/** The models of a provider, as it lists them, with those settings.json names. */
export interface ModelList {
  /** The provider's name in settings.json ("default" resolved). */
  provider: string;
  /** Its kind: openai, anthropic or replay. */
  kind: string;
  /** Where the list comes from, for a person ("GET {baseUrl}/models", "GET /api/tags (Ollama)", ...). */
  source: string;
  /** The provider's models, then the ones settings.json names that it did not list. */
  models: Model[];
}

/** A framework's runtime (GET /api/v1/runtimes lists taskdeck, claude-code, codex, acp in that order). */
export interface Runtime {
  /** The framework it runs. */
  framework: Framework;
  /** ready; missing (not found, no path); broken (not executable, or no version); outdated (below minVersion). */
  status: 'ready' | 'missing' | 'broken' | 'outdated' | (string & {});
  /** The first dotted number its --version prints; absent when none was read. */
  version?: string;
  /** managed: the taskdeck-agent the service runs; external: a CLI (claude, codex). */
  source: 'managed' | 'external';
  /** Where it was found; absent when missing. */
  path?: string;
  /** How the runtime was found (managed copy, build tree, PATH, a setting). */
  foundBy?: string;
  /** Whether the managed runtime's data files are all there. */
  dataComplete?: boolean;
  /** The oldest version taskdeck supports (external runtimes). */
  minVersion?: string;
  /** A sentence on its state. */
  message: string;
}

/** One step of a bootstrap: its result and, by step, what it found. */
export interface BootstrapStep {
  /** Whether the step is done. */
  ok: boolean;
  /** A sentence on it. */
  message: string;
  /** settings: the file's path. */
  path?: string;
  /** provider: the default provider's name. */
  name?: string;
  /** runtime: the managed runtime, as listRuntimes shows it. */
  runtime?: Runtime;
}

/** POST /api/v1/bootstrap: every step's result; ok false with error when a step itself failed. */
export interface BootstrapResult {
  /** true when every step is (status) or the repair succeeded (runtime). */
  ok: boolean;
  /** status: token, settings, dataDirectories, runtime and provider. */
  steps?: Record<string, BootstrapStep>;
  /** status: what to do next. */
  nextActions?: string[];
  /** runtime: whether the repair changed anything. */
  changed?: boolean;
  /** runtime: what the repair did (`wrote-default-settings`, `made-executable`, `restored-agent`, `restored-transcripts`), also when it failed. */
  actions?: string[];
  /** runtime: the managed runtime after the repair. */
  runtime?: Runtime;
  /** When ok is false because a step could not be done. */
  error?: { code: 'runtime_missing' | 'configuration_conflict' | 'permission_denied' | (string & {}); message: string };
}

/** POST /api/v1/cli/install: where the launcher went; ok false with error when it could not. */
export interface CliInstallResult {
  /** Whether the launcher is in place. */
  ok: boolean;
  /** When ok is false: configuration_conflict (another file is there, left alone) or permission_denied. */
  error?: { code: 'configuration_conflict' | 'permission_denied' | (string & {}); message: string };
  /** path, directory, target, changed, onPath and nextAction (docs/http-api.md). */
  [key: string]: unknown;
}

/** How the service reaches a connector: a builtin one (con_web) is served by the service itself. */
export type ConnectorTransport =
  | {
      type: 'stdio';
      command: string;
      args?: string[];
      env?: Record<string, string>;
      /** Extra paths the server may read (or write, with write: true) in its sandbox. */
      paths?: { path: string; write?: boolean }[];
    }
  | { type: 'http'; url: string; headers?: Record<string, string> }
  | { type: 'builtin' };

/** Puts a credential's secret into a connector's environment variable or header when it starts. */
export interface CredentialBinding {
  /** An existing credential's id. */
  credentialId: string;
  /** env:NAME (stdio) or header:NAME (http). */
  target: string;
}

/** An MCP server the agent can use (GET /api/v1/connectors/:id); never holds a secret. */
export interface Connector {
  /** "con_" and 24 hex digits; the built-in web connector is con_web. */
  id: string;
  /** Its name. */
  name: string;
  /** builtin: ships with taskdeck; custom: the user's own. */
  kind: 'builtin' | 'custom';
  /** Whether runs get its tools (setConnectorEnabled). */
  enabled: boolean;
  /** How it is reached; every member present (args [], env {}, headers {} when none). */
  transport: ConnectorTransport;
  /** The credentials put into it ([] when none). */
  credentialBindings: CredentialBinding[];
  /** RFC 3339 UTC with milliseconds. */
  createdAt: string;
  /** RFC 3339 UTC with milliseconds. */
  updatedAt: string;
}

/** The body of addConnector (POST /api/v1/connectors). */
export interface NewConnector {
  /** Its name. */
  name: string;
  /** stdio or http. */
  transport: ConnectorTransport;
  /** At most 16; env: targets for stdio, header: for http. */
  credentialBindings?: CredentialBinding[];
  /** Default false: a new connector is disabled until enabled. */
  enabled?: boolean;
}

/** The body of updateConnector (PATCH /api/v1/connectors/:id). */
export interface ConnectorUpdate {
  /** Required by the service; credential bindings omitted are kept. */
  transport: ConnectorTransport;
  /** A new name; omitted: kept. */
  name?: string;
  /** Replace the bindings; omitted: kept (they must fit the new transport). */
  credentialBindings?: CredentialBinding[];
}

/** What testConnector found. */
export interface ConnectorTestResult {
  /** Whether the server answered and listed its tools. */
  success: boolean;
  /** How many tools it lists (0 when it failed). */
  toolCount: number;
  /** A sentence on the result, or why it failed. */
  message: string;
}

/**
 * A client registered beforehand (its secret, or its PEM private key for ES256-signed
 * assertions), the scope of a step-up, and for enterprise-managed authorization the
 * user's ID token and the identity provider's token endpoint; all optional.
 */
export interface ConnectorLogin {
  /** The OAuth client id of a client registered beforehand. */
  clientId?: string;
  /** Its secret (a confidential or machine client). */
  clientSecret?: string;
  /** Its PEM P-256 private key: token requests carry an ES256-signed client assertion (private_key_jwt). */
  clientKey?: string;
  /** The scope to ask for (a step-up). */
  scope?: string;
  /** Enterprise-managed authorization: the user's ID token, exchanged at the identity provider. */
  idToken?: string;
  /** The identity provider's token endpoint, where the ID token is exchanged (RFC 8693). */
  idpTokenEndpoint?: string;
  /** The client id at the identity provider, when it differs from clientId. */
  idpClientId?: string;
  /**
   * Workload identity federation: the absolute path of the file where the platform puts
   * the workload's identity token (a JWT), read at the sign-in and at each renewal.
   */
  workloadTokenFile?: string;
}

/**
 * Open authorizationUrl in a browser; the service receives the answer at redirectUri.
 * A machine client (client credentials) is signed in at once: signedIn, no URL.
 */
export type ConnectorLoginResult =
  | { authorizationUrl: string; redirectUri: string; signedIn?: never; message?: never }
  | { signedIn: true; message: string; authorizationUrl?: never; redirectUri?: never };

/** What a header: binding sends: bearer "Bearer <secret>", basic "Basic <base64>", api-key and secret the secret as it is. */
export type CredentialKind = 'api-key' | 'bearer' | 'basic' | 'secret' | (string & {});

/** A stored secret's metadata (GET /api/v1/credentials/:id); the secret is never returned. */
export interface Credential {
  /** "cred_" and 24 hex digits. */
  id: string;
  /** 1 to 200 characters. */
  name: string;
  /** How bindings send it. */
  kind: CredentialKind;
  /** Up to 2,000 characters ("" when none). */
  description: string;
  /** RFC 3339 UTC with milliseconds. */
  createdAt: string;
  /** RFC 3339 UTC with milliseconds. */
  updatedAt: string;
}

/** The body of createCredential (POST /api/v1/credentials). */
export interface NewCredential {
  /** 1 to 200 characters. */
  name: string;
  /** Default "secret". */
  kind?: CredentialKind;
  /** 1 to 16,384 bytes; one line, except for kind secret (basic: "user:password"). */
  secret: string;
  /** Up to 2,000 characters. */
  description?: string;
}

/** The body of updateCredential (PATCH /api/v1/credentials/:id): an omitted member is kept. */
export interface CredentialPatch {
  /** 1 to 200 characters. */
  name?: string;
  /** How bindings send it. */
  kind?: CredentialKind;
  /** Up to 2,000 characters. */
  description?: string;
  /** A new value (a rotation): runs started later get it. */
  secret?: string;
}

/** List methods that paginate() can follow. */
export interface ListMethods {
  /** paginate('listProjects', options?). */
  listProjects: [options?: ArchivedListOptions];
  /** paginate('listSessions', projectId, options?). */
  listSessions: [projectId: string, options?: ArchivedListOptions];
  /** paginate('listArtifacts', sessionId, options?). */
  listArtifacts: [sessionId: string, options?: ArtifactListOptions];
  /** paginate('listRuntimes', options?). */
  listRuntimes: [options?: ListOptions];
  /** paginate('listConnectors', options?). */
  listConnectors: [options?: ListOptions];
  /** paginate('listCredentials', options?). */
  listCredentials: [options?: ListOptions];
  /** paginate('listRuns', options). */
  listRuns: [options: RunListOptions];
  /** paginate('getRunEvents', runId, options?). */
  getRunEvents: [runId: string, options?: RunEventsOptions];
}

/** The item type of each list method. */
export interface ListItems {
  /** A project. */
  listProjects: Project;
  /** A session. */
  listSessions: Session;
  /** An artifact. */
  listArtifacts: Artifact;
  /** A runtime. */
  listRuntimes: Runtime;
  /** A connector. */
  listConnectors: Connector;
  /** A credential. */
  listCredentials: Credential;
  /** A run. */
  listRuns: Run;
  /** An event of a run's history. */
  getRunEvents: RunHistoryEvent;
}

/** A client of one taskdeck service: every method sends the bearer token; get one from connectToTaskdeck(). */
export declare class TaskdeckClient {
  /** Use connectToTaskdeck(); this takes an already resolved baseUrl and token (see ConnectOptions). */
  constructor(options: {
    baseUrl: string; token: string; requestTimeoutMs?: number | null; userAgent?: string; maxRetries?: number;
  });
  /** Retries of a request that may be repeated (0 to 10; default 2). */
  readonly maxRetries: number;
  /** Where the service is; it follows a restarted service found again through the discovery file. */
  readonly baseUrl: string;
  /** Deadline of each request in ms (Infinity: none). */
  readonly requestTimeoutMs: number;
  /** Drops the kept-alive connections (event streams are not affected). */
  close(): void;
  /** Every item of a list method, page by page, following the Link header. */
  paginate<M extends keyof ListMethods>(method: M, ...args: ListMethods[M]): AsyncGenerator<ListItems[M], void, undefined>;
  /** Every page of a list method, one request each, following the Link header. */
  pages<M extends keyof ListMethods>(method: M, ...args: ListMethods[M]): AsyncGenerator<Page<ListItems[M]>, void, undefined>;
  /** close(), for `await using td = await connectToTaskdeck()`. */
  [Symbol.asyncDispose](): Promise<void>;

  /** Readiness report. `GET /api/v1/doctor`. Errors: ConnectionError, TimeoutError, AbortError. */
  doctor(options?: RequestOptions): ApiPromise<ReadinessReport>;
  /** Agent runtimes. `GET /api/v1/runtimes`. Errors: ConnectionError, TimeoutError, AbortError. */
  listRuntimes(options?: ListOptions): ApiPromise<Page<Runtime>>;
  /** The models a provider of settings.json offers ("default": the default provider), asked of the provider and kept a minute. `GET /api/v1/providers/{name}/models`. Errors: NotFoundError; TaskdeckError provider_unavailable (502), service_unavailable (another listing is under way); ConnectionError, TimeoutError, AbortError. */
  listModels(provider: string, options?: RequestOptions): ApiPromise<ModelList>;
  /** A setup step. `POST /api/v1/bootstrap`. Errors: BadRequestError; ConnectionError, TimeoutError, AbortError. */
  bootstrap(request: { action: 'status' | 'runtime' }, options?: RequestOptions): ApiPromise<BootstrapResult>;
  /** Installs the taskdeck launcher. `POST /api/v1/cli/install`. Errors: ConnectionError, TimeoutError, AbortError. */
  installCli(options?: RequestOptions): ApiPromise<CliInstallResult>;

  /** Projects, newest first, paged. `GET /api/v1/projects`. Errors: BadRequestError; ConnectionError, TimeoutError, AbortError. */
  listProjects(options?: ArchivedListOptions): ApiPromise<Page<Project>>;
  /** One project. `GET /api/v1/projects/:id`. Errors: NotFoundError; ConnectionError, TimeoutError, AbortError. */
  getProject(projectId: string, options?: RequestOptions): ApiPromise<Project>;
  /** Creates a project. `POST /api/v1/projects`. Errors: BadRequestError, InternalServerError (503, retried), InternalServerError (507); ConnectionError, TimeoutError, AbortError. */
  createProject(project: NewProject, options?: IdempotentOptions): ApiPromise<Project>;
  /** JSON merge patch. `PATCH /api/v1/projects/:id`. Errors: BadRequestError, NotFoundError, InternalServerError (507); ConnectionError, TimeoutError, AbortError. */
  updateProject(projectId: string, patch: ProjectPatch, options?: RequestOptions): ApiPromise<Project>;
  /** Defaults of new sessions. `GET /api/v1/projects/:id/session-defaults`. Errors: NotFoundError; ConnectionError, TimeoutError, AbortError. */
  getProjectSessionDefaults(projectId: string, options?: RequestOptions): ApiPromise<SessionDefaults>;
  /** Compare-and-set on updatedAt. `PATCH /api/v1/projects/:id/session-defaults`. Errors: BadRequestError, NotFoundError, ConflictError; ConnectionError, TimeoutError, AbortError. */
  updateProjectSessionDefaults(projectId: string, update: SessionDefaultsUpdate, options?: RequestOptions): ApiPromise<SessionDefaults>;
  /** The usage and cost of the project's runs. `GET /api/v1/projects/:id/usage`. Errors: NotFoundError; ConnectionError, TimeoutError, AbortError. */
  getProjectUsage(projectId: string, options?: RequestOptions): ApiPromise<Usage>;

  /** Sessions of a project. `GET /api/v1/sessions`. Errors: BadRequestError; ConnectionError, TimeoutError, AbortError. */
  listSessions(projectId: string, options?: ArchivedListOptions): ApiPromise<Page<Session>>;
  /** One session. `GET /api/v1/sessions/:id`. Errors: NotFoundError; ConnectionError, TimeoutError, AbortError. */
  getSession(sessionId: string, options?: RequestOptions): ApiPromise<Session>;
  /** Creates a session before its first run, with its own MCP servers (an extension beyond the spec). `POST /api/v1/sessions`. Errors: BadRequestError (invalid_request, invalid_cwd), NotFoundError, BadRequestError (422 invalid_configuration); ConnectionError, TimeoutError, AbortError. */
  createSession(request: NewSession, options?: IdempotentOptions): ApiPromise<Session>;
  /** The session's own MCP servers, without their values. `GET /api/v1/sessions/:id/connectors`. Errors: NotFoundError; ConnectionError, TimeoutError, AbortError. */
  listSessionConnectors(sessionId: string, options?: RequestOptions): ApiPromise<SessionConnector[]>;
  /** Replaces the session's own MCP servers; its next runs get them. `PUT /api/v1/sessions/:id/connectors`. Errors: BadRequestError, NotFoundError; ConnectionError, TimeoutError, AbortError. */
  setSessionConnectors(sessionId: string, connectors: SessionConnectorRequest[], options?: RequestOptions): ApiPromise<SessionConnector[]>;
  /** Archives the session or brings it back. `PATCH /api/v1/sessions/:id`. Errors: BadRequestError, NotFoundError, InternalServerError (507); ConnectionError, TimeoutError, AbortError. */
  updateSession(sessionId: string, patch: SessionPatch, options?: RequestOptions): ApiPromise<Session>;
  /** Deletes the session with its runs, their events, plans, prompts, artifacts and workspace changes, and its managed workspace; an external workspace is kept (an extension beyond the spec). `DELETE /api/v1/sessions/:id`. Errors: NotFoundError, ConflictError (session_busy while a run of it is queued or running, unless force); ConnectionError, TimeoutError, AbortError. */
  deleteSession(sessionId: string, options?: DeleteSessionOptions): ApiPromise<SessionDeleted | SessionDeleting>;
  /** The session's configuration. `GET /api/v1/sessions/:id/config`. Errors: NotFoundError; ConnectionError, TimeoutError, AbortError. */
  getSessionConfiguration(sessionId: string, options?: RequestOptions): ApiPromise<SessionConfiguration>;
  /** The usage and cost of the session's runs. `GET /api/v1/sessions/:id/usage`. Errors: NotFoundError; ConnectionError, TimeoutError, AbortError. */
  getSessionUsage(sessionId: string, options?: RequestOptions): ApiPromise<Usage>;
  /** Compare-and-set on revision. `PATCH /api/v1/sessions/:id/config`. Errors: BadRequestError, NotFoundError, ConflictError; ConnectionError, TimeoutError, AbortError. */
  updateSessionConfiguration(sessionId: string, update: SessionConfigurationUpdate, options?: RequestOptions): ApiPromise<SessionConfiguration>;
  /** Agent routing. `GET /api/v1/settings/agent-routing`. Errors: ConnectionError, TimeoutError, AbortError. */
  getAgentRouting(options?: RequestOptions): ApiPromise<AgentRouting>;
  /** JSON merge patch. `PATCH /api/v1/settings/agent-routing`. Errors: BadRequestError; ConnectionError, TimeoutError, AbortError. */
  updateAgentRouting(patch: AgentRoutingPatch, options?: RequestOptions): ApiPromise<AgentRouting>;
  /** The session's plan. `GET /api/v1/sessions/:id/plan`. Errors: NotFoundError; ConnectionError, TimeoutError, AbortError. */
  getSessionPlan(sessionId: string, options?: RequestOptions): ApiPromise<Plan>;
  /** A decision on the plan. `POST /api/v1/sessions/:id/plan/respond`. Errors: BadRequestError, NotFoundError, ConflictError; ConnectionError, TimeoutError, AbortError. */
  respondSessionPlan(sessionId: string, response: PlanResponse, options?: RequestOptions): ApiPromise<Plan>;

  /** Starts a run. `POST /api/v1/runs`. Errors: BadRequestError, NotFoundError, ConflictError, InternalServerError (503, retried), InternalServerError (507); ConnectionError, TimeoutError, AbortError. */
  startRun(request: RunRequest, options?: IdempotentOptions): ApiPromise<Run>;
  /** One run. `GET /api/v1/runs/:id`. Errors: NotFoundError; ConnectionError, TimeoutError, AbortError. */
  getRun(runId: string, options?: RequestOptions): ApiPromise<Run>;
  /** Cancels a run (idempotent). `POST /api/v1/runs/:id/cancel`. Errors: NotFoundError; ConnectionError, TimeoutError, AbortError. */
  cancelRun(runId: string, options?: RequestOptions): ApiPromise<Run>;
  /** Runs of a session or a project, newest first, paged. `GET /api/v1/runs`. Errors: BadRequestError; ConnectionError, TimeoutError, AbortError. */
  listRuns(options: RunListOptions): ApiPromise<Page<Run>>;
  /** A run's durable history, oldest first, paged (nextCursor is the `after` of the next page). `GET /api/v1/runs/:id/events`. Errors: BadRequestError, NotFoundError; ConnectionError, TimeoutError, AbortError. */
  getRunEvents(runId: string, options?: RunEventsOptions): ApiPromise<Page<RunHistoryEvent>>;
  /**
   * Polls `GET /api/v1/runs/:id` (100 ms growing to 1 s) until the run is final (or, with
   * returnOnAttention, needs a decision). Errors: NotFoundError; TimeoutError (timeoutMs,
   * details.run), AbortError; ConnectionError.
   */
  waitForRun(runId: string, options?: WaitOptions): Promise<Run>;
  /** The files a run changed in its workspace (an extension beyond the spec). `GET /api/v1/runs/:id/changes`. Errors: BadRequestError (from), NotFoundError; ConnectionError, TimeoutError, AbortError. */
  getRunChanges(runId: string, options?: RunChangesPageOptions): ApiPromise<RunChanges>;
  /** The unified diff of a run's changes, of one path or all (an extension beyond the spec). `GET /api/v1/runs/:id/changes/diff`. Errors: BadRequestError, NotFoundError (a path it did not change); ConnectionError, TimeoutError, AbortError. */
  getRunDiff(runId: string, options?: RunDiffOptions): Promise<RunDiff>;
  /** Puts back the files a run changed (an extension beyond the spec). `POST /api/v1/runs/:id/revert`. Errors: NotFoundError, ConflictError (run_active; revert_conflict with details.conflicts unless force); ConnectionError, TimeoutError, AbortError. */
  revertRun(runId: string, options?: RevertOptions): ApiPromise<RevertResult>;
  /** Runs one prompt N times, each in a git worktree of cwd. `POST /api/v1/attempts`. Errors: BadRequestError (invalid_cwd), NotFoundError; ConnectionError, TimeoutError, AbortError. */
  createAttempts(request: AttemptRequest, options?: IdempotentOptions): ApiPromise<AttemptGroup>;
  /** One group of attempts. `GET /api/v1/attempts/:id`. */
  getAttempts(groupId: string, options?: RequestOptions): ApiPromise<AttemptGroup>;
  /** The groups of a project, newest first. `GET /api/v1/attempts?project=`. */
  listAttempts(projectId: string, options?: RequestOptions): ApiPromise<AttemptGroup[]>;
  /** Applies the attempt's changes to the group's directory. `POST /api/v1/runs/:id/apply`. Errors: ConflictError (attempt_conflict: nothing changed; attempt_group_closed; run_active). */
  applyAttempt(runId: string, options?: ApplyOptions): ApiPromise<AttemptGroup>;
  /** Removes one attempt's worktree and branch. `POST /api/v1/runs/:id/discard`. */
  discardAttempt(runId: string, options?: RequestOptions): ApiPromise<AttemptGroup>;
  /** Removes every attempt's worktree and branch. `POST /api/v1/attempts/:id/discard`. */
  discardAttempts(groupId: string, options?: RequestOptions): ApiPromise<AttemptGroup>;
  /** Takes the group's apply back. `POST /api/v1/attempts/:id/revert`. */
  revertAttempts(groupId: string, options?: RequestOptions): ApiPromise<AttemptGroup>;

  /** Artifacts of a session. `GET /api/v1/sessions/:id/artifacts`. Errors: NotFoundError; ConnectionError, TimeoutError, AbortError. */
  listArtifacts(sessionId: string, options?: ArtifactListOptions): ApiPromise<Page<Artifact>>;
  /** One artifact. `GET /api/v1/artifacts/:id`. Errors: NotFoundError; ConnectionError, TimeoutError, AbortError. */
  getArtifact(artifactId: string, options?: RequestOptions): ApiPromise<Artifact>;
  /** The bytes as a Response whose body streams; the deadline covers reading it. */
  downloadArtifact(artifactId: string, options?: DownloadOptions): Promise<Response>;
  /**
   * GET /api/v1/artifacts/:id/content into a file (written as path + ".part", renamed once
   * whole, removed on failure). Errors: not_found, timeout, unreachable, io_error.
   */
  downloadArtifactToFile(artifactId: string, path: string, options?: RequestOptions):
    Promise<{ path: string; bytes: number; version: string }>;

  /** The event stream (Server-Sent Events; each data: line is an Event). `GET /api/v1/events`. Errors: BadRequestError, InternalServerError (503, retried); ConnectionError, TimeoutError, AbortError. */
  events(filter?: EventFilter, options?: EventOptions): EventStream;

  /** Connectors. `GET /api/v1/connectors`. Errors: ConnectionError, TimeoutError, AbortError. */
  listConnectors(options?: ListOptions): ApiPromise<Page<Connector>>;
  /** One connector. `GET /api/v1/connectors/:id`. Errors: NotFoundError; ConnectionError, TimeoutError, AbortError. */
  getConnector(connectorId: string, options?: RequestOptions): ApiPromise<Connector>;
  /** Enables or disables. `PUT /api/v1/connectors/:id/enabled`. Errors: BadRequestError, NotFoundError; ConnectionError, TimeoutError, AbortError. */
  setConnectorEnabled(connectorId: string, enabled: boolean, options?: RequestOptions): ApiPromise<Connector>;
  /** Adds a connector. `POST /api/v1/connectors`. Errors: BadRequestError, NotFoundError; ConnectionError, TimeoutError, AbortError. */
  addConnector(request: NewConnector, options?: RequestOptions): ApiPromise<Connector>;
  /** Updates a connector. `PATCH /api/v1/connectors/:id`. Errors: BadRequestError, NotFoundError; ConnectionError, TimeoutError, AbortError. */
  updateConnector(connectorId: string, request: ConnectorUpdate, options?: RequestOptions): ApiPromise<Connector>;
  /** Removes a connector. `DELETE /api/v1/connectors/:id`. Errors: NotFoundError; ConnectionError, TimeoutError, AbortError. */
  removeConnector(connectorId: string, options?: RequestOptions): ApiPromise<unknown>;
  /** Lists the connector's tools. `POST /api/v1/connectors/:id/test`. Errors: NotFoundError; ConnectionError, TimeoutError, AbortError. */
  testConnector(connectorId: string, options?: RequestOptions): ApiPromise<ConnectorTestResult>;
  /** Starts a sign-in of an http connector (OAuth). `POST /api/v1/connectors/:id/login`. Errors: BadRequestError, NotFoundError; ConnectionError, TimeoutError, AbortError. */
  loginConnector(connectorId: string, login?: ConnectorLogin | null, options?: RequestOptions): ApiPromise<ConnectorLoginResult>;
  /** Credentials (metadata). `GET /api/v1/credentials`. Errors: ConnectionError, TimeoutError, AbortError. */
  listCredentials(options?: ListOptions): ApiPromise<Page<Credential>>;
  /** Creates a credential. `POST /api/v1/credentials`. Errors: BadRequestError; ConnectionError, TimeoutError, AbortError. */
  createCredential(request: NewCredential, options?: RequestOptions): ApiPromise<Credential>;
  /** Updates a credential. `PATCH /api/v1/credentials/:id`. Errors: BadRequestError, NotFoundError; ConnectionError, TimeoutError, AbortError. */
  updateCredential(credentialId: string, patch: CredentialPatch, options?: RequestOptions): ApiPromise<Credential>;
  /** One credential (metadata, never its secret). `GET /api/v1/credentials/:id`. Errors: NotFoundError; ConnectionError, TimeoutError, AbortError. */
  getCredential(credentialId: string, options?: RequestOptions): ApiPromise<Credential>;
  /** Deletes a credential; force: also one a connector binds or a provider names (the bindings go too). `DELETE /api/v1/credentials/:id`. Errors: BadRequestError, NotFoundError, ConflictError (credential_in_use); ConnectionError, TimeoutError, AbortError. */
  deleteCredential(credentialId: string, options?: RequestOptions & { force?: boolean }): ApiPromise<Record<string, never>>;
}

/**
 * Connects to the local taskdeck service (discovery file and token file, or
 * TASKDECK_URL and TASKDECK_TOKEN, or explicit options). Sends nothing.
 */
export declare function connectToTaskdeck(options?: ConnectOptions): Promise<TaskdeckClient>;
