'use strict';

// TaskdeckClient: every method of the specification, over Transport.
const { TaskdeckError, taskdeckError, errorFromAnswer, webHeaders } = require('./errors.cjs');
const { Transport, checkTimeout, checkRetries, requestIdOf, responseMeta, sleep, DEFAULT_MAX_RETRIES } = require('./transport.cjs');
const { resolveConnection } = require('./discovery.cjs');
const { openEvents } = require('./events.cjs');
const { createWriteStream } = require('node:fs');
const { rename, rm } = require('node:fs/promises');
const { Readable } = require('node:stream');
const { pipeline } = require('node:stream/promises');

const VERSION = '0.1.0';
const DEFAULT_REQUEST_TIMEOUT_MS = 30000;
const FINAL = new Set(['completed', 'failed', 'cancelled']);
// How many positional arguments come before the options of each list method (paginate).
const LISTS = {
  listProjects: 0, listSessions: 1, listArtifacts: 1, listRuntimes: 0,
  listConnectors: 0, listCredentials: 0, listRuns: 0, getRunEvents: 1,
};
const MAX_PAGES = 100000;

function invalid(message) {
  return taskdeckError('invalid_argument', message);
}

// An id for a path segment.
function seg(id, what) {
  if (typeof id !== 'string' || id === '' || id.length > 200) {
    throw invalid(`${what} must be a non-empty string`);
  }
  return encodeURIComponent(id);
}

function object(v, what) {
  if (v === null || typeof v !== 'object' || Array.isArray(v)) throw invalid(`${what} must be an object`);
  return v;
}

/** The largest diff read: the service's 8 MiB cut of a whole diff, and room for its last file. */
const DIFF_MAX_BYTES = 16 * 1024 * 1024;

/** "?path=...&from=..." of a changes request ("" without them). */
function changesQuery(o) {
  const q = new URLSearchParams();
  if (o.path !== undefined) {
    if (typeof o.path !== 'string' || o.path === '') throw invalid('path must be a path in the workspace');
    q.set('path', o.path);
  }
  if (o.from !== undefined) {
    if (typeof o.from !== 'string' || o.from === '') throw invalid('from must be "start" or a run id');
    q.set('from', o.from);
  }
  const text = q.toString();
  return text === '' ? '' : `?${text}`;
}

function opts(o) {
  if (o === undefined || o === null) return {};
  return object(o, 'the options');
}

// The archived query of listProjects and listSessions: undefined (the service's
// default, not archived), 'true' or 'all'.
function archivedQuery(o) {
  const a = o === undefined || o === null ? undefined : o.archived;
  if (a === undefined || a === false) return undefined;
  if (a === true || a === 'all') return String(a);
  throw invalid("archived must be true, false or 'all'");
}

function idemKey(key) {
  if (key === undefined || key === null) return undefined;
  if (typeof key !== 'string' || !/^[\x21-\x7e](?:[\x20-\x7e]{0,253}[\x21-\x7e])?$/.test(key)) {
    throw invalid('idempotencyKey must be 1 to 255 printable ASCII characters, no spaces at the ends');
  }
  return key;
}

// The cursor (its query parameter key) of the Link header's rel="next", or null.
function nextCursor(link, key = 'cursor') {
  if (typeof link !== 'string') return null;
  for (const part of link.split(',')) {
    const m = /^\s*<([^>]*)>\s*;(.*)$/.exec(part);
    if (m === null || !/\brel\s*=\s*"?next"?/.test(m[2])) continue;
    try {
      return new URL(m[1], 'http://x').searchParams.get(key);
    } catch {
      return null;
    }
  }
  return null;
}

/**
 * The promise of every request method: it resolves with the data, and
 * withResponse() resolves with {data, response} (status, headers, requestId,
 * idempotentReplayed, retryAfterMs, retries).
 */
class ApiPromise extends Promise {
  #full;

  // Methods like then() make plain promises.
  static get [Symbol.species]() {
    return Promise;
  }

  constructor(full) {
    let ok;
    let ko;
    super((resolve, reject) => {
      ok = resolve;
      ko = reject;
    });
    this.#full = full;
    full.then((r) => ok(r.data), ko);
  }

  /** The data and what the answer said beside it. */
  withResponse() {
    this.catch(() => {});	// the failure is this call's to report
    return this.#full.then((r) => ({ data: r.data, response: r.response }));
  }
}

const api = (full) => new ApiPromise(full);

class TaskdeckClient {
  #t;

  /** Use connectToTaskdeck(); this takes an already resolved {baseUrl, token}. */
  constructor({ baseUrl, token, requestTimeoutMs, userAgent, rediscover, maxRetries }) {
    const ms = checkTimeout(requestTimeoutMs, 'requestTimeoutMs') ?? DEFAULT_REQUEST_TIMEOUT_MS;
    const retries = checkRetries(maxRetries) ?? DEFAULT_MAX_RETRIES;
    this.#t = new Transport(baseUrl, token, ms, userAgent ?? `@taskdeck/sdk/${VERSION}`,
      typeof rediscover === 'function' ? rediscover : null, retries);
    Object.defineProperty(this, 'maxRetries', { value: retries, enumerable: true });
    Object.defineProperty(this, 'baseUrl', { get: () => this.#t.baseUrl, enumerable: true });
    Object.defineProperty(this, 'requestTimeoutMs', { value: ms, enumerable: true });
  }

  /** Drops the kept-alive connections (open event streams are not affected). */
  close() {
    this.#t.close();
  }

  #call(method, path, o, extra = {}) {
    const timeoutMs = checkTimeout(o.timeoutMs);
    const maxRetries = checkRetries(o.maxRetries);
    return this.#t.request(method, path, { signal: o.signal, timeoutMs, maxRetries, ...extra });
  }

  #json(method, path, o, extra) {
    let full;
    try {
      full = this.#call(method, path, opts(o), extra);
    } catch (e) {
      full = Promise.reject(e);
    }
    return api(full);
  }

  #list(path, query, o, key = 'cursor') {
    let full;
    try {
      full = this.#pages(path, query, o, key);
    } catch (e) {
      full = Promise.reject(e);
    }
    return api(full);
  }

  // One page, or every page with {all: true} (one deadline for all of them); key names
  // the query parameter that carries the cursor (a run's history pages by 'after').
  async #pages(path, query, o, key) {
    o = opts(o);
    const q = new URLSearchParams();
    for (const [k, v] of Object.entries(query)) if (v !== undefined && v !== null) q.set(k, String(v));
    if (o.limit !== undefined) {
      if (!Number.isInteger(o.limit) || o.limit < 1 || o.limit > 1000) throw invalid('limit must be 1 to 1000');
      q.set('limit', String(o.limit));
    }
    const timeoutMs = checkTimeout(o.timeoutMs) ?? this.#t.timeoutMs;
    const end = Date.now() + timeoutMs;
    const maxRetries = checkRetries(o.maxRetries);
    let cursor = o.cursor ?? null;
    let response = null;
    const items = [];
    for (let pages = 0; pages < MAX_PAGES; pages++) {
      if (cursor !== null) q.set(key, cursor);
      const left = end - Date.now();
      if (left <= 0) throw taskdeckError('timeout', `GET ${path}: the pages did not arrive within ${timeoutMs} ms`);
      const qs = q.toString();
      const r = await this.#t.request('GET', qs === '' ? path : `${path}?${qs}`,
        { signal: o.signal, timeoutMs: left, maxRetries });
      ({ response } = r);
      if (!Array.isArray(r.data)) {
        throw taskdeckError('invalid_response', `GET ${path}: the answer is not an array`,
          { status: r.status, requestId: r.requestId });
      }
      for (const item of r.data) items.push(item);
      cursor = nextCursor(r.headers.link, key);
      if (!o.all || cursor === null) break;
    }
    Object.defineProperty(items, 'nextCursor', { value: o.all ? null : cursor, enumerable: false });
    return { data: items, response };
  }

  /**
   * Every item of a list method, page by page, following the Link header:
   * `for await (const p of td.paginate('listProjects', {limit: 50}))`.
   */
  async *paginate(method, ...args) {
    for await (const page of this.pages(method, ...args)) yield* page;
  }

  /**
   * Every page of a list method, one request each, following the Link header:
   * `for await (const page of td.pages('listProjects', {limit: 50}))`.
   */
  async *pages(method, ...args) {
    const n = LISTS[method];
    if (n === undefined) throw invalid(`${method} is not a list method`);
    const positional = args.slice(0, n);
    const o = opts(args[n]);
    let cursor = o.cursor ?? null;
    for (let pages = 0; pages < MAX_PAGES; pages++) {
      const page = await this[method](...positional, { ...o, all: false, cursor: cursor ?? undefined });
      yield page;
      cursor = page.nextCursor;
      if (cursor === null) return;
    }
  }

  /** Drops the kept-alive connections: `await using td = await connectToTaskdeck()`. */
  async [Symbol.asyncDispose]() {
    this.close();
  }

  // --- readiness and setup ---
  doctor(o) { return this.#json('GET', '/api/v1/doctor', o); }

  listRuntimes(o) { return this.#list('/api/v1/runtimes', {}, o); }

  listModels(provider, o) {
    return this.#json('GET', `/api/v1/providers/${seg(provider, 'the provider')}/models`, o);
  }

  bootstrap(request, o) {
    object(request, 'the bootstrap request');
    if (typeof request.action !== 'string' || request.action === '') throw invalid('action must be "status" or "runtime"');
    return this.#json('POST', '/api/v1/bootstrap', o, { body: request });
  }

  installCli(o) { return this.#json('POST', '/api/v1/cli/install', o); }

  // --- projects ---
  listProjects(o) { return this.#list('/api/v1/projects', { archived: archivedQuery(o) }, o); }

  getProject(projectId, o) {
    return this.#json('GET', `/api/v1/projects/${seg(projectId, 'projectId')}`, o);
  }

  createProject(request, o) {
    o = opts(o);
    object(request, 'the project');
    const key = idemKey(o.idempotencyKey);
    return this.#json('POST', '/api/v1/projects', o,
      { body: request, headers: key === undefined ? undefined : { 'idempotency-key': key }, autoKey: true });
  }

  updateProject(projectId, patch, o) {
    return this.#json('PATCH', `/api/v1/projects/${seg(projectId, 'projectId')}`, o,
      { body: object(patch, 'the patch') });
  }

  getProjectSessionDefaults(projectId, o) {
    return this.#json('GET', `/api/v1/projects/${seg(projectId, 'projectId')}/session-defaults`, o);
  }

  getProjectUsage(projectId, o) {
    return this.#json('GET', `/api/v1/projects/${seg(projectId, 'projectId')}/usage`, o);
  }

  updateProjectSessionDefaults(projectId, request, o) {
    object(request, 'the request');
    if (typeof request.expectedUpdatedAt !== 'string') throw invalid('expectedUpdatedAt must be the updatedAt last read');
    object(request.patch, 'patch');
    return this.#json('PATCH', `/api/v1/projects/${seg(projectId, 'projectId')}/session-defaults`, o,
      { body: { expectedUpdatedAt: request.expectedUpdatedAt, patch: request.patch } });
  }

  // --- sessions ---
  listSessions(projectId, o) {
    seg(projectId, 'projectId');
    return this.#list('/api/v1/sessions', { project: projectId, archived: archivedQuery(o) }, o);
  }

  getSession(sessionId, o) {
    return this.#json('GET', `/api/v1/sessions/${seg(sessionId, 'sessionId')}`, o);
  }

  createSession(request, o) {
    o = opts(o);
    object(request, 'the session');
    if (request.connectors !== undefined && !Array.isArray(request.connectors)) throw invalid('connectors must be an array');
    const key = idemKey(o.idempotencyKey);
    return this.#json('POST', '/api/v1/sessions', o,
      { body: request, headers: key === undefined ? undefined : { 'idempotency-key': key }, autoKey: true });
  }

  listSessionConnectors(sessionId, o) {
    return this.#json('GET', `/api/v1/sessions/${seg(sessionId, 'sessionId')}/connectors`, o);
  }

  setSessionConnectors(sessionId, connectors, o) {
    if (!Array.isArray(connectors)) throw invalid('connectors must be an array');
    return this.#json('PUT', `/api/v1/sessions/${seg(sessionId, 'sessionId')}/connectors`, o,
      { body: { connectors } });
  }

  updateSession(sessionId, patch, o) {
    object(patch, 'the patch');
    if (typeof patch.archived !== 'boolean') throw invalid('archived must be true or false');
    return this.#json('PATCH', `/api/v1/sessions/${seg(sessionId, 'sessionId')}`, o,
      { body: { archived: patch.archived } });
  }

  deleteSession(sessionId, o) {
    o = opts(o);
    if (o.force !== undefined && typeof o.force !== 'boolean') throw invalid('force must be a boolean');
    return this.#json('DELETE', `/api/v1/sessions/${seg(sessionId, 'sessionId')}${o.force ? '?force=true' : ''}`, o);
  }

  getSessionConfiguration(sessionId, o) {
    return this.#json('GET', `/api/v1/sessions/${seg(sessionId, 'sessionId')}/config`, o);
  }

  getSessionUsage(sessionId, o) {
    return this.#json('GET', `/api/v1/sessions/${seg(sessionId, 'sessionId')}/usage`, o);
  }

  updateSessionConfiguration(sessionId, request, o) {
    object(request, 'the request');
    if (!Number.isInteger(request.expectedRevision)) throw invalid('expectedRevision must be the revision last read');
    object(request.patch, 'patch');
    return this.#json('PATCH', `/api/v1/sessions/${seg(sessionId, 'sessionId')}/config`, o,
      { body: { expectedRevision: request.expectedRevision, patch: request.patch } });
  }

  getAgentRouting(o) { return this.#json('GET', '/api/v1/settings/agent-routing', o); }

  updateAgentRouting(patch, o) {
    return this.#json('PATCH', '/api/v1/settings/agent-routing', o, { body: object(patch, 'the patch') });
  }

  // --- plans ---
  getSessionPlan(sessionId, o) {
    return this.#json('GET', `/api/v1/sessions/${seg(sessionId, 'sessionId')}/plan`, o);
  }

  respondSessionPlan(sessionId, response, o) {
    object(response, 'the response');
    const { decision, version, revision, feedback } = response;
    if (decision !== 'approve' && decision !== 'revise' && decision !== 'reject') {
      throw invalid('decision must be "approve", "revise" or "reject"');
    }
    if (!Number.isInteger(version) || version < 1 || !Number.isInteger(revision) || revision < 1) {
      throw invalid('version and revision must be the plan\'s, exactly as read');
    }
    if (decision === 'revise' && (typeof feedback !== 'string' || feedback === '')) {
      throw invalid('revise needs feedback');
    }
    const body = { decision, version, revision };
    if (feedback !== undefined) body.feedback = feedback;
    return this.#json('POST', `/api/v1/sessions/${seg(sessionId, 'sessionId')}/plan/respond`, o, { body });
  }

  // --- runs ---
  startRun(request, o) {
    o = opts(o);
    object(request, 'the run request');
    if (typeof request.project !== 'string' || request.project === '') throw invalid('project must be a project id');
    if (typeof request.prompt !== 'string' || request.prompt === '') throw invalid('prompt must be a non-empty string');
    const key = idemKey(o.idempotencyKey);
    return this.#json('POST', '/api/v1/runs', o,
      { body: request, headers: key === undefined ? undefined : { 'idempotency-key': key }, autoKey: true });
  }

  getRun(runId, o) {
    return this.#json('GET', `/api/v1/runs/${seg(runId, 'runId')}`, o);
  }

  cancelRun(runId, o) {
    return this.#json('POST', `/api/v1/runs/${seg(runId, 'runId')}/cancel`, o);
  }

  /** Runs of a session or a project (at least one), newest first; {status} keeps one status. */
  listRuns(o) {
    const f = opts(o);
    if (f.session === undefined && f.project === undefined) throw invalid('listRuns needs a session or a project');
    if (f.session !== undefined) seg(f.session, 'session');
    if (f.project !== undefined) seg(f.project, 'project');
    if (f.status !== undefined && typeof f.status !== 'string') throw invalid('status must be a run status');
    return this.#list('/api/v1/runs', { session: f.session, project: f.project, status: f.status }, f);
  }

  /** A run's durable history, oldest first, paged by the id of the last event (cursor or after). */
  getRunEvents(runId, o) {
    const f = opts(o);
    if (f.after !== undefined && (typeof f.after !== 'string' || f.after === '')) {
      throw invalid('after must be a seq or an event id STREAM:SEQ');
    }
    const path = `/api/v1/runs/${seg(runId, 'runId')}/events`;
    return this.#list(path, {}, { ...f, cursor: f.cursor ?? f.after }, 'after');
  }

  // --- a run's workspace changes (an extension beyond the spec) ---
  /** What the run changed in its workspace; {from: "start" | runId} compares with another start. */
  getRunChanges(runId, o) {
    o = opts(o);
    const q = new URLSearchParams(changesQuery(o).slice(1));
    if (o.cursor !== undefined) {
      if (typeof o.cursor !== 'string' || o.cursor === '') throw invalid('cursor must be the nextCursor of the page before');
      q.set('cursor', o.cursor);
    }
    if (o.limit !== undefined) {
      if (!Number.isInteger(o.limit) || o.limit < 1 || o.limit > 1000) throw invalid('limit must be 1 to 1000');
      q.set('limit', String(o.limit));
    }
    const text = q.toString();
    return this.#json('GET', `/api/v1/runs/${seg(runId, 'runId')}/changes${text ? `?${text}` : ''}`, o);
  }

  /**
   * The unified diff of what the run changed, {path} of one file; resolves
   * with {text, truncated} (the service cuts a diff of every file at 8 MiB).
   */
  async getRunDiff(runId, o) {
    o = opts(o);
    const path = `/api/v1/runs/${seg(runId, 'runId')}/changes/diff${changesQuery(o)}`;
    const timeoutMs = checkTimeout(o.timeoutMs);
    const p = await this.#t.send('GET', path, { signal: o.signal, timeoutMs, accept: 'text/x-diff' });
    const requestId = requestIdOf(p.headers);
    const text = await this.#t.readText(p, DIFF_MAX_BYTES);
    if (p.status < 200 || p.status > 299) throw errorFromAnswer(p.status, requestId, text, p.headers);
    return { text, truncated: p.headers['x-taskdeck-truncated'] === 'true' };
  }

  /**
   * Puts back the files the run changed as they were before it.  A file
   * changed since: ConflictError "revert_conflict", details.conflicts naming
   * them, unless {force: true}.
   */
  revertRun(runId, o) {
    o = opts(o);
    if (o.force !== undefined && typeof o.force !== 'boolean') throw invalid('force must be a boolean');
    return this.#json('POST', `/api/v1/runs/${seg(runId, 'runId')}/revert`, o,
      { body: o.force ? { force: true } : {} });
  }

  /** Runs one prompt N times, each in a git worktree of request.cwd (docs/http-api.md, Attempts). */
  createAttempts(request, o) {
    o = opts(o);
    object(request, 'the attempts');
    const key = idemKey(o.idempotencyKey);
    return this.#json('POST', '/api/v1/attempts', o,
      { body: request, headers: key === undefined ? undefined : { 'idempotency-key': key }, autoKey: true });
  }

  getAttempts(groupId, o) {
    return this.#json('GET', `/api/v1/attempts/${seg(groupId, 'groupId')}`, o);
  }

  listAttempts(projectId, o) {
    return this.#json('GET', `/api/v1/attempts?project=${seg(projectId, 'projectId')}`, o);
  }

  /**
   * Puts the attempt's changes into the group's directory, all or nothing
   * (ConflictError "attempt_conflict"), then removes the group's worktrees
   * unless {keep: true}.
   */
  applyAttempt(runId, o) {
    o = opts(o);
    if (o.keep !== undefined && typeof o.keep !== 'boolean') throw invalid('keep must be a boolean');
    return this.#json('POST', `/api/v1/runs/${seg(runId, 'runId')}/apply`, o,
      { body: o.keep ? { keep: true } : {} });
  }

  discardAttempt(runId, o) {
    return this.#json('POST', `/api/v1/runs/${seg(runId, 'runId')}/discard`, o);
  }

  discardAttempts(groupId, o) {
    return this.#json('POST', `/api/v1/attempts/${seg(groupId, 'groupId')}/discard`, o);
  }

  revertAttempts(groupId, o) {
    return this.#json('POST', `/api/v1/attempts/${seg(groupId, 'groupId')}/revert`, o);
  }

  /**
   * Polls the run until it is final (or, with returnOnAttention, running with
   * an attention object).  timeoutMs bounds the whole wait; reaching it rejects
   * with code "timeout" and leaves the run alone.
   */
  async waitForRun(runId, o) {
    o = opts(o);
    seg(runId, 'runId');
    const total = checkTimeout(o.timeoutMs);
    const end = total === undefined ? Infinity : Date.now() + total;
    const { signal } = o;
    let delay = 100;
    let last = null;
    const timedOut = () => taskdeckError('timeout',
      `run ${runId} is still ${last?.status ?? 'unfinished'} after ${total} ms; the wait stopped, the run goes on`,
      { details: { runId, run: last } });
    for (;;) {
      const left = end - Date.now();
      if (left <= 0) throw timedOut();
      try {
        last = await this.getRun(runId, {
          signal, timeoutMs: Math.max(1, Math.min(this.#t.timeoutMs, left)), maxRetries: 0,
        });
        if (FINAL.has(last.status)) return last;
        if (o.returnOnAttention && last.status === 'running' && last.attention &&
            typeof last.attention === 'object') return last;
      } catch (e) {
        const retry = e instanceof TaskdeckError &&
          (e.code === 'unreachable' || e.code === 'timeout' || e.code === 'service_unavailable');
        if (!retry) throw e;
        if (end - Date.now() <= 0) throw timedOut();
      }
      const pause = Math.min(delay + Math.random() * 50, end - Date.now());
      if (pause <= 0) throw timedOut();
      await sleep(pause, signal);
      delay = Math.min(delay * 1.5, 1000);
    }
  }

  // --- artifacts ---
  listArtifacts(sessionId, o) {
    o = opts(o);
    return this.#list(`/api/v1/sessions/${seg(sessionId, 'sessionId')}/artifacts`,
      { all: o.allVersions ? 'true' : undefined }, o);
  }

  getArtifact(artifactId, o) {
    return this.#json('GET', `/api/v1/artifacts/${seg(artifactId, 'artifactId')}`, o);
  }

  /**
   * The artifact's bytes as a Response whose body streams; the request's
   * deadline and signal stay armed until the body is consumed.  {offset}
   * resumes with Range (206), {ifRange: etag} sends only when unchanged.
   */
  async downloadArtifact(artifactId, o) {
    o = opts(o);
    const path = `/api/v1/artifacts/${seg(artifactId, 'artifactId')}/content`;
    const headers = { };
    if (o.offset !== undefined && o.offset !== 0) {
      if (!Number.isSafeInteger(o.offset) || o.offset < 0) throw invalid('offset must be a byte offset');
      headers.range = `bytes=${o.offset}-`;
      if (o.ifRange !== undefined) {
        if (typeof o.ifRange !== 'string' || !/^[\x20-\x7e]{1,200}$/.test(o.ifRange)) throw invalid('ifRange must be an ETag');
        headers['if-range'] = o.ifRange.startsWith('"') ? o.ifRange : `"${o.ifRange}"`;
      }
    }
    const timeoutMs = checkTimeout(o.timeoutMs);
    const p = await this.#t.send('GET', path, { signal: o.signal, timeoutMs, headers, accept: '*/*' });
    const requestId = requestIdOf(p.headers);
    if (p.status < 200 || p.status > 299) {
      const text = await this.#t.readText(p, 1024 * 1024);
      throw errorFromAnswer(p.status, requestId, text, p.headers);
    }
    return toResponse(p, this.#t);
  }

  /**
   * Downloads the artifact into the file path (written as path + ".part",
   * renamed once whole; removed on failure); resolves with {path, bytes, version}.
   */
  async downloadArtifactToFile(artifactId, path, o) {
    if (typeof path !== 'string' || path === '') throw invalid('path must be a file path');
    o = opts(o);
    const { offset, ifRange, ...rest } = o;
    if (offset !== undefined || ifRange !== undefined) throw invalid('downloadArtifactToFile takes no offset');
    const res = await this.downloadArtifact(artifactId, rest);
    const part = `${path}.part`;
    let bytes = 0;
    const counted = Readable.fromWeb(res.body).on('data', (c) => { bytes += c.length; });
    try {
      await pipeline(counted, createWriteStream(part, { mode: 0o644 }));
      await rename(part, path);
    } catch (e) {
      await rm(part, { force: true });
      throw e instanceof TaskdeckError ? e : taskdeckError('io_error', `cannot write ${path}: ${e.code ?? e.message}`, { cause: e });
    }
    return { path, bytes, version: (res.headers.get('etag') ?? '').replace(/^"|"$/g, '') };
  }

  // --- events ---
  /** The event stream as an async iterable with ready and close(). */
  events(filter, o) {
    return openEvents(this.#t, filter ?? {}, opts(o));
  }

  // --- connectors and credentials ---
  listConnectors(o) { return this.#list('/api/v1/connectors', {}, o); }

  getConnector(connectorId, o) {
    return this.#json('GET', `/api/v1/connectors/${seg(connectorId, 'connectorId')}`, o);
  }

  setConnectorEnabled(connectorId, enabled, o) {
    if (typeof enabled !== 'boolean') throw invalid('enabled must be a boolean');
    return this.#json('PUT', `/api/v1/connectors/${seg(connectorId, 'connectorId')}/enabled`, o,
      { body: { enabled } });
  }

  addConnector(request, o) {
    return this.#json('POST', '/api/v1/connectors', o, { body: object(request, 'the connector') });
  }

  updateConnector(connectorId, request, o) {
    object(request, 'the connector update');
    if (request.transport === undefined) throw invalid('a connector update must include the transport');
    return this.#json('PATCH', `/api/v1/connectors/${seg(connectorId, 'connectorId')}`, o, { body: request });
  }

  removeConnector(connectorId, o) {
    return this.#json('DELETE', `/api/v1/connectors/${seg(connectorId, 'connectorId')}`, o);
  }

  testConnector(connectorId, o) {
    return this.#json('POST', `/api/v1/connectors/${seg(connectorId, 'connectorId')}/test`, o);
  }

  // Begins an OAuth sign-in: {authorizationUrl, redirectUri}; login may name a
  // pre-registered {clientId, clientSecret} and the scope of a step-up.
  async loginConnector(connectorId, login, o) {
    const path = `/api/v1/connectors/${seg(connectorId, 'connectorId')}/login`;
    return login === undefined || login === null ? this.#json('POST', path, o)
      : this.#json('POST', path, o, { body: object(login, 'the sign-in') });
  }

  listCredentials(o) { return this.#list('/api/v1/credentials', {}, o); }

  getCredential(credentialId, o) {
    return this.#json('GET', `/api/v1/credentials/${seg(credentialId, 'credentialId')}`, o);
  }

  /** Deletes a credential; {force: true} also when a connector binds it or a provider names it. */
  deleteCredential(credentialId, o) {
    const f = opts(o);
    if (f.force !== undefined && typeof f.force !== 'boolean') throw invalid('force must be true or false');
    const path = `/api/v1/credentials/${seg(credentialId, 'credentialId')}`;
    return this.#json('DELETE', f.force === undefined ? path : `${path}?force=${f.force}`, f);
  }

  createCredential(request, o) {
    return this.#json('POST', '/api/v1/credentials', o, { body: object(request, 'the credential') });
  }

  updateCredential(credentialId, patch, o) {
    return this.#json('PATCH', `/api/v1/credentials/${seg(credentialId, 'credentialId')}`, o,
      { body: object(patch, 'the patch') });
  }
}

// A request method's invalid argument rejects its promise, as a failure of the service would.
for (const name of Object.getOwnPropertyNames(TaskdeckClient.prototype)) {
  const f = TaskdeckClient.prototype[name];
  if (name === 'constructor' || name === 'close' || name === 'events' || typeof f !== 'function' || f.constructor.name !== 'Function') continue;
  Object.defineProperty(TaskdeckClient.prototype, name, {
    value: { [name](...args) {
      try {
        return f.apply(this, args);
      } catch (e) {
        return api(Promise.reject(e));
      }
    } }[name],
    writable: true, configurable: true,
  });
}

// A web Response over the streaming body; errors of the exchange (deadline,
// abort, a connection that ends early) error the stream.
function toResponse(p, t) {
  const { res } = p;
  const expected = p.headers['content-length'] !== undefined ? Number(p.headers['content-length']) : null;
  let received = 0;
  const body = new ReadableStream({
    start(controller) {
      res.on('data', (chunk) => {
        received += chunk.length;
        controller.enqueue(new Uint8Array(chunk.buffer, chunk.byteOffset, chunk.length));
        if (controller.desiredSize <= 0) res.pause();
      });
      res.on('end', () => {
        p.finish();
        if (expected !== null && received !== expected) {
          controller.error(taskdeckError('unreachable',
            `the download ended after ${received} of ${expected} bytes`, { status: p.status }));
          return;
        }
        controller.close();
      });
      res.on('error', (e) => {
        p.finish();
        controller.error(t.netError(e));
      });
    },
    pull() {
      res.resume();
    },
    cancel() {
      p.finish();
      res.destroy();
    },
  }, { highWaterMark: 4 });
  const headers = new Headers();
  for (const [k, v] of Object.entries(p.headers)) {
    if (Array.isArray(v)) for (const x of v) headers.append(k, x);
    else if (v !== undefined) headers.set(k, v);
  }
  return new Response(body, { status: p.status, statusText: res.statusMessage ?? '', headers });
}

/**
 * Connects to the local taskdeck service: discovery file and token file as the
 * C client core finds them (TASKDECK_HOME, XDG), TASKDECK_URL and
 * TASKDECK_TOKEN, or explicit {baseUrl, token}.  Sends nothing.
 */
async function connectToTaskdeck(options) {
  const o = options === undefined || options === null ? {} : object(options, 'the options');
  const { baseUrl, token, rediscover } = await resolveConnection(o);
  return new TaskdeckClient({ baseUrl, token, rediscover, requestTimeoutMs: o.requestTimeoutMs,
    userAgent: o.userAgent, maxRetries: o.maxRetries });
}

module.exports = {
  VERSION, DEFAULT_REQUEST_TIMEOUT_MS, ApiPromise, TaskdeckClient, connectToTaskdeck,
};
