// A run's workspace changes through the SDK (an extension beyond the spec):
// getRunChanges, getRunDiff (one path, every file) and revertRun against a
// real taskdeckd, with a later edit refused as revert_conflict and force.
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtempSync, writeFileSync, readFileSync, appendFileSync, existsSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { startService, SDK } from './harness.mjs';

const { connectToTaskdeck, ConflictError } = await import(SDK);
let svc;
let td;
let ws;

before(async () => {
  svc = await startService();
  td = await connectToTaskdeck();
  ws = mkdtempSync(join(tmpdir(), 'tdjs-changes-'));
  writeFileSync(join(ws, 'notes.txt'), 'alpha\nbeta\ngamma\n');
});
after(async () => {
  td?.close();
  await svc?.destroy();
  if (ws) rmSync(ws, { recursive: true, force: true });
});

test('changes, diff and revert of a run', async () => {
  const project = (await td.createProject({ name: 'changes' })).id;
  const started = await td.startRun({ project, prompt: 'Fix the notes', cwd: ws,
    permissionProfile: 'workspace-write', config: { provider: 'replay', model: 'workspace-edits' } });
  const run = await td.waitForRun(started.id, { timeoutMs: 60000 });
  assert.equal(run.status, 'completed');
  assert.deepEqual(run.changes, { files: 2, additions: 4, deletions: 1 });

  const changes = await td.getRunChanges(run.id);
  assert.equal(changes.runId, run.id);
  assert.equal(changes.live, false);
  assert.deepEqual(changes.files.map((f) => [f.path, f.status, f.additions, f.deletions]),
    [['notes.txt', 'modified', 1, 1], ['report.md', 'added', 3, 0]]);
  assert.deepEqual(changes.totals, { files: 2, additions: 4, deletions: 1 });
  const fromStart = await td.getRunChanges(run.id, { from: 'start' });
  assert.equal(fromStart.from.runId, null);

  const one = await td.getRunDiff(run.id, { path: 'notes.txt' });
  assert.equal(one.truncated, false);
  assert.match(one.text, /^diff --git a\/notes\.txt b\/notes\.txt\n/);
  assert.match(one.text, /\n-beta\n\+BETA\n/);
  assert.doesNotMatch(one.text, /report\.md/);
  const all = await td.getRunDiff(run.id);
  assert.match(all.text, /\+\+\+ b\/report\.md\n/);
  await assert.rejects(td.getRunDiff(run.id, { path: 'missing.txt' }), { code: 'not_found', status: 404 });

  appendFileSync(join(ws, 'notes.txt'), 'delta\n');
  await assert.rejects(td.revertRun(run.id), (e) => e instanceof ConflictError
    && e.code === 'revert_conflict' && e.details.conflicts.length === 1
    && e.details.conflicts[0].path === 'notes.txt');
  assert.ok(existsSync(join(ws, 'report.md')), 'nothing was reverted');

  const reverted = await td.revertRun(run.id, { force: true });
  assert.deepEqual(reverted.reverted.sort(), ['notes.txt', 'report.md']);
  assert.equal(readFileSync(join(ws, 'notes.txt'), 'utf8'), 'alpha\nbeta\ngamma\n');
  assert.ok(!existsSync(join(ws, 'report.md')));
  assert.equal((await td.getRunChanges(run.id)).revertedAt, reverted.revertedAt);
});
