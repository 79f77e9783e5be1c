// Limits per user, with authentication on: connections to a member, sessions in
// the cluster, watches across the user's sessions and requests a second, each
// refused with an error that names the user and the flag.
import { describe, expect, it } from 'vitest';
import { WireClient } from '../server/wire-client.js';
import type { VeraProcess } from '../support/vera-process.js';
import { endEachTest, securedServer } from './secured.js';

let vp: VeraProcess | null = null;
const wires: WireClient[] = [];
endEachTest(wires, () => vp, () => (vp = null));

async function attempt(p: VeraProcess, hello: Record<string, unknown>): Promise<{ w: WireClient; error?: { code: string; message: string } }> {
  const w = await WireClient.connect(p.url, 'json');
  wires.push(w);
  const r = await w.request('hello', { timeoutMs: 30_000, ...hello });
  return { w, ...(r.ok === true ? {} : { error: r.error as { code: string; message: string } }) };
}

const alice = { user: 'alice', password: 'alice-pw' };

describe('limits per user', () => {
  it('bounds connections, watches and requests a second', async () => {
    vp = await securedServer({ args: ['--connections-per-user', '2', '--watches-per-user', '2', '--requests-per-user', '20'] });
    const first = await attempt(vp, alice);
    const second = await attempt(vp, alice);
    expect(first.error ?? second.error).toBeUndefined();
    const third = await attempt(vp, alice);
    expect(third.error).toMatchObject({ code: 'RATE_LIMITED', message: expect.stringMatching(/alice already has 2 connections.*--connections-per-user 2/) });
    // Other users are not affected, and a closed connection gives its place back.
    expect((await attempt(vp, { user: 'bob', password: 'bob-pw' })).error).toBeUndefined();
    await second.w.close();
    await expect.poll(async () => (await attempt(vp!, alice)).error?.code ?? 'ok', { timeout: 5000 }).toBe('ok');

    await first.w.call('watch', { path: '/app/a' });
    await first.w.call('watch', { path: '/pub/b' });
    const over = await first.w.request('watch', { path: '/pub/c' });
    expect(over.error).toMatchObject({ code: 'QUOTA_EXCEEDED', message: expect.stringMatching(/alice already holds 2 watches.*--watches-per-user 2/) });

    // 60 pings at once against a budget of 20 a second: the excess is refused, not queued.
    const ids = Array.from({ length: 60 }, () => {
      const id = first.w.newId();
      first.w.send({ id, op: 'ping' });
      return id;
    });
    const replies = await Promise.all(ids.map(async (id) => (await first.w.waitReply(id)).value as { ok?: boolean; error?: { code: string; message: string } }));
    const limited = replies.filter((r) => r.error?.code === 'RATE_LIMITED');
    expect(limited.length).toBeGreaterThanOrEqual(20);
    expect(limited[0]!.error!.message).toMatch(/alice sends more than 20 requests a second/);
    expect(replies.filter((r) => r.ok === true).length).toBeGreaterThanOrEqual(15); // the budget, less the three watches just sent
  });

  it('computes at most one password hash at once per address, refusing a flood of guesses, and backs off the guessed user there', async () => {
    vp = await securedServer();
    const guesses = await Promise.all(Array.from({ length: 12 }, (_, i) => attempt(vp!, { user: 'alice', password: `guess-${i}` })));
    const codes = guesses.map((g) => g.error?.code);
    expect(codes.filter((c) => c === 'RATE_LIMITED').length).toBeGreaterThan(0);
    expect(codes.every((c) => c === 'RATE_LIMITED' || c === 'UNAUTHORIZED')).toBe(true);
    // One address holds one hash at a time (login-backoff.ts and Guard.startPasswordAttempt).
    // Which refusal each guess meets depends on when its connection arrives (a hash under way, or the wait
    // its earlier failures set), not on its place in the array; both send the guesser to the token.
    for (const g of guesses.filter((g) => g.error?.code === 'RATE_LIMITED')) {
      expect(g.error!.message).toMatch(/(password check from this address is under way|too many failed password attempts from this address).*use the token/);
    }
    // Twelve guesses on alice from this address: alice must now wait here, even with her password.
    expect((await attempt(vp, alice)).error).toMatchObject({ code: 'RATE_LIMITED', message: expect.stringMatching(/too many failed password attempts from this address/) });
    // The right password of another user, twelve times at once, costs one hash and lets every one in.
    const right = await Promise.all(Array.from({ length: 12 }, () => attempt(vp!, { user: 'bob', password: 'bob-pw' })));
    expect(right.map((g) => g.error?.code ?? 'ok')).toEqual(Array(12).fill('ok'));
  });

  it('bounds the sessions one user holds in the cluster', async () => {
    vp = await securedServer({ args: ['--sessions-per-user', '2'] });
    expect((await attempt(vp, alice)).error).toBeUndefined();
    expect((await attempt(vp, alice)).error).toBeUndefined();
    expect((await attempt(vp, alice)).error).toMatchObject({ code: 'QUOTA_EXCEEDED', message: expect.stringMatching(/alice already has 2 sessions open.*--sessions-per-user 2/) });
    expect((await attempt(vp, { user: 'bob', password: 'bob-pw' })).error).toBeUndefined();
  });
});
