// Retries (unreachable, 503, 429 with Retry-After; only where safe), error
// classes by family, and withResponse(): headers, request id, Retry-After and
// Idempotent-Replayed of an answer.
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import net from 'node:net';
import http from 'node:http';
import { fakeServer, startService, FAKE_TOKEN, SDK } from './harness.mjs';

const sdk = await import(SDK);
const {
  TaskdeckClient, connectToTaskdeck, TaskdeckError, NotFoundError, ConflictError, RateLimitError,
  ConnectionError, TimeoutError, AbortError, BadRequestError, InternalServerError,
} = sdk;
const fakes = [];
let svc;
before(async () => {
  svc = await startService();
});
after(async () => {
  for (const f of fakes) await f.close();
  await svc?.destroy();
});

// A fake whose answers are script[i] for request i (the last one repeats): [status, headers, body].
async function scripted(script) {
  const f = await fakeServer((req, res) => {
    const [status, headers, body] = script[Math.min(f.requests.length - 1, script.length - 1)];
    if (status === 'reset') {
      req.socket.destroy();
      return;
    }
    res.writeHead(status, { 'content-type': 'application/json', 'x-request-id': `req-${f.requests.length}`, ...headers });
    res.end(JSON.stringify(body));
  });
  fakes.push(f);
  return f;
}

const unavailable = (retryAfter) => [503, retryAfter === undefined ? {} : { 'retry-after': String(retryAfter) },
  { error: { code: 'service_unavailable', message: 'shutting down' } }];
const RUN = { id: 'run_1', status: 'queued' };

test('a GET answered 503 is retried after its Retry-After, then succeeds', async () => {
  const f = await scripted([unavailable(1), [200, {}, { ok: true }]]);
  const td = new TaskdeckClient({ baseUrl: f.url, token: FAKE_TOKEN });
  const t0 = Date.now();
  const { data, response } = await td.doctor().withResponse();
  const took = Date.now() - t0;
  assert.deepEqual(data, { ok: true });
  assert.equal(f.requests.length, 2);
  assert.ok(took >= 950, `retried after ${took} ms, Retry-After said 1 s`);
  assert.equal(response.retries, 1);
  assert.equal(response.requestId, 'req-2');
  td.close();
});

test('429: retried with Retry-After, then a RateLimitError with retryAfterMs and headers', async () => {
  const f = await scripted([[429, { 'retry-after': '0' }, { error: { code: 'rate_limited', message: 'slow down' } }]]);
  const td = new TaskdeckClient({ baseUrl: f.url, token: FAKE_TOKEN, maxRetries: 1 });
  const err = await td.getRun('run_1').catch((e) => e);
  assert.ok(err instanceof RateLimitError && err instanceof TaskdeckError, String(err));
  assert.equal(err.name, 'RateLimitError');
  assert.equal(err.status, 429);
  assert.equal(err.retryAfterMs, 0);
  assert.equal(err.headers.get('retry-after'), '0');
  assert.equal(err.requestId, 'req-2');
  assert.equal(f.requests.length, 2, 'maxRetries 1: two attempts');
  // Per call: none, or more.
  f.requests.length = 0;
  await assert.rejects(td.getRun('run_1', { maxRetries: 0 }), RateLimitError);
  assert.equal(f.requests.length, 1);
  f.requests.length = 0;
  await assert.rejects(td.getRun('run_1', { maxRetries: 3 }), RateLimitError);
  assert.equal(f.requests.length, 4);
  td.close();
});

test('startRun answered 503 is retried with an Idempotency-Key of its own; a reset after sending is not', async () => {
  const f = await scripted([unavailable(0), unavailable(0), [201, {}, RUN]]);
  const td = new TaskdeckClient({ baseUrl: f.url, token: FAKE_TOKEN });
  assert.deepEqual(await td.startRun({ project: 'prj_1', prompt: 'hi' }), RUN);
  assert.equal(f.requests.length, 3);
  assert.equal(f.requests[0].headers['idempotency-key'], undefined);
  const key = f.requests[1].headers['idempotency-key'];
  assert.match(key, /^sdk-retry-/);
  assert.equal(f.requests[2].headers['idempotency-key'], key, 'the same key on every retry');
  // The connection breaks once the service may have acted: no blind repeat of a POST.
  const g = await scripted([['reset'], [201, {}, RUN]]);
  const td2 = new TaskdeckClient({ baseUrl: g.url, token: FAKE_TOKEN });
  await assert.rejects(td2.startRun({ project: 'prj_1', prompt: 'hi' }), ConnectionError);
  assert.equal(g.requests.length, 1);
  // With a key it is safe: repeated with the same key.
  g.requests.length = 0;
  assert.deepEqual(await td2.startRun({ project: 'prj_1', prompt: 'hi' }, { idempotencyKey: 'k1' }), RUN);
  assert.deepEqual(g.requests.map((r) => r.headers['idempotency-key']), ['k1', 'k1']);
  // A GET is always safe to repeat.
  const h = await scripted([['reset'], [200, {}, RUN]]);
  const td3 = new TaskdeckClient({ baseUrl: h.url, token: FAKE_TOKEN });
  assert.deepEqual(await td3.getRun('run_1'), RUN);
  assert.equal(h.requests.length, 2);
  td.close();
  td2.close();
  td3.close();
});

test('an unreachable service is retried with backoff: one that starts meanwhile answers', async () => {
  const probe = net.createServer();
  await new Promise((r) => probe.listen(0, '127.0.0.1', r));
  const { port } = probe.address();
  await new Promise((r) => probe.close(r));
  const td = new TaskdeckClient({ baseUrl: `http://127.0.0.1:${port}`, token: FAKE_TOKEN });
  const late = http.createServer((req, res) => {
    res.writeHead(200, { 'content-type': 'application/json' });
    res.end('{"ok":true}');
  });
  setTimeout(() => late.listen(port, '127.0.0.1'), 300);
  try {
    assert.deepEqual(await td.doctor(), { ok: true });
  } finally {
    late.closeAllConnections();
    await new Promise((r) => late.close(r));
  }
  await assert.rejects(td.doctor({ maxRetries: 1 }), (e) => e instanceof ConnectionError && e.code === 'unreachable');
  await assert.rejects(td.doctor({ maxRetries: 11 }), (e) => e.code === 'invalid_argument');
  td.close();
});

test('errors by family: NotFoundError, ConflictError (stale_write with details.current), BadRequestError, TimeoutError, AbortError', async () => {
  const td = await connectToTaskdeck();
  const nf = await td.getRun('run_000000000000000000000000').catch((e) => e);
  assert.ok(nf instanceof NotFoundError && nf instanceof TaskdeckError);
  assert.equal(nf.name, 'NotFoundError');
  assert.equal(nf.code, 'not_found');
  assert.ok(nf.headers instanceof Headers);
  assert.equal(nf.requestId, nf.headers.get('x-request-id'));
  const p = await td.createProject({ name: 'errors' });
  const d = await td.getProjectSessionDefaults(p.id);
  await td.updateProjectSessionDefaults(p.id, { expectedUpdatedAt: d.updatedAt, patch: { effort: 'low' } });
  const stale = await td.updateProjectSessionDefaults(p.id,
    { expectedUpdatedAt: d.updatedAt, patch: { effort: 'high' } }).catch((e) => e);
  assert.ok(stale instanceof ConflictError, String(stale));
  assert.ok(stale.is('stale_write'));
  assert.equal(stale.details.current.defaults.effort, 'low');
  const bad = await td.createProject({ name: 7 }).catch((e) => e);
  assert.ok(bad instanceof BadRequestError && bad.code === 'invalid_request');
  const ac = new AbortController();
  ac.abort();
  const ab = await td.getProject(p.id, { signal: ac.signal }).catch((e) => e);
  assert.ok(ab instanceof AbortError && ab instanceof TaskdeckError);
  assert.equal(ab.name, 'AbortError');
  assert.equal(ab.code, 'aborted');
  const f = await fakeServer(() => {});	// never answers
  fakes.push(f);
  const silent = new TaskdeckClient({ baseUrl: f.url, token: FAKE_TOKEN, requestTimeoutMs: 200 });
  const to = await silent.doctor().catch((e) => e);
  assert.ok(to instanceof TimeoutError && to instanceof ConnectionError && to.code === 'timeout');
  silent.close();
  const five = await scripted([[500, {}, { error: { code: 'internal_error', message: 'x' } }]]);
  const td5 = new TaskdeckClient({ baseUrl: five.url, token: FAKE_TOKEN });
  await assert.rejects(td5.doctor(), InternalServerError);
  assert.equal(five.requests.length, 1, 'a 500 is not retried');
  td5.close();
  td.close();
});

test('withResponse(): status, headers, request id, and Idempotent-Replayed of a replayed createProject', async () => {
  const td = await connectToTaskdeck();
  const first = await td.createProject({ name: 'replayed' }, { idempotencyKey: 'wr-1' }).withResponse();
  const again = await td.createProject({ name: 'replayed' }, { idempotencyKey: 'wr-1' }).withResponse();
  assert.equal(first.response.status, 201);
  assert.equal(first.response.idempotentReplayed, false);
  assert.equal(again.response.idempotentReplayed, true);
  assert.equal(again.data.id, first.data.id);
  assert.match(first.response.requestId, /\S/);
  assert.match(first.response.headers.get('content-type'), /^application\/json/);
  const page = await td.listProjects({ limit: 1 }).withResponse();
  assert.equal(page.data.length, 1);
  assert.equal(page.response.status, 200);
  // A plain await still gives the data; an invalid argument rejects both ways.
  assert.equal((await td.getProject(first.data.id)).id, first.data.id);
  await assert.rejects(td.getProject('').withResponse(), (e) => e.code === 'invalid_argument');
  await assert.rejects(td.getProject(''), (e) => e.code === 'invalid_argument');
  td.close();
});
