// An attacker's paths in a permission question of `taskdeck acp`: the model names
// a file outside the workspace and a hidden one for write_file under ask.  The
// question's diff never shows what is there (oldText null); a file of the
// workspace shows its old text.  Its own service, with tests/acp/replay.
import test, { after, before } from 'node:test';
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { mkdirSync, mkdtempSync, readFileSync, writeFileSync, realpathSync } from 'node:fs';
import { join } from 'node:path';
import { Readable, Writable } from 'node:stream';
import { pathToFileURL } from 'node:url';
import { BUILDDIR, SRCDIR, startService } from '../js/harness.mjs';

const acp = await import(pathToFileURL(join(process.env.ACP_SDK, 'dist/v1/stable/acp.js')));
let svc;
let home;

before(async () => {
  home = realpathSync(mkdtempSync(join(process.env.TD_JS_TMP, 'peek-')));
  svc = await startService({ HOME: home, TASKDECK_REPLAY_DIR: join(SRCDIR, 'tests/acp/replay') });
  assert.equal((await svc.raw('POST', '/api/v1/projects', { name: 'peek' })).status, 201);
});

after(async () => {
  await svc.destroy();
});

test('the diff of a question never shows a file outside the workspace or a hidden one', async () => {
  const ws = home;	// the workspace is HOME: ~/.ssh is in it and hidden
  mkdirSync(join(ws, '.ssh'), { recursive: true });
  writeFileSync(join(home, '..', 'outside.txt'), 'TOPSECRET outside\n');
  writeFileSync(join(ws, '.ssh/id_rsa'), 'TOPSECRET key\n');
  writeFileSync(join(ws, 'inside.md'), 'old\n');
  const child = spawn(join(BUILDDIR, 'taskdeck'), ['acp', '--project', 'peek', '--provider', 'replay',
    '--model', 'peek', '--permission', 'ask'], {
    env: { ...process.env, TASKDECK_HOME: svc.home, HOME: home }, stdio: ['pipe', 'pipe', 'inherit'],
  });
  const asked = [];
  const app = acp.client({ name: 'peek' })
    .onNotification(acp.methods.client.session.update, () => {})
    .onRequest(acp.methods.client.session.requestPermission, ({ params }) => {
      asked.push(params.toolCall);
      return { outcome: { outcome: 'selected', optionId: 'reject' } };
    });
  const conn = app.connect(acp.ndJsonStream(Writable.toWeb(child.stdin), Readable.toWeb(child.stdout)));
  try {
    await conn.agent.request(acp.methods.agent.initialize, { protocolVersion: 1, clientCapabilities: {} });
    const { sessionId } = await conn.agent.request(acp.methods.agent.session.new, { cwd: ws, mcpServers: [] });
    const r = await conn.agent.request(acp.methods.agent.session.prompt,
      { sessionId, prompt: [{ type: 'text', text: 'go' }] });
    assert.equal(r.stopReason, 'end_turn');
    assert.equal(asked.length, 3);
    const diffs = asked.map((t) => t.content.find((c) => c.type === 'diff'));
    assert.equal(diffs[0].oldText, null, 'outside the workspace: not read');
    assert.equal(diffs[1].oldText, null, 'hidden: not read');
    assert.equal(diffs[2].oldText, 'old\n');
    assert.ok(!JSON.stringify(asked).includes('TOPSECRET'));
    assert.equal(readFileSync(join(home, '..', 'outside.txt'), 'utf8'), 'TOPSECRET outside\n');
    assert.equal(readFileSync(join(ws, 'inside.md'), 'utf8'), 'old\n', 'rejected: not written');
  } finally {
    conn.close();
    child.stdin.end();
    if (child.exitCode === null) await new Promise((resolve) => child.once('exit', resolve));
  }
});
