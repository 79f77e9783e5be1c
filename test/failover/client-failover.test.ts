// Client failover across a real 3-member cluster: kill -9 the leader while a
// client watches a list and another writes to it. Both clients must move to the
// new leader and resume their sessions; the watcher must get every committed
// event (at least once across the reconnect, exactly once per connection); the
// sessions' ephemeral items must survive; a write in flight during the kill
// either fails with UNAVAILABLE or succeeds, and if acknowledged it is there.

import { afterAll, describe, expect, it } from 'vitest';
import { VeraClient, type ChangeEvent, type ConnectedInfo, type Item, type ResyncList } from '../../src/client/index.js';
import { killAll } from '../support/vera-process.js';
import { pollUntil } from '../support/poll.js';
import { Cluster } from './cluster.js';

const SESSION_TIMEOUT_MS = 10_000;
const LIST = '/failover/list';
const MEMBERS = '/failover/members';

let cluster: Cluster | null = null;
const clients: VeraClient[] = [];

afterAll(async () => {
  for (const c of clients) await c.close().catch(() => undefined);
  await killAll();
  cluster?.removeData();
});

/**
 * The notifications each connection of `client` carried, before the client's
 * own de-duplication: one array per connection attempt, in order. Taps the
 * client's notification bookkeeping (private), the one place that sees both.
 */
function tapConnections(client: VeraClient): ChangeEvent[][] {
  const perConnection: ChangeEvent[][] = [];
  const notifications = (client as unknown as { notifications: { beginConnection(): void; onEvents(events: readonly ChangeEvent[]): void } }).notifications;
  const beginConnection = notifications.beginConnection.bind(notifications);
  const onEvents = notifications.onEvents.bind(notifications);
  notifications.beginConnection = () => {
    perConnection.push([]);
    beginConnection();
  };
  notifications.onEvents = (events) => {
    perConnection.at(-1)!.push(...events);
    onEvents(events);
  };
  return perConnection;
}

async function openClient(urls: readonly string[], connected: ConnectedInfo[]): Promise<VeraClient> {
  const client = new VeraClient(urls, { timeoutMs: SESSION_TIMEOUT_MS, connectTimeoutMs: 20_000 });
  clients.push(client);
  client.on('connected', (info) => connected.push(info));
  await client.start();
  return client;
}

/** Resolves with the client's next resumed connection; rejects after `timeoutMs`. */
function nextResume(client: VeraClient, timeoutMs: number): Promise<ConnectedInfo> {
  return new Promise((resolve, reject) => {
    const timer = setTimeout(() => {
      off();
      reject(new Error(`the client did not resume its session within ${timeoutMs} ms (state ${client.state})`));
    }, timeoutMs);
    const off = client.on('connected', (info) => {
      if (!info.resumed) return;
      clearTimeout(timer);
      off();
      resolve(info);
    });
  });
}

type Outcome = { readonly ok: true; readonly item: Item } | { readonly ok: false; readonly code: string };

async function pushOutcome(client: VeraClient, data: unknown): Promise<Outcome> {
  try {
    return { ok: true, item: await client.push(LIST, data, { persistent: true, watch: false }) };
  } catch (error) {
    return { ok: false, code: (error as { code?: string }).code ?? String(error) };
  }
}

describe('client failover', () => {
  it('clients follow a killed leader to its successor, keep their sessions, items and every event', async () => {
    const startedAt = performance.now();
    cluster = await Cluster.start(3);
    const oldLeader = await cluster.leader();

    const watcherConnections: ConnectedInfo[] = [];
    const writerConnections: ConnectedInfo[] = [];
    // The watcher's tap must be in place before its first connection.
    const watcher = new VeraClient(cluster.urls, { timeoutMs: SESSION_TIMEOUT_MS, connectTimeoutMs: 20_000 });
    clients.push(watcher);
    watcher.on('connected', (info) => watcherConnections.push(info));
    const perConnection = tapConnections(watcher);
    await watcher.start();
    const writer = await openClient(cluster.urls, writerConnections);
    const watcherSession = watcher.session;
    const writerSession = writer.session;
    expect(watcher.serverUrl).toContain(`:${oldLeader.clientPort}/`);

    const delivered: ChangeEvent[] = [];
    const resyncs: ResyncList[][] = [];
    watcher.on('event', (e) => delivered.push(e));
    watcher.on('resync', (lists) => resyncs.push([...lists]));

    const ephemeral = [await watcher.push(MEMBERS, 'watcher', { watch: false }), await writer.push(MEMBERS, 'writer', { watch: false })];
    const watched = await watcher.watch(LIST);
    expect(watched.items).toStrictEqual([]);

    const outcomes: Array<{ readonly data: string; readonly outcome: Outcome }> = [];
    for (let i = 0; i < 10; i++) outcomes.push({ data: `before-${i}`, outcome: await pushOutcome(writer, `before-${i}`) });
    expect(outcomes.every((o) => o.outcome.ok)).toBe(true);

    const resumed = [nextResume(watcher, 20_000), nextResume(writer, 20_000)];
    // A write in flight when the leader dies: the kill follows its send at once.
    const inFlight = pushOutcome(writer, 'in-flight');
    const killedAt = performance.now();
    await oldLeader.process.kill9();

    // Writes during and after the election: each either fails as UNAVAILABLE (outcome unknown) or succeeds.
    let acknowledgedAfter = 0;
    for (let i = 0; acknowledgedAfter < 10; i++) {
      expect(i).toBeLessThan(30);
      const outcome = await pushOutcome(writer, `after-${i}`);
      outcomes.push({ data: `after-${i}`, outcome });
      if (outcome.ok) acknowledgedAfter++;
      else expect(outcome.code).toBe('UNAVAILABLE');
    }
    const inFlightOutcome = await inFlight;
    outcomes.push({ data: 'in-flight', outcome: inFlightOutcome });
    if (!inFlightOutcome.ok) expect(inFlightOutcome.code).toBe('UNAVAILABLE');
    const recoveredAfterMs = performance.now() - killedAt;

    const newLeader = await cluster.leader({ not: oldLeader.id });
    await Promise.all(resumed);
    for (const [client, connections, session] of [
      [watcher, watcherConnections, watcherSession],
      [writer, writerConnections, writerSession],
    ] as const) {
      expect(client.state).toBe('open');
      expect(client.session).toBe(session);
      expect(client.serverUrl).toContain(`:${newLeader.clientPort}/`);
      const last = connections.at(-1)!;
      expect(last).toMatchObject({ session, resumed: true });
      expect(connections.every((c) => c.session === session)).toBe(true);
    }

    // Every acknowledged write is committed, in the order it was acknowledged.
    const final = await writer.get(LIST);
    const finalIndexes = final.items.map((i) => i.index);
    const acknowledged = outcomes.flatMap((o) => (o.outcome.ok ? [o.outcome.item] : []));
    for (const item of acknowledged) expect(final.items).toContainEqual(item);
    expect(new Set(final.items.map((i) => i.data)).size).toBe(final.items.length);

    // The watcher hears of every committed push: once each after de-duplication...
    await pollUntil(
      'the watcher to receive every committed push',
      async () => (finalIndexes.every((index) => delivered.some((e) => e.item.index === index)) ? true : undefined),
      10_000,
    );
    expect(resyncs).toStrictEqual([]);
    const listEvents = delivered.filter((e) => e.path === LIST);
    expect(listEvents.map((e) => e.item.index)).toStrictEqual(finalIndexes);
    expect(listEvents.every((e) => e.type === 'push')).toBe(true);
    // ...and on the wire, in increasing index order and never twice within one connection.
    const eventKey = (e: ChangeEvent) => `${e.index}|${e.type}|${e.path}|${e.item.index}`;
    for (const events of perConnection) {
      expect(new Set(events.map(eventKey)).size).toBe(events.length);
      expect(events.map((e) => e.index)).toStrictEqual([...events.map((e) => e.index)].sort((a, b) => a - b));
    }
    const onTheWire = new Set(perConnection.flat().map((e) => e.item.index));
    for (const index of finalIndexes) expect(onTheWire.has(index)).toBe(true);
    expect(perConnection.filter((events) => events.length > 0).length).toBeGreaterThanOrEqual(2);

    // The sessions survived the leader change, so their ephemeral items did too.
    expect((await watcher.get(MEMBERS)).items).toStrictEqual(ephemeral);

    await watcher.close();
    await writer.close();
    expect(await cluster.stop()).toStrictEqual([0, 0]);
    expect(recoveredAfterMs).toBeLessThan(20_000);
    expect(performance.now() - startedAt).toBeLessThan(45_000);
  }, 60_000);
});
