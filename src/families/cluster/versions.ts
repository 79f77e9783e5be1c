// Rolling upgrades: which command version the cluster may use. Every member
// advertises the version it applies in the peer handshake; the leader raises the
// replicated active version only once every member (voters and learners)
// advertises at least it, and
// refuses to propose a command above the active version. Pure functions, so the
// rules are tested without a cluster.

/** The version every member applies, or null while some member has not been heard from. */
export function versionToActivate(voters: readonly string[], selfId: string, selfVersion: number, peers: ReadonlyMap<string, number>): number | null {
  let lowest = Number.POSITIVE_INFINITY;
  for (const id of voters) {
    const version = id === selfId ? selfVersion : peers.get(id);
    if (version === undefined) return null;
    lowest = Math.min(lowest, version);
  }
  return Number.isFinite(lowest) ? lowest : null;
}

/** Why a command that needs `required` may not be proposed yet, or null when it may. */
export function versionProblem(
  what: string,
  required: number,
  active: number,
  voters: readonly string[],
  selfId: string,
  selfVersion: number,
  peers: ReadonlyMap<string, number>,
): string | null {
  if (required <= active) return null;
  const behind = voters
    .map((id) => ({ id, version: id === selfId ? selfVersion : peers.get(id) }))
    .filter((m) => m.version === undefined || m.version < required)
    .map((m) => `${m.id} (${m.version === undefined ? 'not heard from' : `version ${m.version}`})`);
  return (
    `${what} needs command version ${required}, and the cluster runs version ${active}` +
    (behind.length > 0 ? `: members behind: ${behind.join(', ')}; upgrade them first` : ': it is raised within a second once every member has said it supports it')
  );
}
