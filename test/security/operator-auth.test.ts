// Operator requests proved with the cluster secret (a Vera-HMAC answer to GET
// /v1/challenge) cannot be replayed: the MAC covers the body, each nonce serves
// one request, and a flood of challenges from strangers cannot evict a nonce an
// operator holds (new challenges are refused with 429 instead).
import { afterEach, describe, expect, it } from 'vitest';
import { operatorAuthorization } from '../../src/server/admin/operator-auth.js';
import { OperatorChallenges } from '../../src/server/admin/operator-challenges.js';
import { startLeader } from '../server/fixture.js';
import type { VeraProcess } from '../support/vera-process.js';

const SECRET = 'operator-auth-secret';
let vp: VeraProcess | null = null;
afterEach(async () => {
  await vp?.stop();
  vp = null;
});

describe('outstanding challenges', () => {
  it('are bounded per address and in all, refused past the bound rather than evicted, and taken once', () => {
    let now = 1_000_000;
    const c = new OperatorChallenges({ perAddress: 3, total: 5, ttlMs: 30_000 }, () => now);
    const operator = c.issue('10.0.0.5');
    if (!('nonce' in operator)) throw new Error('the first challenge was refused');
    const flood = Array.from({ length: 1100 }, () => c.issue('10.6.6.6'));
    expect(flood.filter((i) => 'nonce' in i)).toHaveLength(3);
    expect(flood[3]).toMatchObject({ refused: expect.stringContaining('10.6.6.6'), retryAfterMs: 30_000 });
    // From many addresses: the member's bound holds, and the operator's nonce is still there.
    const spread = Array.from({ length: 1100 }, (_, i) => c.issue(`10.7.${i >> 8}.${i & 255}`));
    expect(spread.filter((i) => 'nonce' in i)).toHaveLength(1);
    expect(spread[1]).toMatchObject({ refused: expect.stringContaining('unanswered challenges') });
    expect(c.size).toBe(5);
    now += 10_000;
    expect(c.take(operator.nonce)).toBe(true);
    expect(c.take(operator.nonce)).toBe(false);
    // Expired nonces free their places and cannot be used.
    now += 30_000;
    expect('nonce' in c.issue('10.6.6.6')).toBe(true);
    expect(c.size).toBe(1);
  });
});

describe('a member with a cluster secret', () => {
  it('refuses a replay with another body or the same nonce twice, and keeps an operator\'s nonce through a flood of challenges', async () => {
    vp = await startLeader({ secret: SECRET, peerPort: 0 });
    const base = vp.httpUrl;
    const challenge = async (): Promise<string> => ((await (await fetch(`${base}/v1/challenge`)).json()) as { nonce: string }).nonce;
    const post = (path: string, body: string, nonce: string, signedBody = body): Promise<Response> =>
      fetch(`${base}${path}`, {
        method: 'POST',
        headers: { 'content-type': 'application/json', authorization: operatorAuthorization(SECRET, nonce, 'POST', path, Buffer.from(signedBody)) },
        body,
      });

    // The operator holds two nonces; strangers then ask for 1,100 more.
    const [first, second] = [await challenge(), await challenge()];
    // In rounds of 50 at once: the member's connections per address (256) are not what is tested here.
    const answers: Array<{ status: number; retry: string | null; body: string }> = [];
    for (let round = 0; round < 22; round++) {
      const ask = (): Promise<{ status: number; retry: string | null; body: string }> =>
        fetch(`${base}/v1/challenge`).then(async (r) => ({ status: r.status, retry: r.headers.get('retry-after'), body: await r.text() }));
      answers.push(...(await Promise.all(Array.from({ length: 50 }, ask))));
    }
    const refused = answers.filter((a) => a.status === 429);
    expect(refused.length).toBeGreaterThan(1000);
    expect(Number(refused[0]!.retry)).toBeGreaterThan(0);
    expect(JSON.parse(refused[0]!.body)).toMatchObject({ error: { code: 'RATE_LIMITED', retryAfterMs: expect.any(Number) } });
    const defrags = (): number => vp!.logs.filter((l) => l.event === 'defrag').length;

    // A sniffed request sent again with another body (signed for {}, sent with a field): refused, nothing ran.
    expect((await post('/v1/defrag', '{"to":"elsewhere"}', first!, '{}')).status).toBe(401);
    expect(defrags()).toBe(0);
    // That failed use took the nonce: the request it was signed for is refused under it too.
    expect((await post('/v1/defrag', '{}', first!)).status).toBe(401);
    expect(defrags()).toBe(0);
    // The other nonce outlived the flood; it serves once.
    expect((await post('/v1/defrag', '{}', second!)).status).toBe(200);
    // The member logs the defrag before it answers, but its stdout reaches this process on
    // another pipe than the answer: wait for the line rather than race it.
    await expect.poll(defrags).toBe(1);
    expect((await post('/v1/defrag', '{}', second!)).status).toBe(401);
    expect(defrags()).toBe(1);
  });
});
