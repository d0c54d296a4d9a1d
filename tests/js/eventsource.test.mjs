// Resume against a standard SSE client (issue 17, finding 12): the npm package
// `eventsource` (WHATWG EventSource) sets its last event id from ANY frame's
// `id:`, the hello included.  A connection dropped right after the hello of a
// resumed stream must not make it skip the replayed events.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import net from 'node:net';
import { join } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { startService } from './harness.mjs';

const { EventSource } = await import(join(process.env.TD_CACHE,
  'npm/eventsource/node_modules/eventsource/dist/index.js'));

// A TCP proxy in front of the service (requests are small: one chunk each).  cutAfterFirstFrame: the next response
// that carries SSE frames is cut right after its first frame (the hello).
function proxy(port) {
  const conns = new Set();
  const p = { cutAfterFirstFrame: false, dropAll() { for (const c of conns) c.destroy(); } };
  p.server = net.createServer((client) => {
    const upstream = net.connect(port, '127.0.0.1');
    const cut = p.cutAfterFirstFrame;
    let seen = '';
    p.cutAfterFirstFrame = false;
    conns.add(client);
    client.on('close', () => { conns.delete(client); upstream.destroy(); });
    upstream.on('close', () => client.destroy());
    client.on('error', () => upstream.destroy());
    upstream.on('error', () => client.destroy());
    // The service accepts only its own Host: name it, not the proxy's.
    client.on('data', (chunk) => upstream.write(Buffer.from(chunk.toString('latin1')
      .replace(`Host: 127.0.0.1:${p.port}`, `Host: 127.0.0.1:${port}`)
      .replace(`host: 127.0.0.1:${p.port}`, `host: 127.0.0.1:${port}`), 'latin1')));
    upstream.on('data', (chunk) => {
      if (!cut) { client.write(chunk); return; }
      seen += chunk.toString('latin1');
      const body = seen.indexOf('\r\n\r\n');
      const frameEnd = body < 0 ? -1 : seen.indexOf('\n\n', body + 4);
      if (frameEnd < 0) return;
      client.end(Buffer.from(seen.slice(0, frameEnd + 2), 'latin1'));
      upstream.destroy();
    });
  });
  return new Promise((resolve) => p.server.listen(0, '127.0.0.1', () => {
    p.port = p.server.address().port;
    resolve(p);
  }));
}

async function until(cond, ms, what) {
  const deadline = Date.now() + ms;
  while (!cond()) {
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await sleep(20);
  }
}

test('eventsource resumes without a gap after a drop right after the hello', async () => {
  const svc = await startService();
  const px = await proxy(Number(new URL(svc.url).port));
  const seqs = [];
  const ids = [];
  const es = new EventSource(`http://127.0.0.1:${px.port}/api/v1/events`, {
    fetch: (input, init) => fetch(input, {
      ...init,
      headers: { ...init.headers, authorization: `Bearer ${svc.token}` },
    }),
  });
  try {
    es.addEventListener('project.updated', (e) => {
      seqs.push(JSON.parse(e.data).seq);
      ids.push(e.lastEventId);
    });
    let opens = 0;
    es.addEventListener('open', () => { opens++; });
    await until(() => opens === 1, 10000, 'the first connection');
    for (const name of ['a', 'b']) assert.equal((await svc.raw('POST', '/api/v1/projects', { name })).status, 201);
    await until(() => seqs.length === 2, 10000, 'two events');

    // Drop the connection; while the client waits to reconnect, two more events
    // happen; its reconnection is cut right after the hello.
    px.cutAfterFirstFrame = true;
    px.dropAll();
    for (const name of ['c', 'd']) assert.equal((await svc.raw('POST', '/api/v1/projects', { name })).status, 201);
    // The cut connection, then the next one, which replays what was missed.
    await until(() => seqs.length >= 4, 20000, 'the events made while it was away');
    await sleep(300);
    const first = seqs[0];
    assert.deepEqual(seqs, [first, first + 1, first + 2, first + 3],
      'every event exactly once, in order, across two reconnections');
    assert.ok(opens >= 3, `it reconnected twice (opens: ${opens})`);
  } finally {
    es.close();
    px.server.close();
    await svc.destroy();
  }
});
