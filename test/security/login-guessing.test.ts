// Password guessing on a real server: a flood of wrong passwords from one address
// is slowed (HTTP 429 with Retry-After) without keeping a user at another address
// out, and an unknown user name costs the member the same work as a wrong password
// for a known one, so the time taken names no user.
import { request } from 'node:http';
import { afterEach, describe, expect, it } from 'vitest';
import type { VeraProcess } from '../support/vera-process.js';
import { securedServer } from './secured.js';

let vp: VeraProcess | null = null;
afterEach(async () => {
  await vp?.stop();
  vp?.removeData();
  vp = null;
});

interface Answer {
  readonly status: number;
  readonly retryAfter: string | undefined;
  readonly code: string | undefined;
  readonly ms: number;
}

/** POST /v1/auth/login from `from` (any 127.x address reaches the member's loopback port). */
function login(p: VeraProcess, user: string, password: string, from = '127.0.0.1'): Promise<Answer> {
  const body = JSON.stringify({ user, password });
  const started = performance.now();
  return new Promise((resolve, reject) => {
    const req = request(
      { host: '127.0.0.1', port: p.clientPort, path: '/v1/auth/login', method: 'POST', localAddress: from, headers: { 'content-type': 'application/json', 'content-length': Buffer.byteLength(body) } },
      (res) => {
        let text = '';
        res.setEncoding('utf8');
        res.on('data', (chunk: string) => (text += chunk));
        res.on('end', () => {
          const parsed = JSON.parse(text) as { error?: { code?: string; message?: string } };
          const retryAfter = res.headers['retry-after'];
          resolve({ status: res.statusCode ?? 0, retryAfter: typeof retryAfter === 'string' ? retryAfter : undefined, code: parsed.error?.code, ms: performance.now() - started });
        });
      },
    );
    req.on('error', reject);
    req.end(body);
  });
}

function median(values: number[]): number {
  const sorted = [...values].sort((a, b) => a - b);
  return sorted[Math.floor(sorted.length / 2)]!;
}

describe('password guessing', () => {
  it('slows a flood of guesses from one address with 429 and Retry-After, and lets a user at another address in', async () => {
    vp = await securedServer();
    const p = vp;
    let flooding = true;
    const refusals: Answer[] = [];
    // Eight guessers on root from 127.0.0.2, each sending its next guess as soon as the last is answered.
    const guessers = Array.from({ length: 8 }, async (_, i) => {
      for (let n = 0; flooding; n++) {
        const a = await login(p, 'root', `guess-${i}-${n}`, '127.0.0.2');
        if (a.status !== 401) refusals.push(a);
      }
    });
    // Until the flood is refused (polled: the refusals are what the guessers see).
    const deadline = Date.now() + 20_000;
    while (refusals.length < 20 && Date.now() < deadline) await new Promise((r) => setTimeout(r, 20));
    try {
      // alice logs in from 127.0.0.1 during the flood (the first needs a hash; the others find it remembered).
      const real: Answer[] = [];
      for (let n = 0; n < 5; n++) real.push(await login(p, 'alice', 'alice-pw', '127.0.0.1'));
      expect(real.map((a) => `${a.status} ${a.code ?? ''}`)).toEqual(['200 ', '200 ', '200 ', '200 ', '200 ']);
    } finally {
      flooding = false;
      await Promise.all(guessers);
    }
    expect(refusals.length).toBeGreaterThan(0);
    for (const a of refusals) {
      expect(a.status).toBe(429);
      expect(a.code).toBe('RATE_LIMITED');
      expect(Number(a.retryAfter)).toBeGreaterThanOrEqual(1);
    }
  }, 60_000);

  it('answers an unknown user after the same work as a known one with a wrong password', async () => {
    vp = await securedServer();
    const unknown: number[] = [];
    const known: number[] = [];
    // Alternating, each from its own address and name, below every backoff threshold.
    for (let n = 0; n < 4; n++) {
      const a = await login(vp, `nobody-${n}`, 'wrong', `127.0.1.${n + 1}`);
      const b = await login(vp, 'bob', `wrong-${n}`, `127.0.2.${n + 1}`);
      expect([a.status, b.status]).toEqual([401, 401]);
      unknown.push(a.ms);
      known.push(b.ms);
    }
    // Both spend one scrypt hash (tens of milliseconds); an unknown name used to be answered at once.
    expect(median(unknown)).toBeGreaterThan(median(known) * 0.5);
  }, 60_000);
});
