// A snapshot install is several LevelDB writes (snapshot-install.ts), so a crash
// can stop it part way. What must hold at every step: the next open of the data
// directory finishes the install from the staged file, so the store is either
// wholly the old one or wholly the snapshot, never a mix; the hard state (term,
// vote) is never touched; and a store whose staged file is gone refuses to start
// with the way out, rather than serving a half-replaced state.

import { existsSync } from 'node:fs';
import { mkdtemp, readdir, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { itemKey } from '../../src/families/lists/keys.js';
import { DataDirError, openDataDir, SNAPSHOTS_DIRNAME, type OpenedDataDir } from '../../src/raft/datadir.js';
import { INSTALL_MARKER_KEY, installStagedSnapshot, type InstallStep } from '../../src/raft/snapshot-install.js';
import { captureState, fileStaging, SnapshotAssembler, type StagedFile } from '../../src/raft/state-transfer.js';
import type { ClusterConfig, SnapshotMeta } from '../../src/raft/types.js';
import { encodeAppliedValue } from '../../src/statemachine/codec.js';
import { encodeItemValue } from '../../src/families/lists/codec.js';
import { StateMachine } from '../../src/statemachine/index.js';
import { APPLIED_INDEX, APPLIED_KEY } from '../../src/statemachine/applied.js';
import { REGISTRY } from '../../src/families/registry.js';

const config: ClusterConfig = { voters: ['n1', 'n2', 'n3'], learners: [] };
let base: string;
const open: OpenedDataDir[] = [];

beforeEach(async () => {
  base = await mkdtemp(join(tmpdir(), 'vera-install-crash-'));
});

afterEach(async () => {
  await Promise.all(open.splice(0).map((d) => d.close()));
  await rm(base, { recursive: true, force: true });
});

async function openDir(name: string, nodeId: string): Promise<OpenedDataDir> {
  const dir = await openDataDir(join(base, name), { initialConfig: config, nodeId });
  open.push(dir);
  return dir;
}

async function close(dir: OpenedDataDir): Promise<void> {
  open.splice(open.indexOf(dir), 1);
  await dir.close();
}

/** Writes `count` persistent items over a few lists and marks them applied at `applied`. */
async function writeItems(dir: OpenedDataDir, prefix: string, count: number, applied: number): Promise<void> {
  const batch = dir.db.batch();
  for (let i = 1; i <= count; i++) batch.put(itemKey(`/${prefix}/${i % 5}`, i), encodeItemValue({ owner: null, data: { i, prefix } }));
  batch.put(APPLIED_KEY, encodeAppliedValue(applied));
  await batch.write();
}

/** The sender's state, captured and streamed through the real file staging of the receiver. */
async function stageFrom(sender: OpenedDataDir, receiverDir: string): Promise<{ staged: StagedFile; meta: SnapshotMeta }> {
  const captured = await captureState(sender.db, APPLIED_INDEX);
  const assembler = new SnapshotAssembler(fileStaging(join(base, receiverDir, SNAPSHOTS_DIRNAME)));
  const { createHash } = await import('node:crypto');
  const hash = createHash('sha256');
  let offset = 0;
  try {
    for await (const chunk of captured.chunks()) {
      expect(assembler.accept('n1/3/x', offset, chunk, false, '')).toBeNull();
      hash.update(chunk);
      offset += chunk.length;
    }
  } finally {
    await captured.release();
  }
  const staged = assembler.accept('n1/3/x', offset, new Uint8Array(0), true, hash.digest('hex'));
  expect(staged).not.toBeNull();
  return { staged: staged!, meta: { index: captured.index, term: 3, config } };
}

async function digestOf(dir: OpenedDataDir): Promise<string> {
  return (await StateMachine.open(dir.db, REGISTRY)).digest();
}

/** A sender holding 2,000 items at applied index 2,000, and a receiver with 50 older items of its own and a vote. */
async function pair(): Promise<{ sender: OpenedDataDir; receiver: OpenedDataDir; senderDigest: string; receiverDigest: string }> {
  const sender = await openDir('sender', 'n1');
  await writeItems(sender, 'new', 2000, 2000);
  const receiver = await openDir('receiver', 'n2');
  await writeItems(receiver, 'old', 50, 50);
  await receiver.storage.persist({ term: 4, vote: 'n3', commit: 0 }, []);
  return { sender, receiver, senderDigest: await digestOf(sender), receiverDigest: await digestOf(receiver) };
}

describe('snapshot install crash points', () => {
  it('installs completely when nothing fails: state, log start, hard state, no marker, no staged file', async () => {
    const { sender, receiver, senderDigest, receiverDigest } = await pair();
    expect(senderDigest).not.toBe(receiverDigest);
    const { staged, meta } = await stageFrom(sender, 'receiver');
    await installStagedSnapshot(receiver.db, receiver.storage, meta, staged, APPLIED_INDEX);
    expect(await digestOf(receiver)).toBe(senderDigest);
    const loaded = await receiver.storage.load();
    expect(loaded.snapshot.index).toBe(2000);
    expect(loaded.entries).toEqual([]);
    expect(loaded.hardState).toMatchObject({ term: 4, vote: 'n3' });
    expect(await receiver.db.get(INSTALL_MARKER_KEY)).toBeUndefined();
    expect(existsSync(staged.path)).toBe(false);
  });

  for (const step of ['afterMarker', 'afterState'] as const satisfies readonly InstallStep[]) {
    it(`a crash ${step === 'afterMarker' ? 'after the marker, before any state was written' : 'after the state, before the log was reset'} is finished by the next open`, async () => {
      const { sender, receiver, senderDigest } = await pair();
      const { staged, meta } = await stageFrom(sender, 'receiver');
      await expect(installStagedSnapshot(receiver.db, receiver.storage, meta, staged, APPLIED_INDEX, step)).rejects.toThrow(/injected failure/);
      expect(await receiver.db.get(INSTALL_MARKER_KEY)).toBeDefined();
      await close(receiver);

      const reopened = await openDir('receiver', 'n2');
      expect(await digestOf(reopened)).toBe(senderDigest);
      const loaded = await reopened.storage.load();
      expect(loaded.snapshot).toEqual(meta);
      expect(loaded.hardState).toMatchObject({ term: 4, vote: 'n3' });
      expect(await reopened.db.get(INSTALL_MARKER_KEY)).toBeUndefined();
      expect(await readdir(join(base, 'receiver', SNAPSHOTS_DIRNAME))).toEqual([]);
    });
  }

  it('a snapshot whose data does not reflect its meta index is refused before anything is written', async () => {
    const { sender, receiver, receiverDigest } = await pair();
    const { staged, meta } = await stageFrom(sender, 'receiver');
    await expect(installStagedSnapshot(receiver.db, receiver.storage, { ...meta, index: meta.index + 1 }, staged, APPLIED_INDEX)).rejects.toThrow(/reflects index 2000/);
    expect(await receiver.db.get(INSTALL_MARKER_KEY)).toBeUndefined();
    expect(await digestOf(receiver)).toBe(receiverDigest);
    expect((await receiver.storage.load()).snapshot.index).toBe(0);
  });

  it('refuses to open a half-installed store whose staged file is gone or damaged, naming how to re-add the member', async () => {
    for (const damage of ['deleted', 'changed'] as const) {
      const { sender, receiver } = await pair();
      const { staged, meta } = await stageFrom(sender, 'receiver');
      await expect(installStagedSnapshot(receiver.db, receiver.storage, meta, staged, APPLIED_INDEX, 'afterState')).rejects.toThrow(/injected/);
      await close(receiver);
      if (damage === 'deleted') await rm(staged.path);
      else await writeFile(staged.path, 'not the staged snapshot');
      const refused = await openDataDir(join(base, 'receiver'), { initialConfig: config, nodeId: 'n2' }).then(
        (d) => {
          open.push(d);
          return null;
        },
        (err: unknown) => err,
      );
      expect(refused).toBeInstanceOf(DataDirError);
      expect((refused as DataDirError).code).toBe('corrupt');
      expect(String((refused as Error).message)).toMatch(damage === 'deleted' ? /staged file .* is missing/ : /holds \d+ bytes, not/);
      expect(String((refused as Error).message)).toMatch(/vera member remove/);
      await Promise.all(open.splice(0).map((d) => d.close()));
      await rm(join(base, 'sender'), { recursive: true });
      await rm(join(base, 'receiver'), { recursive: true });
    }
  });

  it('removes staged files no install refers to when the store opens', async () => {
    const dir = await openDir('receiver', 'n2');
    await close(dir);
    const staging = join(base, 'receiver', SNAPSHOTS_DIRNAME);
    const { mkdir } = await import('node:fs/promises');
    await mkdir(staging, { recursive: true });
    await writeFile(join(staging, 'incoming-abandoned'), 'half a transfer');
    await writeFile(join(staging, 'operator-notes'), 'not ours to remove');
    await openDir('receiver', 'n2');
    expect(await readdir(staging)).toEqual(['operator-notes']);
  });
});
