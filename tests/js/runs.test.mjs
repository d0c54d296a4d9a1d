// waitForRun (plans, wait timeouts, abort), request deadlines and aborts,
// and the deadline of a streamed download.
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { setTimeout as sleep } from 'node:timers/promises';
import { startService, fakeServer, rawServer, FAKE_TOKEN, SDK } from './harness.mjs';

const { connectToTaskdeck, TaskdeckError } = await import(SDK);
let svc;
let td;
let project;

before(async () => {
  svc = await startService();
  td = await connectToTaskdeck();
  project = (await td.createProject({ name: 'runs' })).id;
});
after(async () => {
  td?.close();
  await svc?.destroy();
});

const replay = (model) => ({ provider: 'replay', model });

test('plan cycle: returnOnAttention, revise, stale pair, approve, not pending', async () => {
  const run = await td.startRun({ project, prompt: 'Plan the report', turnIntent: 'plan-first',
    config: replay('plan') });
  const waiting = await td.waitForRun(run.id, { timeoutMs: 60000, returnOnAttention: true });
  assert.equal(waiting.status, 'running');
  assert.equal(waiting.attention.kind, 'plan-approval');
  const plan = await td.getSessionPlan(run.sessionId);
  assert.equal(plan.status, 'awaiting-approval');
  assert.equal(plan.version, waiting.attention.planVersion);
  assert.equal(plan.revision, waiting.attention.planRevision);

  // Without returnOnAttention the wait goes on until its deadline: the run keeps waiting.
  await assert.rejects(td.waitForRun(run.id, { timeoutMs: 800 }), { code: 'timeout' });
  assert.equal((await td.getRun(run.id)).attention.kind, 'plan-approval');

  await td.respondSessionPlan(run.sessionId, { decision: 'revise', version: plan.version,
    revision: plan.revision, feedback: 'use the 2025 figures' });
  const again = await td.waitForRun(run.id, { timeoutMs: 60000, returnOnAttention: true });
  const v2 = await td.getSessionPlan(run.sessionId);
  assert.equal(v2.version, plan.version + 1);
  assert.equal(again.attention.planVersion, v2.version);
  assert.match(v2.summary, /2025 figures/);
  await assert.rejects(td.respondSessionPlan(run.sessionId,
    { decision: 'approve', version: plan.version, revision: plan.revision }),
  (e) => e instanceof TaskdeckError && e.code === 'stale_plan' && e.status === 409);
  await td.respondSessionPlan(run.sessionId, { decision: 'approve', version: v2.version, revision: v2.revision });
  const done = await td.waitForRun(run.id, { timeoutMs: 60000, returnOnAttention: true });
  assert.equal(done.status, 'completed');
  const final = await td.getSessionPlan(run.sessionId);
  await assert.rejects(td.respondSessionPlan(run.sessionId,
    { decision: 'approve', version: final.version, revision: final.revision }), { code: 'plan_not_pending' });
});

test('a wait timeout rejects with timeout and leaves the run running', async () => {
  const run = await td.startRun({ project, prompt: 'slow', config: replay('slow') });
  const t0 = Date.now();
  const err = await td.waitForRun(run.id, { timeoutMs: 1500 }).catch((e) => e);
  const took = Date.now() - t0;
  assert.ok(err instanceof TaskdeckError);
  assert.equal(err.code, 'timeout');
  assert.match(err.message, /the run goes on/);
  // The wait's 1.5 s, not the run's end (its transcript waits 25 s).
  assert.ok(took >= 1400 && took < 20000, `the wait took ${took} ms`);
  await sleep(300);
  const still = await td.getRun(run.id);
  assert.ok(still.status === 'running' || still.status === 'queued', `run is ${still.status}`);
  assert.equal(still.cancelRequestedAt, null, 'the wait did not cancel the run');

  // An abort ends the wait at once, and does not cancel the run either.
  const ac = new AbortController();
  setTimeout(() => ac.abort(), 300);
  const t1 = Date.now();
  await assert.rejects(td.waitForRun(run.id, { timeoutMs: 60000, signal: ac.signal }), { code: 'aborted' });
  assert.ok(Date.now() - t1 < 30000);
  assert.equal((await td.getRun(run.id)).cancelRequestedAt, null);
  await td.cancelRun(run.id);
  assert.equal((await td.waitForRun(run.id, { timeoutMs: 60000 })).status, 'cancelled');
});

test('waitForRun retries an unreachable service until its deadline', async () => {
  const server = await rawServer((s) => s.destroy());
  const dead = await connectToTaskdeck({ baseUrl: server.url, token: FAKE_TOKEN });
  await server.close();
  const t0 = Date.now();
  await assert.rejects(dead.waitForRun('run_x', { timeoutMs: 1000 }), { code: 'timeout' });
  assert.ok(Date.now() - t0 >= 900);
  await assert.rejects(dead.getRun('run_x'), { code: 'unreachable' });
  // Other errors end the wait at once.
  await assert.rejects(td.waitForRun('run_000000000000000000000000', { timeoutMs: 10000 }), { code: 'not_found' });
});

test('request deadline: per call, per client, and an abort signal', async () => {
  const silent = await fakeServer(() => {});	// never answers
  try {
    const c = await connectToTaskdeck({ baseUrl: silent.url, token: FAKE_TOKEN, requestTimeoutMs: 400 });
    let t0 = Date.now();
    await assert.rejects(c.getRun('run_x'), { code: 'timeout' });
    assert.ok(Date.now() - t0 >= 350, 'the client deadline was kept');
    // Against a client deadline far away, so that no machine is too slow for it.
    const far = await connectToTaskdeck({ baseUrl: silent.url, token: FAKE_TOKEN, requestTimeoutMs: 60000 });
    t0 = Date.now();
    await assert.rejects(far.getRun('run_x', { timeoutMs: 150 }), { code: 'timeout' });
    assert.ok(Date.now() - t0 < 30000, 'the per-call deadline wins');
    far.close();
    const ac = new AbortController();
    setTimeout(() => ac.abort(), 100);
    await assert.rejects(c.listProjects({ signal: ac.signal, timeoutMs: 10000 }),
      (e) => e instanceof TaskdeckError && e.code === 'aborted');
    const sent = silent.requests.length;
    await assert.rejects(c.getRun('run_x', { signal: AbortSignal.abort() }), { code: 'aborted' });
    await sleep(100);
    assert.equal(silent.requests.length, sent, 'an aborted signal sends nothing');
    c.close();
  } finally {
    await silent.close();
  }
});

test('answers that are not the service\'s: invalid_response, bodiless errors, request id', async () => {
  const fake = await fakeServer((req, res) => {
    if (req.url.includes('html')) {
      res.writeHead(200, { 'content-type': 'text/html' });
      res.end('<html></html>');
    } else if (req.url.includes('huge')) {
      res.writeHead(200, { 'content-type': 'application/json' });
      const chunk = Buffer.alloc(1024 * 1024, 0x20);
      for (let i = 0; i < 17; i++) res.write(chunk);
      res.end('{}');
    } else if (req.url.includes('bare')) {
      res.writeHead(401);
      res.end();
    } else {
      res.writeHead(500, { 'content-type': 'application/json', 'x-request-id': 'req_abc' });
      res.end('{"error":{"code":"internal_error","message":"boom","details":{"x":1}}}');
    }
  });
  try {
    const c = await connectToTaskdeck({ baseUrl: fake.url, token: FAKE_TOKEN });
    await assert.rejects(c.getRun('html'), { code: 'invalid_response', status: 200 });
    await assert.rejects(c.getRun('huge'), { code: 'invalid_response' });
    await assert.rejects(c.getRun('bare'), { code: 'unauthorized', status: 401 });
    await assert.rejects(c.getRun('other'), (e) => e.code === 'internal_error' && e.status === 500 &&
      e.requestId === 'req_abc' && e.details.x === 1 && e.message === 'boom');
    assert.equal(fake.requests[0].headers.authorization, `Bearer ${FAKE_TOKEN}`);
    assert.equal(fake.requests[0].url, '/api/v1/runs/html');
    c.close();
  } finally {
    await fake.close();
  }
});

test('the deadline covers a streamed download\'s body; an abort ends it too', async () => {
  const fake = await fakeServer((req, res) => {
    res.writeHead(200, { 'content-type': 'application/octet-stream', 'content-length': 1000000 });
    const t = setInterval(() => res.write(Buffer.alloc(1000, 1)), 50);
    res.on('close', () => clearInterval(t));
  });
  try {
    const c = await connectToTaskdeck({ baseUrl: fake.url, token: FAKE_TOKEN });
    const t0 = Date.now();
    const res = await c.downloadArtifact('art_x', { timeoutMs: 700 });
    assert.equal(res.status, 200, 'the head came before the deadline');
    const err = await res.arrayBuffer().catch((e) => e);
    const took = Date.now() - t0;
    assert.ok(err instanceof TaskdeckError, `got ${err}`);
    assert.equal(err.code, 'timeout');
    assert.ok(took >= 600 && took < 30000, `failed after ${took} ms`);

    const ac = new AbortController();
    const res2 = await c.downloadArtifact('art_x', { signal: ac.signal, timeoutMs: 60000 });
    const reader = res2.body.getReader();
    await reader.read();
    ac.abort();
    await assert.rejects((async () => { for (;;) if ((await reader.read()).done) break; })(), { code: 'aborted' });
    assert.equal(fake.requests[0].url, '/api/v1/artifacts/art_x/content');
    c.close();
  } finally {
    await fake.close();
  }
});

test('a download that ends early is an error, not a short file', async () => {
  const server = await rawServer((s) => {
    s.once('data', () => {
      s.write('HTTP/1.1 200 OK\r\nContent-Length: 5000\r\nContent-Type: text/plain\r\n\r\n');
      s.end('x'.repeat(100));
    });
  });
  try {
    const c = await connectToTaskdeck({ baseUrl: server.url, token: FAKE_TOKEN });
    const res = await c.downloadArtifact('art_x');
    await assert.rejects(res.arrayBuffer(), { code: 'unreachable' });
    c.close();
  } finally {
    await server.close();
  }
});

test('usage of a session and a project: counted, cache tokens too, no cost without a price', async () => {
  const p = (await td.createProject({ name: 'usage' })).id;
  const run = await td.startRun({ project: p, prompt: 'hello', config: replay('quick') });
  const done = await td.waitForRun(run.id, { timeoutMs: 60000 });
  assert.equal(done.status, 'completed');
  assert.ok(done.usage.inputTokens > 0);
  assert.equal(done.usage.cacheReadTokens, 0);
  assert.equal(done.cost, null);
  const s = await td.getSessionUsage(run.sessionId);
  assert.equal(s.runs, 1);
  assert.equal(s.inputTokens, done.usage.inputTokens);
  assert.equal(s.outputTokens, done.usage.outputTokens);
  assert.equal(s.cost, null);
  assert.deepEqual(s.byModel.map((m) => [m.provider, m.model, m.runs]), [['replay', 'quick', 1]]);
  const whole = await td.getProjectUsage(p);
  assert.equal(whole.inputTokens, s.inputTokens);
  await assert.rejects(td.getSessionUsage('ses_nothere'), { code: 'not_found' });
});
