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
  /**
   * Drains `node` gradually the way that system's operator would (the node takes no new
   * users): batches of at most `batch`, at most `ratePerSecond` users a second; `onStep`
   * hears each step's users and time. Resolves once none is left.
   */
  drain(service: string, node: string, options: DrainRun): Promise<{ replaced: number; steps: number }>;
  stop(): Promise<void>;
}

export interface Clients {
  /** Client `i`'s request; resolves with the uid and node it was given. */
  login(i: number, service: string, email: string, values: LoginValues): Promise<{ uid: number; node: string }>;
  /** Client `i` applies a password-change account event (process_account_events): the generation moves up to `generation - 1`. */
  event(i: number, email: string, generation: number, eventId: string): Promise<void>;
  close(): Promise<void>;
}

export interface DrainRun {
  readonly batch: number;
  readonly ratePerSecond: number;
  readonly onStep?: (replaced: number, stepMs: number) => void;
}

/** A drain as a loop of steps at the rate, back to back otherwise (a system with no drain tool of its own). */
export async function drainByRate(step: (batch: number) => Promise<{ replaced: number; finished: boolean }>, options: DrainRun): Promise<{ replaced: number; steps: number }> {
  const started = performance.now();
  let replaced = 0;
  for (let steps = 1; ; steps++) {
    const t = performance.now();
    const r = await step(options.batch);
    options.onStep?.(r.replaced, performance.now() - t);
    replaced += r.replaced;
    if (r.finished) return { replaced, steps };
    const wait = started + (replaced / options.ratePerSecond) * 1000 - performance.now();
    if (wait > 0) await new Promise((go) => setTimeout(go, wait));
  }
}
