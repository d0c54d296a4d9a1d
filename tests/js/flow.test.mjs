// The specification's typical flow and the project, session, run and artifact
// methods against a real taskdeckd.
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { createHash } from 'node:crypto';
import { inspect } from 'node:util';
import { mkdtempSync, readFileSync, readdirSync, rmSync } from 'node:fs';
import { join } from 'node:path';
import { tmpdir } from 'node:os';
import { startService, SDK } from './harness.mjs';

const { connectToTaskdeck, TaskdeckError } = await import(SDK);
let svc;
let td;

before(async () => {
  svc = await startService();
  td = await connectToTaskdeck();
});
after(async () => {
  td?.close();
  await svc?.destroy();
});

const replay = (model) => ({ provider: 'replay', model });

test('typical flow: listProjects, startRun, waitForRun, listArtifacts, downloadArtifact', async () => {
  const created = await td.createProject({ name: 'Research', description: 'notes' });
  const projects = await td.listProjects();
  const project = projects.find((p) => p.id === created.id);
  assert.equal(project.name, 'Research');
  const run = await td.startRun({ project: project.id, prompt: 'Summarise the notes',
    permissionProfile: 'workspace-write', config: replay('research') });
  assert.match(run.id, /^run_/);
  assert.match(run.sessionId, /^ses_/);
  const done = await td.waitForRun(run.id, { timeoutMs: 60000 });
  assert.equal(done.status, 'completed');
  assert.equal(typeof done.output, 'string');
  const artifacts = await td.listArtifacts(run.sessionId);
  const report = artifacts.find((a) => a.name === 'report.md');
  assert.ok(report, 'report.md was saved');
  assert.ok(report.path.endsWith('report.md'));
  const res = await td.downloadArtifact(report.id);
  assert.ok(res instanceof Response);
  assert.equal(res.status, 200);
  const bytes = Buffer.from(await res.arrayBuffer());
  assert.equal(bytes.length, report.size);
  assert.equal(`sha256:${createHash('sha256').update(bytes).digest('hex')}`, report.version,
    'the downloaded bytes are the artifact version');
  assert.equal(res.headers.get('etag'), `"${report.version}"`);

  // Range resume: the rest from an offset, 206, and the two parts make the whole.
  const part = await td.downloadArtifact(report.id, { offset: 10, ifRange: report.version });
  assert.equal(part.status, 206);
  const rest = Buffer.from(await part.arrayBuffer());
  assert.deepEqual(Buffer.concat([bytes.subarray(0, 10), rest]), bytes);
  // If-Range with another version: the whole body again (200).
  const other = await td.downloadArtifact(report.id, { offset: 10, ifRange: 'sha256:00' });
  assert.equal(other.status, 200);
  assert.deepEqual(Buffer.from(await other.arrayBuffer()), bytes);

  // Into a file: the same bytes, nothing left beside it.
  const dir = mkdtempSync(join(process.env.TD_JS_TMP ?? tmpdir(), 'tdjs-dl-'));
  const saved = await td.downloadArtifactToFile(report.id, join(dir, 'report.md'));
  assert.deepEqual(saved, { path: join(dir, 'report.md'), bytes: report.size, version: report.version });
  assert.deepEqual(readFileSync(join(dir, 'report.md')), bytes);
  await assert.rejects(td.downloadArtifactToFile('art_000000000000000000000000', join(dir, 'x')),
    (e) => e.code === 'not_found');
  assert.deepEqual(readdirSync(dir), ['report.md']);
  rmSync(dir, { recursive: true, force: true });

  const one = await td.getArtifact(report.id);
  assert.equal(one.version, report.version);
  const everyVersion = await td.listArtifacts(run.sessionId, { allVersions: true });
  assert.ok(everyVersion.length >= artifacts.length);
});

test('an unknown artifact is a typed not_found error with status and request id', async () => {
  await assert.rejects(td.downloadArtifact('art_000000000000000000000000'), (e) => {
    assert.ok(e instanceof TaskdeckError);
    assert.equal(e.code, 'not_found');
    assert.equal(e.status, 404);
    assert.match(e.requestId, /^req_/);
    assert.equal(typeof e.details, 'object');
    return true;
  });
});

test('projects: get, update (merge patch), session defaults with stale write', async () => {
  const p = await td.createProject({ name: 'Defaults' });
  assert.equal((await td.getProject(p.id)).name, 'Defaults');
  const u = await td.updateProject(p.id, { description: 'changed', metadata: { a: 1 } });
  assert.equal(u.description, 'changed');
  assert.deepEqual(u.metadata, { a: 1 });
  const d = await td.getProjectSessionDefaults(p.id);
  assert.equal(d.projectId, p.id);
  const d2 = await td.updateProjectSessionDefaults(p.id,
    { expectedUpdatedAt: d.updatedAt, patch: { effort: 'high' } });
  assert.equal(d2.defaults.effort, 'high');
  await assert.rejects(td.updateProjectSessionDefaults(p.id,
    { expectedUpdatedAt: d.updatedAt, patch: { effort: 'low' } }),
  (e) => e instanceof TaskdeckError && e.code === 'stale_write' && e.status === 409);
});

test('sessions: list, get, configuration with revisions; agent routing; doctor', async () => {
  const p = await td.createProject({ name: 'Sessions' });
  const run = await td.startRun({ project: p.id, prompt: 'hi', config: replay('quick') });
  await td.waitForRun(run.id, { timeoutMs: 60000 });
  const sessions = await td.listSessions(p.id);
  assert.deepEqual(sessions.map((s) => s.id), [run.sessionId]);
  const s = await td.getSession(run.sessionId);
  assert.equal(s.projectId, p.id);
  const cfg = await td.getSessionConfiguration(run.sessionId);
  assert.equal(cfg.model, 'quick');
  const cfg2 = await td.updateSessionConfiguration(run.sessionId,
    { expectedRevision: cfg.revision, patch: { effort: 'low' } });
  assert.equal(cfg2.revision, cfg.revision + 1);
  assert.equal(cfg2.model, 'quick', 'an omitted key is kept');
  await assert.rejects(td.updateSessionConfiguration(run.sessionId,
    { expectedRevision: cfg.revision, patch: { effort: 'high' } }), { code: 'stale_write' });
  const routing = await td.getAgentRouting();
  assert.equal(typeof routing.framework, 'string');
  const r2 = await td.updateAgentRouting({ subagent: { maxConcurrent: 3 } });
  assert.equal(r2.subagent.maxConcurrent, 3);
  const doc = await td.doctor();
  assert.equal(typeof doc.ready, 'boolean');
  assert.ok(Array.isArray(doc.checks));
  assert.ok(!JSON.stringify(doc).includes(svc.token), 'no token in the doctor report');
});

test('pagination: one page with nextCursor, {all: true}, and paginate() follow Link', async () => {
  const ids = [];
  for (let i = 0; i < 7; i++) ids.push((await td.createProject({ name: `page-${i}` })).id);
  const first = await td.listProjects({ limit: 3 });
  assert.equal(first.length, 3);
  assert.equal(typeof first.nextCursor, 'string');
  const all = await td.listProjects({ limit: 3, all: true });
  const seen = [];
  for await (const p of td.paginate('listProjects', { limit: 2 })) seen.push(p.id);
  assert.deepEqual(seen, all.map((p) => p.id));
  const pages = [];
  for await (const page of td.pages('listProjects', { limit: 2 })) pages.push(page);
  assert.ok(pages.length >= 4 && pages.slice(0, -1).every((pg) => pg.length === 2 && pg.nextCursor !== null));
  assert.equal(pages.at(-1).nextCursor, null);
  assert.deepEqual(pages.flat().map((p) => p.id), seen);
  assert.equal(new Set(seen).size, seen.length, 'no duplicate across pages');
  for (const id of ids) assert.ok(seen.includes(id));
  const single = await td.listProjects({ limit: 1000 });
  assert.deepEqual(single.map((p) => p.id), seen);
  assert.equal(single.nextCursor, null);
});

test('idempotent createProject and startRun: replay, and conflict with another body', async () => {
  const a = await td.createProject({ name: 'Idem' }, { idempotencyKey: 'idem-project-1' });
  const b = await td.createProject({ name: 'Idem' }, { idempotencyKey: 'idem-project-1' });
  assert.equal(b.id, a.id, 'the same key and body return the first project');
  await assert.rejects(td.createProject({ name: 'Other' }, { idempotencyKey: 'idem-project-1' }),
    (e) => e instanceof TaskdeckError && e.code === 'idempotency_conflict' && e.status === 422);
  const rq = { project: a.id, prompt: 'once', config: replay('quick') };
  const r1 = await td.startRun(rq, { idempotencyKey: 'idem-run-1' });
  const r2 = await td.startRun(rq, { idempotencyKey: 'idem-run-1' });
  assert.equal(r2.id, r1.id);
  const runs = await svc.raw('GET', `/api/v1/runs?project=${a.id}`);
  assert.equal(runs.body.length, 1, 'no second run was started');
  await assert.rejects(td.startRun({ ...rq, prompt: 'twice' }, { idempotencyKey: 'idem-run-1' }),
    { code: 'idempotency_conflict' });
  await assert.rejects(td.startRun(rq, { idempotencyKey: ' bad key ' }), { code: 'invalid_argument' });
  await td.waitForRun(r1.id, { timeoutMs: 60000 });
});

test('cancelRun ends a run cancelled; a failed run carries its error', async () => {
  const p = await td.createProject({ name: 'Cancel' });
  const run = await td.startRun({ project: p.id, prompt: 'wait', config: replay('slow') });
  const c = await td.cancelRun(run.id);
  assert.equal(c.id, run.id);
  const done = await td.waitForRun(run.id, { timeoutMs: 60000 });
  assert.equal(done.status, 'cancelled');
  const f = await td.startRun({ project: p.id, prompt: 'fail', config: replay('fail') });
  const failed = await td.waitForRun(f.id, { timeoutMs: 60000 });
  assert.equal(failed.status, 'failed');
  assert.equal(failed.error.code, 'replay_failed');
});

test('a wrong token is unauthorized and no message, error or client dump holds a token', async () => {
  const wrong = 'f'.repeat(64);
  const bad = await connectToTaskdeck({ baseUrl: svc.url, token: wrong });
  const err = await bad.listProjects().catch((e) => e);
  assert.equal(err.code, 'unauthorized');
  assert.equal(err.status, 401);
  for (const text of [err.message, inspect(err, { depth: 5 }), JSON.stringify(err), inspect(bad, { depth: 5 })]) {
    assert.ok(!text.includes(wrong), 'the token is in an error or a dump');
  }
  assert.ok(!inspect(td, { depth: 5, showHidden: true }).includes(svc.token));
  bad.close();
});

test('invalid arguments are rejected before anything is sent', async () => {
  await assert.rejects(td.getRun(''), { code: 'invalid_argument' });
  await assert.rejects(td.startRun({ project: 'prj_x' }), { code: 'invalid_argument' });
  await assert.rejects(td.respondSessionPlan('ses_x', { decision: 'maybe', version: 1, revision: 1 }),
    { code: 'invalid_argument' });
  await assert.rejects(td.getRun('run_x', { timeoutMs: -1 }), { code: 'invalid_argument' });
});
