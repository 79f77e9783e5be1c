// Service frames ({t: 'svc', m: [bytes, ...]}) between real transports on 127.0.0.1:
// delivered in order, only to peers advertising the minimum command version, refused
// (never dropped) when the per-link queue is full, handed back when the link goes,
// decoded strictly, and never in the way of Raft messages (docs/scale-out.md, stage 1 step 1).

import { afterEach, describe, expect, it } from 'vitest';
import { decodeFrame, encodeMessages, encodeServicePayloads, MAX_SERVICE_PAYLOADS_PER_FRAME, packFrame, PeerProtocolError } from '../../src/raft/transport/codec.js';
import { PeerTransportError } from '../../src/raft/transport/peer-transport.js';
import type { PeerTransport, PeerTransportOptions } from '../../src/raft/transport/peer-transport.js';
import type { NodeId } from '../../src/raft/types.js';
import { freePort, heartbeat, makeNode, RawPeer, withDeadline, type TestNode } from './helpers.js';

const V1 = 9;
const open: PeerTransport[] = [];
const rawPeers: RawPeer[] = [];

afterEach(async () => {
  await Promise.all(rawPeers.splice(0).map((p) => p.terminate()));
  await Promise.all(open.splice(0).map((t) => t.close()));
});

/** What a node received, both kinds in one arrival order. */
interface Arrivals {
  readonly log: Array<{ kind: 'svc'; from: NodeId; text: string } | { kind: 'msg'; term: number }>;
  waitForService(n: number): Promise<string[]>;
}

function serviceNode(id: NodeId, ports: Record<NodeId, number>, overrides: Partial<PeerTransportOptions> = {}): TestNode & { arrivals: Arrivals } {
  const log: Arrivals['log'] = [];
  const wakes = new Set<() => void>();
  const note = (): void => {
    for (const w of [...wakes]) w();
  };
  const node = makeNode(id, ports, {
    commandVersion: V1,
    serviceMinCommandVersion: V1,
    onService: (from, payload) => {
      log.push({ kind: 'svc', from, text: Buffer.from(payload).toString('utf8') });
      note();
    },
    onMessage: (m) => {
      log.push({ kind: 'msg', term: m.term });
      note();
    },
    ...overrides,
  });
  const services = (): string[] => log.flatMap((e) => (e.kind === 'svc' ? [e.text] : []));
  const arrivals: Arrivals = {
    log,
    waitForService: (n) =>
      withDeadline(
        new Promise<string[]>((resolve) => {
          const check = (): void => {
            if (services().length < n) return;
            wakes.delete(check);
            resolve(services().slice(0, n));
          };
          wakes.add(check);
          check();
        }),
        `${n} service payloads`,
      ),
  };
  return { ...node, arrivals };
}

async function started<T extends TestNode>(node: T): Promise<T> {
  open.push(node.transport);
  await node.transport.start();
  return node;
}

async function ports(...ids: string[]): Promise<Record<string, number>> {
  const out: Record<string, number> = {};
  for (const id of ids) out[id] = await freePort();
  return out;
}

const text = (s: string): Uint8Array => Buffer.from(s, 'utf8');

/** a and b, a's link to b authenticated (a heartbeat went through it). */
async function pair(aOverrides: Partial<PeerTransportOptions> = {}, bOverrides: Partial<PeerTransportOptions> = {}) {
  const p = await ports('a', 'b');
  const a = await started(serviceNode('a', p, aOverrides));
  const b = await started(serviceNode('b', p, bOverrides));
  await linked(a, b);
  return { a, b };
}

/** Resolves once a heartbeat from a reached b: a's link to b is authenticated. */
async function linked(a: TestNode, b: TestNode & { arrivals: Arrivals }): Promise<void> {
  a.transport.send(heartbeat('a', 'b', 1));
  await withDeadline(
    new Promise<void>((resolve) => {
      const poll = (): void => (b.arrivals.log.length > 0 ? resolve() : void setImmediate(poll));
      poll();
    }),
    'the link a -> b',
  );
}

describe('service frames between real transports', () => {
  it('delivers payloads in the order sent, naming the sender', async () => {
    const { a, b } = await pair();
    expect(a.transport.serviceReady('b')).toBe(true);
    const sent = Array.from({ length: 50 }, (_, i) => `p${i}`);
    // Half in one tick, half across ticks: order holds across frames too.
    for (const s of sent.slice(0, 25)) expect(a.transport.sendService('b', text(s))).toBe(true);
    for (const s of sent.slice(25)) {
      await new Promise((r) => setImmediate(r));
      expect(a.transport.sendService('b', text(s))).toBe(true);
    }
    expect(await b.arrivals.waitForService(50)).toEqual(sent);
    expect(b.arrivals.log.every((e) => e.kind !== 'svc' || e.from === 'a')).toBe(true);
  });

  it('refuses, rather than drops, a payload when the service queue is full', async () => {
    const { a, b } = await pair({ limits: { maxQueueMessages: 1000, maxQueueBytes: 1 << 20, maxFrameBytes: 64 * 1024, maxServiceQueuePayloads: 4 } });
    const answers = ['s1', 's2', 's3', 's4', 's5'].map((s) => a.transport.sendService('b', text(s)));
    expect(answers).toEqual([true, true, true, true, false]);
    expect(a.transport.status().peers.b).toMatchObject({ queuedServicePayloads: 4 });
    expect(await b.arrivals.waitForService(4)).toEqual(['s1', 's2', 's3', 's4']);
    // Room again once the queue drained.
    expect(a.transport.sendService('b', text('s5'))).toBe(true);
    expect(await b.arrivals.waitForService(5)).toEqual(['s1', 's2', 's3', 's4', 's5']);
  });

  it('keeps Raft messages flowing, and first, while the service queue is full', async () => {
    const { a, b } = await pair({ limits: { maxQueueMessages: 1000, maxQueueBytes: 1 << 20, maxFrameBytes: 64 * 1024, maxServiceQueuePayloads: 8 } });
    let accepted = 0;
    while (a.transport.sendService('b', text(`s${accepted}`))) accepted++;
    expect(accepted).toBe(8);
    a.transport.send(heartbeat('a', 'b', 2));
    await b.arrivals.waitForService(8);
    const order = b.arrivals.log.slice(1).map((e) => (e.kind === 'msg' ? `msg${e.term}` : e.text));
    // The heartbeat sent after the service queue filled arrives ahead of every service payload.
    expect(order[0]).toBe('msg2');
    expect(order.slice(1)).toEqual(Array.from({ length: 8 }, (_, i) => `s${i}`));
  });

  it('hands back payloads that never reached a socket when the link goes', async () => {
    const unsent: Array<{ to: NodeId; texts: string[] }> = [];
    const { a, b } = await pair({ onServiceUnsent: (to, payloads) => unsent.push({ to, texts: payloads.map((p) => Buffer.from(p).toString('utf8')) }) });
    for (const s of ['u1', 'u2', 'u3']) expect(a.transport.sendService('b', text(s))).toBe(true);
    // Same tick: nothing was flushed yet, so all three come back, and none is delivered.
    await a.transport.removePeer('b');
    expect(unsent).toEqual([{ to: 'b', texts: ['u1', 'u2', 'u3'] }]);
    expect(b.arrivals.log.filter((e) => e.kind === 'svc')).toEqual([]);
    expect(a.transport.sendService('b', text('u4'))).toBe(false);
  });

  it('sends nothing to a peer that advertised a command version below the minimum', async () => {
    const { a, b } = await pair({}, { commandVersion: V1 - 1 });
    expect(a.transport.serviceReady('b')).toBe(false);
    expect(a.transport.sendService('b', text('old'))).toBe(false);
    expect(a.transport.status().peers.b).toMatchObject({ connected: true, queuedServicePayloads: 0 });
    // The Raft side of the same link is unaffected.
    a.transport.send(heartbeat('a', 'b', 2));
    await withDeadline(
      new Promise<void>((resolve) => {
        const poll = (): void => (b.arrivals.log.length >= 2 ? resolve() : void setImmediate(poll));
        poll();
      }),
      'the second heartbeat',
    );
    expect(b.arrivals.log).toEqual([
      { kind: 'msg', term: 1 },
      { kind: 'msg', term: 2 },
    ]);
  });

  it('never hands a payload to the next process of a peer whose socket dropped, nor both delivers and hands it back', async () => {
    const unsent: string[] = [];
    const p = await ports('a', 'b');
    const a = await started(serviceNode('a', p, { onServiceUnsent: (_to, payloads) => unsent.push(...payloads.map((x) => Buffer.from(x).toString('utf8'))) }));
    let b = await started(serviceNode('b', p));
    await linked(a, b);
    for (const s of ['d1', 'd2']) expect(a.transport.sendService('b', text(s))).toBe(true);
    // b goes away: each payload either reached its socket first (and b may or may not have
    // taken it: a forward's deadline covers that) or comes back when a's socket closes.
    await b.transport.close();
    const first = b.arrivals.log.filter((e) => e.kind === 'svc').map((e) => (e.kind === 'svc' ? e.text : ''));
    await withDeadline(
      new Promise<void>((resolve) => {
        const poll = (): void => (!a.transport.serviceReady('b') ? resolve() : void setTimeout(poll, 2));
        poll();
      }),
      'a to see the socket gone',
    );
    for (const s of ['d1', 'd2']) expect(Number(first.includes(s)) + Number(unsent.includes(s))).toBeLessThanOrEqual(1);
    // A new process of b on the same port: a redials, and only what is sent now reaches it.
    b = await started(serviceNode('b', p));
    await withDeadline(
      new Promise<void>((resolve) => {
        const poll = (): void => (a.transport.serviceReady('b') ? resolve() : void setTimeout(poll, 2));
        poll();
      }),
      'the redial',
    );
    // Order holds on a socket: anything stale sent to this process would arrive before these.
    for (const s of ['after1', 'after2']) expect(a.transport.sendService('b', text(s))).toBe(true);
    expect(await b.arrivals.waitForService(2)).toEqual(['after1', 'after2']);
  });

  it('hands back payloads queued longer than maxServiceQueueMs: a peer that stopped reading keeps its socket open', async () => {
    const unsent: string[] = [];
    const { a, b } = await pair({
      limits: { maxQueueMessages: 100_000, maxQueueBytes: 1 << 30, maxFrameBytes: 64 * 1024, maxServiceQueueMs: 50 },
      onServiceUnsent: (_to, payloads) => unsent.push(...payloads.map((x) => Buffer.from(x).toString('utf8'))),
    });
    // b stops reading (as a paused process would); a's appends fill the sockets until what a
    // handed to its socket stays unwritten past the half service frames may use.
    const inbound = [...(b.transport as unknown as { inbound: Set<{ ws: { _socket: { pause(): void } } }> }).inbound];
    for (const conn of inbound) conn.ws._socket.pause();
    const data = new Uint8Array(60 * 1024).fill(3);
    for (let i = 1; i <= 400; i++) a.transport.send({ type: 'app', from: 'a', to: 'b', term: 1, prevIndex: i - 1, prevTerm: 1, commit: 0, entries: [{ index: i, term: 1, kind: 'command', data }] });
    a.transport.flush();
    for (const s of ['o1', 'o2', 'o3']) expect(a.transport.sendService('b', text(s))).toBe(true);
    await withDeadline(
      new Promise<void>((resolve) => {
        const poll = (): void => (unsent.length >= 3 ? resolve() : void setTimeout(poll, 5));
        poll();
      }),
      'the stale payloads to come back',
    );
    expect(unsent).toEqual(['o1', 'o2', 'o3']);
    expect(a.transport.status().peers.b).toMatchObject({ queuedServicePayloads: 0, connected: true });
  });

  it('keeps service frames within half the socket budget, so Raft keeps the other half', async () => {
    const { a } = await pair({ limits: { maxQueueMessages: 1000, maxQueueBytes: 1 << 20, maxFrameBytes: 4096, maxBufferedBytes: 16_384 } });
    const payload = new Uint8Array(1000).fill(7);
    for (let i = 0; i < 20; i++) expect(a.transport.sendService('b', payload)).toBe(true);
    // One synchronous flush: what it hands to the socket stays unwritten until the write callbacks run.
    a.transport.flush();
    const sent = 20 - (a.transport.status().peers.b?.queuedServicePayloads ?? 20);
    expect(sent).toBeGreaterThan(0);
    // Half the budget is 8,192 bytes: at most 8 payloads of 1,000 bytes and their framing.
    expect(sent).toBeLessThanOrEqual(8);
  });

  it('counts bytes, not only payloads, against the service queue', async () => {
    const { a } = await pair({ limits: { maxQueueMessages: 1000, maxQueueBytes: 1 << 20, maxFrameBytes: 4096, maxServiceQueueBytes: 8192 } });
    const payload = new Uint8Array(3000).fill(1);
    expect([1, 2, 3].map(() => a.transport.sendService('b', payload))).toEqual([true, true, false]);
  });

  it('refuses a service queue smaller than a frame, and sends nothing without a minimum command version', async () => {
    const p = await ports('a', 'b');
    expect(() => serviceNode('a', p, { limits: { maxQueueMessages: 1000, maxQueueBytes: 1 << 20, maxFrameBytes: 8192, maxServiceQueueBytes: 4096 } })).toThrow(PeerTransportError);
    const { a } = await pair({ serviceMinCommandVersion: undefined });
    expect(a.transport.serviceReady('b')).toBe(false);
    expect(a.transport.sendService('b', text('x'))).toBe(false);
  });

  it('answers false for a peer that is not connected or unknown', async () => {
    const p = await ports('a', 'b');
    const a = await started(serviceNode('a', p));
    expect(a.transport.sendService('b', text('x'))).toBe(false);
    expect(a.transport.sendService('nobody', text('x'))).toBe(false);
  });

  it('throws for a payload that can never fit in a frame', async () => {
    const { a } = await pair();
    expect(() => a.transport.sendService('b', new Uint8Array(64 * 1024))).toThrow(RangeError);
  });
});

describe('strict decoding of service frames', () => {
  it('round-trips payloads and keeps Raft frames as they were', () => {
    const payloads = [text('one'), new Uint8Array([0, 1, 2])];
    const decoded = decodeFrame(encodeServicePayloads(payloads));
    expect(decoded.kind).toBe('svc');
    if (decoded.kind === 'svc') expect(decoded.payloads.map((p) => [...p])).toEqual(payloads.map((p) => [...p]));
    const msgs = decodeFrame(encodeMessages([heartbeat('a', 'b', 3)]));
    expect(msgs).toEqual({ kind: 'msgs', messages: [heartbeat('a', 'b', 3)] });
  });

  it.each([
    ['an empty batch', { t: 'svc', m: [] }],
    ['a string payload', { t: 'svc', m: ['text'] }],
    ['a map payload', { t: 'svc', m: [{ k: 'fwd' }] }],
    ['m not an array', { t: 'svc', m: text('x') }],
    ['an extra field', { t: 'svc', m: [text('x')], g: 1 }],
    ['no m', { t: 'svc' }],
    ['an unknown frame kind', { t: 'svc2', m: [text('x')] }],
    ['an empty payload', { t: 'svc', m: [text('x'), new Uint8Array(0)] }],
    ['more payloads than a frame may carry', { t: 'svc', m: Array.from({ length: MAX_SERVICE_PAYLOADS_PER_FRAME + 1 }, () => text('x')) }],
  ])('refuses %s', (_what, frame) => {
    expect(() => decodeFrame(packFrame(frame))).toThrow(PeerProtocolError);
  });

  async function listener(overrides: Partial<PeerTransportOptions> = {}, advertised: number | null = V1) {
    const p = await ports('a', 'b');
    const a = await started(serviceNode('a', p, overrides));
    const client = new RawPeer(p.a!);
    rawPeers.push(client);
    expect(await client.authenticate('b', 'a', undefined, undefined, advertised ?? undefined)).toBe(true);
    return { a, client };
  }

  it('delivers a well-formed service frame from an authenticated peer', async () => {
    const { a, client } = await listener();
    client.send(encodeServicePayloads([text('hi'), text('there')]));
    expect(await a.arrivals.waitForService(2)).toEqual(['hi', 'there']);
  });

  it('drops the connection of a peer that sends a malformed service frame, delivering nothing from it', async () => {
    const { a, client } = await listener();
    client.send(packFrame({ t: 'svc', m: [text('good'), 'bad'] }));
    expect((await client.closed).code).toBe(4002);
    const logged = await a.logger.waitFor('peer.protocolError', { direction: 'inbound', peer: 'b' });
    expect(logged.obj.err).toMatch(/frame\.m\[1\] must be binary data/);
    expect(a.arrivals.log).toEqual([]);
  });

  it('a payload the service cannot read drops the link, after the rest of its frame is delivered', async () => {
    const seen: string[] = [];
    const { client } = await listener({
      onService: (_from, payload) => {
        const t = Buffer.from(payload).toString('utf8');
        if (t === 'unreadable') throw new PeerProtocolError('cannot read it');
        seen.push(t);
      },
    });
    client.send(encodeServicePayloads([text('one'), text('unreadable'), text('two')]));
    expect((await client.closed).code).toBe(4002);
    expect(seen).toEqual(['one', 'two']);
  });

  it('drops a peer that sends a service frame without having advertised the minimum command version', async () => {
    const { a, client } = await listener({}, null);
    client.send(encodeServicePayloads([text('hi')]));
    expect((await client.closed).code).toBe(4002);
    const logged = await a.logger.waitFor('peer.protocolError', { direction: 'inbound', peer: 'b' });
    expect(logged.obj.err).toMatch(/advertised command version 1/);
    expect(a.arrivals.log).toEqual([]);
  });

  it('drops a peer that sends a service frame to a member that takes none', async () => {
    const { a, client } = await listener({ onService: undefined });
    client.send(encodeServicePayloads([text('hi')]));
    expect((await client.closed).code).toBe(4002);
    const logged = await a.logger.waitFor('peer.protocolError', { direction: 'inbound', peer: 'b' });
    expect(logged.obj.err).toMatch(/does not take/);
  });
});
