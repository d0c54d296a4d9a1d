// Test harness of the SDK's tests: a real taskdeckd on an ephemeral port with
// its own TASKDECK_HOME (as tests/integration/harness.c starts it), and small
// fake servers.  TD_BUILDDIR and TD_SRCDIR come from make check (tests/js/sdk.sh).
import { spawn } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync, existsSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import net from 'node:net';
import http from 'node:http';
import { setTimeout as sleep } from 'node:timers/promises';
import { after } from 'node:test';
import assert from 'node:assert/strict';
import { checkAnswer } from './schema.mjs';

export const BUILDDIR = process.env.TD_BUILDDIR ?? '.';
export const SRCDIR = process.env.TD_SRCDIR ?? '.';
export const SDK = join(SRCDIR, 'sdk/js/src/index.js');

const live = new Set();
// A test process that ends early (a failure, --test-force-exit, a signal)
// leaves no service and no home behind.
process.on('exit', () => {
  for (const s of live) {
    s.kill();
    rmSync(s.home, { recursive: true, force: true });
  }
});
for (const sig of ['SIGTERM', 'SIGINT']) {
  process.once(sig, () => process.exit(128 + (sig === 'SIGTERM' ? 15 : 2)));
}

// Every JSON answer a real service of these tests gives the SDK is checked
// against docs/openapi.json; a test file whose answers do not match fails.
export const schemaProblems = [];
const request = http.request;
http.request = function checkedRequest(...args) {
  const req = request.apply(this, args);
  const o = args[0] !== null && typeof args[0] === 'object' && !(args[0] instanceof URL) ? args[0] : null;
  if (o === null || o.port === undefined) return req;
  req.on('response', (res) => {
    const port = Number(o.port);
    if (![...live].some((svc) => svc.port === port)) return;
    if (!String(res.headers['content-type'] ?? '').startsWith('application/json')) return;
    // Watch the body go by without a listener of our own (which would change its flow).
    const chunks = [];
    const emit = res.emit;
    res.emit = function watched(ev, ...a) {
      if (ev === 'data') chunks.push(Buffer.from(a[0]));
      else if (ev === 'end') {
        let body;
        try {
          body = JSON.parse(Buffer.concat(chunks).toString('utf8'));
        } catch {
          body = undefined;
        }
        if (body === undefined) schemaProblems.push(`${o.method} ${o.path}: not JSON`);
        else schemaProblems.push(...checkAnswer(o.method ?? 'GET', o.path, res.statusCode, body));
      }
      return emit.call(this, ev, ...a);
    };
  });
  return req;
};
after(() => {
  assert.deepEqual(schemaProblems, [], 'every answer of the service matches docs/openapi.json');
});

function readJson(path) {
  try {
    return JSON.parse(readFileSync(path, 'utf8'));
  } catch {
    return null;
  }
}

export class Service {
  constructor(home) {
    this.home = home ?? mkdtempSync(join(process.env.TD_JS_TMP ?? tmpdir(), 'tdjs-'));
    this.child = null;
  }

  // Starts taskdeckd in this.home; resolves once its discovery file names it.
  async start(extraEnv = {}) {
    const log = join(this.home, 'taskdeckd.log');
    this.child = spawn(join(BUILDDIR, 'taskdeckd'), ['--foreground', '--log', log], {
      env: { ...process.env, TASKDECK_HOME: this.home,
        TASKDECK_REPLAY_DIR: join(SRCDIR, 'data/replay'), ...extraEnv },
      stdio: ['ignore', 'ignore', 'inherit'],
    });
    live.add(this);
    const exited = new Promise((resolve) => this.child.once('exit', resolve));
    this.exited = exited;
    const deadline = Date.now() + 30000;
    while (Date.now() < deadline) {
      const d = readJson(join(this.home, 'service.json'));
      if (d !== null && d.pid === this.child.pid && typeof d.baseUrl === 'string') {
        this.url = d.baseUrl;
        this.port = Number(new URL(d.baseUrl).port);
        this.discovery = d;
        this.token = readFileSync(join(this.home, 'token'), 'utf8').trim();
        return this;
      }
      if (this.child.exitCode !== null) throw new Error(`taskdeckd exited during start-up (see ${log})`);
      await sleep(20);
    }
    throw new Error('taskdeckd did not become ready in 30 s');
  }

  get pid() {
    return this.child?.pid;
  }

  // SIGTERM and wait; SIGKILL after 10 s.
  async stop() {
    if (this.child === null || this.child.exitCode !== null || this.child.signalCode !== null) return;
    this.child.kill('SIGTERM');
    const t = setTimeout(() => this.child.kill('SIGKILL'), 10000);
    await this.exited;
    clearTimeout(t);
  }

  kill() {
    if (this.child !== null && this.child.exitCode === null && this.child.signalCode === null) {
      this.child.kill('SIGKILL');
    }
  }

  async destroy() {
    await this.stop();
    live.delete(this);
    if (existsSync(this.home)) rmSync(this.home, { recursive: true, force: true });
  }

  env() {
    return { TASKDECK_HOME: this.home };
  }

  // A raw request with the token, for checks behind the SDK's back.
  async raw(method, path, body) {
    const r = await fetch(this.url + path, {
      method, headers: { authorization: `Bearer ${this.token}`, 'content-type': 'application/json' },
      body: body === undefined ? undefined : JSON.stringify(body),
    });
    const text = await r.text();
    const parsed = text === '' ? null : JSON.parse(text);
    // Checked against the document as every answer the SDK gets is.
    if (String(r.headers.get('content-type') ?? '').startsWith('application/json')) {
      schemaProblems.push(...checkAnswer(method, path, r.status, parsed));
    }
    return { status: r.status, headers: r.headers, body: parsed };
  }
}

/** Starts a fresh service and points TASKDECK_HOME at it (URL and token env unset). */
export async function startService(extraEnv = {}) {
  const s = new Service();
  await s.start(typeof extraEnv === 'function' ? extraEnv(s.home) : extraEnv);
  process.env.TASKDECK_HOME = s.home;
  delete process.env.TASKDECK_URL;
  delete process.env.TASKDECK_TOKEN;
  return s;
}

/**
 * A fake HTTP server: handler(req, res, body) answers; every request is
 * recorded as {method, url, headers, body}.
 */
export async function fakeServer(handler) {
  const requests = [];
  const sockets = new Set();
  const server = http.createServer((req, res) => {
    const chunks = [];
    req.on('data', (c) => chunks.push(c));
    req.on('end', () => {
      const body = Buffer.concat(chunks).toString('utf8');
      requests.push({ method: req.method, url: req.url, headers: req.headers, body });
      handler(req, res, body);
    });
  });
  server.on('connection', (s) => {
    sockets.add(s);
    s.on('close', () => sockets.delete(s));
  });
  await new Promise((resolve) => server.listen(0, '127.0.0.1', resolve));
  return {
    url: `http://127.0.0.1:${server.address().port}`,
    requests,
    server,
    async close() {
      for (const s of sockets) s.destroy();
      if (server.listening) await new Promise((resolve) => server.close(resolve));
    },
  };
}

/** A raw TCP server writing what script(socket) decides (for malformed streams). */
export async function rawServer(onConnection) {
  const sockets = new Set();
  const server = net.createServer((s) => {
    sockets.add(s);
    s.on('close', () => sockets.delete(s));
    s.on('error', () => {});
    onConnection(s);
  });
  await new Promise((resolve) => server.listen(0, '127.0.0.1', resolve));
  return {
    url: `http://127.0.0.1:${server.address().port}`,
    port: server.address().port,
    sockets,
    async close() {
      for (const s of sockets) s.destroy();
      if (server.listening) await new Promise((resolve) => server.close(resolve));
    },
  };
}

/**
 * A TCP proxy to target whose connections cut() drops, to break streams.  It
 * rewrites the Host header of each connection's first request (the service
 * accepts only its own address).
 */
export async function cuttableProxy(targetUrl) {
  const target = new URL(targetUrl);
  const pairs = new Set();
  let connections = 0;
  const server = net.createServer((client) => {
    connections++;
    const upstream = net.connect(Number(target.port), target.hostname);
    const pair = [client, upstream];
    pairs.add(pair);
    let first = true;
    client.on('data', (c) => {
      if (first) {
        first = false;
        c = Buffer.from(c.toString('latin1').replace(/^host:.*$/im, `Host: ${target.host}`), 'latin1');
      }
      upstream.write(c);
    });
    upstream.pipe(client);
    const end = () => {
      client.destroy();
      upstream.destroy();
      pairs.delete(pair);
    };
    client.on('error', end);
    upstream.on('error', end);
    client.on('close', end);
    upstream.on('close', end);
  });
  await new Promise((resolve) => server.listen(0, '127.0.0.1', resolve));
  return {
    url: `http://127.0.0.1:${server.address().port}`,
    get connections() { return connections; },
    cut() {
      for (const [a, b] of pairs) {
        a.destroy();
        b.destroy();
      }
      pairs.clear();
    },
    async close() {
      this.cut();
      await new Promise((resolve) => server.close(resolve));
    },
  };
}

export const SSE_HEAD = 'HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\nCache-Control: no-store\r\n\r\n';
export const STREAM = '5f0c2bd9a4e14c5e8d0e7f6a1b2c3de1';

export function helloFrame(headSeq = 0, stream = STREAM) {
  return `id: ${stream}:${headSeq}\nevent: stream.hello\ndata: {"type":"stream.hello","streamId":"${stream}","headSeq":${headSeq},"heartbeatMs":10000}\n\n`;
}

export function eventFrame(seq, stream = STREAM, type = 'run.output') {
  return `id: ${stream}:${seq}\nevent: ${type}\ndata: {"seq":${seq},"type":"${type}","time":"2026-11-21T06:40:00.123Z","projectId":"prj_01a1fce40696000141ad6beb","sessionId":"ses_01a1fce40e560000cd75abb6","runId":"run_01a1fce40e55000193d40dd6","data":{"delta":"d${seq}"}}\n\n`;
}

export const FAKE_TOKEN = '0123456789abcdef'.repeat(4);
