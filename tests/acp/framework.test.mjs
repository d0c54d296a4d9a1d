// The `acp` framework: a small ACP agent written with the official SDK
// (tests/acp/fake-agent.mjs) run by taskdeck-agent in the run's sandbox, against a
// real taskdeckd.  Its file writes land through taskdeck's file tools, a hidden path
// and one outside the workspace are refused, its permission question becomes the
// run's prompt, answered from the CLI; its terminal runs in the sandbox; a cancel
// reaches it.
import test, { after, before } from 'node:test';
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { mkdirSync, mkdtempSync, writeFileSync, readFileSync, existsSync, realpathSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { BUILDDIR, SRCDIR, startService } from '../js/harness.mjs';

let svc;
let project;
let home;	// the service's HOME, and the workspace: ~/.ssh is in the hidden set

before(async () => {
  home = realpathSync(mkdtempSync(join(process.env.TD_JS_TMP, 'home-')));
  mkdirSync(join(home, '.ssh'), { mode: 0o700 });
  writeFileSync(join(home, '.ssh/id_rsa'), 'PRIVATE KEY\n');
  svc = await startService((svcHome) => {
    writeFileSync(join(svcHome, 'settings.json'), JSON.stringify({
      defaults: { framework: 'taskdeck', provider: 'replay' },
      providers: { replay: { kind: 'replay', defaultModel: 'quick' } },
      runtimes: { acp: { path: join(SRCDIR, 'tests/acp/fake-agent.mjs'), args: ['--sdk', process.env.ACP_SDK] } },
    }));
    return { HOME: home, PATH: `${dirname(process.env.NODE)}:/usr/local/bin:/usr/bin:/bin` };
  });
  const p = await svc.raw('POST', '/api/v1/projects', { name: 'acp-framework' });
  assert.equal(p.status, 201);
  project = p.body.id;
});

after(async () => {
  await svc.destroy();
});

async function startRun(prompt, permissionProfile) {
  const r = await svc.raw('POST', '/api/v1/runs', {
    project, prompt, permissionProfile, cwd: home,
    config: { framework: 'acp', provider: 'replay', model: 'quick' },
  });
  assert.equal(r.status, 201, JSON.stringify(r.body));
  return r.body.id;
}

async function until(what, check, ms = 60000) {
  const deadline = Date.now() + ms;
  for (;;) {
    const v = await check();
    if (v) return v;
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await sleep(50);
  }
}

const final = (id) => until(`run ${id} to end`, async () => {
  const r = (await svc.raw('GET', `/api/v1/runs/${id}`)).body;
  return ['completed', 'failed', 'cancelled'].includes(r.status) ? r : null;
});

const cli = (...args) => spawnSync(join(BUILDDIR, 'taskdeck'), args, {
  env: { ...process.env, TASKDECK_HOME: svc.home }, encoding: 'utf8',
});

test('runtimes and doctor know the acp framework', async () => {
  const rt = (await svc.raw('GET', '/api/v1/runtimes')).body;
  const acp = (rt.items ?? rt.runtimes ?? rt).find((x) => x.framework === 'acp');
  assert.equal(acp.status, 'ready');
  assert.equal(acp.version, '1.0.0');
  const doctor = (await svc.raw('GET', '/api/v1/doctor')).body;
  assert.ok(JSON.stringify(doctor).includes('runtime-acp'));
});

// Answers each permission prompt of run id from the CLI until the run ends:
// decide(prompt) is "allow" or "deny".  The prompts seen, in order.
async function answerAll(id, decide) {
  const seen = [];
  for (;;) {
    const r = (await svc.raw('GET', `/api/v1/runs/${id}`)).body;
    if (['completed', 'failed', 'cancelled'].includes(r.status)) return { run: r, seen };
    const l = (await svc.raw('GET', `/app/v1/permissions?run=${id}`)).body;
    for (const p of Array.isArray(l) ? l : l.items) {
      seen.push(p);
      const a = cli('permissions', decide(p), p.id);
      assert.equal(a.status, 0, a.stderr);
    }
    await sleep(50);
  }
}

test('files: a write lands, hidden and outside paths are refused, a permission is answered from the CLI', async () => {
  const id = await startRun('files', 'ask');
  const { run, seen } = await answerAll(id, () => 'allow');
  assert.equal(run.status, 'completed', JSON.stringify(run));
  // The agent's own question is the run's prompt; each write asks too (ask).
  const question = seen.find((p) => p.summary === 'Write allowed.md');
  assert.ok(question, 'the agent\'s request_permission became a prompt');
  assert.equal(question.tool, 'acp_edit');
  assert.ok(seen.some((p) => p.tool === 'write_file' && p.summary.includes('notes.md')));
  assert.equal(readFileSync(join(home, 'notes.md'), 'utf8'), 'written through ACP\n');
  assert.match(run.output, /read back: written through ACP\n/);
  // Refused though the user allowed them: the hidden set and the workspace's bounds hold.
  assert.match(run.output, /hidden read refused \(/);
  assert.match(run.output, /hidden write refused \(/);
  assert.match(run.output, /outside write refused \(/);
  assert.match(run.output, /permission: yes\n/);
  assert.equal(readFileSync(join(home, 'allowed.md'), 'utf8'), 'allowed\n');
  assert.ok(!existsSync(join(home, '.ssh/authorized_keys')));
  assert.ok(!existsSync(join(home, '..', 'escaped.txt')));
  assert.equal(readFileSync(join(home, '.ssh/id_rsa'), 'utf8'), 'PRIVATE KEY\n');
  // The agent's tool call and taskdeck's own writes are the run's tool events;
  // the writes were snapshotted as the run's changes.
  const events = (await svc.raw('GET', `/api/v1/runs/${id}/events`)).body;
  const tools = events.filter((e) => e.type === 'run.tool').map((e) => e.data);
  assert.ok(tools.some((t) => t.callId === 'w1' && t.status === 'completed'));
  assert.ok(tools.filter((t) => t.name === 'write_file' && t.status === 'completed').length >= 2);
  assert.ok(tools.some((t) => t.name === 'write_file' && t.status === 'failed'));
  assert.ok(events.some((e) => e.type === 'run.changes'));
  assert.ok(run.changes.files >= 2);
  assert.equal(run.usage?.inputTokens ?? run.inputTokens, 120);
});

test('files, the question denied from the CLI: the agent hears no, allowed.md is not written', async () => {
  const ws = realpathSync(mkdtempSync(join(home, 'deny-')));
  const r = await svc.raw('POST', '/api/v1/runs', {
    project, prompt: 'files', permissionProfile: 'ask', cwd: ws,
    config: { framework: 'acp', provider: 'replay', model: 'quick' },
  });
  assert.equal(r.status, 201);
  const { run } = await answerAll(r.body.id, (p) => (p.summary === 'Write allowed.md' ? 'deny' : 'allow'));
  assert.equal(run.status, 'completed');
  assert.match(run.output, /permission: no\n/);
  assert.ok(existsSync(join(ws, 'notes.md')));
  assert.ok(!existsSync(join(ws, 'allowed.md')));
});

test('a terminal runs in the sandbox: its exit status and output', async () => {
  const run = await final(await startRun('terminal', 'workspace-write'));
  assert.equal(run.status, 'completed');
  assert.match(run.output, /terminal: exit 3, output hi from the terminal\n/);
});

test('read-only: the agent\'s writes are refused', async () => {
  const ws = realpathSync(mkdtempSync(join(home, 'ro-')));
  const r = await svc.raw('POST', '/api/v1/runs', {
    project, prompt: 'files', permissionProfile: 'read-only', cwd: ws,
    config: { framework: 'acp', provider: 'replay', model: 'quick' },
  });
  const run = await final(r.body.id);
  assert.equal(run.status, 'completed');
  assert.match(run.output, /write refused \(/);
  assert.ok(!existsSync(join(ws, 'notes.md')));
});

test('cancel reaches the agent: the run ends cancelled', async () => {
  const id = await startRun('wait', 'workspace-write');
  await until('the agent to wait', async () => {
    const ev = (await svc.raw('GET', `/api/v1/runs/${id}/events`)).body;
    return ev.some((e) => e.type === 'run.output' && e.data.delta.includes('Waiting'));
  });
  assert.equal((await svc.raw('POST', `/api/v1/runs/${id}/cancel`)).status, 200);
  const run = await final(id);
  assert.equal(run.status, 'cancelled');
});
