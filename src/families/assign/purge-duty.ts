// The leader's purge duty: each tick, one step of one running purge job (purge-job.ts),
// the services' jobs taken in turn. A step is one bounded batch (at most `max` records
// deleted, at most 10,000 keys looked at), its clean-up jobs queued in the journal first,
// then one purgeStep entry naming the cursor it started from. Only one step is in flight
// per member, so a tick never does more than one batch; the job's state (cursor, counts)
// is replicated, so a new leader goes on from the last step applied.
import { VeraError } from '../../protocol/index.js';
import type { FrontEnd } from '../../server/front/context.js';
import type { LeaderDuty } from '../../server/front/family-part.js';
import { journal } from '../journal/index.js';
import { assign } from './index.js';
import { cleanupJobs, parseCursor, proposeAssign, queueCleanups, selectPurgeBatch } from './purge-batch.js';

/** Members with a step in flight, and the service whose job went last (the next tick starts after it). */
const busy = new WeakSet<FrontEnd>();
const lastService = new WeakMap<FrontEnd, string>();

/** The service whose running job goes next: the first after the last one served, in name order. */
function nextService(fe: FrontEnd): string | null {
  const running = [...fe.node.stateMachine.stateOf(assign).purgeJobs].filter(([, j]) => j.state === 'running').map(([s]) => s);
  if (running.length === 0) return null;
  running.sort();
  const last = lastService.get(fe);
  return running.find((s) => last === undefined || s > last) ?? running[0]!;
}

/** One step of the service's job; a refusal that will not pass by itself (its journal gone) fails the job. */
export async function purgeStep(fe: FrontEnd, service: string): Promise<void> {
  const state = fe.node.stateMachine.stateOf(assign);
  const job = state.purgeJobs.get(service);
  const s = state.services.get(service);
  if (job === undefined || job.state !== 'running') return;
  const fail = (error: string): Promise<unknown> => proposeAssign(fe, { op: 'purgeStop', service, seq: job.seq, error });
  if (s === undefined) return void (await fail(`service ${service} is gone`));
  if (job.journal !== '' && fe.node.stateMachine.stateOf(journal).live(job.journal) === null) return void (await fail(`journal ${job.journal} does not exist`));
  // The grace period from now, at each step, as a purge batch takes it.
  const before = Math.max(0, Math.max(fe.node.stateMachine.clock, Date.now()) - job.graceMs);
  const after = parseCursor(job.cursor);
  const batch = await selectPurgeBatch(fe, service, s, {
    before,
    max: job.max,
    force: job.force,
    ...(job.uidMin === 0 ? {} : { uidMin: job.uidMin }),
    ...(job.uidMax === 0 ? {} : { uidMax: job.uidMax }),
    ...(after === undefined ? {} : { after }),
  });
  let overridden = 0;
  let activeData = 0;
  if (job.journal !== '' && batch.chosen.length > 0) {
    const jobs = await cleanupJobs(fe, service, s, batch.chosen, job.overrideNode === '' ? undefined : job.overrideNode);
    overridden = jobs.overridden;
    activeData = batch.chosen.length - jobs.items.length;
    try {
      await queueCleanups(fe, job.journal, jobs.items);
    } catch (err) {
      if (err instanceof VeraError && err.code === 'NOT_FOUND') return void (await fail(`journal ${job.journal}: ${err.message}`));
      throw err;
    }
  }
  await proposeAssign(fe, {
    op: 'purgeStep',
    service,
    seq: job.seq,
    from: job.cursor,
    to: batch.next ?? job.cursor,
    done: batch.next === null,
    before,
    uids: batch.chosen.map((u) => u.uid),
    skipped: batch.skipped,
    overridden,
    activeData,
  });
}

export const purgeJobs: LeaderDuty = {
  name: 'assign-purge',
  periodMs: 100,
  tick: (fe) => {
    if (busy.has(fe)) return;
    const service = nextService(fe);
    if (service === null) return;
    busy.add(fe);
    lastService.set(fe, service);
    purgeStep(fe, service)
      .catch((err: unknown) => fe.logger.debug({ event: 'assign-purge-step-failed', service, err: String(err) }, 'a purge step failed; the next tick tries again'))
      .finally(() => busy.delete(fe));
  },
};
