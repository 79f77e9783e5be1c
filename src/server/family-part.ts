// What a command family adds to the server: the client ops it answers and the
// duties its leader runs on a timer. A family's folder holds them in server.ts,
// which its Family object loads on demand (`server`), so the store kernel, which
// knows families too, never loads server code. The server gathers every
// registered family's part once at start (loadServerParts).

import type { AnyFamily } from '../families/family.js';
import type { AnyResult, Op, RequestOf } from '../protocol/index.js';
import type { AnyCommand, ApplyOutcome } from '../statemachine/index.js';
import type { FrontEnd } from './context.js';

export interface OpCall<O extends Op> {
  readonly fe: FrontEnd;
  /** The session the connection established. */
  readonly session: string;
  readonly request: RequestOf<O>;
  /** The request frame's size: what a write is charged against the disk's free space. */
  readonly frameBytes: number;
}

export type OpHandler<O extends Op> = (call: OpCall<O>) => Promise<AnyResult>;

export type OpHandlers = { readonly [O in Op]?: OpHandler<O> };

export interface LeaderDuty {
  /** Also the key of its period in the server's timings. */
  readonly name: string;
  /** Runs once when this member starts leading, before the first tick. */
  readonly start?: (fe: FrontEnd) => void;
  readonly tick: (fe: FrontEnd) => void;
  /** Runs when this member stops leading. */
  readonly stop?: (fe: FrontEnd) => void;
}

export interface ServerPart {
  readonly ops?: OpHandlers;
  readonly duties?: readonly LeaderDuty[];
}

/** Every registered family's client ops (an op answered by two families is an error) and leader duties. */
export async function loadServerParts(families: readonly AnyFamily[]): Promise<{ ops: OpHandlers; duties: LeaderDuty[] }> {
  const ops: Record<string, unknown> = {};
  const duties: LeaderDuty[] = [];
  for (const family of families) {
    if (family.server === undefined) continue;
    const part = await family.server();
    for (const [op, handler] of Object.entries(part.ops ?? {})) {
      if (op in ops) throw new Error(`client op ${op} is answered by two families (the second is ${family.name})`);
      ops[op] = handler;
    }
    duties.push(...(part.duties ?? []));
  }
  return { ops: ops as OpHandlers, duties };
}

/** Proposes a command, counting it and timing it. */
export async function proposeTimed(fe: FrontEnd, command: AnyCommand): Promise<ApplyOutcome> {
  const started = performance.now();
  fe.metrics.proposals.inc({ op: command.op });
  const outcome = await fe.node.propose(command);
  fe.metrics.proposeLatency.observe((performance.now() - started) / 1000);
  return outcome;
}
