// Membership as operators use it: the member directory (who is in the cluster and
// where each member listens, kept in step with the replicated address book), and
// the admin endpoints on the client port that change it:
//   GET  /v1/members                 members, roles, addresses, replication progress
//   POST /v1/members                 {action:'add', id, peer, client} | {action:'promote', id} | {action:'remove', id}
//   POST /v1/leader/transfer         {to}
// Changes go through the Raft core one at a time (single-server changes, as in
// etcd-io/raft); the endpoints add the guards an operator needs: a learner is
// promoted only once it has caught up, the last voter is never removed, requests
// on one leader queue behind each other and are checked against the configuration
// the one before left, and a change the core still has pending (say, right after
// an election) answers UNAVAILABLE with retryAfterMs.

import { createHash, timingSafeEqual } from 'node:crypto';
import type { IncomingMessage, ServerResponse } from 'node:http';
import type { Logger } from 'pino';
import { MEMBER_ID_PATTERN, type MemberAddress, type MemberChange } from '../../raft/config.js';
import type { PeerAddress } from '../../raft/transport/peer-transport.js';
import type { NodeId, SoftState, Status } from '../../raft/types.js';
import { bookOf, type Member } from '../../statemachine/index.js';
import { VeraError, type ErrorCode } from '../../protocol/index.js';
import { parseJsonObject, readBody } from '../http/http-body.js';
import type { OperatorChallenges } from './operator-challenges.js';
import { operatorMac, parseOperatorAuthorization } from './operator-auth.js';

// ---------------------------------------------------------------- the directory

/** A member as the startup flags describe it (`--peers`). */
export interface ContactSpec {
  readonly id: NodeId;
  readonly host: string;
  readonly peerPort: number;
  readonly clientPort: number;
}

/** What the directory drives: the peer transport (absent without a cluster secret). */
export interface PeerLinks {
  peers(): PeerAddress[];
  addPeer(peer: PeerAddress): void;
  removePeer(id: NodeId): Promise<void>;
}

/**
 * Who is in the cluster and where each member listens, from the replicated
 * address book. Until this member appears in the book (it is joining), the
 * `--peers` list given at start fills in, so it can answer the leader that adds it.
 */
export class MemberDirectory {
  private book: readonly Member[] = [];
  /** Serializes transport updates: a removal must finish before a re-add of the same id. */
  private syncing: Promise<void> = Promise.resolve();

  constructor(
    private readonly selfId: NodeId,
    private readonly contacts: readonly ContactSpec[],
    /** This member's own client URL (the port it really bound). */
    private readonly selfUrl: () => string,
    private readonly links: PeerLinks | null,
    /** Called for every member that left the book (its incarnation may be forgotten). */
    private readonly onRemoved: (id: NodeId) => void,
    private readonly logger: Logger,
    /** Whether client URLs are wss:// (the client ports serve TLS). */
    private readonly secureClients = false,
  ) {}

  members(): readonly Member[] {
    return this.book;
  }

  /** Where `id` listens: the book's address, else (a member recorded without one, or not yet known) the start flags'. */
  addressOf(id: NodeId): MemberAddress | null {
    const line = this.book.find((m) => m.id === id);
    if (line !== undefined && line.address !== null) return line.address;
    const contact = this.contacts.find((c) => c.id === id && c.peerPort !== 0 && c.clientPort !== 0);
    return contact === undefined ? null : { host: contact.host, peerPort: contact.peerPort, clientPort: contact.clientPort };
  }

  /** The client URL (`ws://host:port`, or `wss://` with TLS) of a member, or null if unknown. */
  clientUrl(id: NodeId): string | null {
    if (id === this.selfId) return this.selfUrl();
    const address = this.addressOf(id);
    return address === null ? null : wsUrl(address.host, address.clientPort, this.secureClients);
  }

  /**
   * The client URLs of the members that accept sessions (hello's `members`). Today only the
   * leader does (followers answer hello NOT_LEADER), so it is the leader's alone, or none while
   * no leader is known; step 8b of docs/scale-out.md makes it every member of the book.
   */
  servingUrls(leader: NodeId | null): string[] {
    const url = leader === null ? null : this.advertisedUrl(leader);
    return url === null ? [] : [url];
  }

  /**
   * A member's client URL as others can dial it: the book's address (the `--peers` host with
   * its client port), as followers name it too; this member's own bind address only while the
   * book has none for it. Never a wildcard host (0.0.0.0, ::), which a client would take for
   * its own machine: null then.
   */
  advertisedUrl(id: NodeId): string | null {
    const address = this.addressOf(id);
    if (address !== null) return isWildcardHost(address.host) ? null : wsUrl(address.host, address.clientPort, this.secureClients);
    if (id !== this.selfId) return null;
    const own = this.selfUrl();
    return isWildcardHost(new URL(own).hostname) ? null : own;
  }

  /** Adopt a new book: update the peer links, and report members that left. Resolves when the links are updated. */
  update(book: readonly Member[]): Promise<void> {
    const before = new Map(this.book.map((m) => [m.id, m.voter]));
    this.book = book;
    const now = new Map(book.map((m) => [m.id, m.voter]));
    for (const id of before.keys()) {
      if (now.has(id)) continue;
      if (id === this.selfId) this.logger.warn({ event: 'member-removed-self' }, 'this member was removed from the cluster; stop it');
      this.onRemoved(id);
    }
    // A voter that is a learner now was removed and added again (members are never demoted), both
    // perhaps applied in one batch, so this book is the first to show it: it may have a new data directory.
    for (const [id, voter] of now) if (id !== this.selfId && !voter && before.get(id) === true) this.onRemoved(id);
    const desired = this.desiredPeers();
    this.syncing = this.syncing.then(() => this.syncLinks(desired)).catch((err: unknown) => {
      this.logger.error({ event: 'peer-sync-failed', err: String(err) }, 'could not update the peer links');
    });
    return this.syncing;
  }

  /** Every member this node should dial. */
  desiredPeers(): PeerAddress[] {
    const out = new Map<NodeId, PeerAddress>();
    if (!this.book.some((m) => m.id === this.selfId)) {
      for (const c of this.contacts) if (c.id !== this.selfId) out.set(c.id, { id: c.id, host: c.host, port: c.peerPort });
    }
    for (const m of this.book) {
      if (m.id === this.selfId) continue;
      const address = this.addressOf(m.id);
      if (address === null) this.logger.warn({ event: 'peer-address-unknown', peer: m.id }, `no address is known for member ${m.id}; it cannot be reached`);
      else out.set(m.id, { id: m.id, host: address.host, port: address.peerPort });
    }
    return [...out.values()];
  }

  private async syncLinks(desired: readonly PeerAddress[]): Promise<void> {
    const links = this.links;
    if (links === null) return;
    const current = new Map(links.peers().map((p) => [p.id, p]));
    const wanted = new Map(desired.map((p) => [p.id, p]));
    for (const [id, peer] of current) {
      const want = wanted.get(id);
      if (want === undefined || want.host !== peer.host || want.port !== peer.port) {
        await links.removePeer(id);
        current.delete(id);
        this.logger.info({ event: 'peer-removed', peer: id }, `stopped talking to ${id}`);
      }
    }
    for (const [id, peer] of wanted) {
      if (current.has(id)) continue;
      links.addPeer(peer);
      this.logger.info({ event: 'peer-added', peer: id, host: peer.host, port: peer.port }, `talking to ${id} at ${peer.host}:${peer.port}`);
    }
  }
}

/**
 * How the `--peers` list given at start differs from the replicated address book,
 * one sentence per difference (empty when they agree, or when there is no book
 * yet to disagree with: a new store, or a member still joining). The book is what
 * the member uses, so a stale `--peers` list silently changes nothing but what
 * the operator believes: say so.
 */
export function peersFlagDisagreements(selfId: NodeId, contacts: readonly ContactSpec[], book: readonly Member[]): string[] {
  if (!book.some((m) => m.id === selfId)) return [];
  const out: string[] = [];
  const address = (a: MemberAddress): string => `${a.host}:${a.peerPort}/${a.clientPort}`;
  for (const c of contacts) {
    const line = book.find((m) => m.id === c.id);
    if (line === undefined) {
      out.push(`--peers lists ${c.id}, which is not a member (the address book has ${book.map((m) => m.id).join(', ')})`);
    } else if (line.address !== null && c.peerPort !== 0 && c.clientPort !== 0 && address(line.address) !== address({ host: c.host, peerPort: c.peerPort, clientPort: c.clientPort })) {
      out.push(`--peers gives ${c.id} as ${address({ host: c.host, peerPort: c.peerPort, clientPort: c.clientPort })}, the address book as ${address(line.address)}`);
    }
  }
  for (const m of book) {
    if (!contacts.some((c) => c.id === m.id)) out.push(`member ${m.id} is missing from --peers`);
  }
  return out;
}

/** A host that means "every interface" when bound, and this machine when dialled. */
export function isWildcardHost(host: string): boolean {
  const bare = host.startsWith('[') && host.endsWith(']') ? host.slice(1, -1) : host;
  return bare === '' || bare === '0.0.0.0' || /^[0:]+$/.test(bare);
}

/** A client URL; IPv6 hosts need brackets. */
export function wsUrl(host: string, port: number, secure = false): string {
  const scheme = secure ? 'wss' : 'ws';
  return host.includes(':') ? `${scheme}://[${host}]:${port}` : `${scheme}://${host}:${port}`;
}

// ---------------------------------------------------------------- waiting for a leader

/** Lets a request wait for a role change (a leadership transfer) without polling. */
export class LeaderWatch {
  private waiters = new Set<{ until: (s: SoftState) => boolean; done: (ok: boolean) => void }>();

  notify(state: SoftState): void {
    for (const w of [...this.waiters]) if (w.until(state)) w.done(true);
  }

  /** Resolves true once a soft state satisfies `until`, false after `timeoutMs`. */
  waitFor(until: (s: SoftState) => boolean, timeoutMs: number): Promise<boolean> {
    return new Promise((resolve) => {
      const waiter = {
        until,
        done: (ok: boolean) => {
          clearTimeout(timer);
          this.waiters.delete(waiter);
          resolve(ok);
        },
      };
      const timer = setTimeout(() => waiter.done(false), timeoutMs);
      this.waiters.add(waiter);
    });
  }
}

// ---------------------------------------------------------------- the admin endpoints

/** What the endpoints need of the member (VeraNode provides it). */
export interface MembershipNode {
  status(): Status;
  /** The replicated address book as of the applied index. */
  members(): readonly Member[];
  /** Resolves once the change is committed and applied here. */
  proposeConfigChange(change: MemberChange): Promise<{ readonly index: number }>;
  transferLeadership(to: NodeId): boolean;
  /** Resolves once the state machine (and with it the configuration) has applied `index`. */
  waitApplied(index: number): Promise<void>;
}

/** One membership change at a time per member, so each is checked against the one before it. */
const lanes = new WeakMap<MembershipNode, Promise<unknown>>();

function oneAtATime<T>(node: MembershipNode, work: () => Promise<T>): Promise<T> {
  const run = (lanes.get(node) ?? Promise.resolve()).then(work);
  lanes.set(node, run.catch(() => undefined));
  return run;
}

export interface AdminContext {
  readonly node: MembershipNode;
  readonly directory: MemberDirectory;
  readonly leaderWatch: LeaderWatch;
  /** The cluster secret; without one the endpoints answer loopback clients only. */
  readonly secret: string | null;
  /** Whether this member has a peer transport, i.e. can have other members at all. */
  readonly canGrow: boolean;
  /** A promotion needs the learner within this many entries of the leader's last index. */
  readonly promoteMaxLag: number;
  /** How long a leadership transfer may take before the request gives up. */
  readonly transferTimeoutMs: number;
  /** Maps anything thrown by a proposal onto a protocol error (NOT_LEADER with the leader's URL, ...). */
  readonly toError: (err: unknown) => VeraError;
  readonly logger: Logger;
  /** Compacts this member's whole db (POST /v1/defrag). */
  readonly defrag: () => Promise<void>;
  /**
   * Admits an operator request or throws UNAUTHORIZED / FORBIDDEN naming `what`: proof of the
   * cluster secret (authorizeOperator), or, with authentication on, a user with admin on 'cluster'.
   */
  readonly authorize: (req: IncomingMessage, what: string, body: Uint8Array) => Promise<void>;
  /** The nonces GET /v1/challenge hands out, which a Vera-HMAC answer uses up. */
  readonly challenges: OperatorChallenges;
}

export const ADMIN_PATHS: ReadonlySet<string> = new Set(['/v1/members', '/v1/leader/transfer', '/v1/defrag']);
export const DEFAULT_PROMOTE_MAX_LAG = 100;

export const HTTP_STATUS: Readonly<Partial<Record<ErrorCode, number>>> = {
  BAD_REQUEST: 400,
  UNAUTHORIZED: 401,
  FORBIDDEN: 403,
  NOT_FOUND: 404,
  CONFLICT: 409,
  TOO_LARGE: 413,
  NOT_LEADER: 421,
  NO_LEADER: 503,
  UNAVAILABLE: 503,
  TIMEOUT: 504,
};

/** One member as GET /v1/members shows it. */
export interface MemberView {
  readonly id: NodeId;
  readonly role: 'voter' | 'learner';
  readonly peer: string | null;
  readonly client: string | null;
  readonly clientUrl: string | null;
  /** Leader only: the highest index known to be on that member. */
  readonly match?: number;
  /** Leader only: entries it is behind the leader's last index. */
  readonly lag?: number;
}

/** Serves an admin endpoint (`url.pathname` in ADMIN_PATHS). */
export function handleAdmin(ctx: AdminContext, req: IncomingMessage, res: ServerResponse, pathname: string): void {
  void serve(ctx, req, pathname).then(
    (body) => sendJson(res, 200, body),
    (err: unknown) => {
      const e = err instanceof VeraError ? err : ctx.toError(err);
      sendJson(res, HTTP_STATUS[e.code] ?? 500, { error: { code: e.code, message: e.message, ...e.hints } });
    },
  );
}

async function serve(ctx: AdminContext, req: IncomingMessage, pathname: string): Promise<object> {
  // The body is read before the check: a challenge response covers it (operator-auth.ts).
  const raw = req.method === 'POST' ? await readBody(req) : new Uint8Array(0);
  await ctx.authorize(req, 'membership endpoints', raw);
  if (pathname === '/v1/members' && (req.method === 'GET' || req.method === 'HEAD')) return listMembers(ctx);
  if (req.method !== 'POST') throw new VeraError('BAD_REQUEST', `method ${req.method ?? '?'} is not allowed on ${pathname}`);
  const body = parseJsonObject(raw);
  if (pathname === '/v1/leader/transfer') return transfer(ctx, body);
  if (pathname === '/v1/defrag') return defrag(ctx);
  return changeMembers(ctx, body);
}

/** This member only: LevelDB rewrites its files in its background thread; the member serves meanwhile. */
async function defrag(ctx: AdminContext): Promise<object> {
  const started = performance.now();
  await ctx.defrag();
  const ms = Math.round(performance.now() - started);
  ctx.logger.info({ event: 'defrag', ms }, `compacted the db in ${ms} ms`);
  return { defragmented: true, ms };
}

/**
 * The check for what only an operator may do over HTTP (membership, defrag, backups):
 * with a cluster secret, the caller must send it as a bearer token; without one, only
 * loopback callers are answered. Throws UNAUTHORIZED or FORBIDDEN naming `what`.
 */
export function authorizeOperator(secret: string | null, challenges: OperatorChallenges, req: IncomingMessage, what: string, body: Uint8Array): void {
  if (secret === null) {
    if (!isLoopback(req.socket.remoteAddress)) {
      throw new VeraError('FORBIDDEN', `this member runs without a cluster secret, so ${what} answer only on loopback`);
    }
    return;
  }
  const header = req.headers.authorization;
  const hmac = parseOperatorAuthorization(header);
  if (hmac !== null) {
    const path = new URL(req.url ?? '/', 'http://x').pathname;
    // Taken first: a nonce serves one request, answered right or wrong.
    const fresh = challenges.take(hmac.nonce);
    if (!sameSecret(hmac.mac, operatorMac(secret, hmac.nonce, req.method ?? 'GET', path, body)) || !fresh) {
      throw new VeraError(
        'UNAUTHORIZED',
        `${what}: the challenge response is wrong, stale or used already (GET /v1/challenge for a fresh one; the MAC covers nonce, method, path and the SHA-256 of the body)`,
      );
    }
    return;
  }
  const given = /^Bearer\s+(.+)$/i.exec(header ?? '')?.[1];
  if (given === undefined || !sameSecret(given, secret)) {
    throw new VeraError('UNAUTHORIZED', `${what} need proof of the cluster secret: a challenge response (GET /v1/challenge; vera member and vera snapshot save do this), or "Authorization: Bearer <secret>" from loopback`);
  }
  // The secret itself crosses the network only where there is no network.
  if (!isLoopback(req.socket.remoteAddress)) {
    throw new VeraError('UNAUTHORIZED', `${what}: the cluster secret was sent in the clear from ${req.socket.remoteAddress ?? 'a remote address'}; answer a challenge instead (GET /v1/challenge), and change the secret if this crossed a network you do not trust`);
  }
}

/** GET /v1/challenge: a fresh nonce to answer with a Vera-HMAC Authorization header, or RATE_LIMITED (see operator-challenges.ts). */
export function issueChallenge(challenges: OperatorChallenges, remote: string): { readonly nonce: string; readonly scheme: string; readonly expiresInMs: number } {
  const issued = challenges.issue(remote);
  if ('refused' in issued) throw new VeraError('RATE_LIMITED', issued.refused, { retryAfterMs: issued.retryAfterMs });
  return { nonce: issued.nonce, scheme: 'Vera-HMAC', expiresInMs: issued.expiresInMs };
}

/** Constant-time comparison; hashing first makes the lengths equal. */
export function sameSecret(a: string, b: string): boolean {
  const ha = createHash('sha256').update(a).digest();
  const hb = createHash('sha256').update(b).digest();
  return timingSafeEqual(ha, hb);
}

export function isLoopback(address: string | undefined): boolean {
  if (address === undefined) return false;
  const v4 = address.startsWith('::ffff:') ? address.slice(7) : address;
  return v4.startsWith('127.') || address === '::1';
}

function listMembers(ctx: AdminContext): object {
  const st = ctx.node.status();
  const leading = st.role === 'leader';
  const views = (ids: readonly NodeId[], role: MemberView['role']): MemberView[] =>
    ids.map((id) => {
      const address = ctx.directory.addressOf(id);
      const view: MemberView = {
        id,
        role,
        peer: address === null ? null : hostPort(address.host, address.peerPort),
        client: address === null ? null : hostPort(address.host, address.clientPort),
        clientUrl: ctx.directory.clientUrl(id),
      };
      if (!leading) return view;
      const match = id === st.id ? st.lastIndex : (st.progress[id]?.match ?? 0);
      return { ...view, match, lag: Math.max(0, st.lastIndex - match) };
    });
  return {
    id: st.id,
    role: st.role,
    term: st.term,
    leader: st.leader,
    leaderUrl: st.leader === null ? null : ctx.directory.clientUrl(st.leader),
    lastIndex: st.lastIndex,
    members: [...views(st.config.voters, 'voter'), ...views(st.config.learners, 'learner')].sort((a, b) => (a.id < b.id ? -1 : a.id > b.id ? 1 : 0)),
  };
}

async function changeMembers(ctx: AdminContext, body: Record<string, unknown>): Promise<object> {
  const { action } = body;
  if (action !== 'add' && action !== 'promote' && action !== 'remove') {
    throw new VeraError('BAD_REQUEST', `action must be "add", "promote" or "remove", got ${JSON.stringify(action)}`);
  }
  const id = memberId(body.id, 'id');
  const allowed = action === 'add' ? ['action', 'id', 'peer', 'client'] : ['action', 'id'];
  for (const key of Object.keys(body)) if (!allowed.includes(key)) throw new VeraError('BAD_REQUEST', `unexpected field ${JSON.stringify(key)} for ${action}`);
  requireLeader(ctx);
  return oneAtATime(ctx.node, async () => {
    // Entries handed out for applying change the core's configuration only once all of
    // them are applied; check against the configuration that includes every one of them.
    await ctx.node.waitApplied(ctx.node.status().applied);
    requireLeader(ctx);
    return proposeChecked(ctx, action, id, body);
  });
}

async function proposeChecked(ctx: AdminContext, action: 'add' | 'promote' | 'remove', id: NodeId, body: Record<string, unknown>): Promise<object> {
  const st = ctx.node.status();
  const voter = st.config.voters.includes(id);
  const learner = st.config.learners.includes(id);
  // Base and book: what a member joining with an empty store starts from (see applyConfigChange).
  const context = { base: st.config, book: bookOf(ctx.node.members()) };
  let change: MemberChange;
  switch (action) {
    case 'add': {
      const peer = address(body.peer, 'peer');
      const client = address(body.client, 'client');
      if (peer.host !== client.host) throw new VeraError('BAD_REQUEST', `peer and client must be on the same host (${peer.host} vs ${client.host})`);
      if (!ctx.canGrow) {
        throw new VeraError('CONFLICT', 'this member runs without a cluster secret and peer port; restart it with --secret to add members');
      }
      if (voter || learner) throw new VeraError('CONFLICT', `${id} is already a ${voter ? 'voter' : 'learner'}`);
      const taken = ctx.node.members().find((m) => m.address !== null && m.address.host === peer.host && m.address.peerPort === peer.port);
      if (taken !== undefined) throw new VeraError('CONFLICT', `peer address ${hostPort(peer.host, peer.port)} belongs to ${taken.id}`);
      change = { type: 'addLearner', node: id, address: { host: peer.host, peerPort: peer.port, clientPort: client.port }, ...context };
      break;
    }
    case 'promote': {
      if (voter) throw new VeraError('CONFLICT', `${id} is already a voter`);
      if (!learner) throw new VeraError('NOT_FOUND', `${id} is not a member; add it as a learner first`);
      const match = st.progress[id]?.match ?? 0;
      const behind = st.lastIndex - match;
      // match 0: it never answered (not started yet, or unreachable); a dead voter would cost the quorum a member.
      if (match === 0 || behind > ctx.promoteMaxLag) {
        throw new VeraError('CONFLICT', `${id} has not caught up: it holds the log up to ${match}, the leader up to ${st.lastIndex} (${behind} behind; promote within ${ctx.promoteMaxLag})`);
      }
      change = { type: 'promote', node: id, ...context };
      break;
    }
    case 'remove': {
      if (!voter && !learner) throw new VeraError('NOT_FOUND', `${id} is not a member`);
      if (voter && st.config.voters.length === 1) throw new VeraError('CONFLICT', `${id} is the last voter; a cluster cannot remove it`);
      change = { type: 'remove', node: id, ...context };
      break;
    }
  }
  ctx.logger.info({ event: 'member-change-proposed', action, member: id }, `proposing to ${action} ${id}`);
  const outcome = await ctx.node.proposeConfigChange(change);
  ctx.logger.info({ event: 'member-changed', action, member: id, index: outcome.index }, `${action} ${id} applied at index ${outcome.index}`);
  return { action, member: id, index: outcome.index, ...listMembers(ctx) };
}

async function transfer(ctx: AdminContext, body: Record<string, unknown>): Promise<object> {
  for (const key of Object.keys(body)) if (key !== 'to') throw new VeraError('BAD_REQUEST', `unexpected field ${JSON.stringify(key)}`);
  const to = memberId(body.to, 'to');
  requireLeader(ctx);
  const st = ctx.node.status();
  const done = (): object => ({ leader: to, leaderUrl: ctx.directory.clientUrl(to) });
  if (to === st.id) return done();
  if (st.config.learners.includes(to)) throw new VeraError('CONFLICT', `${to} is a learner; promote it before handing it leadership`);
  if (!st.config.voters.includes(to)) throw new VeraError('NOT_FOUND', `${to} is not a member`);
  // Registered before the transfer starts, so the change cannot slip by unseen.
  const moved = ctx.leaderWatch.waitFor((s) => s.leader === to, ctx.transferTimeoutMs);
  if (!ctx.node.transferLeadership(to)) throw new VeraError('CONFLICT', `cannot hand leadership to ${to} now`);
  ctx.logger.info({ event: 'leader-transfer', to }, `handing leadership to ${to}`);
  if (!(await moved)) {
    throw new VeraError('TIMEOUT', `${to} did not take over within ${ctx.transferTimeoutMs} ms (is it reachable and caught up?); ${ctx.node.status().leader ?? 'no member'} leads`);
  }
  return done();
}

function requireLeader(ctx: AdminContext): void {
  const st = ctx.node.status();
  if (st.role === 'leader') return;
  const url = st.leader === null ? null : ctx.directory.clientUrl(st.leader);
  if (url === null) throw new VeraError('NO_LEADER', 'no leader is known right now; retry shortly', { retryAfterMs: 200 });
  throw new VeraError('NOT_LEADER', `this member is not the leader; ask ${url}`, { leader: url });
}

function memberId(value: unknown, field: string): NodeId {
  if (typeof value !== 'string' || !MEMBER_ID_PATTERN.test(value)) {
    throw new VeraError('BAD_REQUEST', `${field} must be a member id (1-64 letters, digits, '.', '_' or '-'), got ${JSON.stringify(value)}`);
  }
  return value;
}

/** `host:port` or `[v6]:port`. */
function address(value: unknown, field: string): { host: string; port: number } {
  const m = typeof value === 'string' ? /^(\[[0-9a-fA-F:.]+\]|[A-Za-z0-9](?:[A-Za-z0-9.-]*[A-Za-z0-9])?):(\d{1,5})$/.exec(value) : null;
  const port = m === null ? NaN : Number(m[2]);
  if (m === null || !(port >= 1 && port <= 65535)) throw new VeraError('BAD_REQUEST', `${field} must be HOST:PORT, got ${JSON.stringify(value)}`);
  const host = m[1]!;
  return { host: host.startsWith('[') ? host.slice(1, -1) : host, port };
}

function hostPort(host: string, port: number): string {
  return host.includes(':') ? `[${host}]:${port}` : `${host}:${port}`;
}

function sendJson(res: ServerResponse, code: number, body: unknown): void {
  const text = JSON.stringify(body) + '\n';
  res.writeHead(code, { 'content-type': 'application/json', 'content-length': Buffer.byteLength(text) });
  res.end(text);
}
