// The cluster family on the server: the leader raises the active command version
// once every voter advertises it, and every proposal is checked against it.
import { VeraError } from '../../protocol/index.js';
import type { FrontEnd } from '../../server/front/context.js';
import type { LeaderDuty, ServerPart } from '../../server/front/family-part.js';
import { COMMAND_VERSION } from '../registry.js';
import { cluster } from './index.js';
import { versionProblem, versionToActivate } from './versions.js';

/** Servers (by front end) with a raise in flight: the next tick waits for it rather than proposing it again. */
const raising = new WeakSet<FrontEnd>();

/** Voters and learners alike: a learner applies every entry too, so it must know every command. */
function membersOf(config: { readonly voters: readonly string[]; readonly learners: readonly string[] }): string[] {
  return [...config.voters, ...config.learners];
}

export const raiseCommandVersion: LeaderDuty = {
  name: 'command-version',
  // At once when leading starts too: a new cluster whose members all run this build needs no wait.
  start: (fe) => raiseCommandVersion.tick(fe),
  tick: (fe) => {
    if (raising.has(fe)) return;
    const { id, config } = fe.node.status();
    const target = versionToActivate(membersOf(config), id, COMMAND_VERSION, fe.peerCommandVersions);
    if (target === null || target <= fe.node.stateMachine.stateOf(cluster).active) return;
    fe.logger.info({ event: 'command-version-raised', version: target }, `every member applies command version ${target}: raising the cluster's`);
    raising.add(fe);
    fe.node
      .propose({ family: 'cluster', op: 'setCommandVersion', version: target })
      .catch((err: unknown) => {
        fe.logger.debug({ event: 'command-version-raise-failed', err: String(err) }, 'raising the command version failed; will retry');
      })
      .finally(() => raising.delete(fe));
  },
};

/** Throws UNAVAILABLE when `what` needs a command version the cluster does not run yet. */
export function assertCommandVersion(fe: FrontEnd, what: string, required: number): void {
  const active = fe.node.stateMachine.stateOf(cluster).active;
  if (required <= active) return; // every proposal comes here: keep the common case cheap
  const { id, config } = fe.node.status();
  const problem = versionProblem(what, required, active, membersOf(config), id, COMMAND_VERSION, fe.peerCommandVersions);
  if (problem !== null) throw new VeraError('UNAVAILABLE', problem);
}

/**
 * Resolves once the cluster runs `version`, when every member supports it and the raise
 * is already in this leader's log (a new cluster's first leader proposes it as it starts);
 * at once otherwise, or after `timeoutMs`. Lets a request made in the moment after an
 * election get what the version brings instead of the older behaviour for good.
 */
export async function settleCommandVersion(fe: FrontEnd, version: number, timeoutMs: number): Promise<void> {
  if (fe.node.stateMachine.stateOf(cluster).active >= version) return;
  const { id, config, lastIndex } = fe.node.status();
  const target = versionToActivate(membersOf(config), id, COMMAND_VERSION, fe.peerCommandVersions);
  if (target === null || target < version) return;
  let timer: NodeJS.Timeout | undefined;
  await Promise.race([fe.node.waitApplied(lastIndex), new Promise<void>((resolve) => (timer = setTimeout(resolve, timeoutMs)))]);
  clearTimeout(timer);
}

export const server: ServerPart = {
  duties: [raiseCommandVersion],
  connection: { activeVersion: (fe) => fe.node.stateMachine.stateOf(cluster).active, settleVersion: settleCommandVersion },
};
