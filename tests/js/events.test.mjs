// events(): a real taskdeckd for order, resync and resume; fake servers for
// the failure signals (malformed frame, idle timeout, overflow).
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { setTimeout as sleep } from 'node:timers/promises';
import {
  startService, rawServer, cuttableProxy, SSE_HEAD, STREAM, helloFrame, eventFrame, FAKE_TOKEN, SDK,
} from './harness.mjs';

const { connectToTaskdeck, TaskdeckError, EVENT_BACKLOG } = await import(SDK);
let svc;
let td;

before(async () => {
  svc = await startService();
  td = await connectToTaskdeck();
});
const fakes = [];
after(async () => {
  td?.close();
  for (const f of fakes) await f.close();	// those a failed test left open
  await svc?.destroy();
});

const replay = (model) => ({ provider: 'replay', model });

// Events of it until run.finished of runId (or limit events), as an array;
// the iterator stays open (a for-await break would close it).
async function collect(it, runId, limit = 100000) {
  const out = [];
  while (out.length < limit) {
    const { value: e, done } = await it.next();
    if (done) break;
    out.push(e);
    if (e.type === 'run.finished' && e.runId === runId) break;
  }
  return out;
}

test('a run\'s events arrive in order after ready, without control frames', async () => {
  const p = await td.createProject({ name: 'events' });
  const it = td.events({ projectId: p.id });
  await it.ready;
  const run = await td.startRun({ project: p.id, prompt: 'hi', config: replay('quick') });
  const events = await collect(it, run.id);
  assert.equal(events[0].type, 'run.queued', 'the earliest event is there');
  for (let i = 1; i < events.length; i++) assert.ok(events[i].seq > events[i - 1].seq);
  for (const e of events) {
    assert.ok(!e.type.startsWith('stream.'), `control frame ${e.type} yielded`);
    assert.equal(e.projectId, p.id);
  }
  const text = events.filter((e) => e.type === 'run.output').map((e) => e.data.delta).join('');
  const done = await td.getRun(run.id);
  assert.equal(text, done.output);
  assert.equal(events.at(-1).data.status, 'completed');
  assert.match(it.lastEventId, new RegExp(`^[0-9a-f]{32}:${events.at(-1).seq}$`));
  it.close();
  assert.deepEqual(await it.next(), { value: undefined, done: true });
});

test('stream.resync-required is yielded for an id of another stream', async () => {
  const it = td.events({}, { lastEventId: `${'0'.repeat(32)}:5` });
  await it.ready;
  let first = null;
  for await (const e of it) {
    first = e;
    break;
  }
  assert.equal(first.type, 'stream.resync-required');
  assert.equal(first.data.reason, 'stream-changed');
  for (const k of ['projectId', 'sessionId', 'runId']) assert.equal(first[k], null, `${k} of an unfiltered resync`);
  // The loop's break closed the stream.
  assert.deepEqual(await it.next(), { value: undefined, done: true });
});

test('stream.resync-required carries the ids of the filter, so a check on the run id keeps it', async () => {
  const p = await td.createProject({ name: 'resync-ids' });
  const run = await td.startRun({ project: p.id, prompt: 'hi', config: replay('quick') });
  const it = td.events({ runId: run.id }, { lastEventId: `${'0'.repeat(32)}:5` });
  const { value: e } = await it.next();
  it.close();
  assert.equal(e.type, 'stream.resync-required');
  assert.equal(e.runId, run.id);
  assert.equal(e.sessionId, null);
  assert.equal(e.projectId, null);
  assert.ok(Number.isSafeInteger(e.seq) && typeof e.time === 'string');
});

test('close and resume with lastEventId: no gap, no duplicate', async () => {
  const p = await td.createProject({ name: 'resume' });
  const whole = td.events({ projectId: p.id });
  const part = td.events({ projectId: p.id });
  await Promise.all([whole.ready, part.ready]);
  const run = await td.startRun({ project: p.id, prompt: 'go', config: replay('steady') });
  const first = await collect(part, run.id, 6);
  const id = part.lastEventId;
  part.close();
  await sleep(700);	// events go by while nobody listens on this one
  const again = td.events({ projectId: p.id }, { lastEventId: id });
  const second = await collect(again, run.id);
  const all = await collect(whole, run.id);
  assert.deepEqual([...first, ...second].map((e) => e.seq), all.map((e) => e.seq));
  assert.ok(second.length > 0 && first.length === 6);
  again.close();
  whole.close();
});

test('a dropped connection is resumed with Last-Event-ID: no gap, no duplicate', async () => {
  const p = await td.createProject({ name: 'drop' });
  const proxy = await cuttableProxy(svc.url);
  try {
    const viaProxy = await connectToTaskdeck({ baseUrl: proxy.url, token: svc.token });
    const direct = td.events({ projectId: p.id });
    const cut = viaProxy.events({ projectId: p.id });
    await Promise.all([direct.ready, cut.ready]);
    const run = await td.startRun({ project: p.id, prompt: 'go', config: replay('steady') });
    const before = await collect(cut, run.id, 5);
    proxy.cut();
    const rest = await collect(cut, run.id);
    const all = await collect(direct, run.id);
    assert.ok(proxy.connections >= 2, 'the iterator connected again');
    assert.deepEqual([...before, ...rest].map((e) => e.seq), all.map((e) => e.seq));
    assert.equal(rest.at(-1).type, 'run.finished');
    cut.close();
    direct.close();
    viaProxy.close();
  } finally {
    await proxy.close();
  }
});

test('real service: a consumer that stops reading during a burst gets event_stream_overflow', async () => {
  const p = await td.createProject({ name: 'overflow' });
  const it = td.events({ projectId: p.id });
  await it.ready;
  const run = await td.startRun({ project: p.id, prompt: 'burst', config: replay('burst') });
  await td.waitForRun(run.id, { timeoutMs: 60000 });	// 10,000 events go by unread
  await sleep(500);
  let n = 0;
  let last = 0;
  const err = await (async () => {
    for await (const e of it) {
      assert.ok(e.seq > last);
      last = e.seq;
      n++;
    }
  })().then(() => null, (e) => e);
  assert.equal(err?.code, 'event_stream_overflow', `after ${n} events: ${err}`);
  assert.equal(n, EVENT_BACKLOG, err.message);
});

test('real service: a consumer that reads steadily but too slowly is told with event_stream_overflow', async () => {
  const p = await td.createProject({ name: 'slow-steady' });
  const it = td.events({ projectId: p.id });
  await it.ready;
  // 20,000 deltas at once: more than the service queues for one subscriber.
  const runs = await Promise.all([1, 2].map(() =>
    td.startRun({ project: p.id, prompt: 'burst', config: replay('burst') })));
  let n = 0;
  let last = 0;
  let finished = 0;
  const t0 = Date.now();
  const err = await (async () => {
    for await (const e of it) {
      assert.ok(e.seq > last, 'in order');
      last = e.seq;
      assert.notEqual(e.type, 'stream.resync-required', `the gap was yielded as an event after ${n}`);
      if (e.type === 'run.finished' && ++finished === 2) break;
      // Steady but slow for up to 20 s (at most 200 events/s, never still for 250 ms), then
      // fast: far below what even a loaded sanitizer build of the service sends.
      if (++n % 2 === 0 && Date.now() - t0 < 20000) await sleep(10);
    }
  })().then(() => null, (e) => e);
  assert.equal(err?.code, 'event_stream_overflow', `after ${n} events, ${finished} runs finished: ${err}`);
  for (const r of runs) await td.waitForRun(r.id, { timeoutMs: 60000 });
});

test('Symbol.asyncDispose (await using) closes a stream and a client', async () => {
  const c = await connectToTaskdeck();
  const it = c.events({});
  await it.ready;
  const waiting = it.next();
  await it[Symbol.asyncDispose]();
  assert.deepEqual(await waiting, { value: undefined, done: true });
  await c[Symbol.asyncDispose]();
});

test('two next() calls pending at once both settle, in order; close() settles those still waiting', async () => {
  const p = await td.createProject({ name: 'two-next' });
  const it = td.events({ projectId: p.id });
  await it.ready;
  const a = it.next();
  const b = it.next();
  const c = it.next();
  const run = await td.startRun({ project: p.id, prompt: 'hi', config: replay('quick') });
  const [ea, eb] = await Promise.all([a, b]);
  assert.equal(ea.value.type, 'run.queued');
  assert.ok(eb.value.seq > ea.value.seq);
  assert.equal((await c).done, false);
  const d = it.next();
  const e = it.next();
  it.close();
  const settled = await Promise.race([Promise.all([d, e]), sleep(2000).then(() => 'pending')]);
  assert.notEqual(settled, 'pending', 'close() settled both waiting next() calls');
  for (const r of settled) assert.ok(r.done === true || r.value.projectId === p.id);
  await td.waitForRun(run.id, { timeoutMs: 30000 });
});

test('real service: a service that stops sending fails the stream with the idle timeout', async () => {
  const it = td.events({}, { idleTimeoutMs: 1500 });
  await it.ready;
  process.kill(svc.pid, 'SIGSTOP');
  try {
    const t0 = Date.now();
    await assert.rejects(it.next(), (e) => e instanceof TaskdeckError && e.code === 'timeout');
    const took = Date.now() - t0;
    // The 1.5 s idle timeout ended it: the stopped service never would.
    assert.ok(took >= 1000 && took < 60000, `failed after ${took} ms`);
  } finally {
    process.kill(svc.pid, 'SIGCONT');
  }
});

test('ready rejects when the connection fails before stream.hello', async () => {
  const bad = await connectToTaskdeck({ baseUrl: svc.url, token: 'e'.repeat(64) });
  const it = bad.events();
  await assert.rejects(it.ready, (e) => e instanceof TaskdeckError && e.code === 'unauthorized');
  await assert.rejects(it.next(), { code: 'unauthorized' });
  const server = await rawServer((s) => s.destroy());
  const gone = await connectToTaskdeck({ baseUrl: server.url, token: FAKE_TOKEN });
  await server.close();
  await assert.rejects(gone.events().ready, { code: 'unreachable' });
  await assert.rejects(td.events({ runId: 'not-an-id' }).ready, { code: 'invalid_request' });
});

// A fake event stream: the head, then the frames of script (strings or waits in ms).
async function fakeStream(script) {
  const server = await rawServer(async (s) => {
    s.once('data', async () => {
      s.write(SSE_HEAD);
      for (const part of script) {
        if (typeof part === 'number') await sleep(part, undefined, { ref: false });
        else if (!s.destroyed) s.write(part);
      }
    });
  });
  const c = await connectToTaskdeck({ baseUrl: server.url, token: FAKE_TOKEN });
  fakes.push({ close: () => server.close() });
  return { server, c };
}

test('heartbeats are not yielded; a frame split byte by byte is one event', async () => {
  const hb = 'event: stream.heartbeat\ndata: {"type":"stream.heartbeat","time":"x"}\n\n';
  const split = [...eventFrame(2)];
  const { server, c } = await fakeStream([helloFrame(), hb, eventFrame(1), hb, ':comment\n\n', ...split, hb]);
  const it = c.events();
  await it.ready;
  const a = await it.next();
  const b = await it.next();
  assert.deepEqual([a.value.seq, b.value.seq], [1, 2]);
  assert.equal(b.value.data.delta, 'd2');
  it.close();
  await server.close();
});

const MALFORMED = {
  'data that is not JSON': [helloFrame(), eventFrame(1), 'id: x\ndata: {"seq":2,\n\n'],
  'no stream.hello first': [eventFrame(1)],
  'an id that is not <streamId>:<seq>': [helloFrame(), eventFrame(1), eventFrame(2).replace(`${STREAM}:2`, `${STREAM}:9`)],
  'a seq that goes back': [helloFrame(), eventFrame(1), eventFrame(3), eventFrame(2)],
  'a frame over 1 MiB': [helloFrame(), eventFrame(1), `data: ${'x'.repeat(1100000)}`],
  'data without a type': [helloFrame(), eventFrame(1), 'data: {"seq":2}\n\n'],
};

for (const [what, script] of Object.entries(MALFORMED)) {
  test(`event_stream_invalid_message: ${what}`, async () => {
    const { server, c } = await fakeStream(script);
    const it = c.events();
    const seen = [];
    const err = await (async () => {
      for await (const e of it) seen.push(e.seq);
    })().then(() => null, (e) => e);
    assert.ok(err instanceof TaskdeckError, `got ${err}`);
    assert.equal(err.code, 'event_stream_invalid_message');
    // The events before the bad frame were yielded first.
    assert.deepEqual(seen, what === 'no stream.hello first' ? [] : (what === 'a seq that goes back' ? [1, 3] : [1]));
    if (what === 'no stream.hello first') await assert.rejects(it.ready, { code: 'event_stream_invalid_message' });
    await server.close();
  });
}

test('no frame for the idle timeout fails the iterator with a timeout error', async () => {
  const { server, c } = await fakeStream([helloFrame(), eventFrame(1), 60000]);
  const it = c.events({}, { idleTimeoutMs: 400 });
  await it.ready;
  assert.equal((await it.next()).value.seq, 1);
  const t0 = Date.now();
  await assert.rejects(it.next(), (e) => e instanceof TaskdeckError && e.code === 'timeout' &&
    e.details.idleTimeoutMs === 400);
  const took = Date.now() - t0;
  // The 400 ms idle timeout, not the 60 s the fake server holds the stream.
  assert.ok(took >= 250 && took < 30000, `failed after ${took} ms`);
  await server.close();
});

test('heartbeats keep an idle stream alive', async () => {
  const hb = 'data: {"type":"stream.heartbeat","time":"x"}\n\n';
  const { server, c } = await fakeStream([helloFrame(), 200, hb, 200, hb, 200, hb, 200, hb, eventFrame(1)]);
  const it = c.events({}, { idleTimeoutMs: 500 });
  assert.equal((await it.next()).value.seq, 1);
  it.close();
  await server.close();
});

test(`past ${EVENT_BACKLOG} unconsumed events the iterator fails with event_stream_overflow`, async () => {
  const frames = [helloFrame()];
  for (let i = 1; i <= 3000; i++) frames.push(eventFrame(i));
  const { server, c } = await fakeStream([frames.join('')]);
  const it = c.events();
  await it.ready;
  await sleep(1500);	// a consumer that does not read
  let n = 0;
  const err = await (async () => {
    for await (const e of it) {
      n++;
      assert.equal(e.seq, n);
    }
  })().then(() => null, (e) => e);
  assert.equal(err?.code, 'event_stream_overflow');
  assert.equal(n, EVENT_BACKLOG, 'the backlog was yielded before the failure');
  await server.close();
});

test('a consumer that keeps up is not failed by a burst', async () => {
  const frames = [helloFrame()];
  for (let i = 1; i <= 5000; i++) frames.push(eventFrame(i));
  const { server, c } = await fakeStream([frames.join('')]);
  const it = c.events();
  let n = 0;
  for await (const e of it) {
    n++;
    if (e.seq === 5000) break;
    if (n % 500 === 0) await sleep(1);
  }
  assert.equal(n, 5000);
  await server.close();
});

test('close() ends a waiting next(); an aborted signal rejects with aborted', async () => {
  const { server, c } = await fakeStream([helloFrame(), 60000]);
  const it = c.events();
  await it.ready;
  const waiting = it.next();
  it.close();
  assert.deepEqual(await waiting, { value: undefined, done: true });
  const ac = new AbortController();
  const it2 = c.events({}, { signal: ac.signal });
  await it2.ready;
  const w2 = it2.next();
  ac.abort();
  await assert.rejects(w2, { code: 'aborted' });
  await server.close();
});
