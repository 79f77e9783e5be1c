// Users, roles and the audit log plan from memory and share LevelDB batches.
// Applied in batches of any size, with restarts between them (state reloaded
// from the db), they must give the outcomes and the db bytes of the same
// entries applied one at a time: what every member reaches however its
// entries were batched.
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import type { AppendCommand } from '../../src/families/audit/index.js';
import type { AuthCommand } from '../../src/families/auth/index.js';
import { hashPassword } from '../../src/families/auth/password-hash.js';
import type { Entry } from '../../src/raft/types.js';
import { encodeCommand } from '../../src/families/commands.js';
import { StateMachine } from '../../src/statemachine/state-machine.js';
import { dumpDb, openTempDb } from '../statemachine/helpers.js';
import { REGISTRY } from '../../src/families/registry.js';

const T0 = 1_000_000;
const name = fc.constantFrom('root', 'alice', 'bob');
const role = fc.constantFrom('root', 'reader', 'writer');
const prefix = fc.constantFrom('/', '/app', '/app/secret', 'journal:', 'cluster', '*');
const perms = fc.subarray(['read', 'write', 'watch', 'admin'] as const, { minLength: 1 });

function commands(hash: string): fc.Arbitrary<{ family: 'auth'; command: AuthCommand } | { family: 'audit'; command: AppendCommand }> {
  const auth = (c: fc.Arbitrary<AuthCommand>) => c.map((command) => ({ family: 'auth' as const, command }));
  return fc.oneof(
    auth(name.map((n) => ({ op: 'addUser', name: n, hash }))),
    auth(name.map((n) => ({ op: 'setPassword', name: n, hash }))),
    auth(name.map((n) => ({ op: 'removeUser', name: n }))),
    auth(fc.tuple(name, role).map(([user, r]) => ({ op: 'grantRole', user, role: r }))),
    auth(fc.tuple(name, role).map(([user, r]) => ({ op: 'revokeRole', user, role: r }))),
    auth(role.map((n) => ({ op: 'addRole', name: n }))),
    auth(role.map((n) => ({ op: 'removeRole', name: n }))),
    auth(fc.tuple(role, prefix, perms, fc.boolean()).map(([r, p, ps, deny]) => ({ op: 'grantPermission', role: r, prefix: p, perms: [...ps], deny }))),
    auth(fc.tuple(role, prefix).map(([r, p]) => ({ op: 'revokePermission', role: r, prefix: p }))),
    auth(fc.constant({ op: 'enable', tokenKey: 'ab'.repeat(32) })),
    auth(fc.constant({ op: 'disable' })),
    fc
      .array(fc.record({ kind: fc.constantFrom('auth-failed', 'denied', 'admin') as fc.Arbitrary<'auth-failed' | 'denied' | 'admin'>, principal: fc.option(name, { nil: null }), what: fc.string({ maxLength: 20 }) }), { minLength: 1, maxLength: 4 })
      .map((facts) => ({ family: 'audit' as const, command: { op: 'append' as const, facts: facts.map((f, i) => ({ ...f, at: T0 + i, remote: '127.0.0.1:1' })) } })),
  );
}

describe('auth and audit entries sharing a batch', () => {
  it('give the outcomes and db bytes of the same entries applied one at a time', async () => {
    const hash = await hashPassword('pw');
    await fc.assert(
      fc.asyncProperty(fc.array(commands(hash), { minLength: 10, maxLength: 40 }), fc.array(fc.integer({ min: 1, max: 15 }), { minLength: 1, maxLength: 5 }), fc.array(fc.boolean(), { maxLength: 5 }), async (list, sizes, restarts) => {
        const all: Entry[] = list.map((c, i) => ({ index: i + 1, term: 1, kind: 'command', data: encodeCommand({ family: c.family, ...c.command } as never, T0 + i) }));
        const [a, b] = [await openTempDb(), await openTempDb()];
        try {
          const one = await StateMachine.open(a.db, REGISTRY);
          let many = await StateMachine.open(b.db, REGISTRY);
          const expected = [];
          for (const e of all) expected.push(await one.apply({ ...e, data: Buffer.from(e.data) }));
          const actual = [];
          for (let k = 0, chunk = 0; k < all.length; chunk++) {
            const size = sizes[chunk % sizes.length]!;
            actual.push(...(await many.applyMany(all.slice(k, k + size).map((e) => ({ ...e, data: Buffer.from(e.data) })))));
            k += size;
            if (restarts[chunk % Math.max(1, restarts.length)] === true) many = await StateMachine.open(b.db, REGISTRY);
          }
          expect(JSON.parse(JSON.stringify(actual))).toEqual(JSON.parse(JSON.stringify(expected)));
          expect(await dumpDb(b.db)).toEqual(await dumpDb(a.db));
        } finally {
          await a.cleanup();
          await b.cleanup();
        }
      }),
      { numRuns: 60 },
    );
  }, 120_000);
});
