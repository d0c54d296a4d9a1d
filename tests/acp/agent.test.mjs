// `taskdeck acp` driven by the official ACP SDK's client (@agentclientprotocol/sdk)
// against a real taskdeckd with the replay provider: a whole turn and its replay
// by session/load, permissions allowed once, always and rejected, a plan-first
// plan approved, and a cancel.
import test, { after, before } from 'node:test';
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { mkdtempSync, existsSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { Readable, Writable } from 'node:stream';
import { pathToFileURL } from 'node:url';
import { BUILDDIR, startService } from '../js/harness.mjs';

const acp = await import(pathToFileURL(join(process.env.ACP_SDK, 'dist/v1/stable/acp.js')));

let svc;
let project;

before(async () => {
  svc = await startService();
  const p = await svc.raw('POST', '/api/v1/projects', { name: 'editor' });
  assert.equal(p.status, 201);
  project = p.body;
});

after(async () => {
  await svc.destroy();
});

// A `taskdeck acp` process and an SDK client connected to it.  answer(request)
// decides each session/request_permission; every session/update is kept.
function connect(args, answer = () => ({ outcome: { outcome: 'cancelled' } })) {
  const child = spawn(join(BUILDDIR, 'taskdeck'), ['acp', '--project', 'editor', '--provider', 'replay', ...args], {
    env: { ...process.env, TASKDECK_HOME: svc.home },
    stdio: ['pipe', 'pipe', 'inherit'],
  });
  const updates = [];
  const asked = [];
  const app = acp.client({ name: 'taskdeck-acp-test' })
    .onNotification(acp.methods.client.session.update, ({ params }) => {
      updates.push(params);
    })
    .onRequest(acp.methods.client.session.requestPermission, ({ params }) => {
      asked.push(params);
      return answer(params);
    });
  const stream = acp.ndJsonStream(Writable.toWeb(child.stdin), Readable.toWeb(child.stdout));
  const conn = app.connect(stream);
  return {
    child, updates, asked, agent: conn.agent,
    async close() {
      conn.close();
      child.stdin.end();
      if (child.exitCode === null) await new Promise((r) => child.once('exit', r));
    },
  };
}

const text = (updates, kind = 'agent_message_chunk') =>
  updates.filter((u) => u.update.sessionUpdate === kind).map((u) => u.update.content.text).join('');

async function start(c, cwd) {
  const init = await c.agent.request(acp.methods.agent.initialize, {
    protocolVersion: acp.PROTOCOL_VERSION,
    clientCapabilities: { fs: { readTextFile: false, writeTextFile: false }, terminal: false },
  });
  assert.equal(init.protocolVersion, 1);
  assert.equal(init.agentCapabilities.loadSession, true);
  const s = await c.agent.request(acp.methods.agent.session.new, { cwd, mcpServers: [] });
  assert.match(s.sessionId, /^ses_[0-9a-f]{24}$/);
  return s.sessionId;
}

test('a whole turn: the run streams as agent_message_chunk, ends end_turn, and session/load replays it', async () => {
  const c = connect(['--model', 'research']);
  const cwd = mkdtempSync(join(process.env.TD_JS_TMP, 'ws-'));
  try {
    const sessionId = await start(c, cwd);
    const r = await c.agent.request(acp.methods.agent.session.prompt, {
      sessionId, prompt: [{ type: 'text', text: 'Write the report.' }],
    });
    assert.equal(r.stopReason, 'end_turn');
    const runId = r._meta.taskdeck.runId;
    const run = (await svc.raw('GET', `/api/v1/runs/${runId}`)).body;
    assert.equal(run.status, 'completed');
    assert.equal(run.cwd, cwd);
    // Every update belongs to the session; the chunks are the run's output exactly.
    assert.ok(c.updates.every((u) => u.sessionId === sessionId));
    assert.equal(text(c.updates), run.output);
    // The tools as tool_call, then tool_call_update to the end; the write is an edit
    // whose location is the file it wrote.
    const calls = c.updates.filter((u) => u.update.sessionUpdate === 'tool_call').map((u) => u.update);
    const write = calls.find((t) => t.kind === 'edit');
    assert.ok(write, 'the write_file call is a tool_call of kind edit');
    const ends = c.updates.filter((u) => u.update.sessionUpdate === 'tool_call_update' &&
      u.update.toolCallId === write.toolCallId).map((u) => u.update);
    assert.ok(ends.some((e) => e.status === 'completed'));
    assert.ok(ends.some((e) => (e.locations ?? []).some((l) => l.path === join(cwd, 'report.md'))));
    assert.ok(calls.some((t) => t.kind === 'read'), 'list_files is a read');
    assert.ok(r.usage.inputTokens > 0 && r.usage.outputTokens > 0);

    // Another client loads the taskdeck session: the prompt and the answer again.
    const d = connect([]);
    try {
      await d.agent.request(acp.methods.agent.initialize, { protocolVersion: 1, clientCapabilities: {} });
      const tdSession = r._meta.taskdeck.sessionId;
      await d.agent.request(acp.methods.agent.session.load, { sessionId: tdSession, cwd, mcpServers: [] });
      assert.equal(text(d.updates, 'user_message_chunk'), 'Write the report.');
      assert.equal(text(d.updates), run.output);
      assert.ok(d.updates.every((u) => u.sessionId === tdSession));
      await assert.rejects(d.agent.request(acp.methods.agent.session.load,
        { sessionId: 'ses_00000000000000000000000000', cwd, mcpServers: [] }));
    } finally {
      await d.close();
    }
  } finally {
    await c.close();
  }
});

test('file changes: each step\'s files are diffs of the turn\'s edit calls (an added file, an edited one)', async () => {
  const cwd = mkdtempSync(join(process.env.TD_JS_TMP, 'ws-'));
  writeFileSync(join(cwd, 'notes.txt'), 'alpha\nbeta\ngamma\n');
  const c = connect(['--model', 'workspace-edits', '--permission', 'workspace-write']);
  try {
    const sessionId = await start(c, cwd);
    const r = await c.agent.request(acp.methods.agent.session.prompt, {
      sessionId, prompt: [{ type: 'text', text: 'Edit.' }],
    });
    assert.equal(r.stopReason, 'end_turn');
    const diffs = new Map();
    for (const u of c.updates) {
      if (u.update.sessionUpdate !== 'tool_call_update') continue;
      for (const x of u.update.content ?? []) if (x.type === 'diff') diffs.set(x.path, x);
    }
    assert.deepEqual(diffs.get(join(cwd, 'report.md')), { type: 'diff', path: join(cwd, 'report.md'),
      oldText: null, newText: '# Report\n\nAll three trials passed.\n' });
    assert.deepEqual(diffs.get(join(cwd, 'notes.txt')), { type: 'diff', path: join(cwd, 'notes.txt'),
      oldText: 'alpha\nbeta\ngamma\n', newText: 'alpha\nBETA\ngamma\n' });
  } finally {
    await c.close();
  }
});

test('ask: allow once, reject and allow always become the run\'s permission answers', async () => {
  const cwd = mkdtempSync(join(process.env.TD_JS_TMP, 'ws-'));
  const choices = ['allow-once', 'reject', 'allow-always'];
  const c = connect(['--model', 'ask', '--permission', 'ask'], (req) => {
    const kinds = req.options.map((o) => o.kind).sort();
    assert.deepEqual(kinds, ['allow_always', 'allow_once', 'reject_once']);
    return { outcome: { outcome: 'selected', optionId: choices.shift() } };
  });
  try {
    const sessionId = await start(c, cwd);
    const r = await c.agent.request(acp.methods.agent.session.prompt, {
      sessionId, prompt: [{ type: 'text', text: 'Write the files.' }],
    });
    assert.equal(r.stopReason, 'end_turn');
    assert.equal(c.asked.length, 3);
    // The first question shows the write as a diff of a new file.
    const first = c.asked[0].toolCall;
    assert.equal(first.kind, 'edit');
    assert.deepEqual(first.content[0], { type: 'diff', path: join(cwd, 'allowed.md'), oldText: null,
      newText: '# Allowed\n\nWritten with the user\'s permission.\n' });
    assert.equal(c.asked[1].toolCall.kind, 'execute');
    assert.ok(existsSync(join(cwd, 'allowed.md')));
    assert.ok(!existsSync(join(cwd, 'ran.txt')), 'the rejected command did not run');
    assert.equal(readFileSync(join(cwd, 'second.md'), 'utf8'), '# Second\n\nAlso written with permission.\n');
    const prompts = (await svc.raw('GET', `/app/v1/permissions?status=all&run=${r._meta.taskdeck.runId}`)).body;
    const decisions = (Array.isArray(prompts) ? prompts : prompts.items).map((p) => p.decision).sort();
    assert.deepEqual(decisions, ['allow', 'allow-run', 'deny']);
    // The rejected command is a failed tool call.
    const denied = c.updates.filter((u) => u.update.sessionUpdate === 'tool_call_update' &&
      u.update.status === 'failed');
    assert.ok(denied.length >= 1);
  } finally {
    await c.close();
  }
});

test('plan-first: the plan is a plan update and waits for the editor\'s approval', async () => {
  const cwd = mkdtempSync(join(process.env.TD_JS_TMP, 'ws-'));
  const c = connect(['--model', 'plan', '--permission', 'workspace-write', '--plan-first'],
    () => ({ outcome: { outcome: 'selected', optionId: 'approve' } }));
  try {
    const sessionId = await start(c, cwd);
    const r = await c.agent.request(acp.methods.agent.session.prompt, {
      sessionId, prompt: [{ type: 'text', text: 'Plan, then write the report.' }],
    });
    assert.equal(r.stopReason, 'end_turn');
    assert.equal(c.asked.length, 1);
    assert.deepEqual(c.asked[0].options.map((o) => o.optionId), ['approve', 'reject']);
    const plans = c.updates.filter((u) => u.update.sessionUpdate === 'plan').map((u) => u.update.entries);
    assert.equal(plans[0].length, 3);
    assert.ok(plans[0].every((e) => e.status === 'pending'));
    assert.ok(plans.at(-1).every((e) => e.status === 'completed'), 'the last plan update has every step done');
    assert.ok(existsSync(join(cwd, 'report.md')));
  } finally {
    await c.close();
  }
});

test('a rejected plan ends the turn cancelled', async () => {
  const cwd = mkdtempSync(join(process.env.TD_JS_TMP, 'ws-'));
  const c = connect(['--model', 'plan', '--permission', 'workspace-write', '--plan-first'],
    () => ({ outcome: { outcome: 'selected', optionId: 'reject' } }));
  try {
    const sessionId = await start(c, cwd);
    const r = await c.agent.request(acp.methods.agent.session.prompt, {
      sessionId, prompt: [{ type: 'text', text: 'Plan.' }],
    });
    assert.equal(r.stopReason, 'cancelled');
    assert.ok(!existsSync(join(cwd, 'report.md')));
  } finally {
    await c.close();
  }
});

test('session/cancel cancels the run: the turn ends cancelled', async () => {
  const cwd = mkdtempSync(join(process.env.TD_JS_TMP, 'ws-'));
  const c = connect(['--model', 'slow']);
  try {
    const sessionId = await start(c, cwd);
    const turn = c.agent.request(acp.methods.agent.session.prompt, {
      sessionId, prompt: [{ type: 'text', text: 'Take your time.' }],
    });
    await c.agent.notify(acp.methods.agent.session.cancel, { sessionId });
    const r = await turn;
    assert.equal(r.stopReason, 'cancelled');
    const run = (await svc.raw('GET', `/api/v1/runs/${r._meta.taskdeck.runId}`)).body;
    assert.equal(run.status, 'cancelled');
    // The session takes the next turn.
    await assert.rejects(c.agent.request(acp.methods.agent.session.prompt, {
      sessionId: 'acp_nosuchsession', prompt: [{ type: 'text', text: 'x' }],
    }));
  } finally {
    await c.close();
  }
});

test('bad input: image content is refused, an unknown method is method-not-found', async () => {
  const cwd = mkdtempSync(join(process.env.TD_JS_TMP, 'ws-'));
  const c = connect(['--model', 'quick']);
  try {
    const sessionId = await start(c, cwd);
    await assert.rejects(c.agent.request(acp.methods.agent.session.prompt, {
      sessionId, prompt: [{ type: 'image', mimeType: 'image/png', data: 'AAAA' }],
    }), (e) => e.code === -32602);
    await assert.rejects(c.agent.request('session/fly', { sessionId }), (e) => e.code === -32601);
    await assert.rejects(c.agent.request(acp.methods.agent.session.new, { cwd: 'relative', mcpServers: [] }),
      (e) => e.code === -32602);
  } finally {
    await c.close();
  }
});

test('a restart of the service mid-turn: the run resumes and the turn still ends end_turn', async () => {
  const cwd = mkdtempSync(join(process.env.TD_JS_TMP, 'ws-'));
  const c = connect(['--model', 'steady']);
  try {
    const sessionId = await start(c, cwd);
    const turn = c.agent.request(acp.methods.agent.session.prompt, {
      sessionId, prompt: [{ type: 'text', text: 'Keep going.' }],
    });
    // Wait for the first deltas, then stop the service and start it again (another port).
    const deadline = Date.now() + 30000;
    while (!text(c.updates).includes('tick 1') && Date.now() < deadline) await new Promise((r) => setTimeout(r, 20));
    assert.ok(text(c.updates).length > 0, 'output before the restart');
    const oldUrl = svc.url;
    await svc.stop();
    await svc.start();
    assert.notEqual(svc.url, oldUrl);
    const r = await turn;
    assert.equal(r.stopReason, 'end_turn');
    const run = (await svc.raw('GET', `/api/v1/runs/${r._meta.taskdeck.runId}`)).body;
    assert.equal(run.status, 'completed');
    assert.ok(run.output.endsWith(text(c.updates).slice(-20)), 'the chunks went on to the end of the output');
  } finally {
    await c.close();
  }
});
