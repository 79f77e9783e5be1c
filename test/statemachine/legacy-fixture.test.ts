// The same entries give the same db, byte for byte, whatever the code that
// applies them: the fixture was recorded before the command-family refactor
// (fixtures/record-legacy.ts), and entries in that format stay in the logs of
// every existing data directory, so they must keep applying exactly as they did.
import { readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import type { Entry } from '../../src/raft/types.js';
import { StateMachine } from '../../src/statemachine/state-machine.js';
import { dumpDb, openTempDb } from './helpers.js';
import { REGISTRY } from '../../src/families/registry.js';

interface Fixture {
  readonly entries: ReadonlyArray<{ index: number; term: number; kind: Entry['kind']; data: string }>;
  readonly results: readonly unknown[];
  readonly checkpoint: number;
  readonly checkpoints: ReadonlyArray<{ applied: number; db: Array<[string, string]> }>;
  readonly digest: string;
  readonly db: Array<[string, string]>;
}

const fixture = JSON.parse(readFileSync(new URL('./fixtures/legacy-entries.json', import.meta.url), 'utf8')) as Fixture;
const entries: Entry[] = fixture.entries.map((e) => ({ index: e.index, term: e.term, kind: e.kind, data: new Uint8Array(Buffer.from(e.data, 'base64')) }));

describe('entries recorded before the command-family refactor', () => {
  it('apply one by one to the recorded results and the recorded db at every checkpoint', async () => {
    expect(entries.length).toBeGreaterThan(300);
    const temp = await openTempDb();
    try {
      const sm = await StateMachine.open(temp.db, REGISTRY);
      const results: unknown[] = [];
      const checkpoints: unknown[] = [];
      for (const entry of entries) {
        results.push((await sm.apply(entry)).result);
        if (entry.index % fixture.checkpoint === 0) checkpoints.push({ applied: entry.index, db: await dumpDb(temp.db) });
      }
      expect(results).toEqual(fixture.results);
      expect(checkpoints).toEqual(fixture.checkpoints);
      expect(await dumpDb(temp.db)).toEqual(fixture.db);
      expect(await sm.digest()).toBe(fixture.digest);
    } finally {
      await temp.cleanup();
    }
  });

  it('apply in batches to the same results and db', async () => {
    const temp = await openTempDb();
    try {
      const sm = await StateMachine.open(temp.db, REGISTRY);
      const results: unknown[] = [];
      for (let k = 0, size = 1; k < entries.length; k += size, size = (size % 37) + 1) {
        for (const outcome of await sm.applyMany(entries.slice(k, k + size))) results.push(outcome.result);
      }
      expect(results).toEqual(fixture.results);
      expect(await dumpDb(temp.db)).toEqual(fixture.db);
    } finally {
      await temp.cleanup();
    }
  });
});
