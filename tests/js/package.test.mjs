// The package as people get it: npm pack, the tarball installed into a fresh
// project and imported, the sdk/js folder installed as a local package (the
// spec's fallback), the .d.ts checked by tsc, no runtime dependency.
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { execFileSync, spawnSync } from 'node:child_process';
import { mkdtempSync, readFileSync, writeFileSync, readdirSync, rmSync } from 'node:fs';
import { join } from 'node:path';
import { tmpdir } from 'node:os';
import { startService, SRCDIR } from './harness.mjs';

const PKG = join(SRCDIR, 'sdk/js');
const NODE = process.env.NODE ?? process.execPath;
const TSC = process.env.TSC;
let svc;
let work;

before(async () => {
  svc = await startService();
  work = mkdtempSync(join(process.env.TD_JS_TMP ?? tmpdir(), 'tdjs-pkg-'));
});
after(async () => {
  await svc?.destroy();
  if (work) rmSync(work, { recursive: true, force: true });
});

function npm(args, cwd) {
  return execFileSync('npm', [...args, '--no-audit', '--no-fund', '--loglevel=error'], {
    cwd, encoding: 'utf8',
    env: { ...process.env, npm_config_cache: join(work, 'npm-cache'), npm_config_update_notifier: 'false' },
  });
}

// Runs an ES module script with the test's Node in dir; its stdout.
function runIn(dir, script) {
  const file = join(dir, 'probe.mjs');
  writeFileSync(file, script);
  const r = spawnSync(NODE, [file], { cwd: dir, encoding: 'utf8', env: { ...process.env, TASKDECK_HOME: svc.home } });
  assert.equal(r.status, 0, r.stderr);
  return r.stdout;
}

const PROBE = `
import { connectToTaskdeck, TaskdeckError } from '@taskdeck/sdk';
const td = await connectToTaskdeck();
const doc = await td.doctor();
const err = await td.getRun('run_000000000000000000000000').catch((e) => e);
console.log(JSON.stringify({ ready: typeof doc.ready, err: err instanceof TaskdeckError ? err.code : String(err) }));
td.close();
`;

function project(name) {
  const dir = join(work, name);
  execFileSync('mkdir', ['-p', dir]);
  writeFileSync(join(dir, 'package.json'), JSON.stringify({ name, private: true, type: 'module' }));
  return dir;
}

test('package.json: name, ESM, engines, exports with types, MIT, no dependencies', () => {
  const pkg = JSON.parse(readFileSync(join(PKG, 'package.json'), 'utf8'));
  assert.equal(pkg.name, '@taskdeck/sdk');
  assert.equal(pkg.type, 'module');
  assert.equal(pkg.engines.node, '>=22.5');
  assert.equal(pkg.license, 'MIT');
  assert.equal(pkg.exports['.'].types, './index.d.ts');
  assert.equal(pkg.dependencies, undefined);
  // Every import of the sources is node: or relative.
  for (const f of readdirSync(join(PKG, 'src'))) {
    const text = readFileSync(join(PKG, 'src', f), 'utf8');
    for (const m of text.matchAll(/\b(?:from\s+|require\()'([^']+)'/g)) {
      assert.ok(m[1].startsWith('node:') || m[1].startsWith('./'), `${f} imports ${m[1]}`);
    }
  }
});

// require() without require(esm), as on Node 22.5 to 22.11 (engines allows them).
const PROBE_CJS = `
const sdk = require('@taskdeck/sdk');
(async () => {
  const td = await sdk.connectToTaskdeck();
  const doc = await td.doctor();
  const err = await td.getRun('run_000000000000000000000000').catch((e) => e);
  const esm = await import('@taskdeck/sdk');
  console.log(JSON.stringify({ ready: typeof doc.ready, err: err instanceof sdk.NotFoundError ? err.code : String(err),
    same: esm.TaskdeckError === sdk.TaskdeckError }));
  td.close();
})();
`;

test('require() works on a Node without require(esm) (22.5 to 22.11), with the same classes as import', () => {
  const app = project('app-require');
  npm(['install', '--offline', PKG], app);
  writeFileSync(join(app, 'probe.cjs'), PROBE_CJS);
  const r = spawnSync(NODE, ['--no-experimental-require-module', join(app, 'probe.cjs')],
    { cwd: app, encoding: 'utf8', env: { ...process.env, TASKDECK_HOME: svc.home } });
  assert.equal(r.status, 0, r.stderr);
  assert.deepEqual(JSON.parse(r.stdout), { ready: 'boolean', err: 'not_found', same: true });
});

test('npm pack makes a tarball that installs and imports', () => {
  const out = npm(['pack', PKG, '--pack-destination', work, '--json'], work);
  const info = JSON.parse(out)[0];
  const files = info.files.map((f) => f.path).sort();
  for (const f of ['LICENSE', 'README.md', 'index.d.ts', 'package.json', 'src/index.js', 'src/index.cjs', 'src/events.cjs']) {
    assert.ok(files.includes(f), `${f} is in the tarball`);
  }
  assert.ok(!files.some((f) => f.includes('test')), 'no tests in the tarball');
  const app = project('app-tarball');
  npm(['install', '--offline', join(work, info.filename)], app);
  const got = JSON.parse(runIn(app, PROBE));
  assert.deepEqual(got, { ready: 'boolean', err: 'not_found' });
});

test('the sdk/js folder installs as a local package (the fallback)', () => {
  const app = project('app-folder');
  npm(['install', '--offline', PKG], app);
  const meta = JSON.parse(readFileSync(join(app, 'node_modules/@taskdeck/sdk/package.json'), 'utf8'));
  assert.equal(meta.name, '@taskdeck/sdk');
  const got = JSON.parse(runIn(app, PROBE));
  assert.deepEqual(got, { ready: 'boolean', err: 'not_found' });
});

test('the declarations type-check a program using every method, and reject a wrong one', () => {
  assert.ok(TSC, 'TSC names the cached tsc (tests/js/sdk.sh)');
  const app = project('app-types');
  npm(['install', '--offline', PKG], app);
  writeFileSync(join(app, 'tsconfig.json'), JSON.stringify({
    compilerOptions: { strict: true, module: 'nodenext', moduleResolution: 'nodenext', target: 'es2022',
      noEmit: true, lib: ['es2022', 'dom'], types: [], skipLibCheck: false },
    files: ['use.ts'],
  }));
  writeFileSync(join(app, 'use.ts'), readFileSync(join(SRCDIR, 'tests/js/types-use.ts'), 'utf8'));
  const ok = spawnSync(NODE, [TSC, '-p', app], { encoding: 'utf8' });
  assert.equal(ok.status, 0, ok.stdout + ok.stderr);
  writeFileSync(join(app, 'use.ts'), `${readFileSync(join(SRCDIR, 'tests/js/types-use.ts'), 'utf8')}
export async function wrong(td: import('@taskdeck/sdk').TaskdeckClient) { await td.getRun(42); }
`);
  const bad = spawnSync(NODE, [TSC, '-p', app], { encoding: 'utf8' });
  assert.notEqual(bad.status, 0, 'a wrong argument type is an error');
  assert.match(bad.stdout, /TS2345/);
  // Events are told apart by type: a member of another type's payload, or a type that
  // does not exist, is an error.
  for (const [wrong, code] of [
    ["if (e.type === 'run.finished') return e.data.delta;", /TS2339/],
    ["if (e.type === 'run.finnished') return 1;", /TS2367/],
    ["if (e.type === 'run.output') return e.data.status;", /TS2339/],
  ]) {
    writeFileSync(join(app, 'use.ts'), `${readFileSync(join(SRCDIR, 'tests/js/types-use.ts'), 'utf8')}
export function wrongEvent(e: import('@taskdeck/sdk').TaskdeckEvent) { ${wrong} return 0; }
`);
    const r = spawnSync(NODE, [TSC, '-p', app], { encoding: 'utf8' });
    assert.notEqual(r.status, 0, `${wrong} is an error`);
    assert.match(r.stdout, code, wrong);
  }
});

test('the README\'s TypeScript recipes type-check with Node\'s types (the download as a Node stream)', () => {
  const readme = readFileSync(join(PKG, 'README.md'), 'utf8');
  const blocks = [...readme.matchAll(/^```ts\n([\s\S]*?)^```$/gm)].map((m) => m[1]);
  assert.ok(blocks.some((b) => b.includes('Readable.fromWeb')), 'the download recipe is a ts block');
  const app = project('app-readme');
  npm(['install', '--offline', PKG], app);
  const files = blocks.map((b, i) => {
    writeFileSync(join(app, `recipe${i}.ts`), b);
    return `recipe${i}.ts`;
  });
  writeFileSync(join(app, 'tsconfig.json'), JSON.stringify({
    compilerOptions: { strict: true, module: 'nodenext', moduleResolution: 'nodenext', target: 'es2022',
      noEmit: true, lib: ['es2022', 'dom'], types: ['node'],
      typeRoots: [join(process.env.TD_CACHE, 'npm/types-node/node_modules/@types')] },
    files,
  }));
  const r = spawnSync(NODE, [TSC, '-p', app], { encoding: 'utf8' });
  assert.equal(r.status, 0, r.stdout + r.stderr);
});

test('every method of the runtime is declared, and every declared method exists', () => {
  const dts = readFileSync(join(PKG, 'index.d.ts'), 'utf8');
  const body = dts.slice(dts.indexOf('export declare class TaskdeckClient'));
  const declared = new Set([...body.matchAll(/^ {2}([a-zA-Z]+)(?:<[^>]*>)?\(/gm)].map((m) => m[1]));
  const whole = readFileSync(join(PKG, 'src/client.cjs'), 'utf8');
  const from = whole.indexOf('\nclass TaskdeckClient');
  const src = whole.slice(from, whole.indexOf('\n}\n', from));
  const defined = new Set([...src.matchAll(/^ {2}(?:async \*?|\*)?([a-zA-Z]+)\(/gm)].map((m) => m[1])
    .filter((n) => n !== 'constructor'));
  declared.delete('constructor');
  assert.deepEqual([...declared].sort(), [...defined].sort());
  for (const m of ['doctor', 'listRuntimes', 'bootstrap', 'installCli', 'listProjects', 'createProject',
    'updateProject', 'getProjectSessionDefaults', 'updateProjectSessionDefaults', 'listSessions',
    'getSession', 'getSessionConfiguration', 'updateSessionConfiguration', 'getAgentRouting',
    'updateAgentRouting', 'getSessionPlan', 'respondSessionPlan', 'startRun', 'getRun', 'cancelRun',
    'waitForRun', 'listArtifacts', 'downloadArtifact', 'events', 'listConnectors', 'getConnector',
    'setConnectorEnabled', 'addConnector', 'updateConnector', 'removeConnector', 'testConnector',
    'listCredentials', 'createCredential', 'updateCredential', 'getCredential', 'deleteCredential',
    'listRuns', 'getRunEvents']) {
    assert.ok(defined.has(m), `the spec's ${m} exists`);
  }
});
