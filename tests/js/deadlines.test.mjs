// Deadlines of any size (Node's timers stop at 2^31 - 1 ms) and an explicit
// "no deadline": Infinity or null.
import { test, after } from 'node:test';
import assert from 'node:assert/strict';
import { setTimeout as sleep } from 'node:timers/promises';
import { fakeServer, rawServer, SSE_HEAD, helloFrame, FAKE_TOKEN, SDK } from './harness.mjs';

const { TaskdeckClient, TaskdeckError } = await import(SDK);
const fakes = [];
after(async () => {
  for (const f of fakes) await f.close();
});

// A server that answers {"ok":true} after 300 ms.
async function slowServer() {
  const f = await fakeServer((req, res) => {
    setTimeout(() => {
      res.writeHead(200, { 'content-type': 'application/json' });
      res.end('{"ok":true}');
    }, 300);
  });
  fakes.push(f);
  return f;
}

const warnings = [];
process.on('warning', (w) => warnings.push(w.name));

test('a deadline of 2^31 ms or more is a long deadline, not 1 ms', async () => {
  const f = await slowServer();
  for (const ms of [2 ** 31, 2 ** 40, Number.MAX_SAFE_INTEGER]) {
    const td = new TaskdeckClient({ baseUrl: f.url, token: FAKE_TOKEN, requestTimeoutMs: ms });
    assert.deepEqual(await td.doctor(), { ok: true });
    assert.deepEqual(await td.doctor({ timeoutMs: ms }), { ok: true });
    td.close();
  }
  assert.deepEqual(warnings.filter((w) => w === 'TimeoutOverflowWarning'), []);
});

test('Infinity and null mean no deadline, per client and per call; 0 is the default', async () => {
  const f = await slowServer();
  const td = new TaskdeckClient({ baseUrl: f.url, token: FAKE_TOKEN, requestTimeoutMs: Infinity });
  assert.equal(td.requestTimeoutMs, Infinity);
  assert.deepEqual(await td.doctor(), { ok: true });
  td.close();
  const td2 = new TaskdeckClient({ baseUrl: f.url, token: FAKE_TOKEN, requestTimeoutMs: null });
  assert.equal(td2.requestTimeoutMs, Infinity);
  td2.close();
  const short = new TaskdeckClient({ baseUrl: f.url, token: FAKE_TOKEN, requestTimeoutMs: 100, maxRetries: 0 });
  await assert.rejects(short.doctor(), (e) => e instanceof TaskdeckError && e.code === 'timeout');
  assert.deepEqual(await short.doctor({ timeoutMs: Infinity }), { ok: true });
  assert.deepEqual(await short.doctor({ timeoutMs: null }), { ok: true });
  await assert.rejects(short.doctor({ timeoutMs: 0 }), (e) => e.code === 'timeout');
  await assert.rejects(short.doctor({ timeoutMs: -1 }), (e) => e.code === 'invalid_argument');
  await assert.rejects(short.doctor({ timeoutMs: NaN }), (e) => e.code === 'invalid_argument');
  short.close();
});

test('an idle timeout of 2^31 ms or Infinity keeps a quiet stream open without spinning', async () => {
  const srv = await rawServer((s) => {
    s.once('data', () => s.write(SSE_HEAD + helloFrame(0)));
  });
  fakes.push(srv);
  const td = new TaskdeckClient({ baseUrl: srv.url, token: FAKE_TOKEN });
  for (const idleTimeoutMs of [2 ** 31, Infinity, null]) {
    const before = warnings.length;
    const it = td.events({}, { idleTimeoutMs });
    await it.ready;
    const t0 = process.cpuUsage();
    const next = it.next();
    const r = await Promise.race([next.then(() => 'settled', () => 'failed'), sleep(1000).then(() => 'open')]);
    const cpu = process.cpuUsage(t0);
    assert.equal(r, 'open', `idleTimeoutMs ${idleTimeoutMs}`);
    assert.equal(warnings.length, before, 'no TimeoutOverflowWarning');
    assert.ok(cpu.user + cpu.system < 300000, `the quiet second took ${cpu.user + cpu.system} us of CPU`);
    it.close();
    assert.deepEqual(await next, { value: undefined, done: true });
  }
  td.close();
});
