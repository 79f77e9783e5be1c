// Binary values and 64-bit integers (issue 17): MessagePack bin is stored and
// returned as bytes, and {"$binary": base64} in JSON; integers beyond 2^53 are
// exact in MessagePack (bigints), read exactly from JSON digits, written to JSON
// as strings of their digits; nothing is ever silently rounded. Against a real
// server, through the raw wire in both encodings, over HTTP and through the client.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { connect } from '../../src/client/index.js';
import type { VeraProcess } from '../support/vera-process.js';
import { httpJson, openSession, startLeader, type Session } from './fixture.js';

let vp: VeraProcess;
let mp: Session;
let js: Session;

beforeAll(async () => {
  vp = await startLeader();
  mp = await openSession(vp, 'msgpack');
  js = await openSession(vp, 'json');
});

afterAll(async () => {
  mp?.client.terminate();
  js?.client.terminate();
  await vp?.stop();
});

const BYTES = Buffer.from([0, 1, 2, 0xff, 0xfe]);

describe('binary values and 64-bit integers', () => {
  it('keep MessagePack bytes and int64/uint64 exact, and show them to JSON as base64 and digit strings', async () => {
    const data = { blob: BYTES, big: 2n ** 63n - 1n, huge: 2n ** 64n - 1n, neg: -(2n ** 62n) - 3n, small: 5, float: 0.5 };
    const pushed = (await mp.client.call('push', { path: '/values/a', data, persistent: true })) as { item: { data: unknown } };
    expect(pushed.item.data).toEqual(data);
    const readBack = (await mp.client.call('get', { path: '/values/a' })) as { items: Array<{ data: Record<string, unknown> }> };
    expect(readBack.items[0]!.data).toEqual(data);
    expect(Buffer.isBuffer(readBack.items[0]!.data.blob)).toBe(true);
    expect(typeof readBack.items[0]!.data.big).toBe('bigint');

    const asJson = (await js.client.call('get', { path: '/values/a' })) as { items: Array<{ data: unknown }> };
    expect(asJson.items[0]!.data).toEqual({ blob: { $binary: BYTES.toString('base64') }, big: '9223372036854775807', huge: '18446744073709551615', neg: '-4611686018427387907', small: 5, float: 0.5 });

    const overHttp = await httpJson(vp, '/v1/data/values/a');
    expect(overHttp.body).toMatchObject({ items: [{ data: { blob: { $binary: BYTES.toString('base64') }, big: '9223372036854775807' } }] });
  });

  it('read JSON {"$binary"} as bytes and integer digits past 2^53 exactly, and keep the numbers JSON.stringify writes as numbers', async () => {
    const id = 7001;
    js.client.sendRaw(`{"id":${id},"op":"push","path":"/values/b","persistent":true,"data":{"bin":{"$binary":"aGVsbG8="},"u":12345678901234567891,"d":${JSON.stringify(1e17)},"n":${JSON.stringify(-28463688501455710)}}}`);
    const reply = (await js.client.waitReply(id)).value!;
    expect(reply.ok).toBe(true);
    const read = (await mp.client.call('get', { path: '/values/b' })) as { items: Array<{ data: Record<string, unknown> }> };
    expect(read.items[0]!.data).toEqual({ bin: Buffer.from('hello'), u: 12345678901234567891n, d: 1e17, n: -28463688501455710 });
    expect(typeof read.items[0]!.data.d).toBe('number');
  });

  it('refuse what cannot be carried exactly, naming it, and store nothing', async () => {
    const cases: Array<[string, RegExp]> = [
      ['{"n":36893488147419103232}', /data\.n: 36893488147419103232 is beyond a 64-bit integer/],
      ['[9007199254740993,9007199254740992]', /9007199254740993 and 9007199254740992 read as the same JSON number/],
      ['{"$binary":"not base64!"}', /standard base64/],
    ];
    let id = 7100;
    for (const [data, message] of cases) {
      js.client.sendRaw(`{"id":${++id},"op":"push","path":"/values/refused","data":${data}}`);
      const reply = (await js.client.waitReply(id)).value!;
      expect(reply.ok, data).toBe(false);
      expect(reply.error).toMatchObject({ code: 'BAD_REQUEST', message: expect.stringMatching(message) });
    }
    expect(await mp.client.call('get', { path: '/values/refused' })).toMatchObject({ items: [] });
  });

  it('reach the client library as bytes and bigints, in replies and in notifications', async () => {
    const client = await connect(vp.url);
    try {
      const seen: unknown[] = [];
      client.on('event', (e) => seen.push(e.type === 'push' ? e.item.data : null));
      await client.watch('/values/c');
      const item = await client.push('/values/c', { raw: new Uint8Array([9, 8, 7]), id: 2n ** 60n + 1n }, { persistent: true });
      expect(item.data).toEqual({ raw: Buffer.from([9, 8, 7]), id: 2n ** 60n + 1n });
      const { items } = await client.get('/values/c');
      expect(items[0]!.data).toEqual({ raw: Buffer.from([9, 8, 7]), id: 2n ** 60n + 1n });
      await expect.poll(() => seen.length, { timeout: 5000 }).toBe(1);
      expect(seen[0]).toEqual({ raw: Buffer.from([9, 8, 7]), id: 2n ** 60n + 1n });
      await expect(client.push('/values/c', { tooBig: 2n ** 64n })).rejects.toMatchObject({ code: 'BAD_REQUEST', message: expect.stringContaining('beyond a 64-bit integer') });
    } finally {
      await client.close();
    }
    // A JSON client writes bigints and bytes exactly; it reads bigints back as digit strings.
    const viaJson = await connect(vp.url, { encoding: 'json' });
    try {
      const item = await viaJson.push('/values/d', { id: 2n ** 60n + 3n, raw: new Uint8Array([1, 2]) }, { persistent: true });
      expect(item.data).toEqual({ id: '1152921504606846979', raw: Buffer.from([1, 2]) });
      const read = (await mp.client.call('get', { path: '/values/d' })) as { items: Array<{ data: unknown }> };
      expect(read.items[0]!.data).toEqual({ id: 2n ** 60n + 3n, raw: Buffer.from([1, 2]) });
    } finally {
      await viaJson.close();
    }
  });
});
