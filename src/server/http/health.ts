// Liveness and readiness of a member, as Kubernetes probes ask them.
//
// Live: the process answers HTTP. Ready: it serves, and a request to any family
// would not be refused for want of a command version. Right after a fresh start
// the member knows a leader before the cluster's command version has been
// raised to what every member applies, and family ops answer UNAVAILABLE
// ("needs command version N") for that moment: such a member is not ready yet.
// A member whose build is ahead of a member still on an older one (a rolling
// upgrade) is ready: the cluster runs the version every member applies, which
// is all it can run until the last member is upgraded, and calling that
// unready would stall the rollout that fixes it.
import { versionToActivate } from '../../families/cluster/versions.js';

export interface ReadinessInputs {
  /** The leader this member knows, or null. */
  readonly leader: string | null;
  /** The command version the cluster runs (replicated). */
  readonly active: number;
  /** The command version this member's build applies. */
  readonly applies: number;
  readonly selfId: string;
  /** Voters and learners: every member that applies entries. */
  readonly members: readonly string[];
  /** The command version each peer advertised in its handshake. */
  readonly peers: ReadonlyMap<string, number>;
}

export type Readiness = { readonly ready: true } | { readonly ready: false; readonly reason: string };

export function readiness(i: ReadinessInputs): Readiness {
  if (i.leader === null) return { ready: false, reason: 'no leader' };
  if (i.active >= i.applies) return { ready: true };
  const reachable = versionToActivate(i.members, i.selfId, i.applies, i.peers);
  // Every member is heard from and none applies more than the cluster runs: nothing to wait for.
  if (reachable !== null && reachable <= i.active) return { ready: true };
  const unheard = i.members.filter((m) => m !== i.selfId && !i.peers.has(m));
  return {
    ready: false,
    reason:
      `the cluster runs command version ${i.active} and this member applies ${i.applies}: ` +
      (unheard.length > 0 ? `waiting to hear from ${unheard.join(', ')}` : `version ${reachable} is being raised`),
  };
}
