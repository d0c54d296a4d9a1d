'use strict';

// Finding the service and its token, as libtaskdeck does (docs/client.md).
const { readFile } = require('node:fs/promises');
const { join } = require('node:path');
const { taskdeckError } = require('./errors.cjs');

const START_HINT = 'start one with `taskdeck daemon start`';

function env(name) {
  const v = process.env[name];
  return v !== undefined && v !== '' ? v : null;
}

// An XDG directory: the variable when absolute, else HOME/fallback.
function xdgDir(name, home, fallback) {
  const v = process.env[name];
  return v !== undefined && v.startsWith('/') ? join(v, 'taskdeck') : join(home, fallback, 'taskdeck');
}

/** The files of the taskdeck home, as src/common/paths.c lays them out. */
function taskdeckPaths() {
  const tdhome = env('TASKDECK_HOME');
  if (tdhome !== null) {
    return { discovery: join(tdhome, 'service.json'), token: join(tdhome, 'token') };
  }
  const home = process.env.HOME;
  if (home === undefined || !home.startsWith('/')) return null;
  const rt = process.env.XDG_RUNTIME_DIR;
  const runtime = rt !== undefined && rt.startsWith('/')
    ? join(rt, 'taskdeck') : xdgDir('XDG_STATE_HOME', home, '.local/state');
  return {
    discovery: join(runtime, 'service.json'),
    token: join(xdgDir('XDG_CONFIG_HOME', home, '.config'), 'token'),
  };
}

function pidAlive(pid) {
  try {
    process.kill(pid, 0);
    return true;
  } catch (e) {
    return e.code !== 'ESRCH';
  }
}

async function readSmall(path, max) {
  const data = await readFile(path);
  if (data.length > max) throw Object.assign(new Error('file too large'), { code: 'EFBIG' });
  return data.toString('utf8');
}

/** Reads the discovery file; rejects with service_not_found or io_error. */
async function discover(paths = taskdeckPaths()) {
  if (paths === null) {
    throw taskdeckError('service_not_found',
      `no taskdeck home (set TASKDECK_HOME or HOME); ${START_HINT}`);
  }
  let text;
  try {
    text = await readSmall(paths.discovery, 64 * 1024);
  } catch (e) {
    if (e.code === 'ENOENT') {
      throw taskdeckError('service_not_found',
        `no taskdeck service is running (no ${paths.discovery}); ${START_HINT}`);
    }
    throw taskdeckError('io_error', `cannot read ${paths.discovery}: ${e.code ?? e.message}`);
  }
  let info;
  try {
    info = JSON.parse(text);
  } catch {
    info = null;
  }
  if (info === null || typeof info !== 'object' || typeof info.baseUrl !== 'string' ||
      !Number.isInteger(info.pid) || info.pid < 1) {
    throw taskdeckError('service_not_found',
      `the discovery file ${paths.discovery} is malformed; restart the service with \`taskdeck daemon start\``);
  }
  if (!pidAlive(info.pid)) {
    throw taskdeckError('service_not_found',
      `the taskdeck service of ${paths.discovery} (pid ${info.pid}) is no longer running; ${START_HINT}`);
  }
  return { ...info, discoveryFile: paths.discovery };
}

async function readToken(path) {
  let text;
  try {
    text = await readSmall(path, 256);
  } catch (e) {
    if (e.code === 'ENOENT') {
      throw taskdeckError('service_not_found',
        `no token file at ${path}; start the service with \`taskdeck daemon start\``);
    }
    throw taskdeckError('io_error', `cannot read the token file ${path}: ${e.code ?? e.message}`);
  }
  const m = /^([0-9a-fA-F]{64})\n?$/.exec(text);
  if (m === null) throw taskdeckError('io_error', `the token file ${path} is malformed`);
  return m[1];
}

/**
 * The base URL and token, each found separately: the option, then
 * TASKDECK_URL / TASKDECK_TOKEN, then the discovery file and its tokenFile
 * (else the home's token file).
 */
async function resolveConnection(options) {
  const fixedUrl = options.baseUrl ?? env('TASKDECK_URL');
  const fixedToken = options.token ?? env('TASKDECK_TOKEN');
  // A home is read once: a restarted service is looked for where the first one was.
  const paths = taskdeckPaths();
  const resolve = async () => {
    let baseUrl = fixedUrl;
    let token = fixedToken;
    let info = null;
    if (baseUrl === null) {
      info = await discover(paths);
      baseUrl = info.baseUrl;
    }
    if (token === null) {
      if (info !== null && typeof info.tokenFile === 'string') {
        token = await readToken(info.tokenFile);
      } else {
        if (paths === null) {
          throw taskdeckError('service_not_found', 'no token: set TASKDECK_TOKEN, TASKDECK_HOME or HOME');
        }
        token = await readToken(paths.token);
      }
    }
    return { baseUrl, token };
  };
  const first = await resolve();
  // Found through the discovery file: a restarted service (a new port) is found again by re-reading it.
  return { ...first, rediscover: fixedUrl === null ? resolve : null };
}

module.exports = {
  taskdeckPaths, discover, resolveConnection,
};
