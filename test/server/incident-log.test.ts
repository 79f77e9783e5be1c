// What a member's log says about access: with authentication off (the default on loopback), an
// administrator's op that succeeded is an info line 'admin-act', never a warning that
// authentication failed, and a real failure is still the warning it was.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { incidentLogLine } from '../../src/server/guard/access.js';
import type { VeraProcess } from '../support/vera-process.js';
import { openSession, startLeader, type Session } from './fixture.js';

const PINO_INFO = 30;

let vp: VeraProcess;
let session: Session;
beforeAll(async () => {
  vp = await startLeader();
  session = await openSession(vp, 'json');
});
afterAll(async () => {
  session?.client.terminate();
  await vp?.stop();
  vp?.removeData();
});

describe('the log line of an access incident', () => {
  it('an admin op that succeeded with authentication off is logged at info as an admin act, not as a failed authentication', async () => {
    await session.client.call('auth.userAdd', { name: 'newcomer', password: 'first-hour-pw' });
    const line = await vp.waitForLog((l) => l.event === 'admin-act');
    expect(line.level).toBe(PINO_INFO);
    expect(line.msg).toBe("an administrator's act succeeded");
    expect(String(line.what)).toContain('auth.userAdd');
    expect(vp.logs.filter((l) => l.event === 'authentication-failed' || /authentication failed/.test(l.msg ?? ''))).toEqual([]);
  });

  it('keeps failures and denials as warnings', () => {
    expect(incidentLogLine('auth-failed')).toEqual({ level: 'warn', event: 'authentication-failed', message: 'authentication failed' });
    expect(incidentLogLine('denied')).toEqual({ level: 'warn', event: 'permission-denied', message: 'a request was denied' });
    expect(incidentLogLine('admin').level).toBe('info');
  });
});
