// The one duration parser every flag, config value and CLI op field uses.
import { describe, expect, it } from 'vitest';
import { UsageError } from '../../src/cli/errors.js';
import { parseDuration } from '../../src/cli/units.js';

describe('parseDuration', () => {
  it.each([
    ['5000', 5000],
    ['500ms', 500],
    ['5s', 5000],
    ['2m', 120_000],
    ['1h', 3_600_000],
    ['7d', 7 * 86_400_000],
    ['30d', 30 * 86_400_000],
    ['1h30m', 5_400_000],
    ['1d12h', 36 * 3_600_000],
    ['2m30s', 150_000],
    ['1s500ms', 1500],
    [' 1H ', 3_600_000],
  ])('%s is %i ms', (text, ms) => {
    expect(parseDuration(text, '--ttl')).toBe(ms);
  });

  it('takes a number from a config file as milliseconds', () => {
    expect(parseDuration(2500, 'hibernate-after')).toBe(2500);
  });

  it.each(['', '0', '0s', '5 hours', '1w', '-5s', '1.5h', 'h', '30s1m', '1m1m', '5s ms', '1e3', '9999999999999999999d'])(
    'refuses %j, naming the flag and the forms it takes',
    (text) => {
      expect(() => parseDuration(text, '--grace')).toThrow(UsageError);
      expect(() => parseDuration(text, '--grace')).toThrow(/--grace must be a duration like 5000 \(milliseconds\), 500ms, 5s, 2m, 1h, 7d or 1h30m/);
    },
  );
});
