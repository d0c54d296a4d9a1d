// The editor's MCP servers in `taskdeck acp`, driven by the official ACP SDK's
// client: session/new makes the taskdeck session at once, with the editor's
// server (the npm-published server-everything, over stdio) as its own
// connector; a turn's run calls its tools; another session does not get them
// until its session/load names them; the value of its env never shows in an
// answer, an event, the log or the store; the session's delete removes them.
// Its own service, with tests/acp/replay.
import test, { after, before } from 'node:test';
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { createHash } from 'node:crypto';
import { mkdtempSync, readdirSync, readFileSync, statSync } from 'node:fs';
import { join } from 'node:path';
import { Readable, Writable } from 'node:stream';
import { pathToFileURL } from 'node:url';
import { BUILDDIR, SRCDIR, startService } from '../js/harness.mjs';

const acp = await import(pathToFileURL(join(process.env.ACP_SDK, 'dist/v1/stable/acp.js')));
const EVERYTHING = join(process.env.TD_CACHE,
  'npm/server-everything/node_modules/@modelcontextprotocol/server-everything/dist/index.js');
const SECRET = 'editor-token-7c1f0e9a55d24b8f';
const ECHO = 'Echo: hello from the editor\'s server';
let svc;

before(async () => {
  svc = await startService({ TASKDECK_REPLAY_DIR: join(SRCDIR, 'tests/acp/replay') });
  assert.equal((await svc.raw('POST', '/api/v1/projects', { name: 'editor-mcp' })).status, 201);
});

after(async () => {
  await svc.destroy();
});

// The editor's server: server-everything, started only when its environment holds
// the secret exactly (the command names its hash, not the value).
const server = {
  name: 'everything',
  command: '/bin/sh',
  args: ['-c', 'test "$(printf %s "$TD_EDITOR_TOKEN" | sha256sum | cut -c1-64)" = "$1" && exec "$2" "$3" stdio',
    'sh', createHash('sha256').update(SECRET).digest('hex'), process.env.NODE, EVERYTHING],
  env: [{ name: 'TD_EDITOR_TOKEN', value: SECRET }],
};

function connect() {
  const child = spawn(join(BUILDDIR, 'taskdeck'), ['acp', '--project', 'editor-mcp', '--provider', 'replay',
    '--model', 'editor-mcp', '--permission', 'workspace-write'], {
    env: { ...process.env, TASKDECK_HOME: svc.home },
    stdio: ['pipe', 'pipe', 'inherit'],
  });
  const updates = [];
  const app = acp.client({ name: 'taskdeck-acp-mcp-test' })
    .onNotification(acp.methods.client.session.update, ({ params }) => {
      updates.push(params);
    });
  const conn = app.connect(acp.ndJsonStream(Writable.toWeb(child.stdin), Readable.toWeb(child.stdout)));
  return {
    updates, agent: conn.agent,
    async close() {
      conn.close();
      child.stdin.end();
      if (child.exitCode === null) await new Promise((r) => child.once('exit', r));
    },
  };
}

const of = (c, sessionId) => JSON.stringify(c.updates.filter((u) => u.sessionId === sessionId));

// Every file under dir, as text.
function filesUnder(dir) {
  let out = [];
  for (const name of readdirSync(dir)) {
    const p = join(dir, name);
    const st = statSync(p, { throwIfNoEntry: false });
    if (st?.isDirectory()) out = out.concat(filesUnder(p));
    else if (st?.isFile()) out.push([p, readFileSync(p).toString('latin1')]);
  }
  return out;
}

test('session/new: the editor\'s server is that session\'s connector, and only that session\'s', async () => {
  const cwd = mkdtempSync(join(process.env.TD_JS_TMP, 'ws-'));
  const c = connect();
  try {
    const init = await c.agent.request(acp.methods.agent.initialize, {
      protocolVersion: acp.PROTOCOL_VERSION, clientCapabilities: {},
    });
    assert.equal(init.agentCapabilities.mcpCapabilities.http, true);
    assert.equal(init.agentCapabilities.mcpCapabilities.sse, false);

    const { sessionId } = await c.agent.request(acp.methods.agent.session.new, { cwd, mcpServers: [server] });
    assert.match(sessionId, /^ses_[0-9a-f]{24}$/);
    // The taskdeck session exists at once, in cwd, before any prompt.
    const session = await svc.raw('GET', `/api/v1/sessions/${sessionId}`);
    assert.equal(session.status, 200);
    assert.equal(session.body.cwd, cwd);
    assert.equal(session.body.lastRun, null);
    const listed = await svc.raw('GET', `/api/v1/sessions/${sessionId}/connectors`);
    assert.equal(listed.status, 200);
    assert.equal(listed.body.length, 1);
    assert.equal(listed.body[0].name, 'everything');
    assert.equal(listed.body[0].type, 'stdio');
    assert.deepEqual(listed.body[0].env, [{ name: 'TD_EDITOR_TOKEN' }]);
    assert.ok(!JSON.stringify(listed.body).includes(SECRET));

    const r = await c.agent.request(acp.methods.agent.session.prompt, {
      sessionId, prompt: [{ type: 'text', text: 'Ask your server.' }],
    });
    assert.equal(r.stopReason, 'end_turn');
    assert.equal(r._meta.taskdeck.sessionId, sessionId);
    assert.ok(of(c, sessionId).includes(ECHO), 'the run called the editor\'s server');

    // A second session of the same editor has no such server.
    const other = (await c.agent.request(acp.methods.agent.session.new, { cwd, mcpServers: [] })).sessionId;
    assert.notEqual(other, sessionId);
    assert.deepEqual((await svc.raw('GET', `/api/v1/sessions/${other}/connectors`)).body, []);
    const r2 = await c.agent.request(acp.methods.agent.session.prompt, {
      sessionId: other, prompt: [{ type: 'text', text: 'Ask your server.' }],
    });
    assert.ok(!of(c, other).includes(ECHO), 'the other session\'s run had no such tool');
    const events = (await svc.raw('GET', `/api/v1/runs/${r2._meta.taskdeck.runId}/events`)).body;
    assert.ok(!JSON.stringify(events).includes(ECHO));

    // session/load names the server for it: its next turn has it.
    const d = connect();
    try {
      await d.agent.request(acp.methods.agent.initialize, { protocolVersion: 1, clientCapabilities: {} });
      await d.agent.request(acp.methods.agent.session.load, { sessionId: other, cwd, mcpServers: [server] });
      assert.equal((await svc.raw('GET', `/api/v1/sessions/${other}/connectors`)).body.length, 1);
      const r3 = await d.agent.request(acp.methods.agent.session.prompt, {
        sessionId: other, prompt: [{ type: 'text', text: 'Ask again.' }],
      });
      assert.equal(r3.stopReason, 'end_turn');
      assert.ok(of(d, other).split(ECHO).length >= 2, 'the loaded session\'s new turn called the server');
      // The first session loads too, its history replayed.
      await d.agent.request(acp.methods.agent.session.load, { sessionId, cwd, mcpServers: [server] });
      assert.ok(of(d, sessionId).includes(ECHO));
      // Nothing the editor or anyone reads holds the value: the updates, the runs'
      // events, the log, the store.
      assert.ok(!JSON.stringify(c.updates).includes(SECRET) && !JSON.stringify(d.updates).includes(SECRET));
      for (const id of [r._meta.taskdeck.runId, r3._meta.taskdeck.runId]) {
        const ev = await svc.raw('GET', `/api/v1/runs/${id}/events`);
        assert.equal(ev.status, 200);
        assert.ok(!JSON.stringify(ev.body).includes(SECRET));
      }
      const leaks = filesUnder(svc.home).filter(([, text]) => text.includes(SECRET)).map(([p]) => p);
      assert.deepEqual(leaks, []);
    } finally {
      await d.close();
    }

    // The session's delete removes its servers with it.
    assert.equal((await svc.raw('DELETE', `/api/v1/sessions/${sessionId}`)).status, 200);
    assert.equal((await svc.raw('GET', `/api/v1/sessions/${sessionId}/connectors`)).status, 404);
  } finally {
    await c.close();
  }
});

test('a server the service cannot take is refused as invalid params, and no session is made', async () => {
  const cwd = mkdtempSync(join(process.env.TD_JS_TMP, 'ws-'));
  const c = connect();
  try {
    await c.agent.request(acp.methods.agent.initialize, { protocolVersion: 1, clientCapabilities: {} });
    const project = (await svc.raw('GET', '/api/v1/projects')).body.find((p) => p.name === 'editor-mcp');
    const before = (await svc.raw('GET', `/api/v1/sessions?project=${project.id}`)).body.length;
    await assert.rejects(c.agent.request(acp.methods.agent.session.new, {
      cwd, mcpServers: [{ type: 'sse', name: 'old', url: 'http://127.0.0.1:1/sse', headers: [] }],
    }), (e) => e.code === -32602 && /HTTP\+SSE/.test(e.message));
    await assert.rejects(c.agent.request(acp.methods.agent.session.new, {
      cwd, mcpServers: [{ name: 'bad', command: 'x', args: [], env: [{ name: 'A=B', value: 'v' }] }],
    }), (e) => e.code === -32602);
    assert.equal((await svc.raw('GET', `/api/v1/sessions?project=${project.id}`)).body.length, before);
  } finally {
    await c.close();
  }
});
