// StateMachine.readNow: a family's synchronous read from one snapshot, run at once
// (no trip to LevelDB's thread pool), held back only while the state is replaced.
import { afterEach, beforeEach, describe, expect, it, vi } from 'vitest';
import { StateMachine } from '../../src/statemachine/state-machine.js';
import { REGISTRY } from '../../src/families/registry.js';
import { openTempDb, type TempDb } from './helpers.js';

let tmp: TempDb;
let sm: StateMachine;
beforeEach(async () => {
  tmp = await openTempDb();
  sm = await StateMachine.open(tmp.db, REGISTRY);
});
afterEach(async () => {
  await tmp.cleanup();
});

const KEY = Buffer.from('\x7f\x7freadNow-test');

describe('readNow', () => {
  it('runs the read before it returns, from a snapshot, with no asynchronous get', async () => {
    await tmp.db.put(KEY, Buffer.from('one'));
    const get = vi.spyOn(tmp.db, 'get');
    let ran = false;
    const pending = sm.readNow('a test', (db, snapshot) => {
      ran = true;
      return db.getSync(KEY, { snapshot })?.toString();
    });
    expect(ran).toBe(true);
    expect(await pending).toBe('one');
    expect(get).not.toHaveBeenCalled();
  });

  it('waits while the whole state is being replaced, then reads what replaced it', async () => {
    await tmp.db.put(KEY, Buffer.from('old'));
    let release!: () => void;
    const replaced = sm.replaceUnderneath(async () => {
      await new Promise<void>((r) => (release = r));
      await tmp.db.put(KEY, Buffer.from('new'));
    });
    let ran = false;
    const pending = sm.readNow('a test', (db, snapshot) => {
      ran = true;
      return db.getSync(KEY, { snapshot })?.toString();
    });
    await new Promise((r) => setImmediate(r));
    expect(ran).toBe(false);
    release();
    await replaced;
    expect(await pending).toBe('new');
  });
});
