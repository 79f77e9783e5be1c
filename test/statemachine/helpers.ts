// Shared fixtures for the state-machine tests: throw-away LevelDBs and a feed
// that numbers entries the way a Raft log would.
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { ClassicLevel } from 'classic-level';
import type { Entry } from '../../src/raft/types.js';
import { encodeCommand } from '../../src/families/commands.js';
import { type Command } from '../../src/families/core-commands.js';
import type { VeraDb } from '../../src/statemachine/types.js';

export interface TempDb {
  readonly db: VeraDb;
  readonly dir: string;
  /** Closes and reopens the same directory (a restart). */
  reopen(): Promise<VeraDb>;
  cleanup(): Promise<void>;
}

export async function openTempDb(): Promise<TempDb> {
  const dir = await mkdtemp(join(tmpdir(), 'vera-sm-'));
  const open = async (): Promise<VeraDb> => {
    // In a subdirectory, as in a data directory: what lives beside the db (the cold store) goes in `dir` too.
    const db = new ClassicLevel<Buffer, Buffer>(join(dir, 'db'), { keyEncoding: 'buffer', valueEncoding: 'buffer' });
    await db.open();
    return db;
  };
  let db = await open();
  return {
    get db() {
      return db;
    },
    dir,
    async reopen() {
      await db.close();
      db = await open();
      return db;
    },
    async cleanup() {
      await db.close();
      await rm(dir, { recursive: true, force: true });
    },
  };
}

/** Hands out consecutive entries starting at index 1, all in term 1. */
export class EntryFeed {
  private last = 0;

  command(command: Command): Entry {
    return this.raw(encodeCommand(command));
  }

  raw(data: Uint8Array): Entry {
    return { index: ++this.last, term: 1, kind: 'command', data };
  }

  noop(): Entry {
    return { index: ++this.last, term: 1, kind: 'noop', data: new Uint8Array() };
  }

  config(): Entry {
    return { index: ++this.last, term: 1, kind: 'config', data: new Uint8Array([1, 2, 3]) };
  }

  get lastIndex(): number {
    return this.last;
  }
}

/** Every key and value in the db, hex-encoded, in key order. */
export async function dumpDb(db: VeraDb): Promise<Array<[string, string]>> {
  const out: Array<[string, string]> = [];
  for await (const [k, v] of db.iterator()) out.push([k.toString('hex'), v.toString('hex')]);
  return out;
}
