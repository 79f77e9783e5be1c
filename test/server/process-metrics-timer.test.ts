// A member adds prom-client's process metrics a while after it serves (issue 32). A member
// closed before then must clear that timer: otherwise it fires later and registers the
// default metrics (with their own handles) on the closed member's registry.
import { afterEach, describe, expect, it, vi } from 'vitest';
import { PROCESS_METRICS_DELAY_MS } from '../../src/server/index.js';
import { startServer, stopServer } from '../support/member.js';

afterEach(async () => {
  vi.restoreAllMocks();
  await stopServer();
});

describe('the deferred process metrics', () => {
  it('are cancelled when the member closes before they are added', async () => {
    const set = vi.spyOn(globalThis, 'setTimeout');
    const cleared = vi.spyOn(globalThis, 'clearTimeout');
    await startServer();
    const deferred = set.mock.calls.flatMap((call, i) => (call[1] === PROCESS_METRICS_DELAY_MS ? [set.mock.results[i]!.value as NodeJS.Timeout] : []));
    expect(deferred).toHaveLength(1);
    expect(deferred[0]!.hasRef()).toBe(false); // never keeps the process alive either
    await stopServer();
    expect(cleared.mock.calls.map(([handle]) => handle)).toContain(deferred[0]);
  });
});
