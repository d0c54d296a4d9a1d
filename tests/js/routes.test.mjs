// Connectors, credentials, runtimes, bootstrap and installCli: what each
// method sends (a recording fake server), and how a real taskdeckd's answer
// comes back: the service's 404 as a typed error while a route does not
// exist, the resource once it does.  Both outcomes are checked strictly, so
// this file stays right when the routes land.
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { mkdirSync } from 'node:fs';
import { join } from 'node:path';
import { startService, fakeServer, FAKE_TOKEN, SDK } from './harness.mjs';

const { connectToTaskdeck, TaskdeckError } = await import(SDK);
let svc;
let td;

before(async () => {
  // installCli writes a launcher into the service's XDG_BIN_HOME: keep it in the test's home.
  svc = await startService((home) => {
    mkdirSync(join(home, 'bin'));
    return { HOME: home, XDG_BIN_HOME: join(home, 'bin') };
  });
  td = await connectToTaskdeck();
});
after(async () => {
  td?.close();
  await svc?.destroy();
});

const CALLS = [
  ['listRuntimes', [], 'GET', '/api/v1/runtimes', null, []],
  ['listModels', ['my local'], 'GET', '/api/v1/providers/my%20local/models', null,
    { provider: 'my local', kind: 'openai', source: 'GET {baseUrl}/models', models: [{ id: 'tiny-1' }] }],
  ['bootstrap', [{ action: 'status' }], 'POST', '/api/v1/bootstrap', { action: 'status' }, { ok: true }],
  ['bootstrap', [{ action: 'runtime' }], 'POST', '/api/v1/bootstrap', { action: 'runtime' }, { ok: false, error: { code: 'x' } }],
  ['installCli', [], 'POST', '/api/v1/cli/install', null, { ok: true }],
  ['doctor', [], 'GET', '/api/v1/doctor', null, { ready: true }],
  ['listConnectors', [], 'GET', '/api/v1/connectors', null, [{ id: 'con_1' }]],
  ['getConnector', ['con_1'], 'GET', '/api/v1/connectors/con_1', null, { id: 'con_1' }],
  ['setConnectorEnabled', ['con_1', true], 'PUT', '/api/v1/connectors/con_1/enabled', { enabled: true }, { id: 'con_1', enabled: true }],
  ['setConnectorEnabled', ['con_1', false], 'PUT', '/api/v1/connectors/con_1/enabled', { enabled: false }, { id: 'con_1', enabled: false }],
  ['addConnector', [{ name: 'm', transport: { type: 'stdio', command: 'mcp' } }], 'POST', '/api/v1/connectors',
    { name: 'm', transport: { type: 'stdio', command: 'mcp' } }, { id: 'con_2' }],
  ['updateConnector', ['con_2', { transport: { type: 'http', url: 'http://x/' } }], 'PATCH', '/api/v1/connectors/con_2',
    { transport: { type: 'http', url: 'http://x/' } }, { id: 'con_2' }],
  ['removeConnector', ['con_2'], 'DELETE', '/api/v1/connectors/con_2', null, {}],
  ['testConnector', ['con_2'], 'POST', '/api/v1/connectors/con_2/test', null, { success: true, toolCount: 2, message: 'ok' }],
  ['loginConnector', ['con_2'], 'POST', '/api/v1/connectors/con_2/login', null, { authorizationUrl: 'http://as/authorize?x', redirectUri: 'http://127.0.0.1:1/oauth/callback' }],
  ['loginConnector', ['con_2', { scope: 'a b' }], 'POST', '/api/v1/connectors/con_2/login', { scope: 'a b' }, { authorizationUrl: 'http://as/authorize?y', redirectUri: 'http://127.0.0.1:1/oauth/callback' }],
  ['listCredentials', [], 'GET', '/api/v1/credentials', null, [{ id: 'cred_1' }]],
  ['createCredential', [{ name: 'k', kind: 'api-key', secret: 's' }], 'POST', '/api/v1/credentials',
    { name: 'k', kind: 'api-key', secret: 's' }, { id: 'cred_1' }],
  ['updateCredential', ['cred_1', { description: 'd' }], 'PATCH', '/api/v1/credentials/cred_1', { description: 'd' }, { id: 'cred_1' }],
  ['getCredential', ['cred_1'], 'GET', '/api/v1/credentials/cred_1', null, { id: 'cred_1' }],
  ['deleteCredential', ['cred_1'], 'DELETE', '/api/v1/credentials/cred_1', null, {}],
  ['deleteCredential', ['cred_1', { force: true }], 'DELETE', '/api/v1/credentials/cred_1?force=true', null, {}],
  ['listRuns', [{ session: 'ses_1', status: 'running', limit: 5 }], 'GET', '/api/v1/runs?session=ses_1&status=running&limit=5', null, [{ id: 'run_1' }]],
  ['listRuns', [{ project: 'prj_1' }], 'GET', '/api/v1/runs?project=prj_1', null, []],
  ['getRunEvents', ['run_1'], 'GET', '/api/v1/runs/run_1/events', null, [{ seq: 1 }]],
  ['getRunEvents', ['run_1', { after: 'ab:7', limit: 2 }], 'GET', '/api/v1/runs/run_1/events?limit=2&after=ab%3A7', null, [{ seq: 8 }]],
];

test('each method sends its method, path and body, and returns the answer', async () => {
  let answer = null;
  const fake = await fakeServer((req, res) => {
    res.writeHead(200, { 'content-type': 'application/json', 'x-request-id': 'req_1' });
    res.end(JSON.stringify(answer));
  });
  try {
    const c = await connectToTaskdeck({ baseUrl: fake.url, token: FAKE_TOKEN });
    for (const [method, args, verb, path, body, reply] of CALLS) {
      answer = reply;
      const n = fake.requests.length;
      const got = await c[method](...args);
      const rq = fake.requests[n];
      assert.equal(rq.method, verb, method);
      assert.equal(rq.url, path, method);
      assert.deepEqual(rq.body === '' ? null : JSON.parse(rq.body), body, `${method} body`);
      assert.equal(rq.headers.authorization, `Bearer ${FAKE_TOKEN}`);
      assert.deepEqual(got, reply, `${method} result`);
      if (body !== null) assert.match(rq.headers['content-type'], /^application\/json/);
    }
    await assert.rejects(c.setConnectorEnabled('con_1', 'yes'), { code: 'invalid_argument' });
    await assert.rejects(c.updateConnector('con_1', { name: 'no transport' }), { code: 'invalid_argument' });
    await assert.rejects(c.listRuns({}), { code: 'invalid_argument' });
    await assert.rejects(c.deleteCredential('cred_1', { force: 'yes' }), { code: 'invalid_argument' });
    await assert.rejects(c.getRunEvents('run_1', { after: 7 }), { code: 'invalid_argument' });
    c.close();
  } finally {
    await fake.close();
  }
});

test('the service\'s 404 for a route or id becomes a typed not_found error', async () => {
  const fake = await fakeServer((req, res) => {
    res.writeHead(404, { 'content-type': 'application/json', 'x-request-id': 'req_404' });
    res.end('{"error":{"code":"not_found","message":"no such route","details":{"resource":"route"}}}');
  });
  try {
    const c = await connectToTaskdeck({ baseUrl: fake.url, token: FAKE_TOKEN });
    for (const [method, args] of CALLS) {
      await assert.rejects(c[method](...args), (e) => e instanceof TaskdeckError && e.code === 'not_found' &&
        e.status === 404 && e.requestId === 'req_404' && e.details.resource === 'route', method);
    }
    c.close();
  } finally {
    await fake.close();
  }
});

// The real service: a 404 not_found while the route is missing, else check(result).
// The outcome goes to the test log as a diagnostic.
let ctx = null;
async function routeOrMissing(promise, check, what = 'route') {
  const present = await outcome(promise, check);
  ctx?.diagnostic(`${what}: ${present ? 'present, its answer checked' : 'missing, the 404 checked'}`);
  return present;
}

async function outcome(promise, check) {
  let result;
  try {
    result = await promise;
  } catch (e) {
    assert.ok(e instanceof TaskdeckError, `not a TaskdeckError: ${e}`);
    assert.equal(e.code, 'not_found', e.message);
    assert.equal(e.status, 404);
    assert.match(e.requestId, /^req_/);
    return false;
  }
  await check(result);
  return true;
}

const NO_ID = { con: 'con_000000000000000000000000', cred: 'cred_000000000000000000000000' };

test('real service: readiness and setup methods', async (t) => {
  ctx = t;
  await routeOrMissing(td.listRuntimes(), (list) => {
    assert.ok(Array.isArray(list));
    for (const r of list) {
      assert.equal(typeof r.framework, 'string');
      assert.ok(r.source === 'managed' || r.source === 'external');
    }
  }, 'GET /api/v1/runtimes');
  await routeOrMissing(td.bootstrap({ action: 'status' }), (r) => assert.equal(typeof r, 'object'), 'POST /api/v1/bootstrap');
  await routeOrMissing(td.installCli(), (r) => assert.equal(typeof r.ok, 'boolean'), 'POST /api/v1/cli/install');
});

test('real service: connectors', async (t) => {
  ctx = t;
  await routeOrMissing(td.listConnectors(), (list) => assert.ok(Array.isArray(list)), 'GET /api/v1/connectors');
  // One call at a time: a rejection nobody awaits yet would be unhandled.
  for (const call of [() => td.getConnector(NO_ID.con), () => td.setConnectorEnabled(NO_ID.con, true),
    () => td.updateConnector(NO_ID.con, { transport: { type: 'stdio', command: '/bin/true' } }),
    () => td.removeConnector(NO_ID.con), () => td.testConnector(NO_ID.con)]) {
    // An unknown id is 404 both before and after the routes exist.
    await assert.rejects(call, (e) => e instanceof TaskdeckError && e.code === 'not_found' && e.status === 404);
  }
  await routeOrMissing(td.addConnector({ name: 'local-true', transport: { type: 'stdio', command: '/bin/true', args: [] } }),
    async (c) => {
      assert.match(c.id, /^con_/);
      assert.equal(c.kind, 'custom');
      assert.equal((await td.getConnector(c.id)).id, c.id);
      assert.equal((await td.setConnectorEnabled(c.id, false)).enabled, false);
      const u = await td.updateConnector(c.id, { transport: { type: 'stdio', command: '/bin/false', args: [] } });
      assert.equal(u.transport.command, '/bin/false');
      // Each route may land on its own: the test route is checked by itself.
      await routeOrMissing(td.testConnector(c.id), (result) => {
        assert.equal(typeof result.success, 'boolean');
        assert.equal(typeof result.toolCount, 'number');
        assert.equal(typeof result.message, 'string');
      }, 'POST /api/v1/connectors/:id/test');
      assert.ok((await td.listConnectors({ all: true })).some((x) => x.id === c.id));
      await td.removeConnector(c.id);
      await assert.rejects(td.getConnector(c.id), { code: 'not_found' });
    }, 'POST /api/v1/connectors');
});

test('real service: credentials, whose secret never comes back', async (t) => {
  ctx = t;
  const secret = 'sk-test-5ecret-value-42';
  await routeOrMissing(td.listCredentials(), (list) => assert.ok(Array.isArray(list)), 'GET /api/v1/credentials');
  await assert.rejects(td.updateCredential(NO_ID.cred, { description: 'x' }), { code: 'not_found', status: 404 });
  await routeOrMissing(td.createCredential({ name: 'search-key', kind: 'api-key', secret }), async (c) => {
    assert.match(c.id, /^cred_/);
    assert.ok(!JSON.stringify(c).includes(secret));
    const u = await td.updateCredential(c.id, { description: 'for search' });
    assert.equal(u.description, 'for search');
    const all = await td.listCredentials({ all: true });
    assert.ok(all.some((x) => x.id === c.id));
    assert.ok(!JSON.stringify(all).includes(secret));
  }, 'POST /api/v1/credentials');
});

test('real service: getCredential and deleteCredential, force for one in use', async (t) => {
  ctx = t;
  const secret = 'sk-test-delete-me-7';
  const c = await td.createCredential({ name: 'to-delete', kind: 'api-key', secret });
  const got = await td.getCredential(c.id);
  assert.equal(got.id, c.id);
  assert.ok(!JSON.stringify(got).includes(secret));
  const con = await td.addConnector({ name: 'binds', transport: { type: 'stdio', command: '/bin/false', args: [] },
    credentialBindings: [{ credentialId: c.id, target: 'env:TOKEN' }] });
  await assert.rejects(td.deleteCredential(c.id), { code: 'credential_in_use', status: 409 });
  assert.deepEqual(await td.deleteCredential(c.id, { force: true }), {});
  await assert.rejects(td.getCredential(c.id), { code: 'not_found', status: 404 });
  await assert.rejects(td.deleteCredential(c.id), { code: 'not_found', status: 404 });
  await td.removeConnector(con.id);
});

test('real service: listRuns and getRunEvents page as the Link header says', async (t) => {
  ctx = t;
  const p = await td.createProject({ name: 'runs-and-events' });
  const runs = [];
  for (let i = 0; i < 3; i++) {
    const run = await td.startRun({ project: p.id, prompt: `quick ${i}`, config: { provider: 'replay', model: 'quick' } });
    runs.push(await td.waitForRun(run.id, { timeoutMs: 60000 }));
  }
  const page = await td.listRuns({ project: p.id, limit: 2 });
  assert.equal(page.length, 2);
  assert.notEqual(page.nextCursor, null);
  const all = await td.listRuns({ project: p.id, all: true });
  assert.deepEqual(all.map((r) => r.id).sort(), runs.map((r) => r.id).sort());
  const paged = [];
  for await (const r of td.paginate('listRuns', { project: p.id, limit: 1 })) paged.push(r.id);
  assert.deepEqual(paged, all.map((r) => r.id));
  assert.deepEqual((await td.listRuns({ project: p.id, status: 'failed' })), []);

  const history = await td.getRunEvents(runs[0].id, { all: true });
  assert.ok(history.length >= 3, `${history.length} events`);
  assert.equal(history[0].type, 'run.queued');
  assert.equal(history.at(-1).type, 'run.finished');
  const first = await td.getRunEvents(runs[0].id, { limit: 1 });
  assert.equal(first.length, 1);
  assert.match(first.nextCursor, /^[0-9a-f]{32}:\d+$/);
  const rest = await td.getRunEvents(runs[0].id, { after: first.nextCursor, all: true });
  assert.deepEqual([...first, ...rest].map((e) => e.seq), history.map((e) => e.seq));
  await assert.rejects(td.getRunEvents(runs[0].id, { after: 'nonsense' }), { code: 'invalid_request', status: 400 });
});
