// End-to-end mutation check: the simulator with a deliberately broken driver
// must fail, with an invariant violation that names the seed and how to replay.
// If these runs passed, the simulation would be checking nothing.

import { describe, expect, it } from 'vitest';
import type { SimMutation } from './config.js';
import { InvariantViolation, type InvariantName } from './invariants.js';
import { runSeed } from './run.js';

/** Runs seeds 1..maxSeeds with the mutation until one fails; returns the failures' invariants by seed. */
async function failuresUnder(mutation: SimMutation, maxSeeds: number, stopAfter: number): Promise<Map<number, InvariantViolation>> {
  const failures = new Map<number, InvariantViolation>();
  for (let seed = 1; seed <= maxSeeds && failures.size < stopAfter; seed++) {
    try {
      await runSeed(seed, { mutation, faultSteps: 1500, replayCommand: `(mutation ${mutation}) seed ${seed}` });
    } catch (err) {
      if (!(err instanceof InvariantViolation)) throw err;
      failures.set(seed, err);
    }
  }
  return failures;
}

function kinds(failures: Map<number, InvariantViolation>): Set<InvariantName> {
  return new Set([...failures.values()].map((v) => v.invariant));
}

describe('the simulation catches a broken driver', () => {
  it('a disk that loses acknowledged writes in a crash', async () => {
    const failures = await failuresUnder('lyingDisk', 30, 5);
    expect(failures.size).toBe(5);
    const [seed, first] = [...failures][0]!;
    expect(first.message).toContain(`seed=${seed}`);
    expect(first.message).toContain(`(mutation lyingDisk) seed ${seed}`);
  });

  it('sending votes and acknowledgements before they are durable', async () => {
    // Only crashes in the short window between send and write expose this, so it takes more seeds.
    const failures = await failuresUnder('sendBeforePersist', 400, 3);
    expect(failures.size).toBe(3);
    const safety: InvariantName[] = ['electionSafety', 'voteSafety', 'leaderCompleteness', 'stateMachineSafety', 'acknowledgedWriteLost', 'liveness'];
    for (const kind of kinds(failures)) expect(safety).toContain(kind);
  });

  it('a network that never heals (liveness)', async () => {
    const failures = await failuresUnder('neverHeal', 3, 3);
    expect(failures.size).toBe(3);
    expect(kinds(failures)).toEqual(new Set(['liveness']));
  });

  it('installing a snapshot the core did not ask for (one not beyond the commit index)', async () => {
    const failures = await failuresUnder('installStaleSnapshot', 40, 3);
    expect(failures.size).toBe(3);
    // Caught as a snapshot below the commit index, or (when the core declined it because its log already
    // holds the snapshot's last entry) as a core that did not adopt what the driver installed.
    expect(kinds(failures).size).toBeGreaterThan(0);
    for (const kind of kinds(failures)) expect(['snapshotSafety', 'driverContract']).toContain(kind);
  });

  it('a snapshot labelled with the index before the state it holds', async () => {
    const failures = await failuresUnder('snapshotOffByOne', 20, 3);
    expect(failures.size).toBe(3);
    expect(kinds(failures)).toContain('stateMachineSafety');
    for (const kind of kinds(failures)) expect(['stateMachineSafety', 'liveness']).toContain(kind);
  });

  it('a driver that trusts its lease beyond the window followers keep', async () => {
    const failures = await failuresUnder('leaseTooLong', 200, 2);
    expect(failures.size).toBe(2);
    expect(kinds(failures)).toEqual(new Set(['leaseSafety']));
  });

  it('session liveness acknowledged by a leader that did not prove it still leads', async () => {
    const failures = await failuresUnder('unprovedLiveAck', 200, 2);
    expect(failures.size).toBe(2);
    expect(kinds(failures)).toEqual(new Set(['sessionLiveness']));
  });

  it('session liveness touches that no leader takes (the liveness half: no 4009 or expiry of a session kept alive)', async () => {
    const failures = await failuresUnder('ignoreLiveBatch', 30, 2);
    expect(failures.size).toBe(2);
    expect(kinds(failures)).toEqual(new Set(['sessionLiveness']));
  });

  it('a failure report ends with the events that led to it', async () => {
    let caught: unknown = null;
    try {
      await runSeed(1, { mutation: 'neverHeal', faultSteps: 300, traceTail: 12 });
    } catch (err) {
      caught = err;
    }
    expect(caught).toBeInstanceOf(InvariantViolation);
    const message = (caught as InvariantViolation).message;
    expect(message).toContain('last 12 events:');
    expect(message.split('\n').filter((l) => /^ {4}\[\d+\] /.test(l))).toHaveLength(12);
  });
});
