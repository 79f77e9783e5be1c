// Snapshots between real `vera` processes: a follower that missed entries the
// leader has compacted away catches up by InstallSnapshot, ends up with the
// leader's data, keeps replicating, and comes back consistent after a kill -9
// right after installing.

import { afterEach, describe, expect, it } from 'vitest';
import { connect, type VeraClient } from '../../src/client/index.js';
import { killAll, type LogLine } from '../support/vera-process.js';
import { pollUntil } from '../support/poll.js';
import { listOf, pushMany, statusOf, TestCluster, type MemberSpec } from './support.js';

const LISTS = 10;
const PREFIX = '/snap';
const paths = Array.from({ length: LISTS }, (_, i) => `${PREFIX}/${i}`);

let cluster: TestCluster | null = null;
let client: VeraClient | null = null;

afterEach(async () => {
  await client?.close().catch(() => undefined);
  client = null;
  await cluster?.stopAll();
  cluster?.removeData();
  cluster = null;
  await killAll();
});

/** Waits until `follower` has applied what the leader has and serves the same items on every list. */
async function expectSameData(leader: MemberSpec, follower: MemberSpec): Promise<number> {
  return pollUntil(
    `${follower.id} to serve the same data as ${leader.id}`,
    async () => {
      const [l, f] = await Promise.all([statusOf(leader.clientPort), statusOf(follower.clientPort)]);
      if (f.applied < l.commit) return undefined;
      for (const path of paths) {
        const [a, b] = await Promise.all([listOf(leader.clientPort, path), listOf(follower.clientPort, path)]);
        if (JSON.stringify(a.items) !== JSON.stringify(b.items)) return undefined;
      }
      return f.applied;
    },
    20_000,
    100);
}

const totalItems = async (member: MemberSpec): Promise<number> => {
  let n = 0;
  for (const path of paths) n += (await listOf(member.clientPort, path)).items.length;
  return n;
};

const isEvent = (event: string, extra: (l: LogLine) => boolean = () => true) => (l: LogLine): boolean => l.event === event && extra(l);

describe('catch-up by snapshot between real processes', () => {
  it('a follower behind the compacted log installs a snapshot, matches the leader, keeps replicating, and survives kill -9 right after installing', async () => {
    cluster = await TestCluster.start(3, ['--snapshot-entries', '20', '--snapshot-keep', '5']);
    const leader = await cluster.leader();
    const follower = cluster.specs.find((s) => s.id !== leader.id)!;
    client = await connect(`ws://127.0.0.1:${leader.clientPort}`, { requestTimeoutMs: 15_000 });

    await pushMany(client, 10, { prefix: PREFIX, lists: LISTS, concurrency: 5 });
    await expectSameData(leader, follower);
    const followerBefore = (await statusOf(follower.clientPort)).applied;
    await cluster.kill9(follower.id);

    // Nearly three hundred writes while it is down: the leader compacts far past what the follower holds.
    // One at a time, so that they fill the leader's window of in-flight appends to the follower (256
    // messages): appends sent before the window filled wait in the peer transport's queue and reach the
    // follower when it returns, so with fewer messages it could catch up without any snapshot.
    await pushMany(client, 280, { prefix: PREFIX, lists: LISTS, concurrency: 1, dataBytes: 8000, from: 10 });
    const leaderProcess = cluster.process(leader.id);
    const compacted = await leaderProcess.waitForLog(isEvent('snapshot-compacted', (l) => Number(l.index) > followerBefore + 5));

    const restarted = await cluster.startMember(follower.id);
    const installed = await restarted.waitForLog(isEvent('snapshot-installed'));
    const sent = await leaderProcess.waitForLog(isEvent('snapshot-sent', (l) => l.peer === follower.id));
    expect(Number(installed.index)).toBeGreaterThanOrEqual(Number(compacted.index));
    expect(installed.bytes).toBe(sent.bytes);
    // Several 512 KiB chunks crossed the real peer transport.
    expect(Number(installed.bytes)).toBeGreaterThan(280 * 8000);

    await expectSameData(leader, follower);
    expect(await totalItems(follower)).toBe(290);
    // From the leader's link to the restarted follower coming up to the follower's install: the
    // appends queued meanwhile, the probe, the capture, the stream and the install (one synced batch).
    const reconnected = leaderProcess.logs.filter(isEvent('peer.connected', (l) => l.peer === follower.id && Number(l.time) <= Number(installed.time))).at(-1)!;
    const seconds = (Number(installed.time) - Number(reconnected.time)) / 1000;
    console.log(
      `[snapshot] catch-up: ${String(installed.bytes)} bytes at index ${String(installed.index)}, installed ${seconds.toFixed(3)} s after the leader reconnected` +
        ` (>= ${(Number(installed.bytes) / 1024 / 1024 / seconds).toFixed(1)} MiB/s end to end)`,
    );

    // It keeps replicating from the log after the snapshot.
    await pushMany(client, 30, { prefix: PREFIX, lists: LISTS, concurrency: 8, from: 1000 });
    await expectSameData(leader, follower);
    expect(await totalItems(follower)).toBe(320);

    // Behind again; killed the moment the next install is reported; restarted: consistent.
    await cluster.kill9(follower.id);
    await pushMany(client, 280, { prefix: PREFIX, lists: LISTS, concurrency: 1, from: 2000 });
    const again = await cluster.startMember(follower.id);
    const installedAgain = await again.waitForLog(isEvent('snapshot-installed'));
    await cluster.kill9(follower.id);
    const third = await cluster.startMember(follower.id);
    const opened = third.logs.find(isEvent('node-opened'))!;
    // The install was durable before it was reported: the restart resumes from at least its index.
    expect(Number(opened.applied)).toBeGreaterThanOrEqual(Number(installedAgain.index));
    await expectSameData(leader, follower);
    expect(await totalItems(follower)).toBe(600);

    await pushMany(client, 20, { prefix: PREFIX, lists: LISTS, concurrency: 8, from: 3000 });
    await expectSameData(leader, follower);
    expect(await totalItems(follower)).toBe(620);
  });
});
