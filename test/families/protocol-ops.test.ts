// A command family can add an op to the client protocol without editing the
// protocol package: its kit plugin supplies an op schema (checked with the core
// ops' own field helpers) and a handler. Tested on the frame decoder alone, on the
// server's gathering of family parts, and end to end on a real server (in this
// process, on loopback) with a test family whose `clock` op answers the
// replicated clock.
import { afterEach, describe, expect, it } from 'vitest';
import type { AnyFamily } from '../../src/statemachine/family.js';
import { FAMILIES } from '../../src/families/registry.js';
import { COUNTER_OPS } from '../../src/families/counter/wire.js';
import { ASSIGN_OPS } from '../../src/families/assign/wire.js';
import { AUDIT_OPS } from '../../src/families/audit/wire.js';
import { OBSERVE_OPS } from '../../src/families/observe/wire.js';
import { AUTH_OPS } from '../../src/families/auth/wire.js';
import { HIBERNATE_OPS } from '../../src/families/hibernate/wire.js';
import { JOURNAL_OPS } from '../../src/families/journal/wire.js';
import { KV_OPS } from '../../src/families/kv/wire.js';
import { LEASE_OPS } from '../../src/families/lease/wire.js';
import { RANGE_OPS } from '../../src/families/range/wire.js';
import {
  decodeFrame,
  DEFAULT_LIMITS,
  defineOp,
  invalid,
  isCoreRequest,
  pathField,
  uintField,
  type ProtocolExtensions,
  type RequestBuilder,
} from '../../src/protocol/index.js';
import type { Plugin } from '../../src/kit/plugin.js';
import { loadPlugins } from '../../src/server/front/plugin-part.js';
import { startServer as startMember, stopServer } from '../support/member.js';
import { connect } from '../../src/client/client.js';
import { WireClient } from '../server/wire-client.js';
import { liveSessions } from '../../src/families/sessions/queries.js';

/** `clock {path, after?}`: a made-up op, as a family would add one. */
const buildClock: RequestBuilder = (f, id, limits) => {
  const after = uintField(f, 'after');
  if (after !== undefined && after > 2 ** 40) throw invalid('after is too far in the future');
  return { id, op: 'clock', path: pathField(f, false, limits), ...(after === undefined ? {} : { after }) };
};
const extensions: ProtocolExtensions = new Map([['clock', buildClock]]);

/** The same op as a family's server declares it: a schema whose parse is the builder's checks. */
function clockSchema(name: string) {
  return defineOp<{ path: string; after?: number }, { path: string; clock: number; mine: boolean }>({
    name,
    unprefixed: true,
    fields: ['path', 'after'],
    parse: (f, limits) => {
      const { id: _id, op: _op, ...request } = buildClock(f, 0, limits) as { id: number; op: string; path: string; after?: number };
      return request;
    },
  });
}

/** A test family's kit plugin answering `op` (a made-up one, or a core op's name) with the replicated clock. */
function clockPlugin(op: string): Plugin<{ clock: ReturnType<typeof clockSchema> }, unknown> {
  return {
    ops: { clock: clockSchema(op) },
    needs: { clock: (request) => [{ perm: 'read', resource: request.path }] },
    touchesNoLists: 'clock reads the replicated clock, not a list',
    createServer: (host) => ({
      handlers: {
        clock: async (request, caller) => ({ path: request.path, clock: host.now(), mine: liveSessions(host.reader).has(caller.session) }),
      },
    }),
  };
}
const json = (frame: object): Buffer => Buffer.from(JSON.stringify(frame));

describe('an op a family adds to the protocol', () => {
  it('is decoded by its family\u2019s builder once the decoder is given it, and unknown without', () => {
    const decoded = decodeFrame(json({ id: 7, op: 'clock', path: '/a', after: 3 }), false, DEFAULT_LIMITS, extensions);
    expect(decoded).toEqual({ ok: true, encoding: 'json', request: { id: 7, op: 'clock', path: '/a', after: 3 } });
    expect(decoded.ok && isCoreRequest(decoded.request)).toBe(false);
    const without = decodeFrame(json({ id: 7, op: 'clock', path: '/a' }), false);
    expect(without).toMatchObject({ ok: false, id: 7, error: { code: 'BAD_REQUEST', message: expect.stringMatching(/unknown op "clock"/) } });
    const unknown = decodeFrame(json({ id: 8, op: 'frob' }), false, DEFAULT_LIMITS, extensions);
    expect(unknown).toMatchObject({ ok: false, id: 8, error: { message: expect.stringMatching(/expected one of hello, .*, unwatch, clock\)/) } });
  });

  it('is refused with its builder\u2019s error and the request id', () => {
    const bad = decodeFrame(json({ id: 9, op: 'clock', path: 'no-slash' }), false, DEFAULT_LIMITS, extensions);
    expect(bad).toMatchObject({ ok: false, id: 9, error: { code: 'BAD_REQUEST' } });
    const far = decodeFrame(json({ id: 10, op: 'clock', path: '/a', after: 2 ** 41 }), false, DEFAULT_LIMITS, extensions);
    expect(far).toMatchObject({ ok: false, id: 10, error: { code: 'BAD_REQUEST', message: 'after is too far in the future' } });
  });

  it('can never replace a core op, and two families cannot add the same op', async () => {
    const core = decodeFrame(json({ id: 1, op: 'ping' }), false, DEFAULT_LIMITS, new Map([['ping', () => ({ id: 1, op: 'ping', hijacked: true })]]));
    expect(core).toEqual({ ok: true, encoding: 'json', request: { id: 1, op: 'ping' } });
    const adding = (name: string, op: string): AnyFamily => ({ ...FAMILIES[3]!, name, plugin: async () => clockPlugin(op) }) as AnyFamily;
    await expect(loadPlugins([...FAMILIES, adding('pinger', 'ping')])).rejects.toThrow(/pinger adds an op named ping, which is a core op/);
    await expect(loadPlugins([...FAMILIES, adding('a', 'clock'), adding('b', 'clock')])).rejects.toThrow(/clock is answered by two families \(the second is b\)/);
    const parts = await loadPlugins([...FAMILIES, adding('a', 'clock')]);
    expect([...parts.extensions.keys()]).toEqual([...JOURNAL_OPS.keys(), ...ASSIGN_OPS.keys(), ...HIBERNATE_OPS.keys(), ...AUTH_OPS.keys(), ...AUDIT_OPS.keys(), ...OBSERVE_OPS.keys(), ...LEASE_OPS.keys(), ...KV_OPS.keys(), ...RANGE_OPS.keys(), ...Object.values(COUNTER_OPS).map((o) => o.name), 'clock']);
  });
});

describe('a family op on a real server', () => {
  afterEach(stopServer);

  it('is answered over the WebSocket by the family that added it, in both encodings', async () => {
    const clockFamily = {
      ...FAMILIES[3]!,
      // The lag family's apply side under another name, with the clock plugin instead of lag's.
      name: 'clock-test',
      plugin: async () => clockPlugin('clock'),
    } as AnyFamily;
    const { url } = await startMember({ families: [...FAMILIES, clockFamily] });
    for (const encoding of ['json', 'msgpack'] as const) {
      const client = await WireClient.connect(url, encoding);
      try {
        await client.hello({ timeoutMs: 10_000 });
        await client.call('push', { path: '/a', data: 1 });
        const reply = await client.call('clock', { path: '/a' });
        expect(reply).toMatchObject({ path: '/a', mine: true });
        expect(reply.clock).toBeGreaterThan(0); // the push carried the leader's clock
        const refused = await client.request('clock', { path: 'nope' });
        expect(refused.error?.code).toBe('BAD_REQUEST');
      } finally {
        client.terminate();
      }
    }
    // The client library sends it too, checked with the same builder first.
    const lib = await connect(url, { timeoutMs: 10_000 });
    try {
      await lib.push('/b', 2);
      expect(await lib.callFamilyOp('clock', { path: '/b' }, buildClock)).toMatchObject({ path: '/b', mine: true, clock: expect.any(Number) });
      await expect(lib.callFamilyOp('clock', { path: 'relative' }, buildClock)).rejects.toMatchObject({ code: 'BAD_REQUEST' });
    } finally {
      await lib.close();
    }
  }, 30_000);
});
