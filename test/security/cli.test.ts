// The security verbs of `vera` against a real server: the bootstrap of a root
// user and turning authentication on, login for a token, a role and a user
// made from the command line, and what commands without credentials get.
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { main } from '../../src/cli/main.js';
import { captureIO } from '../client/cli-io.js';
import { startLeader, untilCommandVersion } from '../server/fixture.js';
import type { VeraProcess } from '../support/vera-process.js';

let vp: VeraProcess | null = null;
let dir = '';
afterEach(async () => {
  await vp?.stop();
  vp?.removeData();
  vp = null;
  if (dir !== '') rmSync(dir, { recursive: true, force: true });
});

async function vera(argv: string[], env: Record<string, string> = {}): Promise<{ code: number; out: string; err: string }> {
  const io = captureIO({ env: { VERA_SERVER: vp!.url, ...env } });
  const code = await main(argv, io);
  return { code, out: io.out(), err: io.err() };
}

describe('vera auth, user, role and login', () => {
  it('bootstraps root, turns authentication on, and acts by token or password', async () => {
    vp = await startLeader();
    dir = mkdtempSync(join(tmpdir(), 'vera-cli-auth-'));
    const rootPw = join(dir, 'root.pw');
    writeFileSync(rootPw, 'root-secret\n');
    await untilCommandVersion(async () => {
      const r = await vera(['user', 'add', 'root', '--new-password-file', rootPw]);
      if (r.code !== 0) throw new Error(r.err);
    });
    expect((await vera(['auth', 'enable'])).err).toMatch(/needs a user root with role root/);
    expect((await vera(['user', 'grant', 'root', 'root'])).code).toBe(0);
    expect(await vera(['auth', 'enable'])).toMatchObject({ code: 0, out: expect.stringMatching(/authentication is on/) });

    // Now nothing without credentials, and a wrong password is refused.
    expect(await vera(['push', '/app/x', '1', '--persistent'])).toMatchObject({ code: 1, err: expect.stringMatching(/UNAUTHORIZED/) });
    expect(await vera(['get', '/app/x', '--user', 'root'], { VERA_PASSWORD: 'wrong' })).toMatchObject({ code: 1, err: expect.stringMatching(/UNAUTHORIZED: wrong user name or password/) });
    expect(await vera(['get', '/app/x', '--user', 'root'])).toMatchObject({ code: 2, err: expect.stringMatching(/needs a password/) });

    const login = await vera(['login', '--user', 'root', '--password-file', rootPw]);
    expect(login.code).toBe(0);
    const token = login.out.trim();
    expect(token).toMatch(/^vt1\./);
    expect((await vera(['push', '/app/x', '"v"', '--persistent', '--token', token])).code).toBe(0);
    expect(await vera(['auth', 'status'], { VERA_TOKEN: token })).toMatchObject({ code: 0, out: 'authentication is on; you are root\n' });

    // A reader role and a user holding it.
    const as = { VERA_TOKEN: token };
    expect((await vera(['role', 'add', 'reader'], as)).code).toBe(0);
    expect(await vera(['role', 'grant', 'reader', 'app', 'read'], as)).toMatchObject({ code: 2, err: expect.stringMatching(/did you mean \/app/) });
    expect((await vera(['role', 'grant', 'reader', '/app', 'read,watch'], as)).code).toBe(0);
    expect((await vera(['role', 'grant', 'reader', '/app/secret', 'read', '--deny'], as)).code).toBe(0);
    expect((await vera(['user', 'add', 'ann'], { ...as, VERA_NEW_PASSWORD: 'ann-pw' })).code).toBe(0);
    expect((await vera(['user', 'grant', 'ann', 'reader'], as)).code).toBe(0);
    expect((await vera(['role', 'ls'], as)).out).toContain('reader\n  allow read,watch on /app\n  deny  read on /app/secret');
    expect((await vera(['user', 'ls'], as)).out).toContain('ann  roles: reader');

    const ann = { VERA_USER: 'ann', VERA_PASSWORD: 'ann-pw' };
    expect(await vera(['get', '/app/x'], ann)).toMatchObject({ code: 0, out: expect.stringMatching(/1 item/) });
    expect(await vera(['push', '/app/x', '2'], ann)).toMatchObject({ code: 1, err: expect.stringMatching(/FORBIDDEN: user ann may not write \/app\/x/) });
    expect(await vera(['user', 'ls'], ann)).toMatchObject({ code: 1, err: expect.stringMatching(/FORBIDDEN/) });
  });
});
