'use strict';

// TaskdeckError and its families: every failure of the SDK is one of them.

const STATUS_CODES = new Map([
  [400, 'invalid_request'],
  [401, 'unauthorized'],
  [403, 'forbidden'],
  [404, 'not_found'],
  [405, 'method_not_allowed'],
  [413, 'payload_too_large'],
  [414, 'uri_too_long'],
  [429, 'rate_limited'],
  [500, 'internal_error'],
  [503, 'service_unavailable'],
  [507, 'insufficient_storage'],
]);

class TaskdeckError extends Error {
  /**
   * @param {string} code the service's code, or one found on this side
   * @param {string} message for a person; never holds the token
   * @param {{status?: number, requestId?: string|null, details?: object, cause?: unknown,
   *   headers?: Headers|null, retryAfterMs?: number|null}} [extra]
   */
  constructor(code, message, extra = {}) {
    super(message, extra.cause === undefined ? undefined : { cause: extra.cause });
    this.name = new.target.name;
    this.code = code;
    this.status = extra.status ?? 0;
    this.requestId = extra.requestId ?? null;
    this.details = extra.details ?? {};
    this.headers = extra.headers ?? null;
    this.retryAfterMs = extra.retryAfterMs ?? null;
  }

  /** Whether this error has code (narrows details in TypeScript). */
  is(code) {
    return this.code === code;
  }
}

/** 400, 414 and 422: the request is wrong as sent (invalid_request, invalid_cwd, idempotency_conflict, ...). */
class BadRequestError extends TaskdeckError {}
/** 401 unauthorized: no token or a wrong one. */
class AuthenticationError extends TaskdeckError {}
/** 403 forbidden. */
class PermissionDeniedError extends TaskdeckError {}
/** 404 not_found: details.resource and details.id name what is missing. */
class NotFoundError extends TaskdeckError {}
/** 409: stale_write, stale_plan, plan_not_pending, session_busy, cwd_mismatch, ... */
class ConflictError extends TaskdeckError {}
/** 429: too many requests; retryAfterMs says when to come back. */
class RateLimitError extends TaskdeckError {}
/** 5xx: internal_error, service_unavailable, idempotency_unavailable, insufficient_storage, ... */
class InternalServerError extends TaskdeckError {}
/** unreachable (no connection, or it broke) and service_not_found (no service running). */
class ConnectionError extends TaskdeckError {}
/** timeout: a deadline passed (a request's, a wait's, or an event stream's idle timeout). */
class TimeoutError extends ConnectionError {}
/** aborted: the caller's AbortSignal fired, or the stream was closed; its name is "AbortError". */
class AbortError extends TaskdeckError {}
/** event_stream_overflow and event_stream_invalid_message. */
class EventStreamError extends TaskdeckError {}

function classOf(code, status) {
  switch (code) {
    case 'timeout': return TimeoutError;
    case 'aborted': return AbortError;
    case 'unreachable':
    case 'service_not_found': return ConnectionError;
    case 'event_stream_overflow':
    case 'event_stream_invalid_message': return EventStreamError;
    case 'not_found': return NotFoundError;
    default: break;
  }
  if (status === 400 || status === 414 || status === 422) return BadRequestError;
  if (status === 401) return AuthenticationError;
  if (status === 403) return PermissionDeniedError;
  if (status === 404) return NotFoundError;
  if (status === 409) return ConflictError;
  if (status === 429) return RateLimitError;
  if (status >= 500) return InternalServerError;
  return TaskdeckError;
}

/** A TaskdeckError of the class its code and status call for. */
function taskdeckError(code, message, extra = {}) {
  const C = classOf(code, extra.status ?? 0);
  return new C(code, message, extra);
}

/** Retry-After (seconds, or an HTTP date) in ms, or null. */
function retryAfterMs(headers) {
  const v = headers?.['retry-after'];
  if (typeof v !== 'string' || v === '') return null;
  if (/^\d+$/.test(v.trim())) return Number(v.trim()) * 1000;
  const t = Date.parse(v);
  return Number.isNaN(t) ? null : Math.max(0, t - Date.now());
}

/** Node's header object as a web Headers. */
function webHeaders(h) {
  const headers = new Headers();
  for (const [k, v] of Object.entries(h ?? {})) {
    if (Array.isArray(v)) for (const x of v) headers.append(k, x);
    else if (v !== undefined) headers.set(k, String(v));
  }
  return headers;
}

// The error of an answer outside 2xx, from its {"error":{...}} body when it has one.
function errorFromAnswer(status, requestId, bodyText, rawHeaders) {
  const meta = { status, requestId, headers: webHeaders(rawHeaders), retryAfterMs: retryAfterMs(rawHeaders) };
  let err = null;
  try {
    const doc = JSON.parse(bodyText);
    if (doc && typeof doc === 'object' && doc.error && typeof doc.error === 'object' &&
        typeof doc.error.code === 'string') {
      err = doc.error;
    }
  } catch {
    // not JSON: mapped from the status below
  }
  if (err !== null) {
    const details = err.details && typeof err.details === 'object' ? err.details : {};
    const message = typeof err.message === 'string' && err.message !== ''
      ? err.message : `HTTP ${status} ${err.code}`;
    return taskdeckError(err.code, message, { ...meta, details });
  }
  const code = STATUS_CODES.get(status) ?? 'invalid_response';
  return taskdeckError(code, `HTTP ${status} without a taskdeck error body`, meta);
}

module.exports = {
  TaskdeckError, BadRequestError, AuthenticationError, PermissionDeniedError, NotFoundError, ConflictError, RateLimitError, InternalServerError, ConnectionError, TimeoutError, AbortError, EventStreamError, taskdeckError, retryAfterMs, webHeaders, errorFromAnswer,
};
