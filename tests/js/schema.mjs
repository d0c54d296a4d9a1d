// docs/openapi.json as a validator of the service's answers (ajv, JSON Schema
// 2020-12, from the test cache: scripts/test-deps).
import { createRequire } from 'node:module';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';

const SRCDIR = process.env.TD_SRCDIR ?? '.';
const require = createRequire(import.meta.url);
const cache = process.env.TD_CACHE;
const Ajv2020 = require(join(cache, 'npm/ajv/node_modules/ajv/dist/2020.js')).default;
const addFormats = require(join(cache, 'npm/ajv-formats/node_modules/ajv-formats/dist/index.js')).default;

export const DOC = JSON.parse(readFileSync(join(SRCDIR, 'docs/openapi.json'), 'utf8'));
const ajv = new Ajv2020({ strict: false, allErrors: true });
addFormats(ajv);
ajv.addSchema(DOC, 'openapi');

const ptr = (s) => s.replace(/~/g, '~0').replace(/\//g, '~1');
const compiled = new Map();
function validator(pointer) {
  let v = compiled.get(pointer);
  if (v === undefined) {
    v = ajv.compile({ $ref: `openapi#${pointer}` });
    compiled.set(pointer, v);
  }
  return v;
}

// The path template of DOC that a concrete path matches, or null.
function template(path) {
  for (const t of Object.keys(DOC.paths)) {
    const re = new RegExp(`^${t.replace(/[.]/g, '\\.').replace(/\{[^}]+\}/g, '[^/]+')}$`);
    if (re.test(path)) return t;
  }
  return null;
}

/**
 * Problems of one answer (method, URL path with or without query, status,
 * parsed JSON body) against the document: [] when it matches.
 */
export function checkAnswer(method, url, status, body) {
  const path = url.split('?')[0];
  const t = template(path);
  if (t === null) return [`${method} ${path}: no such path in docs/openapi.json`];
  const op = DOC.paths[t][method.toLowerCase()];
  if (op === undefined) return status === 405 ? [] : [`${method} ${t}: no such operation`];
  // A status the operation does not list is a finding, an error status too.
  const r = op.responses[String(status)];
  if (r === undefined) return [`${method} ${t}: status ${status} is not documented`];
  const pointer = r.$ref !== undefined
    ? `/components/responses/Error/content/application~1json/schema`
    : `/paths/${ptr(t)}/${method.toLowerCase()}/responses/${status}/content/application~1json/schema`;
  if (r.$ref === undefined && r.content?.['application/json'] === undefined) return [];
  const v = validator(pointer);
  if (v(body)) return [];
  return v.errors.map((e) => `${method} ${t} ${status}: ${e.instancePath || '/'} ${e.message} ${JSON.stringify(e.params)}`);
}

/** Problems of one event (an SSE data: object or a history entry). */
export function checkEvent(ev) {
  const v = validator('/components/schemas/Event');
  if (v(ev)) return [];
  // oneOf reports every branch: name the one of its type.
  const name = `Event_${String(ev?.type).replace(/[.-]/g, '_')}`;
  if (DOC.components.schemas[name] === undefined) return [`event type ${ev?.type} is not documented`];
  const one = validator(`/components/schemas/${name}`);
  one(ev);
  return (one.errors ?? []).map((e) => `${ev.type}: ${e.instancePath || '/'} ${e.message} ${JSON.stringify(e.params)}`);
}
