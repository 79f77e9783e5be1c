// Password guessing on a real server: a flood of wrong passwords from one address
// is slowed (HTTP 429 with Retry-After) without keeping a user at another address
// out, and an unknown user name costs the member the same work as a wrong password
// for a known one, so the time taken names no user.
import { readFileSync } from 'node:fs';
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
}

/** POST /v1/auth/login from `from` (any 127.x address reaches the member's loopback port). */
function login(p: VeraProcess, user: string, password: string, from = '127.0.0.1'): Promise<Answer> {
  const body = JSON.stringify({ user, password });
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
          resolve({ status: res.statusCode ?? 0, retryAfter: typeof retryAfter === 'string' ? retryAfter : undefined, code: parsed.error?.code });
        });
      },
    );
    req.on('error', reject);
    req.end(body);
  });
}

/**
 * CPU time the member's process has used, in clock ticks (user + system, every thread: the hash runs on
 * libuv's pool). The work a login costs, which, unlike the time to its answer, a busy machine does not inflate.
 */
function cpuTicks(p: VeraProcess): number {
  const stat = readFileSync(`/proc/${p.proc.pid}/stat`, 'utf8');
  const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' '); // after "pid (comm) ": state is field 3
  return Number(fields[11]) + Number(fields[12]); // utime and stime, fields 14 and 15
}

const sum = (values: number[]): number => values.reduce((a, b) => a + b, 0);

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
    const p = (vp = await securedServer());
    const unknown: number[] = [];
    const known: number[] = [];
    const work = async (user: string, password: string, from: string): Promise<number> => {
      const before = cpuTicks(p);
      expect((await login(p, user, password, from)).status).toBe(401);
      return cpuTicks(p) - before;
    };
    // Alternating, each from its own address and name, below every backoff threshold.
    for (let n = 0; n < 4; n++) {
      unknown.push(await work(`nobody-${n}`, 'wrong', `127.0.1.${n + 1}`));
      known.push(await work('bob', `wrong-${n}`, `127.0.2.${n + 1}`));
    }
    // Both spend one scrypt hash (tens of milliseconds of CPU each, so several ticks); an unknown name used
    // to be answered at once. Measured as the member's CPU, not as the time to the answer, which on a
    // loaded machine is mostly waiting for a core.
    expect(sum(known)).toBeGreaterThanOrEqual(4);
    expect(sum(unknown)).toBeGreaterThan(sum(known) * 0.5);
  }, 60_000);
});
