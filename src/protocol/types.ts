// The shapes of protocol v1 frames (../shared/PROTOCOL.md, docs/protocol.md):
// requests as decodeFrame hands them to the server, and the results, items and
// notifications the server sends back. Types only, plus the default limits.
import { MAX_PATH_BYTES } from './path.js';

export type Encoding = 'msgpack' | 'json';

/** A value that both JSON and MessagePack carry losslessly: what `data` may be. */
export type JsonValue = null | boolean | number | string | JsonValue[] | { [key: string]: JsonValue };

export type Consistency = 'linearizable' | 'stale';

export const OPS = ['hello', 'ping', 'bye', 'push', 'get', 'ls', 'delete', 'watch', 'unwatch'] as const;
export type Op = (typeof OPS)[number];

// ---------------------------------------------------------------- requests
// Optional arguments stay optional here (absent = the default documented on
// each field) so that a decoded request is exactly what the client sent.

export interface HelloRequest {
  readonly id: number;
  readonly op: 'hello';
  /** Requested session timeout; the server clamps it to its [min, max]. Default 10000. */
  readonly timeoutMs?: number;
  /** Resume this session instead of opening a new one. */
  readonly session?: string;
  /** With `session`: the resume token the session's first hello answered (extension; see docs/protocol.md). */
  readonly resume?: string;
  /** Authentication token, when the server requires one. */
  readonly token?: string;
  /** Credentials instead of a token (extension; see docs/protocol.md): checked by the server, never stored. */
  readonly user?: string;
  readonly password?: string;
}

export interface PingRequest {
  readonly id: number;
  readonly op: 'ping';
  /** Highest notification index the client has processed. */
  readonly ack?: number;
}

export interface ByeRequest {
  readonly id: number;
  readonly op: 'bye';
}

export interface PushRequest {
  readonly id: number;
  readonly op: 'push';
  readonly path: string;
  readonly data: JsonValue;
  /** Default false: the item is owned by the session and deleted when it ends. */
  readonly persistent?: boolean;
  /** Default true: pushing also watches the list. */
  readonly watch?: boolean;
  /** Compare-and-set: succeed only if the list's newest item has this index (0 = empty). */
  readonly ifLastIndex?: number;
}

export interface GetRequest {
  readonly id: number;
  readonly op: 'get';
  readonly path: string;
  /** Default 'linearizable'. */
  readonly consistency?: Consistency;
  /**
   * Let the reply come in several frames (each under `replyBytes` of items, all from
   * one read at one `index`; every frame but the last has `more: true`). Without
   * it, a list over `replyBytes` is TOO_LARGE.
   */
  readonly stream?: boolean;
}

export interface LsRequest {
  readonly id: number;
  readonly op: 'ls';
  /** May be '/'. */
  readonly path: string;
}

export interface DeleteRequest {
  readonly id: number;
  readonly op: 'delete';
  readonly path: string;
  readonly index: number;
}

export interface WatchRequest {
  readonly id: number;
  readonly op: 'watch';
  /** May be '/' when `prefix` is true. */
  readonly path: string;
  /** Default false: watch exactly this list; true: every list at or below `path`. */
  readonly prefix?: boolean;
  /** Start from this past index: the reply carries the events after it, up to its own `index`. */
  readonly since?: number;
}

export interface UnwatchRequest {
  readonly id: number;
  readonly op: 'unwatch';
  readonly path: string;
  readonly prefix?: boolean;
}

export type Request =
  | HelloRequest
  | PingRequest
  | ByeRequest
  | PushRequest
  | GetRequest
  | LsRequest
  | DeleteRequest
  | WatchRequest
  | UnwatchRequest;

/** The request of one op, by name. */
export type RequestOf<O extends Op> = Extract<Request, { op: O }>;

/** A request without its id: what a client asks for before it is numbered. */
export type RequestBody<O extends Op = Op> = O extends Op ? Omit<RequestOf<O>, 'id'> : never;

// ---------------------------------------------------------------- results

export interface Item {
  /** Raft index of the entry that created the item; orders the list. */
  readonly index: number;
  /** Owning session, or null for a persistent item. */
  readonly owner: string | null;
  /** A JsonValue (checked when pushed); typed unknown so stored values pass through untouched. */
  readonly data: unknown;
}

export interface HelloResult {
  readonly session: string;
  /** The timeout the server granted (after clamping). */
  readonly timeoutMs: number;
  /** Member id of the node that answered. */
  readonly node: string;
  /** Member id of the leader (the answering node, as sessions live on the leader), or null. */
  readonly leader: string | null;
  readonly term: number;
  readonly index: number;
  /**
   * Extension: a secret the session's creator alone is given (the session id is public:
   * items show it). Sent back as `resume` with `session`, it proves the resumer is the creator.
   */
  readonly resume?: string;
  /** Extension: the user the connection is authenticated as, when authentication is on. */
  readonly user?: string;
  /**
   * Extension (scale-out, command version 9 once followers serve sessions): the answering
   * member's role. A client must accept roles it does not know, so it is typed as any string:
   * a switch over MemberRole needs a default (`string & {}` keeps the known ones as hints).
   */
  readonly role?: MemberRole | (string & Record<never, never>);
  /**
   * Extension (scale-out, as `role`): the client URLs (`ws://host:port`, `wss://...`) of every
   * member that accepts sessions; a client adds them to the servers it knows.
   */
  readonly members?: readonly string[];
}

/** What a member that answers hello is (`HelloResult.role`): the roles this version's servers send. */
export type MemberRole = 'leader' | 'follower' | 'learner';

export interface PingResult {
  readonly index: number;
}

export type EmptyResult = Record<string, never>;

export interface PushResult {
  readonly item: Item;
  /** false: the push did not watch its list, the session being at its watch limit (only when the client did not ask for the watch). */
  readonly watched?: false;
}

export interface GetResult {
  readonly index: number;
  readonly items: readonly Item[];
  /** On a streamed get: more frames of this reply follow. */
  readonly more?: true;
}

export interface LsResult {
  readonly index: number;
  readonly children: readonly string[];
}

export interface WatchResult {
  readonly index: number;
  /** Present for exact watches: the list as of `index`. */
  readonly items?: readonly Item[];
  /** An exact watch of a list over `replyBytes`: no items came; read them with a streamed get. */
  readonly tooLarge?: true;
  /** With `since`: the events after `since` up to `index`, in order (live notifications follow from `index`). */
  readonly events?: readonly ChangeEvent[];
  /** With `since`: the member no longer holds every event after it (or they would not fit one reply); re-read the list instead. */
  readonly missed?: true;
}

export interface ResultMap {
  hello: HelloResult;
  ping: PingResult;
  bye: EmptyResult;
  push: PushResult;
  get: GetResult;
  ls: LsResult;
  delete: EmptyResult;
  watch: WatchResult;
  unwatch: EmptyResult;
}

export type ResultOf<O extends Op> = ResultMap[O];
export type AnyResult = ResultMap[Op];

// ---------------------------------------------------------------- notifications

export interface ChangeEvent {
  readonly index: number;
  readonly type: 'push' | 'delete';
  readonly path: string;
  readonly item: Item;
}

/** "Replace your view of this list with these items, as of `index`." */
export interface ResyncList {
  readonly path: string;
  readonly index: number;
  readonly items: readonly Item[];
}

/**
 * A resync may span several frames: every frame but the last has `more: true`, and a
 * list may continue from one frame into the next (the same path again, its items
 * going on in order). Apply it when the last frame arrives.
 */
export type NotifyPayload = { readonly events: readonly ChangeEvent[] } | { readonly resync: readonly ResyncList[]; readonly more?: true } | RevokedWatches;

/** Extension: watches the session may no longer hold (a permission was revoked); the server has dropped them. */
export interface RevokedWatches {
  readonly revoked: ReadonlyArray<{ readonly path: string; readonly prefix: boolean }>;
  readonly reason: string;
}

// ---------------------------------------------------------------- limits

export interface ProtocolLimits {
  /** Hard frame limit: a bigger frame closes the connection with 1009 (ws `maxPayload`). */
  readonly frameBytes: number;
  /** `data` of a push, measured as its MessagePack encoding in either frame encoding: over it is TOO_LARGE. */
  readonly dataBytes: number;
  /** UTF-8 bytes of a path; cannot exceed MAX_PATH_BYTES (1024), which the path rules fix. */
  readonly pathBytes: number;
  /** Nesting levels of `data` (a scalar is 0, `[1]` is 1); deeper is BAD_REQUEST. Guards the decoder's stack. */
  readonly dataDepth: number;
  /**
   * Elements (array items, map keys and values) one frame may hold, counted on the
   * raw bytes before anything is decoded; more is TOO_LARGE. Bounds the work of a
   * decode: a 7.7 MB frame of 1.3M map keys once held the event loop 2.8 s.
   */
  readonly elementsMax: number;
  /** Hard frame limit until the connection has sent its hello (a hello is tiny): a bigger frame closes with 1009. */
  readonly helloFrameBytes: number;
  /**
   * Stored bytes of items one reply or resync frame may carry (half the frame limit,
   * leaving room for encoding). A plain get of a bigger list is TOO_LARGE; streamed
   * gets and resyncs are split into frames of at most this.
   */
  readonly replyBytes: number;
}

export const DEFAULT_LIMITS: ProtocolLimits = Object.freeze({
  frameBytes: 16 * 1024 * 1024,
  dataBytes: 1024 * 1024,
  pathBytes: MAX_PATH_BYTES,
  dataDepth: 64,
  elementsMax: 100_000,
  helloFrameBytes: 64 * 1024,
  replyBytes: 8 * 1024 * 1024,
});

/** WebSocket close codes the server uses, shared with the client (4000-4999 is the application range). */
export const CloseCode = {
  /** The session expired or said bye. */
  sessionEnded: 4001,
  /** The session was resumed on another connection; this one must not fight for it. */
  sessionMoved: 4002,
  /** This node stopped being the leader; reconnect and resume. */
  notLeader: 4003,
  /** The client read notifications too slowly; resume to resync. */
  slowConsumer: 4004,
  /** No hello arrived within the server's hello timeout. */
  noHello: 4005,
  /** The client left more than the output bound of replies unread; the socket is dropped (the session lives on). */
  outputBacklog: 4006,
  /** Authentication was turned on after this connection was made without credentials: reconnect with credentials. */
  unauthenticated: 4007,
  /**
   * The credential the connection authenticated with no longer holds: its token expired, the
   * user's password changed, the user was removed, or authentication was turned off and on again.
   */
  credentialRevoked: 4008,
  /**
   * This member cannot confirm the session to the leader (or was removed from the cluster):
   * resume on another member (scale-out, sent once followers serve sessions; docs/scale-out.md).
   */
  leaderUnreachable: 4009,
  shuttingDown: 1001,
} as const;

/** WebSocket close code for a frame over `frameBytes` (RFC 6455 "Message Too Big"). */
export const CLOSE_FRAME_TOO_BIG = 1009;

/** The session timeout a hello without `timeoutMs` asks for. */
export const DEFAULT_SESSION_TIMEOUT_MS = 10_000;

/** What ws (or a browser WebSocket) hands a 'message' listener, whatever its binaryType. */
export type RawFrame = Uint8Array | ArrayBuffer | Uint8Array[];
