// Malformed and hostile frames sent to a real `vera` process. PROTOCOL.md: such a
// frame gets BAD_REQUEST (TOO_LARGE for data over the limit) with the id when one
// can be read, the connection stays usable, and nothing committed is affected;
// only a frame over the hard frame limit closes the connection, with 1009.

import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { VeraProcess } from '../support/vera-process.js';
import { killAll } from '../support/vera-process.js';
import { ENCODINGS, openSession, startLeader, status, type Session } from './fixture.js';
import { WireClient, isReply, packMsgpack, type WireEncoding } from './wire-client.js';

const DATA_LIMIT = 1024;
const FRAME_LIMIT = 256 * 1024;
const LIST = '/bad/list';

// ---------------------------------------------------------------- raw MessagePack building
// msgpackr refuses (or silently fixes) much of what these cases need, so some frames are built byte by byte.

function mpStr(s: string): Buffer {
  const b = Buffer.from(s, 'utf8');
  if (b.length < 32) return Buffer.concat([Buffer.from([0xa0 | b.length]), b]);
  if (b.length < 256) return Buffer.concat([Buffer.from([0xd9, b.length]), b]);
  const head = Buffer.alloc(3);
  head[0] = 0xda;
  head.writeUInt16BE(b.length, 1);
  return Buffer.concat([head, b]);
}

/** A map from already-encoded keys and values (so either may be anything at all). */
function mpMap(entries: Array<[Buffer, Buffer]>): Buffer {
  return Buffer.concat([Buffer.from([0x80 | entries.length]), ...entries.flat()]);
}

/** A map whose keys are strings and whose values are given either as bytes or as plain values. */
function mpFields(fields: Array<[string, unknown]>): Buffer {
  return mpMap(fields.map(([k, v]) => [mpStr(k), Buffer.isBuffer(v) ? v : packMsgpack(v)]));
}

const nestedArrays = (levels: number): unknown => {
  let value: unknown = 0;
  for (let i = 0; i < levels; i++) value = [value];
  return value;
};

// ---------------------------------------------------------------- the table
// Case ids live far above the ids the wire client hands out, so a stray reply can never be mistaken for another.

type FrameSpec =
  /** Sent as MessagePack in the msgpack run and as JSON in the json run. */
  | { readonly value: unknown }
  /** Exact frames; an encoding without one skips the case. */
  | { readonly json?: string; readonly msgpack?: Buffer };

interface BadCase {
  readonly name: string;
  readonly frame: FrameSpec;
  readonly code: 'BAD_REQUEST' | 'TOO_LARGE';
  /** The message must name the problem. */
  readonly message: RegExp;
  /** The id the error must echo; absent when the frame's id cannot be read. */
  readonly id?: number;
}

const BIG_ID = '18446744073709551616';
const UINT64_MAX = Buffer.from([0xcf, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff]);
const DEEP = 100_000;

const CASES: BadCase[] = [
  // Frames that do not decode, or are not a map/object.
  { name: 'garbage bytes', frame: { msgpack: Buffer.from([0xc1, 0xff, 0x00, 0x13, 0x37]) }, code: 'BAD_REQUEST', message: /MessagePack map/ },
  { name: 'invalid JSON text', frame: { json: '{"id": 900101, "op": "ping"' }, code: 'BAD_REQUEST', message: /JSON/ },
  { name: 'JSON with single quotes', frame: { json: "{'id': 900101, 'op': 'ping'}" }, code: 'BAD_REQUEST', message: /JSON/ },
  { name: 'JSON array', frame: { json: '[{"id":900102,"op":"ping"}]' }, code: 'BAD_REQUEST', message: /object.*array/ },
  { name: 'JSON string', frame: { json: '"ping"' }, code: 'BAD_REQUEST', message: /object.*string/ },
  { name: 'JSON number', frame: { json: '42' }, code: 'BAD_REQUEST', message: /object.*number/ },
  { name: 'JSON null', frame: { json: 'null' }, code: 'BAD_REQUEST', message: /object.*null/ },
  { name: 'empty text frame', frame: { json: '' }, code: 'BAD_REQUEST', message: /JSON/ },
  { name: 'MessagePack array', frame: { msgpack: packMsgpack([900103, 'ping']) }, code: 'BAD_REQUEST', message: /map.*array/ },
  { name: 'MessagePack nil', frame: { msgpack: Buffer.from([0xc0]) }, code: 'BAD_REQUEST', message: /map.*nil/ },
  { name: 'MessagePack integer', frame: { msgpack: packMsgpack(42) }, code: 'BAD_REQUEST', message: /map.*integer/ },
  { name: 'empty binary frame', frame: { msgpack: Buffer.alloc(0) }, code: 'BAD_REQUEST', message: /empty/ },
  { name: 'JSON text in a binary frame', frame: { msgpack: Buffer.from('{"id":900104,"op":"ping"}') }, code: 'BAD_REQUEST', message: /MessagePack map/ },
  { name: 'truncated MessagePack', frame: { msgpack: packMsgpack({ id: 900105, op: 'ping' }).subarray(0, -2) }, code: 'BAD_REQUEST', message: /truncated/, id: 900105 },
  { name: 'trailing bytes after the map', frame: { msgpack: Buffer.concat([packMsgpack({ id: 900106, op: 'ping' }), Buffer.from([0x01, 0x02])]) }, code: 'BAD_REQUEST', message: /trailing/, id: 900106 },
  { name: 'extension type (timestamp) in data', frame: { msgpack: mpFields([['id', 900107], ['op', 'push'], ['path', LIST], ['data', Buffer.from([0xd6, 0xff, 0, 0, 0, 1])]]) }, code: 'BAD_REQUEST', message: /data.*extension/, id: 900107 },
  { name: 'binary value cut short in data', frame: { msgpack: mpFields([['id', 900108], ['op', 'push'], ['path', LIST], ['data', Buffer.from([0xc4, 0x09, 0x61, 0x62, 0x63])]]) }, code: 'BAD_REQUEST', message: /data.*truncated/, id: 900108 },
  { name: 'non-string map key', frame: { msgpack: mpMap([[mpStr('id'), packMsgpack(900109)], [Buffer.from([0x07]), packMsgpack(1)]]) }, code: 'BAD_REQUEST', message: /keys must be strings/, id: 900109 },
  { name: 'array claiming 2^32-1 elements', frame: { msgpack: mpFields([['id', 900110], ['op', 'push'], ['path', LIST], ['data', Buffer.from([0xdd, 0xff, 0xff, 0xff, 0xff, 0x01])]]) }, code: 'BAD_REQUEST', message: /data.*truncated/, id: 900110 },

  // id
  { name: 'missing id', frame: { value: { op: 'ping' } }, code: 'BAD_REQUEST', message: /\bid\b.*missing/ },
  { name: 'id float', frame: { value: { id: 1.5, op: 'ping' } }, code: 'BAD_REQUEST', message: /\bid\b.*1\.5/ },
  { name: 'id negative', frame: { value: { id: -3, op: 'ping' } }, code: 'BAD_REQUEST', message: /\bid\b.*-3/ },
  { name: 'id string', frame: { value: { id: '900111', op: 'ping' } }, code: 'BAD_REQUEST', message: /\bid\b.*"900111"/ },
  { name: 'id null', frame: { value: { id: null, op: 'ping' } }, code: 'BAD_REQUEST', message: /\bid\b.*null/ },
  { name: 'id 2^64', frame: { json: `{"id":${BIG_ID},"op":"ping"}`, msgpack: mpFields([['id', UINT64_MAX], ['op', 'ping']]) }, code: 'BAD_REQUEST', message: /\bid\b.*safe integer/ },

  // op
  { name: 'missing op', frame: { value: { id: 900112 } }, code: 'BAD_REQUEST', message: /\bop\b.*missing/, id: 900112 },
  { name: 'unknown op', frame: { value: { id: 900113, op: 'frobnicate' } }, code: 'BAD_REQUEST', message: /unknown op.*frobnicate/, id: 900113 },
  { name: 'op a number', frame: { value: { id: 900114, op: 7 } }, code: 'BAD_REQUEST', message: /\bop\b.*string.*7/, id: 900114 },
  { name: 'server-only op notify', frame: { value: { id: 900115, op: 'notify', events: [] } }, code: 'BAD_REQUEST', message: /unknown op.*notify/, id: 900115 },

  // paths
  { name: 'path missing', frame: { value: { id: 900120, op: 'get' } }, code: 'BAD_REQUEST', message: /path.*missing/, id: 900120 },
  { name: 'path a number', frame: { value: { id: 900121, op: 'get', path: 5 } }, code: 'BAD_REQUEST', message: /path.*string/, id: 900121 },
  { name: 'path empty', frame: { value: { id: 900122, op: 'ls', path: '' } }, code: 'BAD_REQUEST', message: /path.*start with '\/'/, id: 900122 },
  { name: 'path relative', frame: { value: { id: 900123, op: 'push', path: 'bad/list', data: 1 } }, code: 'BAD_REQUEST', message: /path.*start with '\/'/, id: 900123 },
  { name: "path with '..'", frame: { value: { id: 900124, op: 'push', path: '/bad/../list', data: 1 } }, code: 'BAD_REQUEST', message: /'\.\.' segment/, id: 900124 },
  { name: "path with '.'", frame: { value: { id: 900125, op: 'push', path: '/bad/./list', data: 1 } }, code: 'BAD_REQUEST', message: /'\.' segment/, id: 900125 },
  { name: 'path with an empty segment', frame: { value: { id: 900126, op: 'push', path: '/bad//list', data: 1 } }, code: 'BAD_REQUEST', message: /empty segment/, id: 900126 },
  { name: 'path with a trailing slash', frame: { value: { id: 900127, op: 'push', path: '/bad/list/', data: 1 } }, code: 'BAD_REQUEST', message: /end with '\/'/, id: 900127 },
  { name: 'path with NUL', frame: { value: { id: 900128, op: 'push', path: '/bad/li\u0000st', data: 1 } }, code: 'BAD_REQUEST', message: /NUL/, id: 900128 },
  { name: 'path of 1025+ UTF-8 bytes (514 chars)', frame: { value: { id: 900129, op: 'push', path: '/' + 'é'.repeat(513), data: 1 } }, code: 'BAD_REQUEST', message: /path.*1024/, id: 900129 },
  { name: 'root path for get', frame: { value: { id: 900130, op: 'get', path: '/' } }, code: 'BAD_REQUEST', message: /root path/, id: 900130 },
  { name: 'root path for push', frame: { value: { id: 900131, op: 'push', path: '/', data: 1 } }, code: 'BAD_REQUEST', message: /root path/, id: 900131 },
  { name: 'root path for delete', frame: { value: { id: 900132, op: 'delete', path: '/', index: 1 } }, code: 'BAD_REQUEST', message: /root path/, id: 900132 },
  { name: 'root path for an exact watch', frame: { value: { id: 900133, op: 'watch', path: '/' } }, code: 'BAD_REQUEST', message: /root path/, id: 900133 },
  { name: 'path with a lone surrogate', frame: { json: '{"id":900134,"op":"push","path":"/bad/\\ud800","data":1}' }, code: 'BAD_REQUEST', message: /path.*UTF-8/, id: 900134 },

  // data
  { name: 'push without data', frame: { value: { id: 900140, op: 'push', path: LIST } }, code: 'BAD_REQUEST', message: /data.*missing/, id: 900140 },
  { name: 'data over the data limit', frame: { value: { id: 900141, op: 'push', path: LIST, data: 'x'.repeat(DATA_LIMIT + 100), persistent: true } }, code: 'TOO_LARGE', message: new RegExp(`data.*${DATA_LIMIT}`), id: 900141 },
  { name: 'data over the limit in many small pieces', frame: { value: { id: 900142, op: 'push', path: LIST, data: Array.from({ length: 600 }, (_, i) => i) } }, code: 'TOO_LARGE', message: /data/, id: 900142 },
  { name: 'data nested 100 levels', frame: { value: { id: 900143, op: 'push', path: LIST, data: nestedArrays(100) } }, code: 'BAD_REQUEST', message: /nested deeper/, id: 900143 },
  { name: `data nested ${DEEP} levels`, frame: { json: `{"id":900144,"op":"push","path":"${LIST}","data":${'['.repeat(DEEP)}${']'.repeat(DEEP)}}`, msgpack: mpFields([['id', 900144], ['op', 'push'], ['path', LIST], ['data', Buffer.concat([Buffer.alloc(DEEP, 0x91), Buffer.from([0x00])])]]) }, code: 'BAD_REQUEST', message: /nested deeper/, id: 900144 },
  { name: 'an unknown field nested too deep', frame: { value: { id: 900145, op: 'ping', extra: nestedArrays(100) } }, code: 'BAD_REQUEST', message: /extra.*nested deeper/, id: 900145 },
  { name: '__proto__ key at the top level', frame: { json: '{"id":900146,"op":"ping","__proto__":{"op":"push"}}', msgpack: mpFields([['id', 900146], ['op', 'ping'], ['__proto__', { op: 'push' }]]) }, code: 'BAD_REQUEST', message: /__proto__/, id: 900146 },
  { name: '__proto__ key inside data', frame: { json: `{"id":900147,"op":"push","path":"${LIST}","data":{"a":{"__proto__":{"admin":true}}}}`, msgpack: mpFields([['id', 900147], ['op', 'push'], ['path', LIST], ['data', mpFields([['a', mpFields([['__proto__', { admin: true }]])]])]]) }, code: 'BAD_REQUEST', message: /data\.a\.__proto__/, id: 900147 },
  { name: 'NaN in data', frame: { msgpack: packMsgpack({ id: 900148, op: 'push', path: LIST, data: [1, Number.NaN] }) }, code: 'BAD_REQUEST', message: /data.*NaN/, id: 900148 },
  { name: 'Infinity in data', frame: { msgpack: packMsgpack({ id: 900149, op: 'push', path: LIST, data: { x: Number.POSITIVE_INFINITY } }) }, code: 'BAD_REQUEST', message: /data.*Infinity/, id: 900149 },
  { name: 'lone surrogate in data', frame: { json: `{"id":900150,"op":"push","path":"${LIST}","data":"\\udc00"}` }, code: 'BAD_REQUEST', message: /data.*surrogate/, id: 900150 },

  // wrongly typed arguments, op by op
  { name: 'hello timeoutMs a string', frame: { value: { id: 900160, op: 'hello', timeoutMs: '10s' } }, code: 'BAD_REQUEST', message: /timeoutMs/, id: 900160 },
  { name: 'hello session a number', frame: { value: { id: 900161, op: 'hello', session: 42 } }, code: 'BAD_REQUEST', message: /session/, id: 900161 },
  { name: 'hello token an object', frame: { value: { id: 900162, op: 'hello', token: { user: 'x' } } }, code: 'BAD_REQUEST', message: /token/, id: 900162 },
  { name: 'ping ack negative', frame: { value: { id: 900163, op: 'ping', ack: -1 } }, code: 'BAD_REQUEST', message: /ack/, id: 900163 },
  { name: 'ping ack a string', frame: { value: { id: 900164, op: 'ping', ack: 'all' } }, code: 'BAD_REQUEST', message: /ack/, id: 900164 },
  { name: 'push persistent a string', frame: { value: { id: 900165, op: 'push', path: LIST, data: 1, persistent: 'yes' } }, code: 'BAD_REQUEST', message: /persistent/, id: 900165 },
  { name: 'push watch a number', frame: { value: { id: 900166, op: 'push', path: LIST, data: 1, watch: 1 } }, code: 'BAD_REQUEST', message: /watch/, id: 900166 },
  { name: 'push ifLastIndex a float', frame: { value: { id: 900167, op: 'push', path: LIST, data: 1, ifLastIndex: 2.5 } }, code: 'BAD_REQUEST', message: /ifLastIndex/, id: 900167 },
  { name: 'push ifLastIndex negative', frame: { value: { id: 900168, op: 'push', path: LIST, data: 1, ifLastIndex: -1 } }, code: 'BAD_REQUEST', message: /ifLastIndex/, id: 900168 },
  { name: 'get consistency unknown', frame: { value: { id: 900169, op: 'get', path: LIST, consistency: 'eventual' } }, code: 'BAD_REQUEST', message: /consistency/, id: 900169 },
  { name: 'ls path an array', frame: { value: { id: 900170, op: 'ls', path: ['bad'] } }, code: 'BAD_REQUEST', message: /path/, id: 900170 },
  { name: 'delete without index', frame: { value: { id: 900171, op: 'delete', path: LIST } }, code: 'BAD_REQUEST', message: /index.*missing/, id: 900171 },
  { name: 'delete index a string', frame: { value: { id: 900172, op: 'delete', path: LIST, index: '1' } }, code: 'BAD_REQUEST', message: /index/, id: 900172 },
  { name: 'delete index 2^53', frame: { value: { id: 900173, op: 'delete', path: LIST, index: 2 ** 53 } }, code: 'BAD_REQUEST', message: /index/, id: 900173 },
  { name: 'watch prefix a string', frame: { value: { id: 900174, op: 'watch', path: LIST, prefix: 'true' } }, code: 'BAD_REQUEST', message: /prefix/, id: 900174 },
  { name: 'unwatch path an object', frame: { value: { id: 900175, op: 'unwatch', path: { p: LIST } } }, code: 'BAD_REQUEST', message: /path/, id: 900175 },
  { name: 'unwatch prefix a number', frame: { value: { id: 900176, op: 'unwatch', path: LIST, prefix: 1 } }, code: 'BAD_REQUEST', message: /prefix/, id: 900176 },
  // Users, roles and the audit log (extension ops): refused by the decoder, nothing proposed.
  { name: 'auth.userAdd name with a space', frame: { value: { id: 900177, op: 'auth.userAdd', name: 'a b', password: 'x' } }, code: 'BAD_REQUEST', message: /name must be/, id: 900177 },
  { name: 'auth.userAdd password a number', frame: { value: { id: 900178, op: 'auth.userAdd', name: 'carol', password: 42 } }, code: 'BAD_REQUEST', message: /password/, id: 900178 },
  { name: 'auth.userAdd unexpected field', frame: { value: { id: 900179, op: 'auth.userAdd', name: 'carol', roles: ['root'] } }, code: 'BAD_REQUEST', message: /unexpected field 'roles'/, id: 900179 },
  { name: 'auth.roleGrant perms a string', frame: { value: { id: 900180, op: 'auth.roleGrant', name: 'r', prefix: '/a', perms: 'read' } }, code: 'BAD_REQUEST', message: /perms/, id: 900180 },
  { name: 'auth.roleGrant unknown permission', frame: { value: { id: 900181, op: 'auth.roleGrant', name: 'r', prefix: '/a', perms: ['read', 'fly'] } }, code: 'BAD_REQUEST', message: /perms/, id: 900181 },
  { name: 'auth.roleGrant prefix not a path', frame: { value: { id: 900182, op: 'auth.roleGrant', name: 'r', prefix: 'app', perms: ['read'] } }, code: 'BAD_REQUEST', message: /did you mean \/app/, id: 900182 },
  { name: 'auth.roleGrant deny a string', frame: { value: { id: 900183, op: 'auth.roleGrant', name: 'r', prefix: '/a', perms: ['read'], deny: 'yes' } }, code: 'BAD_REQUEST', message: /deny/, id: 900183 },
  { name: 'auth.roleRevoke prefix a number', frame: { value: { id: 900184, op: 'auth.roleRevoke', name: 'r', prefix: 42 } }, code: 'BAD_REQUEST', message: /prefix/, id: 900184 },
  { name: 'auth.login ttlMs too short', frame: { value: { id: 900185, op: 'auth.login', user: 'root', password: 'x', ttlMs: 10 } }, code: 'BAD_REQUEST', message: /ttlMs/, id: 900185 },
  { name: 'auth.login without password', frame: { value: { id: 900186, op: 'auth.login', user: 'root' } }, code: 'BAD_REQUEST', message: /password/, id: 900186 },
  { name: 'auth.userPasswd password too long', frame: { value: { id: 900187, op: 'auth.userPasswd', name: 'root', password: 'x'.repeat(2000) } }, code: 'BAD_REQUEST', message: /password/, id: 900187 },
  { name: 'audit.list limit 0', frame: { value: { id: 900188, op: 'audit.list', limit: 0 } }, code: 'BAD_REQUEST', message: /limit/, id: 900188 },
  { name: 'audit.list after negative', frame: { value: { id: 900189, op: 'audit.list', after: -1 } }, code: 'BAD_REQUEST', message: /after/, id: 900189 },
  { name: 'audit.list unexpected field', frame: { value: { id: 900190, op: 'audit.list', since: 1 } }, code: 'BAD_REQUEST', message: /unexpected field 'since'/, id: 900190 },
];

function frameFor(spec: FrameSpec, encoding: WireEncoding): Buffer | string | undefined {
  if ('value' in spec) return encoding === 'msgpack' ? packMsgpack(spec.value) : JSON.stringify(spec.value);
  return encoding === 'msgpack' ? spec.msgpack : spec.json;
}

const casesFor = (encoding: WireEncoding): BadCase[] => CASES.filter((c) => frameFor(c.frame, encoding) !== undefined);

// ---------------------------------------------------------------- the server

let vp: VeraProcess;

beforeAll(async () => {
  vp = await startLeader({ args: ['--data-limit', String(DATA_LIMIT), '--frame-limit', String(FRAME_LIMIT)] });
});

afterAll(async () => {
  await killAll();
  vp?.removeData();
});

it('the table has at least 30 cases for each encoding', () => {
  for (const encoding of ENCODINGS) expect(casesFor(encoding).length).toBeGreaterThanOrEqual(30);
});

describe.each(ENCODINGS)('hostile frames over %s', (enc) => {
  let s: Session;

  beforeAll(async () => {
    s = await openSession(vp, enc);
    // Something committed that a bad frame must not disturb.
    await s.client.call('push', { path: LIST, data: { seed: enc }, persistent: true });
    await s.client.call('push', { path: LIST, data: 'ephemeral' });
  });

  afterAll(async () => {
    // End the session now, so it cannot expire later in the middle of another test's "nothing moved" check.
    if (s?.client.isOpen) await s.client.call('bye');
  });

  it.each(casesFor(enc).map((c) => [c.name, c] as const))('%s', async (_name, c) => {
    const listBefore = await s.client.call('get', { path: LIST });
    const appliedBefore = (await status(vp)).applied;

    const from = s.client.frames.length;
    s.client.sendRaw(frameFor(c.frame, enc)!);
    const reply = await s.client.waitFrame(
      (f) => isReply(f) && (c.id === undefined || f.value?.id === c.id),
      `the error reply to "${c.name}"`,
      from,
    );

    // The reply goes back in the encoding of the request frame.
    expect(reply.encoding).toBe(enc);
    const error = { code: c.code, message: expect.stringMatching(c.message) };
    expect(reply.value).toStrictEqual(c.id === undefined ? { ok: false, error } : { id: c.id, ok: false, error });

    // The same connection still works, and nothing was proposed or changed.
    expect(await s.client.call('ping')).toStrictEqual({ index: appliedBefore });
    expect(await s.client.call('get', { path: LIST })).toStrictEqual(listBefore);
    expect((await status(vp)).applied).toBe(appliedBefore);
    expect(s.client.closed).toBeNull();
  });

  it('accepts data of exactly the data limit', async () => {
    const data = 'y'.repeat(DATA_LIMIT - 3); // a str16 header is 3 bytes
    expect(packMsgpack(data).length).toBe(DATA_LIMIT);
    const pushed = await s.client.call('push', { path: '/bad/at-limit', data, persistent: true });
    expect(pushed.item).toMatchObject({ owner: null, data });
  });

  it('answers malformed frames before hello too, and hello still works afterwards', async () => {
    const c = await WireClient.connect(vp.url, enc);
    const from = c.frames.length;
    c.sendRaw(enc === 'msgpack' ? Buffer.from([0xc1]) : '{nope');
    const reply = await c.waitFrame(isReply, 'the error reply', from);
    expect(reply.value).toStrictEqual({ ok: false, error: { code: 'BAD_REQUEST', message: expect.any(String) } });
    const hello = await c.hello();
    expect(await c.call('ping')).toStrictEqual({ index: expect.any(Number) });
    expect(hello.session).toEqual(expect.any(String));
    await c.call('bye');
  });

  it('closes a connection whose frame is over the frame limit with 1009, and keeps serving the others', async () => {
    const appliedBefore = (await status(vp)).applied;
    const itemsBefore = (await s.client.call('get', { path: LIST })).items;
    const victim = await openSession(vp, enc);
    const data = 'z'.repeat(FRAME_LIMIT + 1024);
    victim.client.send({ id: victim.client.newId(), op: 'push', path: LIST, data, persistent: true });
    const closed = await victim.client.waitClose();
    expect(closed.code).toBe(1009);

    // Other connections, old and new, are served as before; nothing committed changed.
    expect((await s.client.call('get', { path: LIST })).items).toStrictEqual(itemsBefore);
    const fresh = await openSession(vp, enc);
    expect((await fresh.client.call('get', { path: LIST })).items).toStrictEqual(itemsBefore);
    await fresh.client.call('bye');
    // The closed connection's session lives on and can resume (then end cleanly).
    const back = await WireClient.connect(vp.url, enc);
    expect((await back.hello({ session: victim.hello.session, resume: victim.hello.resume })).session).toBe(victim.hello.session);
    await back.call('bye');
    expect((await s.client.call('get', { path: LIST })).items).toStrictEqual(itemsBefore);
    // Sessions opened and closed (committed), but the oversized push was never proposed: it is nowhere.
    expect((await status(vp)).applied).toBeGreaterThan(appliedBefore);
  });

  it('closes a text frame that is not UTF-8 with 1007 (RFC 6455), and keeps serving the others', async () => {
    const c = await WireClient.connect(vp.url, enc);
    c.sendTextBytes(Buffer.from([0x7b, 0x22, 0xff, 0xfe, 0x22, 0x7d]));
    expect((await c.waitClose()).code).toBe(1007);
    expect(await s.client.call('ping')).toStrictEqual({ index: expect.any(Number) });
  });
});
