// Attempts through the SDK (an extension beyond the spec): createAttempts in a
// git repository with uncommitted work, the group's events, getAttempts until
// each attempt is measured, applyAttempt bringing one attempt's files, a second
// apply refused as attempt_group_closed, revertAttempts, and no worktree left.
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { mkdtempSync, writeFileSync, readFileSync, existsSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { startService, SDK } from './harness.mjs';

const { connectToTaskdeck, ConflictError } = await import(SDK);
let svc;
let td;
let repo;
const git = (...args) => execFileSync('git', ['-C', repo, ...args], { encoding: 'utf8' });

before(async () => {
  svc = await startService();
  td = await connectToTaskdeck();
  repo = mkdtempSync(join(tmpdir(), 'tdjs-attempts-'));
  writeFileSync(join(repo, 'notes.txt'), 'alpha\nbeta\ngamma\n');
  git('init', '-q');
  git('add', '-A');
  git('-c', 'user.name=t', '-c', 'user.email=t@t', 'commit', '-qm', 'first');
  writeFileSync(join(repo, 'mine.txt'), 'my own work\n');
});
after(async () => {
  td?.close();
  await svc?.destroy();
  if (repo) rmSync(repo, { recursive: true, force: true });
});

test('two attempts, one applied and reverted, none left', async () => {
  const project = (await td.createProject({ name: 'attempts' })).id;
  const it = td.events({ projectId: project });
  await it.ready;
  const group = await td.createAttempts({ project, prompt: 'Do it', attempts: 2, cwd: repo,
    models: ['multi-file', 'quick'], config: { provider: 'replay' } });
  assert.equal(group.attempts.length, 2);
  assert.deepEqual(group.attempts.map((a) => a.model), ['multi-file', 'quick']);
  for (const a of group.attempts) assert.equal(readFileSync(join(a.cwd, 'mine.txt'), 'utf8'), 'my own work\n');
  let created = false;
  for await (const e of it) {
    if (e.type === 'attempts.created' && e.data.id === group.id) { created = true; break; }
  }
  assert.ok(created);
  let g = group;
  for (let i = 0; i < 300 && !g.attempts.every((a) => a.check.status === 'none'); i++) {
    await new Promise((r) => setTimeout(r, 100));
    g = await td.getAttempts(group.id);
  }
  assert.ok(g.attempts[0].changes.files >= 3, JSON.stringify(g.attempts[0].changes));
  assert.equal(g.attempts[1].changes.files, 0);
  assert.equal(existsSync(join(repo, 'data')), false, 'the repository changed before apply');

  const applied = await td.applyAttempt(g.attempts[0].runId);
  assert.equal(applied.status, 'applied');
  assert.ok(existsSync(join(repo, 'data', 'results.csv')));
  assert.equal(readFileSync(join(repo, 'mine.txt'), 'utf8'), 'my own work\n');
  assert.equal(git('worktree', 'list').trim().split('\n').length, 1);
  await assert.rejects(td.applyAttempt(g.attempts[1].runId),
    (e) => e instanceof ConflictError && e.code === 'attempt_group_closed');
  const reverted = await td.revertAttempts(group.id);
  assert.ok(reverted.revertedAt);
  assert.equal(existsSync(join(repo, 'data', 'results.csv')), false);
  assert.equal(readFileSync(join(repo, 'mine.txt'), 'utf8'), 'my own work\n');
  const listed = await td.listAttempts(project);
  assert.deepEqual(listed.map((x) => x.id), [group.id]);
});
