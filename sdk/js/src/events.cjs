'use strict';

// The event stream (docs/events.md) as an async iterable: SSE parsing, the
// 1,024-event backlog, the idle timeout, validation, resume with Last-Event-ID.
const { taskdeckError, errorFromAnswer } = require('./errors.cjs');
const { abortError, checkTimeout, requestIdOf, MAX_TIMER_MS } = require('./transport.cjs');

const EVENT_BACKLOG = 1024;
const DEFAULT_IDLE_TIMEOUT_MS = 30000;
const OVERFLOW_GRACE_MS = 250;
const MAX_FRAME = 1024 * 1024;
const RECONNECT_MIN_MS = 100;
const RECONNECT_MAX_MS = 2000;

const invalidMessage = (why) => taskdeckError('event_stream_invalid_message',
  `the event stream sent a malformed frame: ${why}; stop using this stream and re-read the state`);

function filterQuery(filter) {
  if (filter === null || typeof filter !== 'object' || Array.isArray(filter)) {
    throw taskdeckError('invalid_argument', 'the event filter must be an object');
  }
  const q = new URLSearchParams();
  for (const [key, param] of [['projectId', 'project'], ['sessionId', 'session'], ['runId', 'run']]) {
    const v = filter[key] ?? filter[param];
    if (v === undefined || v === null) continue;
    if (typeof v !== 'string' || v === '') throw taskdeckError('invalid_argument', `${key} must be an id`);
    q.set(param, v);
  }
  const s = q.toString();
  return s === '' ? '/api/v1/events' : `/api/v1/events?${s}`;
}

function openEvents(transport, filter, o) {
  return new EventStream(transport, filterQuery(filter), o);
}

class EventStream {
  #t;
  #path;
  #signal;
  #connectMs;
  #idleMs;
  #reconnect;
  #queue = [];
  #ids = [];	// the SSE id of each queued event (null: none)
  #head = 0;
  #hold = [];
  #holdIds = [];
  #waiters = [];	// next() calls waiting, first first
  #failure = null;
  #closed = false;
  #res = null;
  #pending = null;
  #buf = '';
  #hello = false;
  #everHello = false;
  #streamId = null;
  #lastSeq = 0;
  #lastId = null;	// of the last event received: where a reconnect resumes
  #yieldedId = null;	// of the last event yielded: where a new subscription should resume
  #lastFrameAt = 0;
  #idleTimer = null;
  #graceTimer = null;
  #retryTimer = null;
  #backoff = RECONNECT_MIN_MS;
  #readyResolve;
  #readyReject;
  #onAbort = null;

  constructor(transport, path, o) {
    this.#t = transport;
    this.#path = path;
    this.#signal = o.signal;
    this.#connectMs = checkTimeout(o.timeoutMs);
    this.#idleMs = checkTimeout(o.idleTimeoutMs, 'idleTimeoutMs') ?? DEFAULT_IDLE_TIMEOUT_MS;
    this.#reconnect = o.reconnect !== false;
    if (o.lastEventId !== undefined && o.lastEventId !== null) {
      if (typeof o.lastEventId !== 'string' || !/^[\x21-\x7e]{1,200}$/.test(o.lastEventId)) {
        throw taskdeckError('invalid_argument', 'lastEventId must be an event id ("<streamId>:<seq>")');
      }
      this.#lastId = o.lastEventId;
      this.#yieldedId = o.lastEventId;
    }
    /** Resolves when stream.hello arrived; rejects when the stream failed before it. */
    this.ready = new Promise((resolve, reject) => {
      this.#readyResolve = resolve;
      this.#readyReject = reject;
    });
    this.ready.catch(() => {});
    if (this.#signal?.aborted) {
      this.#fail(abortError(this.#signal));
      return;
    }
    if (this.#signal) {
      this.#onAbort = () => this.#fail(abortError(this.#signal));
      this.#signal.addEventListener('abort', this.#onAbort, { once: true });
    }
    this.#lastFrameAt = Date.now();
    this.#armIdle(this.#idleMs);
    this.#connect();
  }

  /**
   * "<streamId>:<seq>" of the last event yielded (before any: where the
   * stream started); pass it as lastEventId to a new subscription to resume.
   */
  get lastEventId() {
    return this.#yieldedId;
  }

  [Symbol.asyncIterator]() {
    return this;
  }

  next() {
    if (this.#head < this.#queue.length) {
      const value = this.#queue[this.#head];
      const id = this.#ids[this.#head++];
      if (id !== null) this.#yieldedId = id;
      if (this.#head === this.#queue.length) {
        this.#queue = [];
        this.#ids = [];
        this.#head = 0;
      }
      if (this.#hold.length > 0) this.#refill();
      return Promise.resolve({ value, done: false });
    }
    if (this.#closed) return Promise.resolve({ value: undefined, done: true });
    if (this.#failure !== null) return Promise.reject(this.#failure);
    return new Promise((resolve, reject) => {
      this.#waiters.push({ resolve, reject });
    });
  }

  return() {
    this.close();
    return Promise.resolve({ value: undefined, done: true });
  }

  /** close(): `await using events = td.events(...)`. */
  async [Symbol.asyncDispose]() {
    this.close();
  }

  /** Ends the stream at once; a pending next() resolves as done. */
  close() {
    if (this.#closed) return;
    this.#closed = true;
    this.#queue = [];
    this.#ids = [];
    this.#head = 0;
    this.#hold = [];
    this.#holdIds = [];
    this.#stop();
    this.#readyReject(taskdeckError('aborted', 'the event stream was closed'));
    for (const w of this.#waiters.splice(0)) w.resolve({ value: undefined, done: true });
  }

  #stop() {
    clearTimeout(this.#idleTimer);
    clearTimeout(this.#graceTimer);
    clearTimeout(this.#retryTimer);
    this.#idleTimer = this.#graceTimer = this.#retryTimer = null;
    if (this.#onAbort !== null) this.#signal.removeEventListener('abort', this.#onAbort);
    this.#onAbort = null;
    this.#drop();
  }

  #drop() {
    if (this.#pending !== null) this.#pending.finish();
    this.#pending = null;
    if (this.#res !== null) {
      this.#res.removeAllListeners('data');
      this.#res.removeAllListeners('end');
      this.#res.on('error', () => {});
      this.#res.destroy();
    }
    this.#res = null;
  }

  // Ends the stream with err, after the events already queued.
  #fail(err) {
    if (this.#closed || this.#failure !== null) return;
    this.#failure = err;
    this.#hold = [];
    this.#holdIds = [];
    this.#stop();
    this.#readyReject(err);
    if (this.#head >= this.#queue.length) for (const w of this.#waiters.splice(0)) w.reject(err);
  }

  #armIdle(ms) {
    if (this.#idleMs === Infinity) return;
    this.#idleTimer = setTimeout(() => {
      const quiet = Date.now() - this.#lastFrameAt;
      if (quiet >= this.#idleMs) {
        this.#fail(taskdeckError('timeout',
          `no event or heartbeat arrived for ${this.#idleMs} ms; check the connection to the service`,
          { details: { idleTimeoutMs: this.#idleMs } }));
      } else {
        this.#armIdle(this.#idleMs - quiet);
      }
    }, Math.min(ms, MAX_TIMER_MS));
  }

  #connect() {
    const headers = this.#lastId !== null ? { 'last-event-id': this.#lastId } : {};
    this.#hello = false;
    this.#buf = '';
    this.#t.send('GET', this.#path, {
      accept: 'text/event-stream', headers, timeoutMs: this.#connectMs, agent: false,
    }).then((p) => {
      if (this.#closed || this.#failure !== null) {
        p.finish();
        p.res.on('error', () => {});
        p.res.destroy();
        return;
      }
      this.#pending = p;
      this.#res = p.res;
      if (p.status !== 200) {
        this.#t.readText(p, 64 * 1024).then(
          (text) => this.#dropped(errorFromAnswer(p.status, requestIdOf(p.headers), text, p.headers)),
          (e) => this.#dropped(e));
        return;
      }
      if (!String(p.headers['content-type'] ?? '').startsWith('text/event-stream')) {
        this.#fail(taskdeckError('invalid_response', 'the event stream is not text/event-stream',
          { status: p.status, requestId: requestIdOf(p.headers) }));
        return;
      }
      p.res.setEncoding('utf8');
      p.res.on('data', (chunk) => this.#feed(chunk));
      p.res.on('end', () => this.#dropped(null));
      p.res.on('error', (e) => this.#dropped(this.#t.netError(e)));
    }, (e) => this.#dropped(e));
  }

  // The connection ended or failed: reconnect (after a hello was seen once) or fail.
  #dropped(err) {
    if (this.#closed || this.#failure !== null) return;
    this.#drop();
    const transient = err === null || err.code === 'unreachable' || err.code === 'timeout' ||
      err.code === 'service_unavailable';
    if (!this.#everHello || !this.#reconnect || !transient) {
      this.#fail(err ?? taskdeckError('unreachable', 'the event stream\'s connection ended'));
      return;
    }
    const delay = this.#backoff;
    this.#backoff = Math.min(this.#backoff * 2, RECONNECT_MAX_MS);
    this.#retryTimer = setTimeout(() => {
      this.#retryTimer = null;
      this.#connect();
    }, delay);
  }

  #feed(chunk) {
    let buf = this.#buf === '' ? chunk : this.#buf + chunk;
    if (buf.indexOf('\r') >= 0) {
      const tail = buf.endsWith('\r') ? '\r' : '';
      buf = (tail ? buf.slice(0, -1) : buf).replace(/\r\n?/g, '\n') + tail;
    }
    let start = 0;
    let frames = 0;
    for (;;) {
      const end = buf.indexOf('\n\n', start);
      if (end < 0) break;
      frames++;
      if (!this.#frame(buf, start, end)) return;
      start = end + 2;
    }
    this.#buf = start === 0 ? buf : buf.slice(start);
    if (frames > 0) this.#lastFrameAt = Date.now();
    if (this.#buf.length > MAX_FRAME) this.#fail(invalidMessage('a frame over 1 MiB'));
  }

  // One frame buf[s, e); false when the stream ended with it.
  #frame(buf, s, e) {
    let id = null;
    let data = null;
    let i = s;
    while (i < e) {
      let nl = buf.indexOf('\n', i);
      if (nl < 0 || nl > e) nl = e;
      if (buf.startsWith('data:', i)) {
        const v = buf.charCodeAt(i + 5) === 32 ? i + 6 : i + 5;
        data = data === null ? buf.slice(v, nl) : `${data}\n${buf.slice(v, nl)}`;
      } else if (buf.startsWith('id:', i)) {
        id = buf.slice(buf.charCodeAt(i + 3) === 32 ? i + 4 : i + 3, nl);
      } else if (nl - i === 4 && buf.startsWith('data', i)) {
        data = data === null ? '' : `${data}\n`;
      }
      i = nl + 1;
    }
    if (data === null) return true;	// comments, event: or retry: alone
    let ev;
    try {
      ev = JSON.parse(data);
    } catch {
      this.#fail(invalidMessage('its data is not JSON'));
      return false;
    }
    if (ev === null || typeof ev !== 'object' || Array.isArray(ev) || typeof ev.type !== 'string') {
      this.#fail(invalidMessage('its data is not an object with a type'));
      return false;
    }
    const { type } = ev;
    if (!this.#hello) {
      if (type !== 'stream.hello' || typeof ev.streamId !== 'string' || ev.streamId === '' ||
          !Number.isSafeInteger(ev.headSeq) || ev.headSeq < 0) {
        this.#fail(invalidMessage('the stream did not start with stream.hello'));
        return false;
      }
      if (ev.streamId !== this.#streamId) this.#lastSeq = 0;
      this.#streamId = ev.streamId;
      if (this.#lastId === null) this.#lastId = this.#yieldedId = `${ev.streamId}:${ev.headSeq}`;
      this.#hello = true;
      this.#everHello = true;
      this.#backoff = RECONNECT_MIN_MS;
      this.#pending?.finish();	// the connect deadline ends here; the idle timer goes on
      this.#readyResolve();
      return true;
    }
    if (type === 'stream.heartbeat') return true;
    if (type === 'stream.hello') {
      this.#fail(invalidMessage('a second stream.hello'));
      return false;
    }
    const { seq } = ev;
    let eventId = null;
    if (type === 'stream.resync-required') {
      if (!Number.isSafeInteger(seq) || seq < 0) {
        this.#fail(invalidMessage('stream.resync-required without a seq'));
        return false;
      }
      if (id !== null && id === `${this.#streamId}:${seq}`) {
        this.#lastId = eventId = id;
      }
      if (seq > this.#lastSeq) this.#lastSeq = seq;
      if (ev.data?.reason === 'slow-consumer') {
        // The service dropped what this consumer had not read and ends the
        // stream: the events before the gap are yielded, then the overflow.
        this.#queue.push(...this.#hold);
        this.#ids.push(...this.#holdIds);
        this.#fail(taskdeckError('event_stream_overflow',
          'the consumer fell so far behind that the service dropped its backlog (slow-consumer); ' +
          'handle backpressure and re-read the state', { details: { seq } }));
        return false;
      }
      // The service may have restarted: the next connection goes where the discovery file says.
      this.#t.refresh();
    } else {
      if (!Number.isSafeInteger(seq) || seq <= this.#lastSeq) {
        this.#fail(invalidMessage(`an event whose seq is missing or not above ${this.#lastSeq}`));
        return false;
      }
      if (id !== `${this.#streamId}:${seq}`) {
        this.#fail(invalidMessage('an event whose id is not "<streamId>:<seq>"'));
        return false;
      }
      this.#lastSeq = seq;
      this.#lastId = eventId = id;
    }
    this.#push(ev, eventId);
    return this.#failure === null;
  }

  #push(ev, id) {
    if (this.#waiters.length > 0) {
      const w = this.#waiters.shift();
      if (id !== null) this.#yieldedId = id;
      w.resolve({ value: ev, done: false });
      return;
    }
    if (this.#hold.length === 0 && this.#queue.length - this.#head < EVENT_BACKLOG) {
      this.#queue.push(ev);
      this.#ids.push(id);
      return;
    }
    this.#hold.push(ev);
    this.#holdIds.push(id);
    if (this.#res !== null && !this.#res.isPaused()) this.#res.pause();
    if (this.#graceTimer === null) this.#armGrace();
  }

  #armGrace() {
    clearTimeout(this.#graceTimer);
    this.#graceTimer = setTimeout(() => {
      this.#graceTimer = null;
      if (this.#hold.length > 0) {
        this.#fail(taskdeckError('event_stream_overflow',
          `more than ${EVENT_BACKLOG} events waited to be consumed; handle backpressure and re-read the state`));
      }
    }, OVERFLOW_GRACE_MS);
  }

  // Moves held events into the backlog as it drains; reading resumes once none is held.
  #refill() {
    let moved = false;
    while (this.#hold.length > 0 && this.#queue.length - this.#head < EVENT_BACKLOG) {
      this.#queue.push(this.#hold.shift());
      this.#ids.push(this.#holdIds.shift());
      moved = true;
    }
    if (this.#hold.length === 0) {
      clearTimeout(this.#graceTimer);
      this.#graceTimer = null;
      if (this.#res !== null && this.#res.isPaused()) this.#res.resume();
    } else if (moved) {
      this.#armGrace();
    }
  }
}

module.exports = {
  EVENT_BACKLOG, DEFAULT_IDLE_TIMEOUT_MS, openEvents,
};
