// deleteSession (an extension beyond the spec) against a real taskdeckd: a
// busy session is refused with ConflictError session_busy, force cancels its
// run and deletes it; its runs answer 404 afterwards; an external workspace
// is kept and named in the answer.
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtempSync, writeFileSync, existsSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { startService, SDK } from './harness.mjs';

const { connectToTaskdeck, ConflictError, NotFoundError } = await import(SDK);
let svc;
let td;
let ws;

before(async () => {
  svc = await startService();
  td = await connectToTaskdeck();
  ws = mkdtempSync(join(tmpdir(), 'tdjs-sessdel-'));
  writeFileSync(join(ws, 'mine.txt'), 'the caller\'s\n');
});
after(async () => {
  td?.close();
  await svc?.destroy();
  if (ws) rmSync(ws, { recursive: true, force: true });
});

test('deleteSession: busy, forced, gone; the external workspace kept', async () => {
  const project = (await td.createProject({ name: 'sessdel' })).id;
  const run = await td.startRun({ project, prompt: 'write the report', cwd: ws,
    turnIntent: 'plan-first', config: { provider: 'replay', model: 'plan' } });
  await td.waitForRun(run.id, { timeoutMs: 30000, returnOnAttention: true });

  await assert.rejects(td.deleteSession(run.sessionId), (e) => e instanceof ConflictError
    && e.code === 'session_busy' && e.status === 409);
  await assert.rejects(td.deleteSession(run.sessionId, { force: 'yes' }), { code: 'invalid_argument' });

  // The run waits on its plan: force cancels it, and the delete finishes when it has ended
  // (202, a SessionDeleting), or at once when it had ended already (200).
  const gone = await td.deleteSession(run.sessionId, { force: true });
  assert.equal(gone.id, run.sessionId);
  if (gone.deleting) assert.deepEqual(gone.cancelled, [run.id]);
  else assert.equal(gone.runs, 1);
  await until(async () => {
    try {
      await td.getSession(run.sessionId);
      return false;
    } catch (e) {
      if (e instanceof NotFoundError) return true;
      throw e;
    }
  });
  assert.ok(existsSync(join(ws, 'mine.txt')), 'the external workspace is kept');
  await assert.rejects(td.getRun(run.id), (e) => e instanceof NotFoundError);
  await assert.rejects(td.deleteSession(run.sessionId), (e) => e instanceof NotFoundError);
});

test('deleteSession of an idle session: what went and what stayed', async () => {
  const project = (await td.createProject({ name: 'sessdel-idle' })).id;
  const run = await td.startRun({ project, prompt: 'hello', cwd: ws,
    config: { provider: 'replay', model: 'quick' } });
  await td.waitForRun(run.id, { timeoutMs: 30000 });
  const gone = await td.deleteSession(run.sessionId);
  assert.equal(gone.id, run.sessionId);
  assert.equal(gone.runs, 1);
  assert.deepEqual(gone.kept, [ws]);
  assert.ok(existsSync(join(ws, 'mine.txt')), 'the external workspace is kept');
});

// Polls check every 100 ms for up to 60 s.
async function until(check) {
  for (let i = 0; i < 600; i++) {
    if (await check()) return;
    await new Promise((r) => setTimeout(r, 100));
  }
  assert.fail('not within 60 s');
}
