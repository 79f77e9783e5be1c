// The server learns the client ops and leader duties of each family from the
// registry alone: every op of the protocol but hello, ping and get (which the
// connection answers itself) is answered by exactly one family.
import { describe, expect, it } from 'vitest';
import type { AnyFamily } from '../../src/families/family.js';
import { FAMILIES } from '../../src/families/registry.js';
import { OPS } from '../../src/protocol/index.js';
import { loadServerParts } from '../../src/server/family-part.js';
import { DEFAULT_DUTY_TIMINGS } from '../../src/server/leader-duties.js';

describe('the families\u2019 server parts', () => {
  it('answer every client op but hello, ping and get, and declare duties that have periods', async () => {
    const parts = await loadServerParts(FAMILIES);
    expect(Object.keys(parts.ops).sort()).toEqual(OPS.filter((op) => !['hello', 'ping', 'get'].includes(op)).sort());
    expect(parts.duties.map((d) => d.name).sort()).toEqual(['ack-flush', 'audit-flush', 'command-version', 'hibernate-idle', 'journal-drops', 'journal-expiry', 'journal-result-expiry', 'journal-schedules', 'journal-timeouts', 'session-expiry']);
    for (const duty of parts.duties) expect(DEFAULT_DUTY_TIMINGS[duty.name] ?? duty.periodMs).toBeGreaterThan(0);
  });

  it('refuses two families answering the same op', async () => {
    const copy = { ...FAMILIES[1]!, name: 'lists-again' } as AnyFamily;
    await expect(loadServerParts([...FAMILIES, copy])).rejects.toThrow(/client op push is answered by two families \(the second is lists-again\)/);
  });
});
