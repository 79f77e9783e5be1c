// The acknowledgement record (src/raft/ack-record.ts): what it keeps across a
// reopen, how it survives a torn slot, and which stores it calls rolled back.

import { mkdtemp, open, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { ACK_RECORD_FILENAME, AckRecord, rollbackProblem } from '../../src/raft/ack-record.js';

const dirs: string[] = [];
afterEach(async () => {
  for (const d of dirs.splice(0)) await rm(d, { recursive: true, force: true });
});

async function freshDir(): Promise<string> {
  const dir = await mkdtemp(join(tmpdir(), 'vera-acked-'));
  dirs.push(dir);
  return dir;
}

describe('AckRecord', () => {
  it('has nothing in a new directory, and a term or vote change is on disk when update resolves', async () => {
    const dir = await freshDir();
    const record = await AckRecord.open(dir);
    expect(record.acknowledged).toBeNull();
    await record.update({ term: 3, vote: 'n2', commit: 10 });
    // Reopened without closing: what a kill -9 right after the update would find.
    const seen = await AckRecord.open(dir);
    expect(seen.acknowledged).toMatchObject({ term: 3, vote: 'n2', commit: 10 });
    await seen.close();
    await record.close();
  });

  it('writes a commit advance later, and the newest one by close', async () => {
    const dir = await freshDir();
    const record = await AckRecord.open(dir);
    await record.update({ term: 1, vote: 'n1', commit: 1 });
    for (let commit = 2; commit <= 50; commit++) await record.update({ term: 1, vote: 'n1', commit });
    await record.close();
    const reopened = await AckRecord.open(dir);
    expect(reopened.acknowledged).toMatchObject({ term: 1, vote: 'n1', commit: 50 });
    await reopened.close();
  });

  it('a torn newest slot falls back to the other one', async () => {
    const dir = await freshDir();
    const record = await AckRecord.open(dir);
    await record.update({ term: 1, vote: 'n1', commit: 5 }); // slot 1
    await record.update({ term: 2, vote: 'n3', commit: 7 }); // slot 0
    await record.close();
    const handle = await open(join(dir, ACK_RECORD_FILENAME), 'r+');
    await handle.write(Buffer.from('garbage'), 0, 7, 20); // inside slot 0's body
    await handle.close();
    const reopened = await AckRecord.open(dir);
    expect(reopened.acknowledged).toMatchObject({ term: 1, vote: 'n1', commit: 5 });
    await reopened.close();
  });
});

describe('rollbackProblem', () => {
  const record = { term: 5, vote: 'n2', commit: 100, logEnd: 0, applied: 0 };
  it('accepts a store at or beyond the record', () => {
    expect(rollbackProblem(record, { hardState: { term: 5, vote: 'n2', commit: 100 }, lastIndex: 100, applied: 100 })).toBeNull();
    expect(rollbackProblem(record, { hardState: { term: 6, vote: null, commit: 90 }, lastIndex: 120, applied: 90 })).toBeNull();
  });
  it('refuses an older term, another vote in the same term, and a log that ends before the recorded commit', () => {
    expect(rollbackProblem(record, { hardState: { term: 4, vote: 'n2', commit: 100 }, lastIndex: 100, applied: 100 })).toMatch(/term is 4/);
    expect(rollbackProblem(record, { hardState: { term: 5, vote: null, commit: 100 }, lastIndex: 100, applied: 100 })).toMatch(/voted for "n2"/);
    expect(rollbackProblem(record, { hardState: { term: 5, vote: 'n3', commit: 100 }, lastIndex: 100, applied: 100 })).toMatch(/voted for "n2"/);
    expect(rollbackProblem(record, { hardState: { term: 5, vote: 'n2', commit: 90 }, lastIndex: 99, applied: 90 })).toMatch(/ends at index 99/);
  });
  it('refuses a log that ends before the current-term entries it had written, and an applied index it can no longer reach', () => {
    const wrote = { ...record, logEnd: 110, applied: 105 };
    expect(rollbackProblem(wrote, { hardState: { term: 5, vote: 'n2', commit: 100 }, lastIndex: 110, applied: 100 })).toBeNull();
    expect(rollbackProblem(wrote, { hardState: { term: 5, vote: 'n2', commit: 100 }, lastIndex: 109, applied: 100 })).toMatch(/entries of term 5 up to index 110/);
    // A later term may have replaced older-term entries with a shorter run.
    expect(rollbackProblem(wrote, { hardState: { term: 6, vote: null, commit: 100 }, lastIndex: 106, applied: 100 })).toBeNull();
    expect(rollbackProblem(wrote, { hardState: { term: 6, vote: null, commit: 100 }, lastIndex: 104, applied: 104 })).toMatch(/had applied index 105/);
    expect(rollbackProblem(wrote, { hardState: { term: 6, vote: null, commit: 100 }, lastIndex: 104, applied: 105 })).toBeNull();
  });
});
