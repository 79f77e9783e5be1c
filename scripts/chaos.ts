// The chaos runner as a command: random fault schedules on real clusters until
// the time is up, or one schedule replayed by its seed (test/cluster/chaos.ts).
//
// Run: npm run test:chaos -- --minutes 30 [--nodes 3|5] [--seed S] [--keep-going]
//
// Exits 0 when every schedule passed, 1 when one failed (or the runner threw),
// 2 on bad arguments. It exits explicitly once stdout has drained: every server
// the runner started is stopped by then, but Node 20 left to end by itself
// sometimes never did. Its teardown (FreeEnvironment -> CleanupHandles, seen in
// gdb) spins at 100% CPU waiting for the close of a TCP handle whose socket was
// destroyed before its connect settled (the fault proxy's dials to killed
// members); two runs in three hung that way when tried again on 2026-11-26.
import { runChaos } from '../test/cluster/chaos.js';

async function exitCodeOf(argv: readonly string[]): Promise<number> {
  try {
    return await runChaos(argv);
  } catch (err) {
    console.error(err);
    return 1;
  }
}

const code = await exitCodeOf(process.argv.slice(2));
await new Promise<void>((drained) => process.stdout.write('', () => drained()));
process.exit(code);
