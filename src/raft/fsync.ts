// Durability helpers for files beside LevelDB (the data directory, staged snapshots).
import { open } from 'node:fs/promises';

/** Makes a file's contents durable. */
export async function fsyncFile(path: string): Promise<void> {
  const handle = await open(path, 'r');
  try {
    await handle.sync();
  } finally {
    await handle.close();
  }
}

/** Makes a created or renamed directory entry durable: without it a power loss can forget the rename. */
export async function fsyncDir(path: string): Promise<void> {
  await fsyncFile(path);
}
