// connectToTaskdeck: discovery and token files where libtaskdeck looks
// (TASKDECK_HOME, XDG_RUNTIME_DIR, XDG_STATE_HOME, XDG_CONFIG_HOME, HOME),
// TASKDECK_URL/TASKDECK_TOKEN, explicit options, and the failures.
import { test, before, after, beforeEach } from 'node:test';
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { mkdirSync, mkdtempSync, writeFileSync, rmSync } from 'node:fs';
import { join } from 'node:path';
import { tmpdir } from 'node:os';
import { startService, SDK } from './harness.mjs';

const { connectToTaskdeck, TaskdeckError, DEFAULT_REQUEST_TIMEOUT_MS } = await import(SDK);
const VARS = ['TASKDECK_HOME', 'TASKDECK_URL', 'TASKDECK_TOKEN', 'HOME', 'XDG_RUNTIME_DIR',
  'XDG_STATE_HOME', 'XDG_CONFIG_HOME'];
const saved = Object.fromEntries(VARS.map((v) => [v, process.env[v]]));
let svc;
let tmp;

before(async () => {
  svc = await startService();
});
after(async () => {
  for (const [k, v] of Object.entries(saved)) {
    if (v === undefined) delete process.env[k];
    else process.env[k] = v;
  }
  await svc?.destroy();
  if (tmp) rmSync(tmp, { recursive: true, force: true });
});
beforeEach(() => {
  if (tmp) rmSync(tmp, { recursive: true, force: true });
  tmp = mkdtempSync(join(process.env.TD_JS_TMP ?? tmpdir(), 'tdjs-home-'));
  for (const v of VARS) delete process.env[v];
  process.env.HOME = tmp;
});

function put(path, text) {
  mkdirSync(join(path, '..'), { recursive: true });
  writeFileSync(path, text, { mode: 0o600 });
}

// A discovery file naming the running service; withTokenFile: its tokenFile member.
function discovery(path, { withTokenFile = false, pid = svc.pid } = {}) {
  const d = { ...svc.discovery, pid };
  if (withTokenFile) d.tokenFile = join(svc.home, 'token');
  else delete d.tokenFile;
  put(path, JSON.stringify(d));
}

async function works(options) {
  const td = await connectToTaskdeck(options);
  const doc = await td.doctor();
  assert.equal(typeof doc.ready, 'boolean');
  td.close();
  return td;
}

test('TASKDECK_HOME: its service.json and the token file it names', async () => {
  process.env.TASKDECK_HOME = svc.home;
  const td = await works();
  assert.equal(td.baseUrl, svc.url);
  assert.equal(td.requestTimeoutMs, DEFAULT_REQUEST_TIMEOUT_MS);
});

test('XDG_RUNTIME_DIR/taskdeck/service.json, token from XDG_CONFIG_HOME/taskdeck/token', async () => {
  process.env.XDG_RUNTIME_DIR = join(tmp, 'run');
  process.env.XDG_CONFIG_HOME = join(tmp, 'cfg');
  discovery(join(tmp, 'run/taskdeck/service.json'));
  put(join(tmp, 'cfg/taskdeck/token'), `${svc.token}\n`);
  await works();
});

test('without XDG_RUNTIME_DIR: XDG_STATE_HOME, and the tokenFile of the discovery file', async () => {
  process.env.XDG_STATE_HOME = join(tmp, 'state');
  discovery(join(tmp, 'state/taskdeck/service.json'), { withTokenFile: true });
  await works();
});

test('HOME defaults: ~/.local/state and ~/.config; relative XDG values are ignored', async () => {
  process.env.XDG_RUNTIME_DIR = 'relative/run';
  process.env.XDG_CONFIG_HOME = 'relative/cfg';
  discovery(join(tmp, '.local/state/taskdeck/service.json'));
  put(join(tmp, '.config/taskdeck/token'), svc.token);
  await works();
});

test('TASKDECK_URL and TASKDECK_TOKEN override discovery; options override both', async () => {
  process.env.TASKDECK_HOME = join(tmp, 'empty');
  process.env.TASKDECK_URL = `${svc.url}/`;
  process.env.TASKDECK_TOKEN = svc.token;
  const td = await works({ requestTimeoutMs: 1234 });
  assert.equal(td.baseUrl, svc.url, 'a trailing / is dropped');
  assert.equal(td.requestTimeoutMs, 1234);
  process.env.TASKDECK_URL = 'http://127.0.0.1:1';
  process.env.TASKDECK_TOKEN = 'a'.repeat(64);
  await works({ baseUrl: svc.url, token: svc.token });
  // TASKDECK_URL alone: the token still comes from the files.
  delete process.env.TASKDECK_TOKEN;
  process.env.TASKDECK_URL = svc.url;
  process.env.TASKDECK_HOME = svc.home;
  await works();
});

test('no service: service_not_found saying how to start one; a dead pid counts as none', async () => {
  process.env.TASKDECK_HOME = join(tmp, 'none');
  await assert.rejects(connectToTaskdeck(), (e) => e instanceof TaskdeckError &&
    e.code === 'service_not_found' && /taskdeck daemon start/.test(e.message) && e.status === 0);
  const dead = spawnSync('true').pid;
  process.env.TASKDECK_HOME = tmp;
  discovery(join(tmp, 'service.json'), { pid: dead });
  put(join(tmp, 'token'), svc.token);
  await assert.rejects(connectToTaskdeck(), (e) => e.code === 'service_not_found' &&
    e.message.includes(`pid ${dead}`));
  put(join(tmp, 'service.json'), '{"baseUrl": 5}');
  await assert.rejects(connectToTaskdeck(), { code: 'service_not_found' });
});

test('a malformed token file is io_error without its content; bad options are invalid_argument', async () => {
  process.env.TASKDECK_HOME = tmp;
  discovery(join(tmp, 'service.json'));
  const almost = `${svc.token.slice(0, 60)}zz`;
  put(join(tmp, 'token'), almost);
  await assert.rejects(connectToTaskdeck(), (e) => e.code === 'io_error' && !e.message.includes(almost.slice(0, 20)));
  put(join(tmp, 'token'), svc.token);
  await works();
  await assert.rejects(connectToTaskdeck({ baseUrl: 'ftp://x', token: svc.token }), { code: 'invalid_argument' });
  await assert.rejects(connectToTaskdeck({ baseUrl: svc.url, token: 'has space' }), { code: 'invalid_argument' });
  await assert.rejects(connectToTaskdeck({ baseUrl: svc.url, token: svc.token, requestTimeoutMs: -5 }),
    { code: 'invalid_argument' });
});
