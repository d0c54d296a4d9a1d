// A service that restarts takes a new port: a client that found it through the
// discovery file finds it again (calls, waitForRun and event iterators go on).
import { test, after } from 'node:test';
import assert from 'node:assert/strict';
import { startService, SDK } from './harness.mjs';

const { connectToTaskdeck } = await import(SDK);
let svc;
after(async () => {
  await svc?.destroy();
});

const replay = (model) => ({ provider: 'replay', model });

test('a restarted service on a new port is found again by calls, waitForRun and an iterator', async () => {
  svc = await startService();
  const td = await connectToTaskdeck();
  const p = await td.createProject({ name: 'restart' });
  const it = td.events({ projectId: p.id });
  await it.ready;
  const run = await td.startRun({ project: p.id, prompt: 'go', config: replay('steady') });
  const waiting = td.waitForRun(run.id);	// no deadline
  // A few events of the first service, then it stops and starts again (same home).
  let n = 0;
  for (;;) {
    const { value: e } = await it.next();
    if (e.type === 'run.output' && ++n === 3) break;
  }
  const oldUrl = svc.url;
  await svc.stop();
  await svc.start();
  assert.notEqual(svc.url, oldUrl, 'the service took a new port');
  // The iterator reconnects to the new service: it says the stream changed, then goes on.
  const seen = [];
  for (;;) {
    const { value: e, done } = await it.next();
    assert.ok(!done);
    seen.push(e.type);
    if (e.type === 'run.finished' && e.runId === run.id) break;
  }
  assert.ok(seen.includes('stream.resync-required'), seen.join(' '));
  it.close();
  const final = await waiting;
  assert.equal(final.status, 'completed');
  assert.equal(td.baseUrl, svc.url);
  assert.equal((await td.getRun(run.id)).status, 'completed');
  td.close();
});
