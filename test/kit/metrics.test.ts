// metricLines: the lines a family adds to /metrics, in the Prometheus text format the
// families wrote by hand before (hibernation's and node assignment's lines are unchanged).
import { describe, expect, it } from 'vitest';
import { metricLines } from '../../src/kit/index.js';

describe('a family metric\u2019s lines', () => {
  it('are HELP, TYPE and one unlabelled line for a lone value', () => {
    expect(metricLines('vera_hibernate_units_frozen', 'gauge', 'Units in the cold store.', 3)).toEqual([
      '# HELP vera_hibernate_units_frozen Units in the cold store.',
      '# TYPE vera_hibernate_units_frozen gauge',
      'vera_hibernate_units_frozen 3',
    ]);
    expect(metricLines('vera_x_ms', 'summary', 'Time.', '1.500')).toEqual(['# HELP vera_x_ms Time.', '# TYPE vera_x_ms summary', 'vera_x_ms 1.500']);
  });

  it('label each sample in the order given, and escape backslash, double quote and newline in a label value', () => {
    const lines = metricLines('vera_assign_allocations_total', 'counter', 'Users allocated.', [
      [{ service: 'sync-1.5', node: 'https://n' }, 1],
      [{ service: 'a"b\\c\nd', node: 'n' }, 2],
    ]);
    expect(lines).toEqual([
      '# HELP vera_assign_allocations_total Users allocated.',
      '# TYPE vera_assign_allocations_total counter',
      'vera_assign_allocations_total{service="sync-1.5",node="https://n"} 1',
      'vera_assign_allocations_total{service="a\\"b\\\\c\\nd",node="n"} 2',
    ]);
  });

  it('are HELP and TYPE alone when there is no sample yet', () => {
    expect(metricLines('vera_assign_node_load', 'gauge', 'Current users.', [])).toEqual(['# HELP vera_assign_node_load Current users.', '# TYPE vera_assign_node_load gauge']);
    expect(metricLines('vera_up', 'gauge', 'Up.', [[{}, 1]])).toEqual(['# HELP vera_up Up.', '# TYPE vera_up gauge', 'vera_up 1']);
  });
});
