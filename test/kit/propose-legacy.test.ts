// A kit host proposes the first four families' commands as they always were: untagged,
// whichever of propose, proposeOutcome or proposeTo sends them (docs/architecture.md: their
// entries never named a family, and the legacy fixture holds them to those bytes). The host of
// a plugin for the lag family (a legacy one) on a stand-in member that records what is proposed
// and answers as the kernel would: the result of the command's own op, or a refusal.
import { describe, expect, it } from 'vitest';
import type { FamilyHost, Plugin } from '../../src/kit/index.js';
import { lag } from '../../src/families/lag/index.js';
import { pluginPart } from '../../src/server/front/plugin-part.js';
import type { FrontEnd } from '../../src/server/front/context.js';

interface Member {
  readonly fe: FrontEnd;
  readonly proposed: object[];
}

/** A member that applies every command as its own op, or refuses every one with `refusal`. */
function member(refusal?: { code: string; message: string }): Member {
  const proposed: object[] = [];
  const counter = { inc: () => undefined, observe: () => undefined };
  const fe = {
    metrics: { proposals: counter, proposalsFailed: counter, proposeLatency: counter },
    node: {
      propose: async (command: { op: string }) => {
        proposed.push(command);
        const result = refusal === undefined ? { ok: true, op: command.op } : { ok: false, ...refusal };
        return { index: proposed.length, ignored: false, result, events: [] };
      },
    },
  } as unknown as FrontEnd;
  return { fe, proposed };
}

/** The host the lag family's plugin would get on `m`. */
function lagHost(m: Member): FamilyHost<unknown> {
  let host: FamilyHost<unknown> | undefined;
  const probe: Plugin<Record<string, never>, unknown> = {
    ops: {},
    needs: {},
    touchesNoLists: 'the probe answers no op',
    createServer: (h) => {
      host = h as FamilyHost<unknown>;
      return { handlers: {} };
    },
  };
  const part = pluginPart(lag, probe);
  part.bind(m.fe);
  return host!;
}

const ACK = { op: 'ack', acks: [['s1', 4]] } as const;

describe("a kit host proposing a legacy family's command", () => {
  it('proposeOutcome sends it untagged and answers its result', async () => {
    const m = member();
    const outcome = await lagHost(m).proposeOutcome(ACK);
    expect(m.proposed).toEqual([ACK]);
    expect(outcome.ok).toBe(true);
  });

  it('proposeOutcome answers a refusal as a value, untagged too', async () => {
    const m = member({ code: 'BAD_REQUEST', message: 'no such session' });
    const outcome = await lagHost(m).proposeOutcome(ACK);
    expect(m.proposed).toEqual([ACK]);
    expect(outcome).toEqual({ ok: false, code: 'BAD_REQUEST', message: 'no such session' });
  });

  it('propose and proposeTo send it untagged as well', async () => {
    const m = member();
    const host = lagHost(m);
    await host.propose(ACK);
    await host.proposeTo('lag', ACK);
    expect(m.proposed).toEqual([ACK, ACK]);
  });
});
