#!/usr/bin/env node
// A small ACP agent written with the official SDK's agent side
// (@agentclientprotocol/sdk), run by taskdeck as the `acp` framework
// (tests/acp/framework.test.mjs): runtimes.acp.path is this file, its arguments
// `--sdk DIR` say where the SDK is.  What it does depends on the prompt's last line:
//   files    write notes.md and read it back, try a hidden and an outside path,
//            ask for permission to write allowed.md and write it when allowed
//   terminal run a command in a terminal and report its exit and output
//   wait     wait for session/cancel, then end the turn cancelled
import { join } from 'node:path';
import { Readable, Writable } from 'node:stream';
import { pathToFileURL } from 'node:url';

if (process.argv.includes('--version')) {
  console.log('taskdeck-test-acp-agent 1.0.0');
  process.exit(0);
}
const sdk = process.argv[process.argv.indexOf('--sdk') + 1];
const acp = await import(pathToFileURL(join(sdk, 'dist/v1/unstable/acp.js')));

let cwd = null;
let cancel = null;

async function say(client, sessionId, text) {
  await client.notify(acp.methods.client.session.update, {
    sessionId, update: { sessionUpdate: 'agent_message_chunk', content: { type: 'text', text } },
  });
}

async function tool(client, sessionId, update) {
  await client.notify(acp.methods.client.session.update, { sessionId, update });
}

// "refused (CODE)" for a request that fails, else "NOT REFUSED".
async function refused(promise) {
  try {
    await promise;
    return 'NOT REFUSED';
  } catch (e) {
    return `refused (${e.code})`;
  }
}

async function files(client, sessionId) {
  const fs = acp.methods.client.fs;
  await say(client, sessionId, 'Writing notes.md.\n');
  await tool(client, sessionId, { sessionUpdate: 'tool_call', toolCallId: 'w1', title: 'Write notes.md',
    kind: 'edit', status: 'in_progress' });
  const first = await refused(client.request(fs.writeTextFile,
    { sessionId, path: join(cwd, 'notes.md'), content: 'written through ACP\n' }));
  if (first !== 'NOT REFUSED') {
    await tool(client, sessionId, { sessionUpdate: 'tool_call_update', toolCallId: 'w1', status: 'failed' });
    await say(client, sessionId, `write ${first}\n`);
    return;
  }
  await tool(client, sessionId, { sessionUpdate: 'tool_call_update', toolCallId: 'w1', status: 'completed' });
  const back = await client.request(fs.readTextFile, { sessionId, path: join(cwd, 'notes.md') });
  await say(client, sessionId, `read back: ${back.content}`);
  await say(client, sessionId, `hidden read ${await refused(client.request(fs.readTextFile,
    { sessionId, path: join(cwd, '.ssh/id_rsa') }))}\n`);
  await say(client, sessionId, `hidden write ${await refused(client.request(fs.writeTextFile,
    { sessionId, path: join(cwd, '.ssh/authorized_keys'), content: 'ssh-ed25519 AAAA attacker\n' }))}\n`);
  await say(client, sessionId, `outside write ${await refused(client.request(fs.writeTextFile,
    { sessionId, path: join(cwd, '..', 'escaped.txt'), content: 'out\n' }))}\n`);
  const answer = await client.request(acp.methods.client.session.requestPermission, {
    sessionId,
    toolCall: { toolCallId: 'w2', title: 'Write allowed.md', kind: 'edit', rawInput: { path: 'allowed.md' } },
    options: [
      { optionId: 'yes', name: 'Allow', kind: 'allow_once' },
      { optionId: 'no', name: 'Reject', kind: 'reject_once' },
    ],
  });
  const choice = answer.outcome.outcome === 'selected' ? answer.outcome.optionId : 'cancelled';
  await say(client, sessionId, `permission: ${choice}\n`);
  if (choice === 'yes') {
    await client.request(fs.writeTextFile, { sessionId, path: join(cwd, 'allowed.md'), content: 'allowed\n' });
  }
}

async function terminal(client, sessionId) {
  const t = await client.createTerminal({ sessionId, command: 'sh', args: ['-c', 'echo hi from the terminal; exit 3'] });
  const exit = await t.waitForExit();
  const out = await t.currentOutput();
  await t.release();
  await say(client, sessionId, `terminal: exit ${exit.exitCode}, output ${out.output}`);
}

const app = acp.agent({ name: 'taskdeck-test-acp-agent' })
  .onRequest(acp.methods.agent.initialize, () => ({
    protocolVersion: acp.PROTOCOL_VERSION, agentCapabilities: { loadSession: false }, authMethods: [],
  }))
  .onRequest(acp.methods.agent.session.new, ({ params }) => {
    cwd = params.cwd;
    return { sessionId: 'test-session' };
  })
  .onNotification(acp.methods.agent.session.cancel, () => {
    if (cancel !== null) cancel();
  })
  .onRequest(acp.methods.agent.session.prompt, async ({ params, client }) => {
    const text = params.prompt.map((b) => b.text ?? '').join('');
    const task = text.trim().split('\n').at(-1).trim();
    const { sessionId } = params;
    if (task === 'files') await files(client, sessionId);
    else if (task === 'terminal') await terminal(client, sessionId);
    else if (task === 'wait') {
      await say(client, sessionId, 'Waiting for a cancel.\n');
      await new Promise((resolve) => { cancel = resolve; });
      return { stopReason: 'cancelled' };
    } else await say(client, sessionId, `unknown task ${task}\n`);
    return { stopReason: 'end_turn', usage: { inputTokens: 120, outputTokens: 30, totalTokens: 150 } };
  });

app.connect(acp.ndJsonStream(Writable.toWeb(process.stdout), Readable.toWeb(process.stdin)));
