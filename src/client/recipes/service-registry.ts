// Service discovery: an instance registers by pushing an ephemeral item with
// its endpoint onto /services/<name>, so it disappears when the instance's
// session dies. Discovery watches the list (the watch reply is the starting
// snapshot, atomically with the start of the events) and keeps a live view.
import { validatePath, VeraError, type Item } from '../../protocol/index.js';
import type { VeraClient } from '../client.js';
import { ListView } from './list-view.js';

export const SERVICES_ROOT = '/services';

export interface Registration {
  readonly path: string;
  readonly item: Item;
  /** Removes this instance now instead of at session end. */
  deregister(): Promise<void>;
}

export interface Discovery {
  /** The registered instances, oldest first. */
  instances(): readonly Item[];
  /** Stops following changes and unwatches the list for this session. */
  close(): Promise<void>;
}

/** The list path of a service; `name` must be one path segment. */
export function servicePath(name: string): string {
  const path = `${SERVICES_ROOT}/${name}`;
  const problem = name.includes('/') ? 'a service name must be a single path segment' : validatePath(path, { allowRoot: false });
  if (problem !== null) throw new VeraError('BAD_REQUEST', `invalid service name ${JSON.stringify(name)}: ${problem}`);
  return path;
}

/** Registers an instance of `name` with `endpoint` (any JSON value, e.g. {host, port}). */
export async function register(client: VeraClient, name: string, endpoint: unknown): Promise<Registration> {
  const path = servicePath(name);
  // No watch: a registering instance does not need to hear about its peers.
  const item = await client.push(path, endpoint, { watch: false });
  return {
    path,
    item,
    deregister: () => client.delete(path, item.index).catch((error: VeraError) => {
      if (error.code !== 'NOT_FOUND') throw error;
    }),
  };
}

/** Follows the instances of `name`; `onChange` gets the full list now and after every change. */
export async function discover(client: VeraClient, name: string, onChange?: (instances: readonly Item[]) => void): Promise<Discovery> {
  const path = servicePath(name);
  const events = client.events();
  const view = new ListView(path, await client.watch(path));
  onChange?.(view.items);
  const loop = (async () => {
    for await (const event of events) if (view.apply(event)) onChange?.(view.items);
  })().catch(() => undefined); // ends with the client
  return {
    instances: () => view.items,
    close: async () => {
      await events.return?.();
      await loop;
      await client.unwatch(path).catch(() => undefined);
    },
  };
}
