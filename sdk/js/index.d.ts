/// <reference lib="esnext.disposable" />
// Type declarations of @taskdeck/sdk (written by hand; checked by tsc --noEmit in tests/js).

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
  | 'insufficient_storage' | 'permission_denied' | 'configuration_conflict' | 'runtime_missing'
  | 'timeout' | 'aborted' | 'unreachable' | 'invalid_response' | 'invalid_argument'
  | 'service_not_found' | 'io_error' | 'event_stream_overflow' | 'event_stream_invalid_message';

/** Typed `details` of the documented codes (docs/http-api.md); others: a plain record. */
export interface ErrorDetailsByCode {
  invalid_request: { field?: string; parameter?: string };
  invalid_cwd: { reason?: string; field?: string };
  not_found: { resource?: string; id?: string };
  /** details.current is the resource as it is now: re-read from it, then write again. */
  stale_write: { current: SessionConfiguration | SessionDefaults };
  stale_plan: { current: Plan };
  credential_in_use: { connectors?: string[]; providers?: string[] };
  invalid_configuration: { field?: string };
  /** waitForRun's deadline: the run as last read (it goes on). */
  timeout: { runId?: string; run?: Run | null; idleTimeoutMs?: number };
  event_stream_overflow: { seq?: number };
}

/** The details of one documented code; of any other code, or of a code not narrowed yet, a plain record. */
export type ErrorDetails<C extends string> =
  [C] extends [keyof ErrorDetailsByCode] ? ErrorDetailsByCode[C] : Record<string, unknown>;

/**
 * Every failure of the SDK (a subclass names its family). Its message never holds the token.
 * `e.is('stale_write')` narrows `details`.
 */
export declare class TaskdeckError<C extends TaskdeckErrorCode = TaskdeckErrorCode> extends Error {
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
/** 409: stale_write, stale_plan, plan_not_pending, permission_not_pending, session_busy, cwd_mismatch, credential_in_use. */
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
  status: number;
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
  withResponse(): Promise<{ data: T; response: ResponseInfo }>;
}

/** Retries of a request that may be repeated (2): see maxRetries. */
export declare const DEFAULT_MAX_RETRIES: number;

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
  userAgent?: string;
}

/** The last argument of every method. */
export interface RequestOptions {
  signal?: AbortSignal;
  /**
   * This call's deadline in ms, of any size (undefined or 0: the client's requestTimeoutMs);
   * Infinity or null: none. It covers the body.
   */
  timeoutMs?: number | null;
  /** This call's retries (default: the client's maxRetries). */
  maxRetries?: number;
}

export interface IdempotentOptions extends RequestOptions {
  /**
   * Sent as Idempotency-Key: the same key and body return the first result again
   * (withResponse(): idempotentReplayed). Without one, a retry gets a key of its own.
   */
  idempotencyKey?: string;
}

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

export type Json = null | boolean | number | string | Json[] | { [key: string]: Json };

export interface Project {
  id: string; name: string; description: string; context: string;
  metadata: Record<string, Json>; createdAt: string; updatedAt: string;
}

export interface NewProject {
  name: string; description?: string; context?: string; metadata?: Record<string, Json>;
}

export type ProjectPatch = {
  name?: string; description?: string | null; context?: string | null; metadata?: Record<string, Json> | null;
};

export type Framework = 'taskdeck' | 'claude-code' | 'codex' | (string & {});
export type Effort = 'low' | 'medium' | 'high';
export type PermissionProfile = 'ask' | 'workspace-write' | 'read-only' | 'full-access' | (string & {});

export interface SessionDefaultsValues {
  framework: Framework | null; provider: string | null; model: string | null;
  effort: Effort | null; permissionProfile: PermissionProfile | null;
  /** Whether runs may reach the network (null: the service's default). */
  network: boolean | null;
}

export interface SessionDefaults {
  projectId: string; updatedAt: string; defaults: SessionDefaultsValues;
}

export interface SessionDefaultsUpdate {
  expectedUpdatedAt: string; patch: Partial<SessionDefaultsValues>;
}

export interface Session {
  id: string; projectId: string; title: string; cwd: string; workspace: 'managed' | 'external';
  createdAt: string; updatedAt: string; lastRun: { id: string; status: RunStatus } | null;
}

export interface RunConfig {
  framework?: Framework | null; provider?: string | null; model?: string | null; effort?: Effort | null;
}

export interface SessionConfiguration {
  sessionId: string; revision: number; framework: Framework | null; provider: string | null;
  model: string | null; effort: Effort | null; updatedAt: string;
}

export interface SessionConfigurationUpdate {
  expectedRevision: number;
  /** An omitted key is kept; null clears it. */
  patch: RunConfig;
}

export interface AgentRouting {
  framework: Framework;
  reviewer: { enabled: boolean; framework: Framework | null; provider: string | null; model: string | null };
  subagent: { enabled: boolean; provider: string | null; model: string | null; maxConcurrent: number };
  updatedAt: string;
}

export type AgentRoutingPatch = {
  framework?: Framework;
  reviewer?: Partial<AgentRouting['reviewer']>;
  subagent?: Partial<AgentRouting['subagent']>;
};

export type RunStatus = 'queued' | 'running' | 'completed' | 'failed' | 'cancelled';

export interface Attention {
  kind: 'plan-approval' | (string & {}); planVersion?: number; planRevision?: number; since?: string;
  [key: string]: unknown;
}

export interface Run {
  id: string; sessionId: string; projectId: string; status: RunStatus; prompt: string;
  permissionProfile: PermissionProfile; turnIntent: 'plan-first' | null; config: RunConfig;
  cwd: string; createdAt: string; startedAt: string | null; finishedAt: string | null;
  cancelRequestedAt: string | null; progress: { phase: string; updatedAt: string } | null;
  /** Present once the run is final. */
  output?: string | null;
  /** Present on a failed run. */
  error?: { code: string; message: string } | null;
  /** Present while the run is running and needs a decision. */
  attention?: Attention | null;
  /** inputTokens includes the cache reads and writes. */
  usage: { inputTokens: number; outputTokens: number; cacheReadTokens?: number; cacheWriteTokens?: number } | null;
  /** USD at the price of settings.json's pricing; null (or absent) without one. */
  cost?: number | null;
  /** The latest review (routing.reviewer); null when the run was not reviewed. */
  review?: RunReview | null;
  updatedAt: string;
  /** Whether the run's commands may reach the network. */
  network: boolean;
}

/** The usage of the runs of a session or a project, added up and by provider and model. */
export interface Usage {
  runs: number; inputTokens: number; outputTokens: number; cacheReadTokens: number; cacheWriteTokens: number;
  /** USD; null unless every part with tokens has a price. */
  cost: number | null;
  byModel: Array<{ provider: string | null; model: string | null; runs: number; inputTokens: number;
    outputTokens: number; cacheReadTokens: number; cacheWriteTokens: number; cost: number | null }>;
}

export interface RunReview {
  verdict: 'approved' | 'changes_requested' | 'error' | (string & {});
  findings: string[];
  /** The reviewer's text, or why the review failed. */
  summary: string;
  /** 1, or 2 after the round the first review asked for. */
  round: number;
}

export interface RunRequest {
  project: string; prompt: string; permissionProfile?: PermissionProfile;
  turnIntent?: 'plan-first' | null; cwd?: string; sessionId?: string; config?: RunConfig;
  /** Let the run's commands reach the network (default: the project's defaults, else false). */
  network?: boolean;
}

export interface WaitOptions {
  /**
   * The whole wait, polling requests and delays together; reaching it rejects with "timeout"
   * and never cancels the run. Undefined, 0, Infinity or null: no deadline.
   */
  timeoutMs?: number | null;
  signal?: AbortSignal;
  /** Return as soon as the run is running with an attention object (plan-approval). */
  returnOnAttention?: boolean;
}

export interface PlanStep { id: string; title: string; status: string }

export interface Plan {
  sessionId: string; runId: string; version: number; revision: number;
  status: 'awaiting-approval' | 'approved' | 'superseded' | 'rejected' | 'completed' | 'abandoned' | (string & {});
  summary: string; feedback: string | null; steps: PlanStep[]; createdAt: string; updatedAt: string;
}

export interface PlanResponse {
  decision: 'approve' | 'revise' | 'reject'; version: number; revision: number; feedback?: string;
}

export interface Artifact {
  id: string; name: string; path: string; version: string; size: number; mediaType: string;
  sessionId: string; runId: string; createdAt: string;
}

export interface ArtifactListOptions extends ListOptions {
  /** Every version of each path, not only the newest. */
  allVersions?: boolean;
}

export interface DownloadOptions extends RequestOptions {
  /** Resume: sends Range: bytes=OFFSET- (the answer is 206, or 200 with the whole body). */
  offset?: number;
  /** With offset: the ETag (artifact version) the first part had; another version sends the whole body. */
  ifRange?: string;
}

/** The payload (`data`) of each event type (docs/events.md, Event types). */
export interface EventPayloads {
  /** A run was admitted. */
  'run.queued': { status: RunStatus };
  /** Its agent was started. */
  'run.started': { status: RunStatus };
  /** A phase change (liveness false), or every 10 s before the first output (liveness true). */
  'run.progress': { phase: string; message: string | null; liveness: boolean };
  /** Visible assistant text. */
  'run.output': { delta: string };
  /** A tool call started, completed, failed or was denied. */
  'run.tool': { callId?: string; name: string; status: string; summary?: string };
  /** A permission prompt. */
  'run.permission': { promptId: string; tool?: string; summary?: string; status?: string };
  /** The run needs (or, null, no longer needs) a decision. */
  'run.attention': { attention: Attention | null };
  'plan.updated': Plan;
  /** A save became visible (when its run finalized). */
  'artifact.saved': Artifact;
  /** The run is final. */
  'run.finished': { status: 'completed' | 'failed' | 'cancelled'; error?: { code: string; message: string } };
  /** Events may be missing from this run's history (an unclean stop, or a full disk). */
  'run.history-gap':
    | { reason: string; maxMs: number }
    | { reason: string; events: number; firstSeq: number; lastSeq: number };
  'session.updated': Session;
  'project.updated': Project;
  /** Never the transport or a secret. */
  'connector.updated': {
    id: string; name: string; kind: 'builtin' | 'custom'; enabled: boolean;
    action: 'created' | 'updated' | 'enabled' | 'disabled' | 'removed';
  };
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

export type TaskdeckEventType = keyof EventPayloads;

/** One event of one type: `seq`, `type`, `time`, the ids it concerns (else null) and its `data`. */
export interface TaskdeckEventOf<T extends TaskdeckEventType> {
  seq: number; type: T; time: string;
  projectId: string | null; sessionId: string | null; runId: string | null;
  data: EventPayloads[T];
}

/**
 * Every event the iterator yields, discriminated by `type`:
 * `if (e.type === 'run.finished') e.data.status`.
 */
export type TaskdeckEvent = { [T in TaskdeckEventType]: TaskdeckEventOf<T> }[TaskdeckEventType];

export interface EventFilter { projectId?: string; sessionId?: string; runId?: string }

export interface EventOptions {
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

export interface EventStream extends AsyncIterableIterator<TaskdeckEvent> {
  /** Resolves on stream.hello; rejects when the connection fails before it. */
  readonly ready: Promise<void>;
  /** "<streamId>:<seq>" of the last event yielded. */
  readonly lastEventId: string | null;
  /** Ends the stream; every waiting next() resolves as done. */
  close(): void;
  /** close(), for `await using events = td.events(...)`. */
  [Symbol.asyncDispose](): Promise<void>;
  return(): Promise<IteratorResult<TaskdeckEvent, undefined>>;
}

export interface ReadinessReport {
  ready: boolean; version: string;
  checks: { id: string; status: 'ok' | 'warn' | 'fail'; message: string; nextAction?: string }[];
  nextActions: string[];
}

export interface Runtime {
  framework: Framework; status: 'ready' | 'missing' | 'broken' | 'outdated' | (string & {});
  version?: string; source: 'managed' | 'external'; path?: string;
  /** How the runtime was found (managed copy, build tree, PATH, a setting). */
  foundBy?: string;
  /** Whether the managed runtime's data files are all there. */
  dataComplete?: boolean;
  /** The oldest version taskdeck supports (external runtimes). */
  minVersion?: string;
  message: string;
}

/** One step of a bootstrap: its result and, by step, what it found. */
export interface BootstrapStep { ok: boolean; message: string; path?: string; name?: string; runtime?: Runtime }

/** POST /api/v1/bootstrap: every step's result; ok false with error when a step itself failed. */
export interface BootstrapResult {
  ok: boolean;
  steps?: Record<string, BootstrapStep>;
  nextActions?: string[];
  error?: { code: 'runtime_missing' | 'configuration_conflict' | 'permission_denied' | (string & {}); message: string };
}

/** POST /api/v1/cli/install: where the launcher went; ok false with error when it could not. */
export interface CliInstallResult {
  ok: boolean;
  error?: { code: 'configuration_conflict' | 'permission_denied' | (string & {}); message: string };
  [key: string]: unknown;
}

/** How the service reaches a connector: a builtin one (con_web) is served by the service itself. */
export type ConnectorTransport =
  | { type: 'stdio'; command: string; args?: string[]; env?: Record<string, string> }
  | { type: 'http'; url: string; headers?: Record<string, string> }
  | { type: 'builtin' };

export interface CredentialBinding { credentialId: string; target: string }

export interface Connector {
  id: string; name: string; kind: 'builtin' | 'custom'; enabled: boolean;
  transport: ConnectorTransport; credentialBindings: CredentialBinding[];
  createdAt: string; updatedAt: string;
}

export interface NewConnector {
  name: string; transport: ConnectorTransport; credentialBindings?: CredentialBinding[];
  /** Default true. */
  enabled?: boolean;
}

export interface ConnectorUpdate {
  /** Required by the service; credential bindings omitted are kept. */
  transport: ConnectorTransport; name?: string; credentialBindings?: CredentialBinding[];
}

export interface ConnectorTestResult { success: boolean; toolCount: number; message: string }

/** A client registered beforehand, and the scope of a step-up; all optional. */
export interface ConnectorLogin { clientId?: string; clientSecret?: string; scope?: string }

/**
 * Open authorizationUrl in a browser; the service receives the answer at redirectUri.
 * A machine client (client credentials) is signed in at once: signedIn, no URL.
 */
export interface ConnectorLoginResult { authorizationUrl?: string; redirectUri?: string; signedIn?: boolean; message?: string }

export type CredentialKind = 'api-key' | 'bearer' | 'basic' | 'secret' | (string & {});

export interface Credential {
  id: string; name: string; kind: CredentialKind; description: string; createdAt: string; updatedAt: string;
}

export interface NewCredential {
  /** kind defaults to "secret". */
  name: string; kind?: CredentialKind; secret: string; description?: string;
}

export interface CredentialPatch {
  name?: string; kind?: CredentialKind; description?: string; secret?: string;
}

/** List methods that paginate() can follow. */
export interface ListMethods {
  listProjects: [options?: ListOptions];
  listSessions: [projectId: string, options?: ListOptions];
  listArtifacts: [sessionId: string, options?: ArtifactListOptions];
  listRuntimes: [options?: ListOptions];
  listConnectors: [options?: ListOptions];
  listCredentials: [options?: ListOptions];
}

export interface ListItems {
  listProjects: Project; listSessions: Session; listArtifacts: Artifact;
  listRuntimes: Runtime; listConnectors: Connector; listCredentials: Credential;
}

export declare class TaskdeckClient {
  constructor(options: {
    baseUrl: string; token: string; requestTimeoutMs?: number | null; userAgent?: string; maxRetries?: number;
  });
  readonly maxRetries: number;
  /** Where the service is; it follows a restarted service found again through the discovery file. */
  readonly baseUrl: string;
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
  /** A setup step. `POST /api/v1/bootstrap`. Errors: BadRequestError; ConnectionError, TimeoutError, AbortError. */
  bootstrap(request: { action: 'status' | 'runtime' }, options?: RequestOptions): ApiPromise<BootstrapResult>;
  /** Installs the taskdeck launcher. `POST /api/v1/cli/install`. Errors: ConnectionError, TimeoutError, AbortError. */
  installCli(options?: RequestOptions): ApiPromise<CliInstallResult>;

  /** Projects, newest first, paged. `GET /api/v1/projects`. Errors: BadRequestError; ConnectionError, TimeoutError, AbortError. */
  listProjects(options?: ListOptions): ApiPromise<Page<Project>>;
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
  listSessions(projectId: string, options?: ListOptions): ApiPromise<Page<Session>>;
  /** One session. `GET /api/v1/sessions/:id`. Errors: NotFoundError; ConnectionError, TimeoutError, AbortError. */
  getSession(sessionId: string, options?: RequestOptions): ApiPromise<Session>;
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
  waitForRun(runId: string, options?: WaitOptions): Promise<Run>;

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
}

/**
 * Connects to the local taskdeck service (discovery file and token file, or
 * TASKDECK_URL and TASKDECK_TOKEN, or explicit options). Sends nothing.
 */
export declare function connectToTaskdeck(options?: ConnectOptions): Promise<TaskdeckClient>;
