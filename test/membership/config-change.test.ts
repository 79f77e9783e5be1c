// What a config entry carries (the new member's address, the base configuration
// and address book) and how a member that joined with an empty store replays it.
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import {
  applyConfigChange,
  ConfigChangeError,
  decodeConfigChange,
  encodeConfigChange,
  type MemberChange,
} from '../../src/raft/config.js';
import type { ClusterConfig } from '../../src/raft/types.js';

const ADDRESS = { host: '127.0.0.1', peerPort: 2924, clientPort: 1924 };
const BASE: ClusterConfig = { voters: ['n1', 'n2', 'n3'], learners: [] };
const EMPTY: ClusterConfig = { voters: [], learners: [] };
const bytes = (value: unknown): Uint8Array => new TextEncoder().encode(JSON.stringify(value));

describe('config entry encoding', () => {
  it('round-trips address, base and book, and stays a plain change without them', () => {
    const full: MemberChange = {
      type: 'addLearner',
      node: 'n4',
      address: ADDRESS,
      base: BASE,
      book: [{ id: 'n1', address: { host: '10.0.0.1', peerPort: 2919, clientPort: 1919 } }, { id: 'n2', address: null }],
    };
    expect(decodeConfigChange(encodeConfigChange(full))).toEqual(full);
    expect(decodeConfigChange(encodeConfigChange({ type: 'remove', node: 'n2' }))).toEqual({ type: 'remove', node: 'n2' });
  });

  it('encodes equal changes to equal bytes whatever the field order of the input', () => {
    const a = encodeConfigChange({ type: 'addLearner', node: 'n4', address: ADDRESS, base: BASE });
    const b = encodeConfigChange({ base: BASE, address: { clientPort: 1924, peerPort: 2924, host: '127.0.0.1' }, node: 'n4', type: 'addLearner' } as MemberChange);
    expect(Buffer.from(a).equals(Buffer.from(b))).toBe(true);
  });

  it.each([
    ['an address on a remove', { type: 'remove', node: 'n2', address: ADDRESS }, /carries no address/],
    ['a port out of range', { type: 'addLearner', node: 'n4', address: { ...ADDRESS, peerPort: 70000 } }, /invalid peerPort/],
    ['a host with a path', { type: 'addLearner', node: 'n4', address: { ...ADDRESS, host: 'a/b' } }, /invalid host/],
    ['a base without voters', { type: 'promote', node: 'n4', base: { voters: [], learners: ['n4'] } }, /no voters/],
    ['a base listing a member twice', { type: 'promote', node: 'n4', base: { voters: ['n1'], learners: ['n1'] } }, /twice/],
    ['a book with a repeated id', { type: 'promote', node: 'n4', book: [{ id: 'n1', address: null }, { id: 'n1', address: null }] }, /distinct/],
    ['a book line with a bad address', { type: 'promote', node: 'n4', book: [{ id: 'n1', address: { host: 'h' } }] }, /book address of n1/],
    ['an unknown type', { type: 'demote', node: 'n4' }, /not a config change/],
  ])('refuses %s with a ConfigChangeError (the entry then changes nothing anywhere)', (_what, value, message) => {
    expect(() => decodeConfigChange(bytes(value))).toThrow(ConfigChangeError);
    expect(() => decodeConfigChange(bytes(value))).toThrow(message);
  });
});

describe('applyConfigChange with a base', () => {
  it('a member that has voters ignores the base: its own configuration is the one in force', () => {
    const own: ClusterConfig = { voters: ['n1', 'n2'], learners: ['n3'] };
    const stale: ClusterConfig = { voters: ['n1'], learners: [] };
    expect(applyConfigChange(own, { type: 'addLearner', node: 'n4', base: stale })).toEqual({ voters: ['n1', 'n2'], learners: ['n3', 'n4'] });
  });

  it('a member with no voters yet (joined with an empty store) starts from the base', () => {
    expect(applyConfigChange(EMPTY, { type: 'addLearner', node: 'n4', base: BASE })).toEqual({ voters: BASE.voters, learners: ['n4'] });
  });

  it('without a base, a joining member would think the first promoted learner is the only voter (why the base exists)', () => {
    const afterAdd = applyConfigChange(EMPTY, { type: 'addLearner', node: 'n2' });
    expect(applyConfigChange(afterAdd, { type: 'promote', node: 'n2' })).toEqual({ voters: ['n2'], learners: [] });
  });

  it('a joining member replaying the log ends with the configuration of a member that was there from the start', () => {
    // Random valid change sequences from a random bootstrap configuration; each entry
    // carries the base the proposing leader (the full member) had applied.
    const ids = ['a', 'b', 'c', 'd', 'e', 'f', 'g'];
    const scenario = fc.record({
      bootstrap: fc.subarray(ids, { minLength: 1, maxLength: 3 }),
      steps: fc.array(fc.record({ kind: fc.constantFrom('addLearner', 'promote', 'remove'), pick: fc.nat() }), { maxLength: 25 }),
    });
    fc.assert(
      fc.property(scenario, ({ bootstrap, steps }) => {
        let full: ClusterConfig = { voters: bootstrap, learners: [] };
        const entries: MemberChange[] = [];
        for (const step of steps) {
          const candidates =
            step.kind === 'addLearner' ? ids.filter((id) => !full.voters.includes(id) && !full.learners.includes(id))
            : step.kind === 'promote' ? [...full.learners]
            : full.voters.length > 1 ? [...full.voters, ...full.learners] : [...full.learners];
          const node = candidates[step.pick % Math.max(1, candidates.length)];
          if (node === undefined) continue;
          const change = { type: step.kind, node, base: full } as MemberChange;
          full = applyConfigChange(full, change);
          entries.push(decodeConfigChange(encodeConfigChange(change)));
        }
        let joiner: ClusterConfig = EMPTY;
        for (const change of entries) joiner = applyConfigChange(joiner, change);
        expect(joiner).toEqual(entries.length === 0 ? EMPTY : full);
      }),
      { numRuns: 300 },
    );
  });
});
