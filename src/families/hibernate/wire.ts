// Hibernation's client protocol: the ops it adds and how each request is checked
// (docs/protocol.md "Extension: hibernation ops", docs/hibernation.md).
import { invalid, optional, uintField, validatePath, type FamilyRequest, type RequestBuilder, onlyFields } from '../../protocol/index.js';

type Fields = Readonly<Record<string, unknown>>;

function unit(f: Fields): string {
  const problem = validatePath(f.path, { allowRoot: false });
  if (problem !== null) throw invalid(problem);
  return f.path as string;
}

/** `hibernate.freeze` names one unit (`path`) or several (`paths`, frozen in one entry). */
function freezeRequest(f: Fields, id: number): FamilyRequest {
  onlyFields(f, ['path', 'paths']);
  if (f.paths === undefined) return { id, op: 'hibernate.freeze', path: unit(f) };
  if (f.path !== undefined) throw invalid("give 'path' or 'paths', not both");
  if (!Array.isArray(f.paths) || f.paths.length === 0 || f.paths.length > MAX_FREEZE_PATHS) throw invalid(`'paths' must be an array of 1 to ${MAX_FREEZE_PATHS} paths`);
  const paths = f.paths.map((path: unknown) => unit({ path }));
  if (new Set(paths).size !== paths.length) throw invalid("'paths' names a unit twice");
  const sorted = [...paths].sort();
  for (let n = 1; n < sorted.length; n++) {
    if (sorted[n]!.startsWith(`${sorted[n - 1]}/`)) throw invalid(`'paths' overlap: ${sorted[n]} is in the unit ${sorted[n - 1]}`);
  }
  return { id, op: 'hibernate.freeze', paths };
}

/** The most units one `hibernate.units` reply holds (and its default). */
export const UNITS_PAGE = 1000;

/** `hibernate.units` gives the units by path a page at a time: `after` the last one of the page before, at most `limit`. */
function unitsRequest(f: Fields, id: number): FamilyRequest {
  onlyFields(f, ['after', 'limit']);
  const limit = uintField(f, 'limit');
  if (limit !== undefined && (limit < 1 || limit > UNITS_PAGE)) throw invalid(`limit must be 1 to ${UNITS_PAGE}`);
  return { id, op: 'hibernate.units', ...optional('after', f.after === undefined ? undefined : unit({ path: f.after })), ...optional('limit', limit) };
}

/** The most units one `hibernate.freeze` names (MAX_UNITS_PER_FREEZE in index.ts). */
export const MAX_FREEZE_PATHS = 16;

export const HIBERNATE_OPS: ReadonlyMap<string, RequestBuilder> = new Map<string, RequestBuilder>([
  ['hibernate.freeze', (f, id) => freezeRequest(f, id)],
  ['hibernate.thaw', (f, id) => (onlyFields(f, ['path']), { id, op: 'hibernate.thaw', path: unit(f) })],
  ['hibernate.units', (f, id) => unitsRequest(f, id)],
]);
