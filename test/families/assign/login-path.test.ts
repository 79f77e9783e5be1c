// What one get-or-create costs the leader: a returning user whose request changes
// nothing is a read (no entry), and a user the member holds no record of goes
// straight to the log without a linearizable read first (the entry decides for itself).
import { describe, expect, it } from 'vitest';
import { assignMember } from './assign-member.js';

const member = assignMember();
const SERVICE = 'sync-1.5';
const VALUES = { generation: 10, keysChangedAt: 10, clientState: 'aa' };

/** The leader's linearizable reads so far (lease and round) and the login entries it proposed. */
async function counts(): Promise<{ reads: number; logins: number }> {
  const text = await fetch(`${member.httpUrl()}/metrics`).then((r) => r.text());
  const value = (pattern: RegExp): number => {
    const m = pattern.exec(text);
    if (m === null) throw new Error(`no ${pattern.source} in the metrics`);
    return Number(m[1]);
  };
  return {
    reads: value(/^vera_linearizable_reads_total\{path="lease"\} (\d+)$/m) + value(/^vera_linearizable_reads_total\{path="round"\} (\d+)$/m),
    logins: /^vera_proposals_total\{op="login"\} (\d+)$/m.test(text) ? value(/^vera_proposals_total\{op="login"\} (\d+)$/m) : 0,
  };
}

describe('the get-or-create path', () => {
  it('sends a user it holds no record of to the log without a linearizable read', async () => {
    const assign = await member.start();
    await assign.service(SERVICE);
    await assign.addNode(SERVICE, 'https://n1', { capacity: 100 });
    const before = await counts();
    for (let i = 0; i < 5; i++) expect(await assign.user(SERVICE, `new-${i}@example.com`, VALUES)).toMatchObject({ created: true, allocated: true });
    const after = await counts();
    expect(after.reads - before.reads).toBe(0);
    expect(after.logins - before.logins).toBe(5);
  });

  it('answers a returning user whose request changes nothing from one linearizable read and no entry', async () => {
    const assign = await member.start();
    await assign.service(SERVICE);
    await assign.addNode(SERVICE, 'https://n1', { capacity: 100 });
    const first = await assign.user(SERVICE, 'back@example.com', VALUES);
    const before = await counts();
    for (let i = 0; i < 5; i++) expect(await assign.user(SERVICE, 'back@example.com', VALUES)).toMatchObject({ uid: first.uid, created: false, allocated: false });
    const after = await counts();
    expect(after.reads - before.reads).toBe(5);
    expect(after.logins).toBe(before.logins);
    // A change is an entry, and the next unchanged login sees it.
    expect(await assign.user(SERVICE, 'back@example.com', { ...VALUES, generation: 11 })).toMatchObject({ uid: first.uid, generation: 11 });
    expect(await assign.user(SERVICE, 'back@example.com', { ...VALUES, generation: 11 })).toMatchObject({ uid: first.uid, generation: 11, created: false });
    expect((await counts()).logins).toBe(before.logins + 1);
  });
});
