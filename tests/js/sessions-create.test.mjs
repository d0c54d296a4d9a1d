// createSession, listSessionConnectors and setSessionConnectors (extensions
// beyond the spec) against a real taskdeckd: a session made before its first
// run, in a directory of the caller's or a managed workspace, with the
// configuration a new session gets and MCP servers of its own whose values are
// never shown; its first run continues it; bad input is a BadRequestError that
// makes nothing; the delete removes the servers.
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { existsSync, mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { startService, SDK } from './harness.mjs';

const { connectToTaskdeck, BadRequestError, NotFoundError } = await import(SDK);
const SECRET = 'sdk-session-secret-4f2a9c';
let svc;
let td;
let ws;

before(async () => {
  svc = await startService();
  td = await connectToTaskdeck();
  ws = mkdtempSync(join(tmpdir(), 'tdjs-sesscreate-'));
});
after(async () => {
  td?.close();
  await svc?.destroy();
  if (ws) rmSync(ws, { recursive: true, force: true });
});

test('createSession: the session at once, its servers without their values, its first run in it', async () => {
  const project = (await td.createProject({ name: 'sesscreate' })).id;
  const s = await td.createSession({ project, cwd: ws, title: 'From an editor',
    config: { provider: 'replay', model: 'quick' },
    connectors: [
      { name: 'tool box', command: 'node', args: ['server.js'], env: [{ name: 'API_KEY', value: SECRET }] },
      { type: 'http', name: 'remote', url: 'https://mcp.example.com/mcp',
        headers: [{ name: 'Authorization', value: `Bearer ${SECRET}` }] },
    ] });
  assert.match(s.id, /^ses_[0-9a-f]{24}$/);
  assert.equal(s.cwd, ws);
  assert.equal(s.workspace, 'external');
  assert.equal(s.title, 'From an editor');
  assert.equal(s.lastRun, null);
  const cfg = await td.getSessionConfiguration(s.id);
  assert.equal(cfg.provider, 'replay');
  assert.equal(cfg.model, 'quick');

  const servers = await td.listSessionConnectors(s.id);
  assert.deepEqual(servers.map((c) => [c.name, c.type]), [['tool box', 'stdio'], ['remote', 'http']]);
  assert.deepEqual(servers[0].env, [{ name: 'API_KEY' }]);
  assert.deepEqual(servers[0].args, ['server.js']);
  assert.deepEqual(servers[1].headers, [{ name: 'Authorization' }]);
  assert.equal(servers[1].url, 'https://mcp.example.com/mcp');
  assert.ok(!JSON.stringify(servers).includes(SECRET));
  assert.ok(!readFileSync(join(svc.home, 'taskdeckd.log'), 'utf8').includes(SECRET));

  const run = await td.startRun({ project, sessionId: s.id, prompt: 'go' });
  assert.equal(run.sessionId, s.id);
  assert.equal((await td.waitForRun(run.id, { timeoutMs: 30000 })).status, 'completed');

  // Replaced as a whole; [] clears them.
  const one = await td.setSessionConnectors(s.id, [{ name: 'only', command: '/bin/true' }]);
  assert.deepEqual(one.map((c) => c.name), ['only']);
  assert.deepEqual(await td.setSessionConnectors(s.id, []), []);

  // A managed workspace when no cwd is given.
  const m = await td.createSession({ project, config: { provider: 'replay' } });
  assert.equal(m.workspace, 'managed');
  assert.ok(existsSync(m.cwd));

  await td.deleteSession(s.id);
  await assert.rejects(td.listSessionConnectors(s.id), NotFoundError);
});

test('createSession refuses bad input and makes nothing', async () => {
  const project = (await td.createProject({ name: 'sesscreate-bad' })).id;
  const bad = [
    [{ project, cwd: 'relative' }, 'invalid_cwd'],
    [{ project, cwd: svc.home }, 'invalid_cwd'],
    [{ project, connectors: [{ type: 'sse', name: 'old', url: 'http://127.0.0.1:1/sse' }] }, 'invalid_request'],
    [{ project, connectors: [{ name: 'a', command: 'x' }, { name: 'a', command: 'y' }] }, 'invalid_request'],
    [{ project, connectors: [{ name: 'h', type: 'http', url: 'ftp://x', headers: [] }] }, 'invalid_request'],
    [{ project, connectors: [{ name: 'h', type: 'http', url: 'http://x', headers: [{ name: 'X', value: 'a\r\nB: c' }] }] }, 'invalid_request'],
    [{ project, connectors: [{ name: 'e', command: 'x', env: [{ name: '1BAD', value: 'v' }] }] }, 'invalid_request'],
    [{ project, connectors: Array.from({ length: 17 }, (_, i) => ({ name: `s${i}`, command: 'x' })) }, 'invalid_request'],
    [{ project, config: { provider: 'nope' } }, 'invalid_configuration'],
  ];
  for (const [request, code] of bad) {
    await assert.rejects(td.createSession(request), (e) => e instanceof BadRequestError && e.code === code,
      JSON.stringify(request).slice(0, 120));
  }
  await assert.rejects(td.createSession({ project: 'prj_000000000000000000000000' }), NotFoundError);
  assert.equal((await td.listSessions(project)).length, 0);
  await assert.rejects(td.setSessionConnectors('ses_000000000000000000000000', []), NotFoundError);
});
