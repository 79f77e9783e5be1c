// The cluster family on the server: the leader raises the active command version
// once every member advertises it, and every proposal is checked against it
// (versionGate, which the core runs). A kit plugin: the build's version and the
// peers' advertised ones come from its host.
import { VeraError } from '../../protocol/index.js';
import type { FamilyHost, MemberStatus, Plugin, PluginDuty } from '../../kit/index.js';
import { type ClusterState, type SetCommandVersionCommand } from './index.js';
import { versionProblem, versionToActivate } from './versions.js';

type ClusterHost = FamilyHost<ClusterState, unknown, SetCommandVersionCommand>;

/** Voters and learners alike: a learner applies every entry too, so it must know every command. */
function membersOf(status: MemberStatus): string[] {
  return [...status.voters, ...status.learners];
}

/** The version every member applies, when all have been heard from; else null. */
function versionEveryoneApplies(host: ClusterHost, status: MemberStatus): number | null {
  const { build, peers } = host.member.commandVersions();
  return versionToActivate(membersOf(status), status.id, build, peers);
}

function raiseCommandVersion(host: ClusterHost): PluginDuty {
  // A raise in flight: the next tick waits for it rather than proposing it again.
  let raising = false;
  const tick = (): void => {
    if (raising) return;
    const target = versionEveryoneApplies(host, host.member.status());
    if (target === null || target <= host.state().active) return;
    host.log.info({ event: 'command-version-raised', version: target }, `every member applies command version ${target}: raising the cluster's`);
    raising = true;
    host
      .proposeOutcome({ op: 'setCommandVersion', version: target })
      .catch((err: unknown) => {
        host.log.debug({ event: 'command-version-raise-failed', err: String(err) }, 'raising the command version failed; will retry');
      })
      .finally(() => (raising = false));
  };
  // At once when leading starts too: a new cluster whose members all run this build needs no wait.
  return { name: 'command-version', periodMs: 1000, start: tick, tick };
}

/** Throws UNAVAILABLE when `what` needs a command version the cluster does not run yet. */
function assertCommandVersion(host: ClusterHost, what: string, required: number): void {
  const active = host.state().active;
  if (required <= active) return; // every proposal comes here: keep the common case cheap
  const status = host.member.status();
  const { build, peers } = host.member.commandVersions();
  const problem = versionProblem(what, required, active, membersOf(status), status.id, build, peers);
  if (problem !== null) throw new VeraError('UNAVAILABLE', problem);
}

/**
 * Resolves once the cluster runs `version`, when every member supports it and the raise
 * is already in this leader's log (a new cluster's first leader proposes it as it starts);
 * at once otherwise, or after `timeoutMs`. Lets a request made in the moment after an
 * election get what the version brings instead of the older behaviour for good.
 */
async function settleCommandVersion(host: ClusterHost, version: number, timeoutMs: number): Promise<void> {
  if (host.state().active >= version) return;
  const status = host.member.status();
  const target = versionEveryoneApplies(host, status);
  if (target === null || target < version) return;
  let timer: NodeJS.Timeout | undefined;
  await Promise.race([host.member.waitApplied(status.lastIndex), new Promise<void>((resolve) => (timer = setTimeout(resolve, timeoutMs)))]);
  clearTimeout(timer);
}

export const plugin: Plugin<Record<string, never>, ClusterState, unknown, SetCommandVersionCommand> = {
  ops: {},
  needs: {},
  touchesNoLists: 'the cluster family answers no client op',
  createServer: (host) => ({
    handlers: {},
    duties: [raiseCommandVersion(host.leaderOnly)],
    versionGate: (what, required) => assertCommandVersion(host, what, required),
    connection: { activeVersion: () => host.state().active, settleVersion: (version, timeoutMs) => settleCommandVersion(host, version, timeoutMs) },
  }),
};
