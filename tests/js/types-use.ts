// A program using every method of @taskdeck/sdk, type-checked by tsc --noEmit
// (tests/js/package.test.mjs); it is never run.
import {
  connectToTaskdeck, TaskdeckError, EVENT_BACKLOG, type Run, type TaskdeckEvent, type Page, type Project,
  NotFoundError, ConflictError, RateLimitError, ConnectionError, TimeoutError, AbortError, type ResponseInfo,
  type Credential,
} from '@taskdeck/sdk';

export async function useEverything(signal: AbortSignal): Promise<number> {
  const td = await connectToTaskdeck({ requestTimeoutMs: 10000, maxRetries: 3 });
  await using forever = await connectToTaskdeck({ requestTimeoutMs: Infinity, maxRetries: 0 });
  await forever.getRun('run_x', { timeoutMs: null, maxRetries: 1 });
  const o = { signal, timeoutMs: 5000 };
  let n = 0;
  for await (const page of forever.pages('listSessions', 'prj_x', { limit: 10 })) n += page.length + (page.nextCursor?.length ?? 0);
  const doc = await td.doctor(o);
  const ready: boolean = doc.ready;
  const runtimes = await td.listRuntimes(o);
  const b = await td.bootstrap({ action: 'status' }, o);
  const ok: boolean = b.ok;
  await td.installCli(o);
  const projects: Page<Project> = await td.listProjects({ ...o, limit: 10 });
  const next: string | null = projects.nextCursor;
  const p = await td.createProject({ name: 'x' }, { ...o, idempotencyKey: 'k' });
  await td.updateProject(p.id, { description: null }, o);
  await td.getProject(p.id, o);
  const d = await td.getProjectSessionDefaults(p.id, o);
  await td.updateProjectSessionDefaults(p.id, { expectedUpdatedAt: d.updatedAt, patch: { effort: 'high' } }, o);
  const run: Run = await td.startRun({ project: p.id, prompt: 'hi', permissionProfile: 'ask',
    turnIntent: 'plan-first' }, { ...o, idempotencyKey: 'r' });
  const sessions = await td.listSessions(p.id, { all: true });
  const s = await td.getSession(sessions[0].id, o);
  const cfg = await td.getSessionConfiguration(s.id, o);
  await td.updateSessionConfiguration(s.id, { expectedRevision: cfg.revision, patch: { model: null } }, o);
  const routing = await td.getAgentRouting(o);
  await td.updateAgentRouting({ subagent: { maxConcurrent: routing.subagent.maxConcurrent } }, o);
  const waiting = await td.waitForRun(run.id, { timeoutMs: 1000, signal, returnOnAttention: true });
  if (waiting.attention?.kind === 'plan-approval') {
    const plan = await td.getSessionPlan(run.sessionId, o);
    await td.respondSessionPlan(run.sessionId, { decision: 'revise', version: plan.version,
      revision: plan.revision, feedback: 'more' }, o);
  }
  await td.getRun(run.id, o);
  const { data: again, response }: { data: Run; response: ResponseInfo } =
    await td.startRun({ project: p.id, prompt: 'hi' }, { idempotencyKey: 'r' }).withResponse();
  if (response.idempotentReplayed && again.id === run.id) n++;
  n += (response.retryAfterMs ?? 0) + response.status + (response.requestId?.length ?? 0) + response.retries;
  n += response.headers.get('location')?.length ?? 0;
  await td.cancelRun(run.id, o);
  const runs: Run[] = await td.listRuns({ project: p.id, status: 'completed', all: true });
  const history = await td.getRunEvents(runs[0].id, { after: '0', limit: 10 });
  for (const e of history) if (e.type === 'run.output') n += e.data.delta.length + (e.streamId?.length ?? 0);
  n += history.nextCursor?.length ?? 0;
  const arts = await td.listArtifacts(run.sessionId, { allVersions: true, all: true });
  await td.getArtifact(arts[0].id, o);
  const res: Response = await td.downloadArtifact(arts[0].id, { ...o, offset: 10, ifRange: arts[0].version });
  const bytes = new Uint8Array(await res.arrayBuffer());
  const events = td.events({ projectId: p.id }, { idleTimeoutMs: 30000, lastEventId: 'a:1', signal });
  await events.ready;
  for await (const e of events) {
    const ev: TaskdeckEvent = e;
    if (ev.type === 'run.finished') {
      const final: 'completed' | 'failed' | 'cancelled' = ev.data.status;
      n += (ev.data.error?.code.length ?? 0) + final.length;
      break;
    }
    if (e.type === 'run.output') n += e.data.delta.length;
    if (e.type === 'run.progress' && !e.data.liveness) n += e.data.phase.length;
    if (e.type === 'artifact.saved') n += e.data.size;
    if (e.type === 'session.deleted') n += e.data.id.length + e.data.projectId.length;
    if (e.type === 'plan.updated') n += e.data.steps.length;
    if (e.type === 'stream.resync-required' && e.data.reason === 'expired') n += e.seq;
    if (e.type === 'connector.updated' && e.data.action === 'removed') n += e.data.id.length;
    n++;
  }
  const resume: string | null = events.lastEventId;
  events.close();
  for await (const proj of td.paginate('listProjects', { limit: 5 })) n += proj.name.length;
  for await (const art of td.paginate('listArtifacts', run.sessionId, { allVersions: true })) n += art.size;
  const connectors = await td.listConnectors(o);
  for (const k of connectors) {
    // Every service lists con_web, whose transport is builtin.
    if (k.transport.type === 'builtin') n++;
    else if (k.transport.type === 'stdio') n += k.transport.command.length;
  }
  const c = await td.addConnector({ name: 'm', transport: { type: 'stdio', command: 'mcp', args: [] } }, o);
  await td.getConnector(c.id, o);
  await td.setConnectorEnabled(c.id, true, o);
  await td.updateConnector(c.id, { transport: { type: 'http', url: 'http://127.0.0.1:1/' } }, o);
  const t = await td.testConnector(c.id, o);
  const tools: number = t.toolCount;
  await td.removeConnector(c.id, o);
  const creds = await td.listCredentials(o);
  const cred = await td.createCredential({ name: 'k', kind: 'api-key', secret: 's' }, o);
  await td.updateCredential(cred.id, { description: 'd' }, o);
  const one: Credential = await td.getCredential(cred.id, o);
  await td.deleteCredential(one.id, { ...o, force: true });
  try {
    await td.updateSessionConfiguration(s.id, { expectedRevision: 1, patch: {} });
  } catch (e) {
    if (e instanceof ConflictError && e.is('stale_write')) {
      const current = e.details.current;
      n += 'revision' in current ? current.revision : 0;
    }
    if (e instanceof NotFoundError) n += e.details.id?.length ?? 0;
    if (e instanceof RateLimitError) n += e.retryAfterMs ?? 0;
    if (e instanceof TimeoutError || e instanceof ConnectionError || e instanceof AbortError) n += e.name.length;
  }
  try {
    await td.getRun('run_x');
  } catch (e) {
    if (e instanceof TaskdeckError) {
      const status: number = e.status;
      const rid: string | null = e.requestId;
      n += status + (rid?.length ?? 0) + Object.keys(e.details).length + e.code.length;
      if (typeof e.details.field === 'string') n += e.details.field.length;
    }
  }
  const changes = await td.getRunChanges('run_x', { from: 'start' });
  const first = changes.files[0];
  n += changes.totals.additions + (first?.status === 'added' ? 1 : 0) + (first?.oldMode?.length ?? 0);
  if (changes.incomplete) n += changes.incompleteReason?.length ?? 0;
  const diff = await td.getRunDiff('run_x', { path: 'a.txt' });
  n += diff.text.length + (diff.truncated ? 1 : 0);
  try {
    const done = await td.revertRun('run_x', { force: false });
    n += done.reverted.length + done.revertedAt.length;
  } catch (e) {
    if (e instanceof ConflictError && e.is('revert_conflict')) n += e.details.conflicts[0].path.length;
  }
  try {
    const gone = await td.deleteSession('ses_x', { force: true });
    if ('deleting' in gone) n += gone.cancelled.length + gone.id.length;
    else n += gone.runs + gone.removed.length + gone.kept.length + gone.id.length;
  } catch (e) {
    if (e instanceof ConflictError && e.is('session_busy')) n += e.status;
  }
  td.close();
  return n + bytes.length + runtimes.length + connectors.length + creds.length + tools + EVENT_BACKLOG +
    (ready ? 1 : 0) + (ok ? 1 : 0) + (next?.length ?? 0) + (resume?.length ?? 0);
}
