// Every operation of docs/openapi.json, sent requests a generator derives from the
// document itself (valid ones, and ones broken on purpose: a member missing, one
// unknown, a wrong type, a bound crossed, a query value empty or out of range, an
// id that is no id), against a real taskdeckd.  Each answer must be documented: its
// status among the operation's responses and its body valid against their schema
// (schema.mjs); no answer is a 500, and the service stays up with no sanitizer
// report.  Deterministic (one seed), bounded in count and in time.
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { existsSync, mkdirSync, readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { startService } from './harness.mjs';
import { DOC, checkAnswer } from './schema.mjs';

const SEED = Number(process.env.TD_FUZZ_SEED ?? 0x7d5eed);
const PER_OPERATION = Number(process.env.TD_FUZZ_COUNT ?? 40);	// half valid, half broken
const BUDGET_MS = 90000;	// the whole campaign; stops early rather than run over
const REQUEST_MS = 15000;	// one request

// mulberry32: small, fast, and the same sequence on every machine.
function prng(seed) {
  let a = seed >>> 0;
  return () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = a;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

let rand = prng(SEED);
const int = (lo, hi) => lo + Math.floor(rand() * (hi - lo + 1));
const pick = (xs) => xs[Math.floor(rand() * xs.length)];
const chance = (p) => rand() < p;

// Strings that make a parser think: none names a command a connector could run.
const NASTY = ['', ' ', 'fz', 'fz\u0000z', 'fz%00', '..', '../../etc/passwd', 'fz\u001b[2J',
  'fz\u202egnp.exe', '\ud83d\ude00', 'fz'.repeat(3000), '{"a":1}', '-1', 'null', 'fz\nz',
  'fz\\u0000', '%', '%zz', 'fz/../fz', 'run_000000000000000000000000'];

function deref(schema) {
  let s = schema;
  for (let i = 0; s?.$ref !== undefined && i < 20; i++) {
    s = s.$ref.split('/').slice(1).reduce((o, k) => o[k.replace(/~1/g, '/').replace(/~0/g, '~')], DOC);
  }
  return s ?? {};
}

function word(min = 1, max = 12) {
  const n = int(Math.max(min, 1), Math.max(Math.min(max, 24), Math.max(min, 1)));
  let s = 'fz';
  while (s.length < n) s += pick('abcdefghijklmnopqrstuvwxyz0123456789-_');
  return s.slice(0, Math.max(n, min));
}

// A value that fits schema, as far as a generator can tell without the service's rules.
function valid(schema, depth = 0) {
  const s = deref(schema);
  if (s.const !== undefined) return s.const;
  if (s.enum !== undefined) return pick(s.enum);
  if (s.oneOf ?? s.anyOf) return valid(pick(s.oneOf ?? s.anyOf), depth + 1);
  if (s.allOf) return Object.assign({}, ...s.allOf.map((x) => valid(x, depth + 1)));
  let type = s.type ?? (s.properties ? 'object' : 'string');
  if (Array.isArray(type)) type = pick(type.filter((t) => t !== 'null').length ? type : ['null']);
  switch (type) {
    case 'null': return null;
    case 'boolean': return chance(0.5);
    case 'integer':
    case 'number': {
      const lo = s.minimum ?? (s.exclusiveMinimum !== undefined ? s.exclusiveMinimum + 1 : 0);
      const hi = s.maximum ?? (s.exclusiveMaximum !== undefined ? s.exclusiveMaximum - 1 : lo + 1000);
      return int(Math.ceil(lo), Math.floor(Math.min(hi, lo + 100000)));
    }
    case 'array': {
      if (depth > 4) return [];
      const n = int(s.minItems ?? 0, Math.min(s.maxItems ?? 3, (s.minItems ?? 0) + 3));
      return Array.from({ length: n }, () => valid(s.items ?? {}, depth + 1));
    }
    case 'object': {
      const o = {};
      if (depth > 4) return o;
      for (const [k, v] of Object.entries(s.properties ?? {})) {
        if ((s.required ?? []).includes(k) || chance(0.5)) o[k] = valid(v, depth + 1);
      }
      return o;
    }
    default:
      if (s.format === 'date-time') return new Date(Date.UTC(2026, 0, int(1, 28))).toISOString();
      if (s.format === 'uri') return `http://127.0.0.1:1/${word()}`;
      return word(s.minLength ?? 1, s.maxLength ?? 12);
  }
}

// A value of the wrong kind for schema.
function wrongType(schema) {
  const s = deref(schema);
  const type = Array.isArray(s.type) ? s.type : [s.type ?? 'object'];
  const options = [[], {}, 'fz', 12345678901234567890, -1, true, null, 1.5]
    .filter((v) => !type.includes(v === null ? 'null' : Array.isArray(v) ? 'array' :
      Number.isInteger(v) ? 'integer' : typeof v));
  return pick(options.length ? options : [[]]);
}

// A body broken in one way: a required member gone, an unknown one, a wrong type, a bound.
function broken(schema) {
  const s = deref(schema);
  const body = valid(s);
  if (body === null || typeof body !== 'object' || Array.isArray(body)) return wrongType(s);
  const keys = Object.keys(s.properties ?? {});
  switch (int(0, 5)) {
    case 0:
      if ((s.required ?? []).length > 0) {
        delete body[pick(s.required)];
        return body;
      }
      return wrongType(s);
    case 1:
      body[`fz${word()}`] = 1;
      return body;
    case 2:
      if (keys.length) body[pick(keys)] = wrongType(s.properties[pick(keys)]);
      return body;
    case 3:
      if (keys.length) body[pick(keys)] = pick(NASTY);
      return body;
    case 4:
      if (keys.length) body[pick(keys)] = 'x'.repeat(int(5000, 70000));
      return body;
    default:
      return wrongType(s);
  }
}

// The ids of resources the campaign made, by the prefix their path names.
const ids = { prj: [], ses: [], run: [], art: [], con: [], cred: [], prm: [] };
const PREFIX = { projects: 'prj', sessions: 'ses', runs: 'run', artifacts: 'art',
  connectors: 'con', credentials: 'cred', permissions: 'prm' };

function pathFor(template, broken) {
  return template.replace(/\{([^}]+)\}/g, (_, name) => {
    const before = template.slice(0, template.indexOf(`{${name}}`)).split('/').filter(Boolean).pop();
    const pool = ids[PREFIX[before]] ?? [];
    if (!broken && pool.length) return encodeURIComponent(pick(pool));
    return encodeURIComponent(pick(NASTY)) || 'fz';
  });
}

function queryFor(op, broken) {
  const q = [];
  for (const p0 of op.parameters ?? []) {
    const p = deref(p0);
    if (p.in !== 'query') continue;
    if (broken && chance(0.5)) {
      q.push(`${p.name}=${encodeURIComponent(pick(['', '0', '-1', 'fz', '99999999999999999999', 'true1',
        NASTY[int(0, NASTY.length - 1)]]))}`);
    } else if (p.required || chance(0.4)) {
      const v = valid(p.schema ?? {});
      q.push(`${p.name}=${encodeURIComponent(typeof v === 'object' ? JSON.stringify(v) : String(v))}`);
    }
  }
  return q.length ? `?${q.join('&')}` : '';
}

let svc;
const sanitizerDir = () => join(svc.home, 'sanitizer');
before(async () => {
  svc = await startService((home) => (mkdirSync(join(home, 'sanitizer')), {
    // HOME and XDG_BIN_HOME too: no operation (cli/install) may reach the user's files.
    HOME: home,
    XDG_BIN_HOME: join(home, 'bin'),
    ASAN_OPTIONS: `${process.env.ASAN_OPTIONS ?? ''}:log_path=${join(home, 'sanitizer', 'asan')}`,
    UBSAN_OPTIONS: `print_stacktrace=1:log_path=${join(home, 'sanitizer', 'ubsan')}`,
  }));
  // A few real resources, so that valid requests reach more than the 404s.
  const p = await svc.raw('POST', '/api/v1/projects', { name: 'fuzz' });
  ids.prj.push(p.body.id);
  const r = await svc.raw('POST', '/api/v1/runs', { project: p.body.id, prompt: 'fuzz',
    config: { provider: 'replay', model: 'quick' } });
  if (r.status === 201) {
    ids.run.push(r.body.id);
    ids.ses.push(r.body.sessionId);
  }
  const c = await svc.raw('POST', '/api/v1/credentials', { name: 'fuzz', kind: 'api-key', secret: 'fz-secret' });
  if (c.status === 201) ids.cred.push(c.body.id);
});
after(async () => {
  await svc?.destroy();
});

async function send(method, url, body, raw) {
  const ac = new AbortController();
  const t = setTimeout(() => ac.abort(), REQUEST_MS);
  try {
    const res = await fetch(svc.url + url, {
      method,
      headers: { authorization: `Bearer ${svc.token}`,
        ...(body !== undefined ? { 'content-type': 'application/json' } : {}) },
      body: body === undefined ? undefined : raw ? body : JSON.stringify(body),
      signal: ac.signal,
    });
    const type = res.headers.get('content-type') ?? '';
    if (type.startsWith('text/event-stream')) {
      ac.abort();
      return { status: res.status, body: undefined, json: false };
    }
    const text = await res.text();
    if (!type.startsWith('application/json')) return { status: res.status, body: text, json: false };
    return { status: res.status, body: JSON.parse(text), json: true };
  } finally {
    clearTimeout(t);
  }
}

test('every operation answers generated requests as the document says', { timeout: BUDGET_MS + 60000 }, async () => {
  rand = prng(SEED);
  const t0 = performance.now();
  const problems = [];
  let sent = 0;
  const ops = Object.entries(DOC.paths).flatMap(([t, o]) =>
    Object.keys(o).filter((m) => m !== 'parameters').map((m) => [t, m.toUpperCase(), o[m]]));
  let down = false;
  for (const [template, method, op] of ops) {
    for (let i = 0; i < PER_OPERATION && !down && performance.now() - t0 < BUDGET_MS; i++) {
      const bad = i % 2 === 1;
      const url = pathFor(template, bad && chance(0.3)) + queryFor(op, bad && chance(0.6));
      const schema = op.requestBody?.content?.['application/json']?.schema;
      let body;
      let raw = false;
      if (schema !== undefined) {
        if (bad && chance(0.15)) {
          body = pick(['{', '[]', 'null', '{"a":', '\u0000', '{"a":1,"a":2}', '"fz"']);
          raw = true;
        } else {
          body = bad ? broken(schema) : valid(schema);
        }
      }
      let answer;
      try {
        answer = await send(method, url, body, raw);
      } catch (e) {
        problems.push(`${method} ${url} ${raw ? body : JSON.stringify(body)?.slice(0, 200)}: ` +
          `no answer (${e.message})`);
        down = true;
        break;
      }
      sent++;
      const what = `${method} ${url.slice(0, 200)} ${raw ? body : JSON.stringify(body)?.slice(0, 200)}`;
      if (answer.status >= 500) problems.push(`${what}: ${answer.status} ${JSON.stringify(answer.body)}`);
      if (op.responses[String(answer.status)] === undefined) {
        problems.push(`${what}: status ${answer.status} is not documented ${JSON.stringify(answer.body)?.slice(0, 300)}`);
      } else if (answer.json) {
        for (const p of checkAnswer(method, url, answer.status, answer.body)) problems.push(`${what}: ${p}`);
      }
      // What the campaign made is used by the requests that follow.
      if (answer.status === 201 && typeof answer.body?.id === 'string') {
        const prefix = answer.body.id.split('_')[0];
        ids[prefix]?.push(answer.body.id);
      }
    }
  }
  const reports = existsSync(sanitizerDir()) ? readdirSync(sanitizerDir()) : [];
  const texts = reports.map((f) => readFileSync(join(sanitizerDir(), f), 'utf8').slice(0, 3000));
  assert.deepEqual(texts, [], `no sanitizer report (after ${problems.slice(-1)})`);
  const alive = down ? { status: 0 } : await svc.raw('GET', '/api/v1/doctor');
  assert.deepEqual([...new Set(problems)].slice(0, 40), []);
  assert.equal(alive.status, 200, 'the service is still up');
  assert.ok(sent >= ops.length, `${sent} requests for ${ops.length} operations`);
});
