import { describe, expect, it } from 'vitest';
import fc from 'fast-check';
import type { Entry } from '../../src/raft/types.js';
import { StateMachine } from '../../src/statemachine/state-machine.js';
import type { ApplyResult } from '../../src/statemachine/types.js';
import { EntryFeed, openTempDb } from './helpers.js';
import { LS_PATHS, Model, PATHS, SESSIONS, stepsArb, type Step } from './model.js';
import { inspectIndexes } from '../../src/families/index-dump.js';
import { lagOf } from '../../src/families/lag/queries.js';
import { liveSessions } from '../../src/families/sessions/queries.js';
import { watchersOf } from '../../src/families/watches/queries.js';
import { children, getList, lastIndexOf } from '../../src/families/lists/queries.js';
import { REGISTRY } from '../../src/families/registry.js';

function toEntry(feed: EntryFeed, payload: ReturnType<Model['resolve']>): Entry {
  if ('noop' in payload) return feed.noop();
  if ('bytes' in payload) return feed.raw(payload.bytes);
  return feed.command(payload.command);
}

// Error messages are for humans and may differ; the code is the contract.
const comparable = (r: ApplyResult): unknown => (r.ok ? r : { ok: false, code: r.code });

async function checkAgainstModel(steps: Step[]): Promise<void> {
  const tmp = await openTempDb();
  try {
    const sm = await StateMachine.open(tmp.db, REGISTRY);
    const model = new Model();
    const feed = new EntryFeed();
    for (const step of steps) {
      const payload = model.resolve(step);
      const entry = toEntry(feed, payload);
      const expected = model.apply(entry.index, payload);
      const actual = await sm.apply(entry);
      expect(actual.ignored).toBe(false);
      expect(comparable(actual.result)).toEqual(expected.result);
      expect(actual.events).toEqual(expected.events);
    }
    expect(sm.appliedIndex).toBe(steps.length);
    for (const path of PATHS) {
      expect(await getList(sm, path)).toEqual({ index: steps.length, items: model.lists.get(path) ?? [] });
      expect(lastIndexOf(sm, path)).toBe(model.last(path));
      expect(watchersOf(sm, path)).toEqual(model.watchersOf(path));
    }
    for (const path of LS_PATHS) expect((await children(sm, path)).children).toEqual(model.children(path));
    expect(new Map(liveSessions(sm))).toEqual(model.sessions);
    for (const s of SESSIONS) expect(lagOf(sm, s)).toBe(model.lag.get(s) ?? 0);
    // The db must hold exactly what the in-memory indexes say (nothing leaked, nothing lost).
    const rebuilt = await StateMachine.open(tmp.db, REGISTRY);
    expect(inspectIndexes(rebuilt)).toEqual(inspectIndexes(sm));
  } finally {
    await tmp.cleanup();
  }
}

describe('state machine against the protocol model', () => {
  it('agrees on results, events and final state for random command sequences', async () => {
    await fc.assert(fc.asyncProperty(stepsArb, checkAgainstModel), { numRuns: 150 });
  });

  it('agrees on a hand-written election scenario', async () => {
    await checkAgainstModel([
      { kind: 'open', session: 's1' },
      { kind: 'open', session: 's2' },
      { kind: 'push', session: 's1', path: '/a', data: 'leader?', persistent: false, watch: true, cas: 0 },
      { kind: 'push', session: 's2', path: '/a', data: 'leader?', persistent: false, watch: true, cas: 0 },
      { kind: 'watch', session: 's2', path: '/a', prefix: false },
      { kind: 'close', session: 's1', reason: 'expired' },
      { kind: 'push', session: 's2', path: '/a', data: 'leader!', persistent: false, watch: true, cas: 'current' },
    ]);
  });
});
