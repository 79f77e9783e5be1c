// Service registry (src/client/recipes/service-registry.ts) against a real
// server: instances register, discovery sees them and follows every change live,
// including an instance whose session expires.

import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import type { Item } from '../../src/client/index.js';
import { discover, register, servicePath } from '../../src/client/recipes/index.js';
import { killAll, type VeraProcess } from '../support/vera-process.js';
import { Clients, startServer, Watched } from './support.js';

const SHORT_TIMEOUT_MS = 1000;
const SLACK_MS = 2000;

let server: VeraProcess;
let clients: Clients;

beforeAll(async () => {
  server = await startServer();
  clients = new Clients(server.clientPort);
});
afterEach(() => clients.closeAll());
afterAll(async () => {
  await killAll();
  server?.removeData();
});

const endpoints = (items: readonly Item[]): unknown[] => items.map((i) => i.data);

describe('service registry', () => {
  it('discovery sees registered instances, oldest first, and follows registrations and deregistrations live', async () => {
    const [a, b, c] = await Promise.all([clients.open(), clients.open(), clients.open()]);
    await register(a, 'billing', { host: 'a', port: 1 });
    await register(b, 'billing', { host: 'b', port: 2 });
    await register(b, 'other', { host: 'b', port: 9 }); // another service: never seen by billing's discovery

    const observer = await clients.open();
    const seen = new Watched<readonly Item[]>([]);
    const changes: unknown[][] = [];
    const discovery = await discover(observer, 'billing', (instances) => {
      changes.push(endpoints(instances));
      seen.set([...instances]);
    });
    expect(endpoints(discovery.instances())).toStrictEqual([{ host: 'a', port: 1 }, { host: 'b', port: 2 }]);

    const cReg = await register(c, 'billing', { host: 'c', port: 3 });
    await seen.until((list) => list.length === 3, 'the new instance to show up');
    expect(endpoints(discovery.instances())).toStrictEqual([{ host: 'a', port: 1 }, { host: 'b', port: 2 }, { host: 'c', port: 3 }]);
    expect(discovery.instances()[2]).toStrictEqual(cReg.item);

    await cReg.deregister();
    await cReg.deregister(); // twice is harmless
    await seen.until((list) => list.length === 2, 'the deregistered instance to go');

    await a.close(); // bye: the session's instances go at once
    await seen.until((list) => list.length === 1, 'the closed instance to go');
    expect(endpoints(discovery.instances())).toStrictEqual([{ host: 'b', port: 2 }]);
    expect(changes).toStrictEqual([
      [{ host: 'a', port: 1 }, { host: 'b', port: 2 }],
      [{ host: 'a', port: 1 }, { host: 'b', port: 2 }, { host: 'c', port: 3 }],
      [{ host: 'a', port: 1 }, { host: 'b', port: 2 }],
      [{ host: 'b', port: 2 }],
    ]);

    await discovery.close();
    await register(c, 'billing', { host: 'c', port: 4 });
    const { items } = await observer.get(servicePath('billing'));
    expect(items).toHaveLength(2);
    expect(changes).toHaveLength(4); // a closed discovery hears nothing more
  });

  it('an instance whose connection drops disappears from discovery once its session times out', async () => {
    const { client: dying, link } = await clients.openCuttable({ timeoutMs: SHORT_TIMEOUT_MS });
    const healthy = await clients.open();
    await register(dying, 'search', 'dying:1');
    await register(healthy, 'search', 'healthy:1');

    const observer = await clients.open();
    const seen = new Watched<readonly Item[]>([]);
    await discover(observer, 'search', (instances) => seen.set([...instances]));
    expect(endpoints(seen.value)).toStrictEqual(['dying:1', 'healthy:1']);

    const cutAt = performance.now();
    link.cut();
    await seen.until((list) => list.length === 1, 'the dead instance to go', SHORT_TIMEOUT_MS + SLACK_MS);
    const goneAfterMs = performance.now() - cutAt;
    expect(goneAfterMs).toBeGreaterThanOrEqual((SHORT_TIMEOUT_MS * 2) / 3 - 20);
    expect(endpoints(seen.value)).toStrictEqual(['healthy:1']);
  });

  it('rejects a service name that is not one path segment', async () => {
    const client = await clients.open();
    await expect(register(client, 'a/b', 'x')).rejects.toMatchObject({ code: 'BAD_REQUEST', message: expect.stringContaining('single path segment') });
    expect(() => servicePath('..')).toThrow(/invalid service name/);
    expect(servicePath('billing')).toBe('/services/billing');
  });
});
