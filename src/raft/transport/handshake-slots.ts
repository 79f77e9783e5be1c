// Who gets one of the limited slots for unauthenticated peer connections.
//
// Anyone who can reach the peer port can open a socket and say nothing; holding
// every slot that way once kept a cluster leaderless while members restarted.
// So a full table does not refuse the newcomer (a member redialing after a
// restart would then wait behind the stranger's sockets); it evicts the socket
// that has earned its slot least:
//   1. sockets from addresses that are no member's come first, then
//   2. those that have not even sent a hello, then
//   3. the oldest.
// A socket from a member's address may evict anyone; one from elsewhere only
// another stranger's, and each stranger address holds at most `perAddress`
// slots. A real member completes its handshake in one round trip, so it is
// never the oldest idle socket for long. On a host where strangers share a
// member's address (loopback, NAT) only the eviction order and the short
// handshake deadline protect the members, and they suffice: a socket that
// proved nothing is always the first to go.

export interface PendingHandshake {
  /** The remote IP address, normalised (see remoteIp). */
  readonly address: string;
  /** It sent a well-formed hello naming a member, so it got further than an idle socket. */
  readonly progressed: boolean;
}

export interface HandshakeSlotLimits {
  /** Unauthenticated connections held at once. */
  readonly total: number;
  /** Unauthenticated connections held at once from one address that is not a member's. */
  readonly perAddress: number;
}

export type SlotDecision<T> = { readonly kind: 'admit' } | { readonly kind: 'evict'; readonly victim: T } | { readonly kind: 'refuse'; readonly why: string };

/**
 * Decides whether a new connection from `address` may start a handshake.
 * `pending` lists the connections still authenticating, oldest first.
 */
export function decideHandshakeSlot<T extends PendingHandshake>(
  pending: readonly T[],
  address: string,
  isMemberAddress: (address: string) => boolean,
  limits: HandshakeSlotLimits,
): SlotDecision<T> {
  const fromMember = isMemberAddress(address);
  if (!fromMember) {
    let same = 0;
    for (const p of pending) if (p.address === address) same++;
    if (same >= limits.perAddress) return { kind: 'refuse', why: `${same} unauthenticated connections from ${address} already` };
  }
  if (pending.length < limits.total) return { kind: 'admit' };
  const victim = pickVictim(pending, isMemberAddress, fromMember);
  return victim === undefined ? { kind: 'refuse', why: `${pending.length} unauthenticated connections already` } : { kind: 'evict', victim };
}

function pickVictim<T extends PendingHandshake>(pending: readonly T[], isMemberAddress: (address: string) => boolean, mayEvictMemberAddress: boolean): T | undefined {
  let best: T | undefined;
  let bestRank = Infinity;
  for (const p of pending) {
    const member = isMemberAddress(p.address);
    if (member && !mayEvictMemberAddress) continue;
    // Lower rank goes first; ties keep the earlier (older) socket.
    const rank = (member ? 2 : 0) + (p.progressed ? 1 : 0);
    if (rank < bestRank) {
      best = p;
      bestRank = rank;
    }
  }
  return best;
}

/** The IP of a socket's remote end, with IPv4-mapped IPv6 written as plain IPv4. */
export function remoteIp(address: string | undefined): string {
  if (address === undefined) return '?';
  return address.startsWith('::ffff:') && address.includes('.') ? address.slice(7) : address;
}
