'use strict';

// One HTTP exchange with the service: bearer token, deadline and abort for the
// whole exchange, body included, and the mapping of failures to TaskdeckError.
const http = require('node:http');
const https = require('node:https');
const { randomUUID } = require('node:crypto');
const { TaskdeckError, taskdeckError, errorFromAnswer, retryAfterMs, webHeaders } = require('./errors.cjs');

const MAX_JSON_BODY = 16 * 1024 * 1024;
const NET_CODES = new Set(['ECONNREFUSED', 'ECONNRESET', 'EHOSTUNREACH', 'ENETUNREACH',
  'ENOTFOUND', 'EAI_AGAIN', 'EPIPE', 'ETIMEDOUT', 'ECONNABORTED', 'EADDRNOTAVAIL']);

function abortError(signal) {
  const reason = signal?.reason;
  if (reason instanceof TaskdeckError) return reason;
  return taskdeckError('aborted', 'the request was aborted', { cause: reason });
}

/** A pause that an abort ends (rejecting with the abort's error). */
function sleep(ms, signal) {
  return new Promise((resolve, reject) => {
    if (signal?.aborted) {
      reject(abortError(signal));
      return;
    }
    const onAbort = () => {
      clearTimeout(t);
      reject(abortError(signal));
    };
    const t = setTimeout(() => {
      signal?.removeEventListener('abort', onAbort);
      resolve();
    }, Math.min(ms, MAX_TIMER_MS));
    signal?.addEventListener('abort', onAbort, { once: true });
  });
}

const DEFAULT_MAX_RETRIES = 2;
const RETRY_BASE_MS = 500;
const RETRY_MAX_MS = 8000;
const RETRY_AFTER_MAX_MS = 60000;

/** Checks a maxRetries option: an integer 0 to 10, or undefined for the default. */
function checkRetries(n, name = 'maxRetries') {
  if (n === undefined || n === null) return undefined;
  if (!Number.isInteger(n) || n < 0 || n > 10) {
    throw taskdeckError('invalid_argument', `${name} must be an integer from 0 to 10`);
  }
  return n;
}

// The pause before retry number attempt + 1: Retry-After when the service gave
// one, else exponential backoff with jitter.
function retryDelay(attempt, err) {
  if (err.retryAfterMs !== null && err.retryAfterMs !== undefined) {
    return Math.min(err.retryAfterMs, RETRY_AFTER_MAX_MS);
  }
  const base = Math.min(RETRY_BASE_MS * 2 ** attempt, RETRY_MAX_MS);
  return base * (0.75 + Math.random() * 0.25);
}

// Whether the service never acted on the request: a refused connection, or a
// 503/429 answer (the service keeps no 5xx answer and does nothing for it).
function notActedOn(err) {
  return (err.code === 'unreachable' && err.cause?.code === 'ECONNREFUSED') ||
    err.status === 503 || err.status === 429;
}

function retryable(err) {
  return err instanceof TaskdeckError &&
    (err.code === 'unreachable' || err.status === 503 || err.status === 429);
}

function timeoutError(ms, what) {
  return taskdeckError('timeout', `${what}: no complete answer within ${ms} ms`);
}

/**
 * Checks a deadline option: a positive number of milliseconds (any size),
 * Infinity or null for none, undefined or 0 for the default (undefined).
 */
function checkTimeout(ms, name = 'timeoutMs') {
  if (ms === undefined || ms === 0) return undefined;
  if (ms === null || ms === Infinity) return Infinity;
  if (typeof ms !== 'number' || !Number.isFinite(ms) || ms < 0) {
    throw taskdeckError('invalid_argument',
      `${name} must be a positive number of milliseconds, or Infinity (or null) for none`);
  }
  return ms;
}

// Node's timers take at most 2^31 - 1 ms (a longer delay becomes 1 ms).
const MAX_TIMER_MS = 2 ** 31 - 1;

/**
 * setTimeout for a delay of any size: a longer one is a chain of timers;
 * Infinity arms none.  Cancel with clearLongTimeout.
 */
function setLongTimeout(fn, ms) {
  const h = { timer: null };
  if (!(ms < Infinity)) return h;
  const end = Date.now() + ms;
  const arm = (left) => {
    const step = Math.min(left, MAX_TIMER_MS);
    h.timer = setTimeout(() => {
      h.timer = null;
      const rest = end - Date.now();
      if (step === MAX_TIMER_MS && rest > 0) arm(rest);
      else fn();
    }, step);
  };
  arm(ms);
  return h;
}

function clearLongTimeout(h) {
  if (h !== null && h !== undefined && h.timer !== null) clearTimeout(h.timer);
}

class Transport {
  #auth;
  #rediscover;
  #refreshing = null;

  /**
   * rediscover: null, or an async function re-reading the discovery file
   * ({baseUrl, token}); it is called when a connection is refused, and a
   * request whose service moved is sent again to the new address.
   */
  constructor(baseUrl, token, timeoutMs, userAgent, rediscover = null, maxRetries = DEFAULT_MAX_RETRIES) {
    this.timeoutMs = timeoutMs;
    this.maxRetries = maxRetries;
    this.userAgent = userAgent;
    this.#rediscover = rediscover;
    this.agent = null;
    this.#target(baseUrl, token);
  }

  #target(baseUrl, token) {
    let url;
    try {
      url = new URL(baseUrl);
    } catch {
      throw taskdeckError('invalid_argument', 'the service URL is not a valid URL');
    }
    if (url.protocol !== 'http:' && url.protocol !== 'https:') {
      throw taskdeckError('invalid_argument', 'the service URL must start with http:// or https://');
    }
    if (typeof token !== 'string' || !/^[\x21-\x7e]{1,512}$/.test(token)) {
      throw taskdeckError('invalid_argument', 'the token must be printable ASCII without spaces');
    }
    this.baseUrl = url.origin + url.pathname.replace(/\/+$/, '');
    this.prefix = url.pathname.replace(/\/+$/, '');
    this.host = url.hostname.replace(/^\[(.*)\]$/, '$1');
    this.port = url.port !== '' ? Number(url.port) : (url.protocol === 'https:' ? 443 : 80);
    this.mod = url.protocol === 'https:' ? https : http;
    this.agent?.destroy();
    this.agent = new this.mod.Agent({ keepAlive: true, maxSockets: 8 });
    this.#auth = `Bearer ${token}`;
  }

  close() {
    this.agent.destroy();
  }

  /**
   * Re-reads the discovery file (one read for the calls that ask at once);
   * resolves true when the service is now elsewhere (or has a new token).
   */
  refresh() {
    if (this.#rediscover === null) return Promise.resolve(false);
    if (this.#refreshing === null) {
      const before = [this.baseUrl, this.#auth];
      // Never rejects: a discovery file that is missing or wrong leaves the target as it was.
      this.#refreshing = this.#rediscover().then((c) => {
        const url = new URL(c.baseUrl);
        const base = url.origin + url.pathname.replace(/\/+$/, '');
        if (base === before[0] && `Bearer ${c.token}` === before[1]) return false;
        this.#target(c.baseUrl, c.token);
        return true;
      }).catch(() => false).finally(() => {
        this.#refreshing = null;
      });
    }
    return this.#refreshing;
  }

  /**
   * Sends a request; resolves once the answer's head is in, with
   * {status, headers, res, finish}.  The deadline and the signal stay armed
   * until finish() is called (by whoever consumes the body): when they fire
   * during the body, res is destroyed with the TaskdeckError.
   */
  send(method, path, o = {}, retried = false, moved = false) {
    return new Promise((resolve, reject) => {
      const ms = o.timeoutMs ?? this.timeoutMs;
      const started = Date.now();
      const { signal } = o;
      if (signal?.aborted) {
        reject(abortError(signal));
        return;
      }
      const headers = {
        authorization: this.#auth,
        accept: o.accept ?? 'application/json',
        'user-agent': this.userAgent,
        ...o.headers,
      };
      let payload;
      if (o.body !== undefined) {
        payload = Buffer.from(JSON.stringify(o.body), 'utf8');
        headers['content-type'] = 'application/json';
        headers['content-length'] = payload.length;
      } else if (method !== 'GET' && method !== 'HEAD' && method !== 'DELETE') {
        headers['content-length'] = 0;
      }
      const req = this.mod.request({
        host: this.host, port: this.port, method, path: this.prefix + path, headers,
        agent: o.agent ?? this.agent,
      });
      let res = null;
      let done = false;
      let timer = null;
      const onAbort = () => fail(abortError(signal));
      const cleanup = () => {
        done = true;
        clearLongTimeout(timer);
        signal?.removeEventListener('abort', onAbort);
      };
      const fail = (err) => {
        if (done) return;
        cleanup();
        if (res === null) {
          req.destroy();
          reject(err);
        } else {
          res.destroy(err);
        }
      };
      if (ms > 0) timer = setLongTimeout(() => fail(timeoutError(ms, `${method} ${path}`)), ms);
      signal?.addEventListener('abort', onAbort, { once: true });
      req.on('error', (e) => {
        if (done || res !== null) return;
        // A kept-alive connection the service closed meanwhile: try once on a fresh one.
        if (req.reusedSocket && e.code === 'ECONNRESET' && !retried) {
          cleanup();
          this.send(method, path, o, true, moved).then(resolve, reject);
          return;
        }
        cleanup();
        // Refused: nothing was sent.  A restarted service listens elsewhere:
        // ask the discovery file, and send the request there.
        if (e.code === 'ECONNREFUSED' && !moved && this.#rediscover !== null) {
          this.refresh().then((changed) => {
            if (!changed) {
              reject(this.netError(e));
              return;
            }
            const left = ms - (Date.now() - started);
            if (signal?.aborted) reject(abortError(signal));
            else if (left <= 0) reject(timeoutError(ms, `${method} ${path}`));
            else this.send(method, path, { ...o, timeoutMs: left }, retried, true).then(resolve, reject);
          });
          return;
        }
        reject(this.netError(e));
      });
      req.on('response', (r) => {
        if (done) {
          r.destroy();
          return;
        }
        res = r;
        resolve({ status: r.statusCode, headers: r.headers, res: r, finish: cleanup });
      });
      req.end(payload);
    });
  }

  netError(e) {
    if (e instanceof TaskdeckError) return e;
    const code = e?.code;
    if (code !== undefined && (NET_CODES.has(code) || code.startsWith('ERR_'))) {
      const what = code === 'ECONNRESET' && e.message === 'aborted'
        ? 'the connection closed before the whole answer arrived' : code;
      return taskdeckError('unreachable',
        `cannot reach the taskdeck service at ${this.baseUrl}: ${what}`, { cause: e });
    }
    return taskdeckError('unreachable',
      `the connection to the taskdeck service at ${this.baseUrl} failed: ${e?.message ?? e}`, { cause: e });
  }

  /** Reads a whole body (at most max bytes) as text; the exchange's deadline covers it. */
  readText(p, max = MAX_JSON_BODY) {
    return new Promise((resolve, reject) => {
      const chunks = [];
      let size = 0;
      p.res.on('data', (c) => {
        size += c.length;
        if (size > max) {
          p.finish();
          p.res.destroy(taskdeckError('invalid_response',
            `the answer's body is over ${max} bytes`, { status: p.status,
              requestId: requestIdOf(p.headers) }));
          return;
        }
        chunks.push(c);
      });
      p.res.on('end', () => {
        p.finish();
        resolve(Buffer.concat(chunks).toString('utf8'));
      });
      p.res.on('error', (e) => {
        p.finish();
        reject(this.netError(e));
      });
    });
  }

  /**
   * A JSON request, retried (o.maxRetries, else the client's) when the
   * service is unreachable or answers 503 or 429, and only when that is safe:
   * a GET, a request with an Idempotency-Key, or one the service never acted
   * on (refused connection, 503, 429).  With o.autoKey a retry carries an
   * Idempotency-Key of its own, so that any retry after it is safe too.  The
   * deadline covers every attempt and pause.  Resolves with {status, headers,
   * data, requestId, response}; rejects with TaskdeckError.
   */
  async request(method, path, o = {}) {
    const max = o.maxRetries ?? this.maxRetries;
    const ms = o.timeoutMs ?? this.timeoutMs;
    const end = Date.now() + ms;
    let { headers } = o;
    for (let attempt = 0; ; attempt++) {
      const left = end - Date.now();
      if (left <= 0) throw timeoutError(ms, `${method} ${path}`);
      try {
        const r = await this.#exchange(method, path, { ...o, headers, timeoutMs: left });
        r.response.retries = attempt;
        return r;
      } catch (e) {
        if (attempt >= max || !retryable(e)) throw e;
        const keyed = headers?.['idempotency-key'] !== undefined;
        if (method !== 'GET' && !keyed && !notActedOn(e)) throw e;
        if (!keyed && o.autoKey) headers = { ...headers, 'idempotency-key': `sdk-retry-${randomUUID()}` };
        const pause = retryDelay(attempt, e);
        if (pause >= end - Date.now()) throw e;
        await sleep(pause, o.signal);
      }
    }
  }

  async #exchange(method, path, o) {
    const p = await this.send(method, path, o);
    const text = await this.readText(p);
    const requestId = requestIdOf(p.headers);
    if (p.status < 200 || p.status > 299) throw errorFromAnswer(p.status, requestId, text, p.headers);
    let data = null;
    if (text !== '') {
      try {
        data = JSON.parse(text);
      } catch {
        throw taskdeckError('invalid_response', `${method} ${path}: the answer is not JSON`,
          { status: p.status, requestId });
      }
    }
    return { status: p.status, headers: p.headers, data, requestId, response: responseMeta(p) };
  }
}

/** What withResponse() gives beside the data. */
function responseMeta(p) {
  return {
    status: p.status,
    headers: webHeaders(p.headers),
    requestId: requestIdOf(p.headers),
    idempotentReplayed: String(p.headers['idempotent-replayed'] ?? '').toLowerCase() === 'true',
    retryAfterMs: retryAfterMs(p.headers),
    retries: 0,
  };
}

function requestIdOf(headers) {
  const v = headers['x-request-id'];
  return typeof v === 'string' ? v : null;
}

module.exports = {
  MAX_JSON_BODY, abortError, sleep, DEFAULT_MAX_RETRIES, checkRetries, timeoutError, checkTimeout, MAX_TIMER_MS, setLongTimeout, clearLongTimeout, Transport, responseMeta, requestIdOf,
};
