// bench/acp/acp-bench.mjs: ROUNDS turns of `taskdeck acp` driven by the official ACP
// SDK's client, each a fresh session whose prompt is a replay run (model quick).  For
// each turn, from the moment session/prompt is sent: when its first agent_message_chunk
// arrives, and when the same run's first run.output arrives through the HTTP API (the
// service's event stream, GET /api/v1/events, read here by a raw fetch).  Prints
// key=value lines; run by bench/acp/run.
import { spawn } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { Readable, Writable } from 'node:stream';
import { pathToFileURL } from 'node:url';

const [taskdeck, rounds, cwd] = [process.argv[2], Number(process.argv[3]), process.argv[4]];
const acp = await import(pathToFileURL(join(process.env.ACP_SDK, 'dist/v1/stable/acp.js')));
const home = process.env.TASKDECK_HOME;
const { baseUrl } = JSON.parse(readFileSync(join(home, 'service.json'), 'utf8'));
const token = readFileSync(join(home, 'token'), 'utf8').trim();

// The service's event stream: each run's first run.output, at the time it arrived here.
const firstOutput = new Map();
const waiters = new Map();
const stream = await fetch(`${baseUrl}/api/v1/events`, { headers: { authorization: `Bearer ${token}` } });
(async () => {
  const dec = new TextDecoder();
  let buf = '';
  for await (const chunk of stream.body) {
    const now = performance.now();
    buf += dec.decode(chunk, { stream: true });
    let i;
    while ((i = buf.indexOf('\n')) >= 0) {
      const line = buf.slice(0, i);
      buf = buf.slice(i + 1);
      if (!line.startsWith('data: ')) continue;
      const e = JSON.parse(line.slice(6));
      if (e.type !== 'run.output' || firstOutput.has(e.runId)) continue;
      firstOutput.set(e.runId, now);
      waiters.get(e.runId)?.(now);
    }
  }
})();

const child = spawn(taskdeck, ['acp', '--project', 'bench-acp', '--provider', 'replay', '--model', 'quick',
  '--permission', 'workspace-write'], { stdio: ['pipe', 'pipe', 'inherit'] });
let chunkAt = null;
const app = acp.client({ name: 'acp-bench' }).onNotification(acp.methods.client.session.update, ({ params }) => {
  if (chunkAt === null && params.update.sessionUpdate === 'agent_message_chunk') chunkAt = performance.now();
});
const conn = app.connect(acp.ndJsonStream(Writable.toWeb(child.stdin), Readable.toWeb(child.stdout)));
await conn.agent.request(acp.methods.agent.initialize, { protocolVersion: 1, clientCapabilities: {} });

const acpMs = [];
const httpMs = [];
for (let r = 0; r < rounds; r++) {
  const { sessionId } = await conn.agent.request(acp.methods.agent.session.new, { cwd, mcpServers: [] });
  chunkAt = null;
  const t0 = performance.now();
  const res = await conn.agent.request(acp.methods.agent.session.prompt,
    { sessionId, prompt: [{ type: 'text', text: `round ${r}` }] });
  const runId = res._meta.taskdeck.runId;
  const httpAt = firstOutput.get(runId) ?? await new Promise((resolve) => waiters.set(runId, resolve));
  if (chunkAt === null) throw new Error(`round ${r}: no agent_message_chunk`);
  acpMs.push(chunkAt - t0);
  httpMs.push(httpAt - t0);
}
conn.close();
child.stdin.end();

const median = (a) => { const s = [...a].sort((x, y) => x - y); return s[Math.floor(s.length / 2)]; };
const fmt = (v) => v.toFixed(2);
console.log(`rounds=${rounds}`);
console.log(`acp_first_chunk_median_ms=${fmt(median(acpMs))}`);
console.log(`http_first_output_median_ms=${fmt(median(httpMs))}`);
console.log(`acp_first_chunk_min_ms=${fmt(Math.min(...acpMs))}`);
console.log(`http_first_output_min_ms=${fmt(Math.min(...httpMs))}`);
console.log(`ratio_median=${(median(acpMs.map((a, i) => a / httpMs[i]))).toFixed(3)}`);
console.log(`acp_after_http_median_ms=${fmt(median(acpMs.map((a, i) => a - httpMs[i])))}`);
process.exit(0);
