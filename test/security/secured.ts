// A single-member server with authentication on, for the security tests, and the
// clean-up every one of those test files runs after each test.
import { afterEach } from 'vitest';
import { startLeader, untilCommandVersion } from '../server/fixture.js';
import { WireClient } from '../server/wire-client.js';
import type { VeraProcess, VeraProcessOptions } from '../support/vera-process.js';

/** root (password 'root-pw'), role reader (read+watch on /app, denied /app/secret, watch on /pub), alice (reader) and bob (no role); auth on. */
export async function securedServer(opts: VeraProcessOptions = {}): Promise<VeraProcess> {
  const p = await startLeader(opts);
  try {
    await bootstrap(p);
  } catch (err) {
    // The caller never gets the process to stop: stop it here.
    await p.kill9();
    p.removeData();
    throw err;
  }
  return p;
}

async function bootstrap(p: VeraProcess): Promise<void> {
  const admin = await WireClient.connect(p.url, 'json');
  await admin.hello({ timeoutMs: 30_000 });
  // The auth ops need command version 7, which a new cluster reaches within moments of electing itself.
  await untilCommandVersion(() => admin.call('auth.userAdd', { name: 'root', password: 'root-pw' }));
  await admin.call('auth.userGrant', { name: 'root', role: 'root' });
  await admin.call('auth.roleAdd', { name: 'reader' });
  await admin.call('auth.roleGrant', { name: 'reader', prefix: '/app', perms: ['read', 'watch'] });
  await admin.call('auth.roleGrant', { name: 'reader', prefix: '/app/secret', perms: ['read', 'watch'], deny: true });
  await admin.call('auth.roleGrant', { name: 'reader', prefix: '/pub', perms: ['read', 'watch', 'write'] });
  await admin.call('auth.userAdd', { name: 'alice', password: 'alice-pw' });
  await admin.call('auth.userGrant', { name: 'alice', role: 'reader' });
  await admin.call('auth.userAdd', { name: 'bob', password: 'bob-pw' });
  await admin.call('auth.enable');
  admin.terminate();
}


/**
 * After each test: closes the connections the test opened (pushed to `wires`), then stops
 * the member it started (read through `member`), removes its data and forgets it (`forget`).
 */
export function endEachTest(wires: WireClient[], member: () => VeraProcess | null, forget: () => void): void {
  afterEach(async () => {
    for (const w of wires.splice(0)) w.terminate();
    const p = member();
    await p?.stop();
    p?.removeData();
    forget();
  });
}
