// What a session's end costs when it owns many ephemeral items: one session pushes N
// ephemeral items over 100 lists, then says bye; the bye is answered once the closeSession
// entry (deleting every item, one entry) is committed and applied on the leader. Prints the
// bye's time and, with --profile, a CPU profile summary of the leader and a follower.
//   tsx bench/lists/session-end-probe.ts [--items 5000] [--rounds 3] [--profile DIR]
import { mkdirSync, mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { parseArgs } from 'node:util';
import { connect } from '../../src/client/index.js';
import { profileWhile, summarizeProfile } from '../lib/cpu-profile.js';
import { LOOPBACK } from '../lib/net.js';
import { VeraCluster } from '../systems/vera.js';

const { values: args } = parseArgs({ options: { items: { type: 'string', default: '5000' }, rounds: { type: 'string', default: '3' }, profile: { type: 'string' } } });
const ITEMS = Number(args.items);
const log = (m: string): void => console.log(`[session-end ${new Date().toISOString().slice(11, 19)}] ${m}`);

const cluster = new VeraCluster({ logDir: mkdtempSync(join(tmpdir(), 'session-end-')), inspector: args.profile !== undefined });
await cluster.start();
try {
  for (let round = 0; round < Number(args.rounds); round++) {
    const leader = await cluster.leader();
    const port = cluster.members().find((m) => m.id === leader)!.clientPort;
    const client = await connect(`ws://${LOOPBACK}:${port}`, { requestTimeoutMs: 60_000 });
    let next = 0;
    await Promise.all(Array.from({ length: 16 }, async () => {
      for (let n = next++; n < ITEMS; n = next++) await client.push(`/end/l${n % 100}`, { n }, { watch: false });
    }));
    const bye = async (): Promise<void> => {
      const t = performance.now();
      await client.close();
      log(`round ${round}: ${ITEMS} items, bye answered in ${(performance.now() - t).toFixed(0)} ms`);
    };
    if (args.profile !== undefined && round === Number(args.rounds) - 1) {
      const follower = cluster.members().find((m) => m.id !== leader)!.id;
      const urls = [cluster.inspectorUrl(leader)!, cluster.inspectorUrl(follower)!];
      let followerProfile: Awaited<ReturnType<typeof profileWhile>> | null = null;
      const leaderProfile = await profileWhile(urls[0]!, async () => {
        followerProfile = await profileWhile(urls[1]!, async () => {
          await bye();
          await cluster.settled();
        });
      });
      mkdirSync(args.profile, { recursive: true });
      for (const [name, p] of [['leader', leaderProfile], ['follower', followerProfile!]] as const) {
        writeFileSync(join(args.profile, `${name}.cpuprofile`), JSON.stringify(p));
        const s = summarizeProfile(p, 25);
        log(`${name}: busy ${s.busyMs.toFixed(0)} of ${s.totalMs.toFixed(0)} ms: ${s.topFunctions.map((e) => `${e.name} ${e.selfMs.toFixed(0)}`).join(', ')}`);
      }
    } else {
      await bye();
      await cluster.settled();
    }
  }
} finally {
  await cluster.stop();
}
