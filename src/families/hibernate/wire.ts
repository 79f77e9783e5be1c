// Hibernation's client protocol: the ops it adds and how each request is checked
// (docs/protocol.md "Extension: hibernation ops", docs/hibernation.md).
import { invalid, validatePath, type RequestBuilder } from '../../protocol/index.js';

type Fields = Readonly<Record<string, unknown>>;

function only(f: Fields, allowed: readonly string[]): void {
  for (const key of Object.keys(f)) if (key !== 'id' && key !== 'op' && !allowed.includes(key)) throw invalid(`unexpected field '${key}'`);
}

function unit(f: Fields): string {
  const problem = validatePath(f.path, { allowRoot: false });
  if (problem !== null) throw invalid(problem);
  return f.path as string;
}

export const HIBERNATE_OPS: ReadonlyMap<string, RequestBuilder> = new Map<string, RequestBuilder>([
  ['hibernate.freeze', (f, id) => (only(f, ['path']), { id, op: 'hibernate.freeze', path: unit(f) })],
  ['hibernate.thaw', (f, id) => (only(f, ['path']), { id, op: 'hibernate.thaw', path: unit(f) })],
  ['hibernate.units', (f, id) => (only(f, []), { id, op: 'hibernate.units' })],
]);
