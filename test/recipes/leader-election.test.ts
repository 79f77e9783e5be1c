// Leader election (src/client/recipes/leader-election.ts) against a real server:
// the first candidate leads, its item index is the fencing token, and when the
// leader's session ends the next candidate, and only it, takes over.

import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import type { Item, VeraClient } from '../../src/client/index.js';
import { LeaderElection, type Leadership } from '../../src/client/recipes/index.js';
import { killAll, type VeraProcess } from '../support/vera-process.js';
import { Clients, expectOnlySuccessorWoke, fence, Instrument, parked, startServer, Watched, type CuttableLink, type Mark } from './support.js';

/** Session timeout of candidates that are made to vanish. */
const SHORT_TIMEOUT_MS = 1000;
/** How late after its timeout an expiry may take effect (expiry tick, commit, notification, the successor's reads). */
const SLACK_MS = 2000;

let server: VeraProcess;
let clients: Clients;

beforeAll(async () => {
  server = await startServer();
  clients = new Clients(server.clientPort);
});
afterEach(() => clients.closeAll());
afterAll(async () => {
  await killAll();
  server?.removeData();
});

interface Candidate {
  readonly client: VeraClient;
  readonly instrument: Instrument;
  readonly election: LeaderElection;
  readonly link: CuttableLink | null;
  campaign: Promise<Leadership> | null;
}

async function candidate(path: string, fencePath: string, options: { vanishing?: boolean } = {}): Promise<Candidate> {
  const { client, link } = options.vanishing
    ? await clients.openCuttable({ timeoutMs: SHORT_TIMEOUT_MS })
    : { client: await clients.open(), link: null };
  const instrument = new Instrument(client);
  await client.watch(fencePath);
  return { client, instrument, election: new LeaderElection(client, path), link, campaign: null };
}

/** Follows the leader as an onlooker sees it, through LeaderElection.observe(). */
async function observeLeader(client: VeraClient, path: string): Promise<Watched<Item | null>> {
  const leader = new Watched<Item | null>(null);
  await new LeaderElection(client, path).observe((item) => leader.set(item));
  return leader;
}

/** Starts a campaign that is expected to wait, and returns once the candidate is parked. */
async function joinAndPark(c: Candidate, data: unknown, signal?: AbortSignal): Promise<void> {
  const mark = c.instrument.mark();
  c.campaign = c.election.campaign({ data, ...(signal === undefined ? {} : { signal }) });
  c.campaign.catch(() => undefined); // awaited by the test when it matters
  await parked(c.instrument, mark, `candidate ${c.client.session} to wait for its turn on ${c.election.path}`);
}

/** Where each waiting candidate stood before the leader left. */
function markAll(candidates: readonly Candidate[]): Map<Instrument, Mark> {
  return new Map(candidates.map((c) => [c.instrument, c.instrument.mark()]));
}

describe('leader election', () => {
  it('the first candidate leads, its item index is the fencing token, and onlookers see its data', async () => {
    const path = '/election/first';
    const a = await candidate(path, '/election/first-fence');
    const onlooker = await clients.open();
    const leader = await observeLeader(onlooker, path);

    const leadership = await a.election.campaign({ data: { addr: 'a:1' } });
    expect(leadership.fencingToken).toBe(leadership.item.index);
    expect(leadership.item).toMatchObject({ owner: a.client.session, data: { addr: 'a:1' } });
    expect(await new LeaderElection(onlooker, path).leader()).toStrictEqual(leadership.item);
    expect(await leader.until((l) => l?.index === leadership.item.index, 'the onlooker to see the leader')).toStrictEqual(leadership.item);
  });

  it('when the leader vanishes, the next candidate alone reacts and leads with a higher token after the session timeout', async () => {
    const path = '/election/crash';
    const fencePath = '/election/crash-fence';
    const first = await candidate(path, fencePath, { vanishing: true });
    const waiting = [await candidate(path, fencePath), await candidate(path, fencePath), await candidate(path, fencePath)];
    const writer = await clients.open();

    const firstLeadership = await first.election.campaign({ data: 'first' });
    for (const [i, c] of waiting.entries()) await joinAndPark(c, `waiting-${i}`);
    const { items } = await writer.get(path);
    expect(items.map((i) => i.owner)).toStrictEqual([first, ...waiting].map((c) => c.client.session));

    // Everything the candidates heard while queueing is behind the fence; count from here.
    await fence(writer, fencePath, waiting.map((c) => c.instrument));
    const marks = markAll(waiting);

    const cutAt = performance.now();
    first.link!.cut();
    const next = await waiting[0]!.campaign!;
    const tookOverAfterMs = performance.now() - cutAt;

    expect(next.fencingToken).toBeGreaterThan(firstLeadership.fencingToken);
    expect(next.item.owner).toBe(waiting[0]!.client.session);
    // The server heard the vanished leader at most one heartbeat (a third of its timeout) before the cut.
    expect(tookOverAfterMs).toBeGreaterThanOrEqual((SHORT_TIMEOUT_MS * 2) / 3 - 20);
    expect(tookOverAfterMs).toBeLessThan(SHORT_TIMEOUT_MS + SLACK_MS);
    expect((await writer.get(path)).items.map((i) => i.owner)).toStrictEqual(waiting.map((c) => c.client.session));

    await fence(writer, fencePath, waiting.map((c) => c.instrument));
    expectOnlySuccessorWoke(waiting[0]!.instrument, waiting.slice(1).map((c) => c.instrument), marks, fencePath, first.client.session);
  });

  it('a leader that closes its session (bye) hands over at once, again waking only the next candidate', async () => {
    const path = '/election/bye';
    const fencePath = '/election/bye-fence';
    const first = await candidate(path, fencePath); // default session timeout: far longer than this test waits
    const waiting = [await candidate(path, fencePath), await candidate(path, fencePath)];
    const writer = await clients.open();
    const onlooker = await clients.open();
    const leader = await observeLeader(onlooker, path);

    const firstLeadership = await first.election.campaign();
    for (const c of waiting) await joinAndPark(c, null);
    await fence(writer, fencePath, waiting.map((c) => c.instrument));
    const marks = markAll(waiting);
    const firstSession = first.client.session;

    await first.client.close();
    const next = await waiting[0]!.campaign!;
    expect(next.fencingToken).toBeGreaterThan(firstLeadership.fencingToken);
    expect(first.client.sessionTimeoutMs).toBeGreaterThan(5_000); // so this was bye, not an expiry
    await expect(firstLeadership.lost).resolves.toMatchObject({ code: 'UNAVAILABLE' });
    expect(await leader.until((l) => l?.index === next.item.index, 'the onlooker to see the new leader')).toMatchObject({
      owner: waiting[0]!.client.session,
    });

    await fence(writer, fencePath, waiting.map((c) => c.instrument));
    expectOnlySuccessorWoke(waiting[0]!.instrument, waiting.slice(1).map((c) => c.instrument), marks, fencePath, firstSession);
  });

  it('resign hands over to the next candidate and ends the old leadership; an aborted campaign withdraws', async () => {
    const path = '/election/resign';
    const fencePath = '/election/resign-fence';
    const [a, b, c] = [await candidate(path, fencePath), await candidate(path, fencePath), await candidate(path, fencePath)];

    const aLeads = await a.election.campaign();
    await joinAndPark(b, 'b');
    const abort = new AbortController();
    await joinAndPark(c, 'c', abort.signal);
    expect((await a.client.get(path)).items.map((i) => i.owner)).toStrictEqual([a, b, c].map((x) => x.client.session));

    // c gives up before its turn comes: its item must leave the queue.
    abort.abort(new Error('not needed any more'));
    expect(await c.campaign!.then(() => 'led', (error: unknown) => error)).toMatchObject({ code: 'UNAVAILABLE', message: expect.stringContaining('not needed any more') });
    const afterAbort = await a.client.get(path);
    expect(afterAbort.items.map((i) => i.owner)).toStrictEqual([a.client.session, b.client.session]);

    await aLeads.resign();
    await expect(aLeads.lost).resolves.toMatchObject({ code: 'NOT_FOUND' });
    const bLeads = await b.campaign!;
    expect(bLeads.fencingToken).toBeGreaterThan(aLeads.fencingToken);
    await aLeads.resign(); // resigning twice is harmless
    expect((await a.client.get(path)).items.map((i) => i.owner)).toStrictEqual([b.client.session]);
  });

  it('a leader cut off past its session timeout learns, when it reconnects, that its leadership is lost', async () => {
    const path = '/election/partitioned';
    const fencePath = '/election/partitioned-fence';
    const first = await candidate(path, fencePath, { vanishing: true });
    const second = await candidate(path, fencePath);
    const expired = new Watched(false);
    first.client.on('sessionExpired', () => expired.set(true));

    const firstLeadership = await first.election.campaign();
    await joinAndPark(second, null);
    first.link!.cut();
    const secondLeadership = await second.campaign!;
    expect(secondLeadership.fencingToken).toBeGreaterThan(firstLeadership.fencingToken);

    first.link!.heal();
    await expect(firstLeadership.lost).resolves.toMatchObject({ code: 'SESSION_EXPIRED' });
    await expired.until((v) => v, 'the cut-off client to hear that its session expired');
    expect(first.client.state).toBe('expired');
  });

  it('rejects an election path that is invalid or too long to hold its candidates, before writing anything', async () => {
    const client = await clients.open();
    const instrument = new Instrument(client);
    await expect(new LeaderElection(client, '/').campaign()).rejects.toMatchObject({ code: 'BAD_REQUEST', message: expect.stringContaining('invalid queue path') });
    const long = `/${'x'.repeat(1010)}`;
    await expect(new LeaderElection(client, long).campaign()).rejects.toMatchObject({ code: 'BAD_REQUEST', message: expect.stringContaining('no room for presence lists') });
    expect(instrument.calls).toStrictEqual([]);
  });
});
