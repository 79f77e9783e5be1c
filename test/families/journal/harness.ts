// A journal on a real state machine over a real LevelDB, driven entry by entry
// with an explicit replicated clock: what every member does with journal entries.
import { bucketRange } from '../../../src/keys/index.js';
import type { JournalCommand } from '../../../src/families/journal/commands.js';
import { JournalBucket } from '../../../src/families/journal/keys.js';
import { decodeFlagged, decodeItem, type FlaggedItem, type JournalItem, type JournalSettings } from '../../../src/families/journal/records.js';
import type { JournalValue } from '../../../src/families/journal/apply.js';
import { journal } from '../../../src/families/journal/index.js';
import { encodeCommand } from '../../../src/families/commands.js';
import { StateMachine } from '../../../src/statemachine/state-machine.js';
import type { ApplyResult } from '../../../src/statemachine/types.js';
import { openTempDb, type TempDb } from '../../statemachine/helpers.js';
import { REGISTRY } from '../../../src/families/registry.js';

export const SETTINGS: JournalSettings = { timeoutMs: 1000, maxTimeouts: 2, priority: 100, expiresInMs: 0, maxItems: 1_000_000 };

export class JournalHarness {
  private index = 0;
  now = 1_000_000;

  private constructor(
    readonly temp: TempDb,
    readonly sm: StateMachine,
  ) {}

  static async open(): Promise<JournalHarness> {
    const temp = await openTempDb();
    return new JournalHarness(temp, await StateMachine.open(temp.db, REGISTRY));
  }

  /** The index the next entry gets (a claim's lease). */
  get nextIndex(): number {
    return this.index + 1;
  }

  /** Applies one journal command as the next entry, proposed at the current clock. */
  async run(command: JournalCommand): Promise<ApplyResult> {
    const data = encodeCommand({ family: 'journal', ...command } as never, this.now);
    const outcome = await this.sm.apply({ index: ++this.index, term: 1, kind: 'command', data });
    return outcome.result;
  }

  /** Raises the cluster's active command version, as the leader does once every member runs it. */
  async activate(version: number): Promise<void> {
    const data = encodeCommand({ family: 'cluster', op: 'setCommandVersion', version } as never, this.now);
    const outcome = await this.sm.apply({ index: ++this.index, term: 1, kind: 'command', data });
    if (!outcome.result.ok) throw new Error(`setCommandVersion ${version} failed`);
  }

  /** Runs a command that must succeed; returns its journal value. */
  async ok(command: JournalCommand): Promise<JournalValue> {
    const result = await this.run(command);
    if (!result.ok) throw new Error(`${command.op} failed: ${result.code} ${result.message}`);
    if (result.op !== 'family') throw new Error(`${command.op} gave ${result.op}`);
    return result.value as JournalValue;
  }

  /** Every stored item of `name`, by key. */
  async items(name: string): Promise<Map<string, JournalItem>> {
    const out = new Map<string, JournalItem>();
    for await (const value of this.temp.db.values(bucketRange(JournalBucket.item))) {
      const item = decodeItem(value);
      out.set(item.key, item);
    }
    void name;
    return out;
  }

  async flagged(): Promise<Map<string, FlaggedItem>> {
    const out = new Map<string, FlaggedItem>();
    for await (const value of this.temp.db.values(bucketRange(JournalBucket.flagged))) {
      const f = decodeFlagged(value);
      out.set(f.item.key, f);
    }
    return out;
  }

  /** Every key of every journal bucket (hex), to compare index consistency. */
  async indexKeys(bucket: number): Promise<string[]> {
    const out: string[] = [];
    for await (const key of this.temp.db.keys(bucketRange(bucket))) out.push(key.toString('hex'));
    return out;
  }

  definition(name: string) {
    return this.sm.stateOf(journal).journals.get(name);
  }

  close(): Promise<void> {
    return this.temp.cleanup();
  }
}
