// docs/openapi.json: served by taskdeckd as it is in the source tree, every
// route of the service and every error code in it, events of real runs
// valid against it, a wrong answer caught, and index.d.ts in step with it.
// (Every JSON answer of every JS test is checked against it: harness.mjs.)
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { startService, SRCDIR, SDK } from './harness.mjs';
import { DOC, checkAnswer, checkEvent } from './schema.mjs';

const { connectToTaskdeck } = await import(SDK);
let svc;
let td;
before(async () => {
  svc = await startService();
  td = await connectToTaskdeck();
});
after(async () => {
  td?.close();
  await svc?.destroy();
});

test('GET /api/v1/openapi.json is docs/openapi.json, OpenAPI 3.1', async () => {
  const r = await svc.raw('GET', '/api/v1/openapi.json');
  assert.equal(r.status, 200);
  assert.match(r.headers.get('content-type'), /^application\/json/);
  assert.deepEqual(r.body, DOC);
  assert.equal(DOC.openapi, '3.1.0');
});

test('every route of the service is in the document, and every path of it is a route', () => {
  const table = readFileSync(join(SRCDIR, 'src/service/routes.c'), 'utf8');
  const routes = [...table.matchAll(/\{ "([A-Z]+)", "([^"]+)"/g)]
    .map((m) => `${m[1]} ${m[2].replace(/:([a-z]+)/g, '{$1}')}`).sort();
  const documented = Object.entries(DOC.paths)
    .flatMap(([p, ops]) => Object.keys(ops).map((m) => `${m.toUpperCase()} ${p}`)).sort();
  assert.deepEqual(documented, routes);
});

test('every error code the service sends is in the document, and no other', () => {
  const h = readFileSync(join(SRCDIR, 'src/common/td-errors.h'), 'utf8');
  const sent = [...new Set([...h.matchAll(/TD_ERROR\(\w+, "(\w+)", ([1-9]\d*),/g)]
    .filter((m) => Number(m[2]) >= 400).map((m) => m[1]))].sort();
  assert.deepEqual([...DOC.components.schemas.Error.properties.error.properties.code.enum].sort(), sent);
});

test('events of real runs (a plan, tools, an artifact) and their history match the document', async () => {
  const p = await td.createProject({ name: 'schema' });
  const it = td.events({ projectId: p.id });
  await it.ready;
  const run = await td.startRun({ project: p.id, prompt: 'plan it', turnIntent: 'plan-first',
    config: { provider: 'replay', model: 'plan' } });
  const seen = new Set();
  const problems = [];
  for await (const e of it) {
    seen.add(e.type);
    problems.push(...checkEvent(e));
    if (e.type === 'run.attention' && e.data.attention !== null) {
      const plan = await td.getSessionPlan(run.sessionId);
      await td.respondSessionPlan(run.sessionId, { decision: 'approve', version: plan.version, revision: plan.revision });
    }
    if (e.type === 'run.finished' && e.runId === run.id) break;
  }
  const history = await svc.raw('GET', `/api/v1/runs/${run.id}/events?limit=1000`);
  problems.push(...checkAnswer('GET', `/api/v1/runs/${run.id}/events`, history.status, history.body));
  assert.deepEqual(problems, []);
  for (const t of ['run.queued', 'run.started', 'run.progress', 'run.output', 'plan.updated', 'run.attention',
    'session.updated', 'run.finished']) {
    assert.ok(seen.has(t), `${t} was seen (${[...seen].join(' ')})`);
  }
});

test('the event discriminator maps each type to its schema, so generated clients see the right one', () => {
  const ev = DOC.components.schemas.Event;
  const named = Object.fromEntries(ev.oneOf.map((r) => {
    const name = r.$ref.split('/').pop();
    return [DOC.components.schemas[name].properties.type.const, r.$ref];
  }));
  assert.equal(ev.discriminator.propertyName, 'type');
  assert.deepEqual(ev.discriminator.mapping, named);
  assert.equal(ev.discriminator.mapping['run.output'], '#/components/schemas/Event_run_output');
});

test('every operation documents the 400 of a request it cannot read (a bad query, a URL with %00)', () => {
  const missing = [];
  for (const [p, ops] of Object.entries(DOC.paths)) {
    for (const [m, op] of Object.entries(ops)) {
      if (op.responses['400'] === undefined) missing.push(`${m.toUpperCase()} ${p}`);
    }
  }
  assert.deepEqual(missing, []);
});

test('an undocumented status is a finding, an error status too', () => {
  assert.deepEqual(checkAnswer('GET', '/api/v1/connectors', 400,
    { error: { code: 'invalid_request', message: 'x', details: { parameter: 'limit' } } }), []);
  assert.match(checkAnswer('GET', '/api/v1/connectors', 418,
    { error: { code: 'invalid_request', message: 'x' } }).join(), /status 418 is not documented/);
});

test('an answer that does not match the document is caught', async () => {
  const p = await td.createProject({ name: 'caught' });
  assert.deepEqual(checkAnswer('GET', `/api/v1/projects/${p.id}`, 200, p), []);
  const cases = [
    [{ ...p, colour: 'red' }, /additional properties/],
    [{ ...p, name: 7 }, /must be string/],
    [(({ updatedAt, ...rest }) => rest)(p), /required property 'updatedAt'/],
  ];
  for (const [body, why] of cases) {
    const problems = checkAnswer('GET', `/api/v1/projects/${p.id}`, 200, body);
    assert.ok(problems.some((x) => why.test(x)), `${JSON.stringify(body)}: ${problems}`);
  }
  assert.notDeepEqual(checkAnswer('GET', '/api/v1/runs/run_1', 404,
    { error: { code: 'no_such_code', message: 'x' } }), []);
  assert.notDeepEqual(checkEvent({ seq: 1, type: 'run.finished', time: '2026-01-01T00:00:00Z',
    projectId: null, sessionId: null, runId: null, data: { status: 'done' } }), []);
});

// The members of one interface of index.d.ts (its top level), without optional markers.
function members(dts, name) {
  const m = new RegExp(`export interface ${name} \\{`).exec(dts);
  assert.ok(m, `index.d.ts declares ${name}`);
  let depth = 0;
  let i = m.index + m[0].length;
  let text = '';
  for (; i < dts.length; i++) {
    const c = dts[i];
    if (c === '{') depth++;
    if (c === '}') {
      if (depth === 0) break;
      depth--;
    }
    if (depth === 0) text += c;
  }
  text = text.replace(/\/\*\*[\s\S]*?\*\//g, '');
  return [...text.matchAll(/(?:^|[;\n])\s*'?([a-zA-Z][\w.-]*|\[key: string\])'?\??:/g)].map((x) => x[1]).sort();
}

test('the resources of index.d.ts have exactly the members of the document', () => {
  const dts = readFileSync(join(SRCDIR, 'sdk/js/index.d.ts'), 'utf8');
  const pairs = [['Project'], ['Run'], ['Session'], ['SessionConfiguration'], ['SessionDefaults'], ['AgentRouting'],
    ['Artifact'], ['Connector'], ['Credential'], ['Plan'], ['PlanStep'], ['ReadinessReport'], ['Runtime'],
    ['ConnectorTestResult'], ['BootstrapResult'], ['RunRequest'], ['NewProject'], ['NewConnector'],
    ['NewCredential'], ['NewSession'], ['SessionConnector'], ['SessionDefaultsValues', (s) => s.SessionDefaults.properties.defaults]];
  const diffs = [];
  for (const [name, pick] of pairs) {
    const schema = pick ? pick(DOC.components.schemas) : DOC.components.schemas[name];
    const want = Object.keys(schema.properties).sort();
    const got = members(dts, name);
    for (const k of want) if (!got.includes(k)) diffs.push(`${name}.${k} is not declared`);
    for (const k of got) if (!want.includes(k)) diffs.push(`${name}.${k} is declared but not in the document`);
  }
  const codes = DOC.components.schemas.Error.properties.error.properties.code.enum;
  const union = /export type TaskdeckErrorCode =([\s\S]*?);/.exec(dts)[1];
  for (const c of codes) if (!union.includes(`'${c}'`)) diffs.push(`TaskdeckErrorCode lacks ${c}`);
  const payloads = members(dts, 'EventPayloads');
  const events = Object.keys(DOC.components.schemas).filter((k) => k.startsWith('Event_'))
    .map((k) => DOC.components.schemas[k].properties.type.const).sort();
  assert.deepEqual(payloads, events, 'EventPayloads has every event type');
  assert.deepEqual(diffs, []);
});
