// The leader's purge duty: each tick, one step of one running purge job (purge-job.ts),
// the services' jobs taken in turn. A step is one bounded batch (at most `max` records
// deleted, at most 10,000 keys looked at), its clean-up jobs queued in the journal first,
// then one purgeStep entry naming the cursor it started from. Only one step is in flight
// per member, so a tick never does more than one batch; the job's state (cursor, counts)
// is replicated, so a new leader goes on from the last step applied.
import { VeraError } from '../../protocol/index.js';
import type { PluginDuty } from '../../kit/index.js';
import { cleanupJobs, journalIsLive, parseCursor, queueCleanups, selectPurgeBatch, type AssignHost } from './purge-batch.js';

/** One step of the service's job; a refusal that will not pass by itself (its journal gone) fails the job. */
export async function purgeStep(host: AssignHost, service: string): Promise<void> {
  const state = host.state();
  const job = state.purgeJobs.get(service);
  const s = state.services.get(service);
  if (job === undefined || job.state !== 'running') return;
  const fail = (error: string): Promise<unknown> => host.propose({ op: 'purgeStop', service, seq: job.seq, error });
  if (s === undefined) return void (await fail(`service ${service} is gone`));
  if (job.journal !== '' && !(await journalIsLive(host, job.journal))) return void (await fail(`journal ${job.journal} does not exist`));
  // The grace period from now, at each step, as a purge batch takes it.
  const before = Math.max(0, Math.max(host.now(), Date.now()) - job.graceMs);
  const after = parseCursor(job.cursor);
  const batch = await selectPurgeBatch(host, service, s, {
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
    const jobs = await cleanupJobs(host, service, s, batch.chosen, job.overrideNode === '' ? undefined : job.overrideNode);
    overridden = jobs.overridden;
    activeData = batch.chosen.length - jobs.items.length;
    try {
      await queueCleanups(host, job.journal, jobs.items);
    } catch (err) {
      if (err instanceof VeraError && err.code === 'NOT_FOUND') return void (await fail(`journal ${job.journal}: ${err.message}`));
      throw err;
    }
  }
  await host.propose({
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

/** The member's purge duty: at most one step in flight, the services' running jobs served in turn. */
export function purgeDuty(host: AssignHost): PluginDuty {
  let busy = false;
  /** The service whose job went last (the next tick starts after it). */
  let lastService: string | undefined;
  /** The service whose running job goes next: the first after the last one served, in name order. */
  const nextService = (): string | null => {
    const running = [...host.state().purgeJobs].filter(([, j]) => j.state === 'running').map(([s]) => s);
    if (running.length === 0) return null;
    running.sort();
    return running.find((s) => lastService === undefined || s > lastService) ?? running[0]!;
  };
  return {
    name: 'assign-purge',
    periodMs: 100,
    tick: () => {
      if (busy) return;
      const service = nextService();
      if (service === null) return;
      busy = true;
      lastService = service;
      purgeStep(host, service)
        .catch((err: unknown) => host.log.debug({ event: 'assign-purge-step-failed', service, err: String(err) }, 'a purge step failed; the next tick tries again'))
        .finally(() => {
          busy = false;
        });
    },
  };
}
