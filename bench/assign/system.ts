// What the node assignment benchmark (A1) asks of each system: a service with
// nodes, Tokenserver's get-or-create request from many clients, and the
// counters at the end. Each adapter says how it maps.

/** What a get-or-create request reports (Tokenserver's headers). */
export interface LoginValues {
  readonly generation: number;
  readonly keysChangedAt: number;
  readonly clientState: string;
}

export interface NodeSpec {
  readonly node: string;
  readonly capacity: number;
  readonly available: number;
}

/** The end state, for drift: node load counters against the records they count. */
export interface Counters {
  /** Sum of the nodes' load counters. */
  readonly load: number;
  /** Records that are current (not replaced). */
  readonly currentRecords: number;
  /** Nodes whose counter differs from their current records (where the system can tell per node). */
  readonly nodesOff: number | null;
  /** Emails with more than one current record. */
  readonly duplicates: number | null;
}

export interface AssignSystem {
  readonly name: string;
  /** Durability, replication and connections, for the report. */
  readonly settings: string;
  setup(service: string, releaseRate: number, nodes: readonly NodeSpec[]): Promise<void>;
  /** A driver for `clients` concurrent clients (connections as that system's users would pool them). */
  clients(count: number): Promise<Clients>;
  counters(service: string): Promise<Counters>;
  /** Adds a node after setup (the drain scenario's). */
  addNode(service: string, node: NodeSpec): Promise<void>;
  /** Creates these users current on `node` in bulk (the drain scenario's full node): uids from `firstUid`. */
  bulkUsers(service: string, node: string, emails: readonly string[], values: LoginValues, firstUid: number): Promise<void>;
  /** Replaces up to `batch` users current on `node` (one step of a gradual drain; the node takes no new users); how many, and whether none is left. */
  drainStep(service: string, node: string, batch: number): Promise<{ replaced: number; finished: boolean }>;
  stop(): Promise<void>;
}

export interface Clients {
  /** Client `i`'s request; resolves with the uid and node it was given. */
  login(i: number, service: string, email: string, values: LoginValues): Promise<{ uid: number; node: string }>;
  /** Client `i` applies a password-change account event (process_account_events): the generation moves up to `generation - 1`. */
  event(i: number, email: string, generation: number, eventId: string): Promise<void>;
  close(): Promise<void>;
}
