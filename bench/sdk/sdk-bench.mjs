// sdk-bench: what @taskdeck/sdk does per event and per request, for bench/sdk/run.
// Prints key=value lines.  Finds the service like connectToTaskdeck() does.
//
//   sdk-bench.mjs fake [EVENTS]     events from a local server writing pre-rendered frames
//   sdk-bench.mjs burst             one `burst` replay run in a fresh project, through events()
//   sdk-bench.mjs getrun RUN [N]    N sequential getRun calls: median and p99
import { Worker } from 'node:worker_threads';
import { fileURLToPath } from 'node:url';
import { dirname, join } from 'node:path';

const SDK = join(dirname(fileURLToPath(import.meta.url)), '../../sdk/js/src/index.js');
const { connectToTaskdeck } = await import(SDK);
const STREAM = '5f0c2bd9a4e14c5e8d0e7f6a1b2c3de1';
const now = () => performance.now();

// The same bytes as bench/events/events-bench.c's fake: hello, then N run.output events.
function render(count) {
  const parts = [`HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\nConnection: close\r\n\r\nid: ${STREAM}:0\nevent: stream.hello\ndata: {"type":"stream.hello","streamId":"${STREAM}","headSeq":0,"heartbeatMs":10000}\n\n`];
  for (let i = 1; i <= count; i++) {
    parts.push(`id: ${STREAM}:${i}\nevent: run.output\ndata: {"seq":${i},"type":"run.output","time":"2026-11-21T06:40:00.123Z","projectId":"prj_01a1fce40696000141ad6beb","sessionId":"ses_01a1fce40e560000cd75abb6","runId":"run_01a1fce40e55000193d40dd6","data":{"delta":"d${String(i % 100000).padStart(5, '0')}, "}}\n\n`);
  }
  return Buffer.from(parts.join(''));
}

// The server runs on its own thread, as the C fake does, and writes as fast as the socket takes.
const SERVER = `
const { parentPort, workerData } = require('node:worker_threads');
const net = require('node:net');
const body = Buffer.from(workerData.body);
const server = net.createServer((s) => {
  s.once('data', () => s.write(body));
  s.on('error', () => {});
});
server.listen(0, '127.0.0.1', () => parentPort.postMessage(server.address().port));
parentPort.on('message', () => server.close(() => process.exit(0)));
`;

async function fake(count) {
  const body = render(count);
  const shared = new SharedArrayBuffer(body.length);
  new Uint8Array(shared).set(body);
  const worker = new Worker(SERVER, { eval: true, workerData: { body: new Uint8Array(shared) } });
  const port = await new Promise((resolve) => worker.once('message', resolve));
  const td = await connectToTaskdeck({ baseUrl: `http://127.0.0.1:${port}`, token: '0123456789abcdef'.repeat(4) });
  const events = td.events({}, { idleTimeoutMs: 120000 });
  await events.ready;
  let got = 0;
  const t0 = now();
  for await (const e of events) {
    got++;
    if (e.seq === count) break;
  }
  const span = now() - t0;
  console.log(`fake_events=${got}\nfake_bytes=${body.length}\nfake_span_ms=${span.toFixed(1)}\nfake_events_per_s=${Math.round(got * 1000 / span)}`);
  worker.postMessage('stop');
  await worker.terminate();
  return got === count ? 0 : 3;
}

async function burst() {
  const td = await connectToTaskdeck();
  const project = await td.createProject({ name: 'bench-sdk' });
  const events = td.events({ projectId: project.id }, { idleTimeoutMs: 120000 });
  await events.ready;
  const run = await td.startRun({ project: project.id, prompt: 'burst', config: { provider: 'replay', model: 'burst' } });
  let n = 0;
  let outputs = 0;
  let first = 0;
  let last = 0;
  let firstStamp = null;
  let lastStamp = null;
  let lastWall = 0;
  for await (const e of events) {
    last = now();
    lastWall = Date.now();
    if (n++ === 0) {
      first = last;
      firstStamp = e.time;
    }
    lastStamp = e.time;	// parsed once at the end: the consumer does no more than count
    if (e.type === 'run.output') outputs++;
    if (e.type === 'run.finished' && e.runId === run.id) break;
  }
  const firstTime = Date.parse(firstStamp);
  const lastTime = Date.parse(lastStamp);
  const span = last - first;
  console.log(`run=${run.id}\nevents=${n}\noutputs=${outputs}\nclient_span_ms=${span.toFixed(1)}\nclient_events_per_s=${Math.round(n * 1000 / span)}`);
  console.log(`service_span_ms=${lastTime - firstTime}\nservice_events_per_s=${lastTime > firstTime ? Math.round(n * 1000 / (lastTime - firstTime)) : 0}`);
  // How far behind the service the consumer was at the end of the burst (ms stamps: +-1 ms).
  console.log(`last_event_lag_ms=${lastWall - lastTime}`);
  td.close();
  return 0;
}

async function getrun(runId, count) {
  const td = await connectToTaskdeck();
  for (let i = 0; i < 200; i++) await td.getRun(runId);
  const times = [];
  for (let i = 0; i < count; i++) {
    const t0 = now();
    await td.getRun(runId);
    times.push(now() - t0);
  }
  times.sort((a, b) => a - b);
  const pct = (p) => times[Math.min(times.length - 1, Math.round(p * (times.length - 1)))];
  console.log(`getrun_calls=${count}\ngetrun_median_us=${(pct(0.5) * 1000).toFixed(1)}\ngetrun_p99_us=${(pct(0.99) * 1000).toFixed(1)}`);
  td.close();
  return 0;
}

const [mode, a, b] = process.argv.slice(2);
let rc = 2;
if (mode === 'fake') rc = await fake(Number(a ?? 1000000));
else if (mode === 'burst') rc = await burst();
else if (mode === 'getrun' && a) rc = await getrun(a, Number(b ?? 2000));
else console.error('usage: sdk-bench.mjs fake [EVENTS] | burst | getrun RUN [N]');
process.exit(rc);
