// One HTTP exchange with the service: bearer token, deadline and abort for the
// whole exchange, body included, and the mapping of failures to TaskdeckError.
import http from 'node:http';
import https from 'node:https';
import { TaskdeckError, errorFromAnswer } from './errors.js';

export const MAX_JSON_BODY = 16 * 1024 * 1024;
const NET_CODES = new Set(['ECONNREFUSED', 'ECONNRESET', 'EHOSTUNREACH', 'ENETUNREACH',
  'ENOTFOUND', 'EAI_AGAIN', 'EPIPE', 'ETIMEDOUT', 'ECONNABORTED', 'EADDRNOTAVAIL']);

export function abortError(signal) {
  const reason = signal?.reason;
  if (reason instanceof TaskdeckError) return reason;
  return new TaskdeckError('aborted', 'the request was aborted', { cause: reason });
}

export function timeoutError(ms, what) {
  return new TaskdeckError('timeout', `${what}: no complete answer within ${ms} ms`);
}

/** Checks a timeoutMs option: a positive number, or undefined/0 for the default. */
export function checkTimeout(ms, name = 'timeoutMs') {
  if (ms === undefined || ms === null || ms === 0) return undefined;
  if (typeof ms !== 'number' || !Number.isFinite(ms) || ms < 0) {
    throw new TaskdeckError('invalid_argument', `${name} must be a positive number of milliseconds`);
  }
  return ms;
}

export class Transport {
  #auth;

  constructor(baseUrl, token, timeoutMs, userAgent) {
    let url;
    try {
      url = new URL(baseUrl);
    } catch {
      throw new TaskdeckError('invalid_argument', 'the service URL is not a valid URL');
    }
    if (url.protocol !== 'http:' && url.protocol !== 'https:') {
      throw new TaskdeckError('invalid_argument', 'the service URL must start with http:// or https://');
    }
    if (typeof token !== 'string' || !/^[\x21-\x7e]{1,512}$/.test(token)) {
      throw new TaskdeckError('invalid_argument', 'the token must be printable ASCII without spaces');
    }
    this.baseUrl = url.origin + url.pathname.replace(/\/+$/, '');
    this.prefix = url.pathname.replace(/\/+$/, '');
    this.host = url.hostname.replace(/^\[(.*)\]$/, '$1');
    this.port = url.port !== '' ? Number(url.port) : (url.protocol === 'https:' ? 443 : 80);
    this.mod = url.protocol === 'https:' ? https : http;
    this.timeoutMs = timeoutMs;
    this.userAgent = userAgent;
    this.agent = new this.mod.Agent({ keepAlive: true, maxSockets: 8 });
    this.#auth = `Bearer ${token}`;
  }

  close() {
    this.agent.destroy();
  }

  /**
   * Sends a request; resolves once the answer's head is in, with
   * {status, headers, res, finish}.  The deadline and the signal stay armed
   * until finish() is called (by whoever consumes the body): when they fire
   * during the body, res is destroyed with the TaskdeckError.
   */
  send(method, path, o = {}, retried = false) {
    return new Promise((resolve, reject) => {
      const ms = o.timeoutMs ?? this.timeoutMs;
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
        if (timer !== null) clearTimeout(timer);
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
      if (ms > 0) timer = setTimeout(() => fail(timeoutError(ms, `${method} ${path}`)), ms);
      signal?.addEventListener('abort', onAbort, { once: true });
      req.on('error', (e) => {
        if (done || res !== null) return;
        // A kept-alive connection the service closed meanwhile: try once on a fresh one.
        if (req.reusedSocket && e.code === 'ECONNRESET' && !retried) {
          cleanup();
          this.send(method, path, o, true).then(resolve, reject);
          return;
        }
        cleanup();
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
      return new TaskdeckError('unreachable',
        `cannot reach the taskdeck service at ${this.baseUrl}: ${what}`);
    }
    return new TaskdeckError('unreachable',
      `the connection to the taskdeck service at ${this.baseUrl} failed: ${e?.message ?? e}`);
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
          p.res.destroy(new TaskdeckError('invalid_response',
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

  /** A JSON request: resolves with {status, headers, data}; rejects with TaskdeckError. */
  async request(method, path, o = {}) {
    const p = await this.send(method, path, o);
    const text = await this.readText(p);
    const requestId = requestIdOf(p.headers);
    if (p.status < 200 || p.status > 299) throw errorFromAnswer(p.status, requestId, text);
    let data = null;
    if (text !== '') {
      try {
        data = JSON.parse(text);
      } catch {
        throw new TaskdeckError('invalid_response', `${method} ${path}: the answer is not JSON`,
          { status: p.status, requestId });
      }
    }
    return { status: p.status, headers: p.headers, data, requestId };
  }
}

export function requestIdOf(headers) {
  const v = headers['x-request-id'];
  return typeof v === 'string' ? v : null;
}
