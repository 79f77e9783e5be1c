// Hibernation's client protocol: the ops it adds, how each request is checked and
// what each answers, written once for the client and the server (docs/protocol.md
// "Extension: hibernation ops", docs/hibernation.md).
import { buildersOf, defineOp, invalid, uintField, validatePath, type RequestBuilder } from '../../protocol/index.js';

type Fields = Readonly<Record<string, unknown>>;

/** The most units one `hibernate.units` reply holds (and its default). */
export const UNITS_PAGE = 1000;

/** The most units one `hibernate.freeze` names (MAX_UNITS_PER_FREEZE in index.ts). */
export const MAX_FREEZE_PATHS = 16;

export type FreezeResult =
  | { readonly unit: string; readonly frozen: true; readonly items: number; readonly bytes: number }
  /** Why not: `changed` (written after the server looked), `ephemeral` (a live session's items), `empty`, `too-large`, `frozen`, `inside-frozen`, `holds-frozen`, `freezing` (a freeze of it is under way). */
  | { readonly unit: string; readonly frozen: false; readonly why: string };

export interface FrozenUnitInfo {
  readonly unit: string;
  readonly state: 'frozen';
  /** The index of the entry that began its freeze. */
  readonly frozenAt: number;
  readonly bytes: number;
  readonly items: number;
  readonly lists: ReadonlyArray<{ readonly path: string; readonly newest: number; readonly items: number }>;
  /** Present while its hot entries are still being deleted, a bounded step at a time (reads come from its cold file already). */
  readonly draining?: true;
}

export type UnitInfo =
  | FrozenUnitInfo
  /** A freeze begun and not yet committed (its cold file is being written). */
  | { readonly unit: string; readonly state: 'freezing'; readonly since: number };

/** One unit (`path`), answered with its result, or several (`paths`, frozen in one entry), with one result each, in order. */
export type FreezeRequest = { readonly path: string } | { readonly paths: readonly string[] };
export type FreezeReply = FreezeResult | { readonly units: readonly FreezeResult[] };

export interface ThawResult {
  readonly unit: string;
  readonly thawed: boolean;
  readonly items: number;
}

export interface UnitsPage {
  readonly units: UnitInfo[];
  /** The `after` of the next page; absent on the last. */
  readonly next?: string;
}

function unit(path: unknown): string {
  const problem = validatePath(path, { allowRoot: false });
  if (problem !== null) throw invalid(problem);
  // validatePath refused anything but a string already; this tells the compiler so.
  if (typeof path !== 'string') throw invalid('a path must be a string');
  return path;
}

function freezeRequest(f: Fields): FreezeRequest {
  if (f.paths === undefined) return { path: unit(f.path) };
  if (f.path !== undefined) throw invalid("give 'path' or 'paths', not both");
  if (!Array.isArray(f.paths) || f.paths.length === 0 || f.paths.length > MAX_FREEZE_PATHS) throw invalid(`'paths' must be an array of 1 to ${MAX_FREEZE_PATHS} paths`);
  const paths = f.paths.map((path: unknown) => unit(path));
  if (new Set(paths).size !== paths.length) throw invalid("'paths' names a unit twice");
  const sorted = [...paths].sort();
  for (let n = 1; n < sorted.length; n++) {
    if (sorted[n]!.startsWith(`${sorted[n - 1]}/`)) throw invalid(`'paths' overlap: ${sorted[n]} is in the unit ${sorted[n - 1]}`);
  }
  return { paths };
}

/** `hibernate.units` gives the units by path a page at a time: `after` the last one of the page before, at most `limit`. */
function unitsRequest(f: Fields): { readonly after?: string; readonly limit?: number } {
  const limit = uintField(f, 'limit');
  if (limit !== undefined && (limit < 1 || limit > UNITS_PAGE)) throw invalid(`limit must be 1 to ${UNITS_PAGE}`);
  return { ...(f.after === undefined ? {} : { after: unit(f.after) }), ...(limit === undefined ? {} : { limit }) };
}

export const HIBERNATE_SCHEMAS = {
  freeze: defineOp<FreezeRequest, FreezeReply>({ name: 'hibernate.freeze', fields: ['path', 'paths'], parse: freezeRequest }),
  thaw: defineOp<{ readonly path: string }, ThawResult>({ name: 'hibernate.thaw', fields: ['path'], parse: (f) => ({ path: unit(f.path) }) }),
  units: defineOp<{ readonly after?: string; readonly limit?: number }, UnitsPage>({ name: 'hibernate.units', read: true, fields: ['after', 'limit'], parse: unitsRequest }),
};

/** The ops' request builders, by op name (the frame decoder's view of the same schemas). */
export const HIBERNATE_OPS: ReadonlyMap<string, RequestBuilder> = buildersOf(Object.values(HIBERNATE_SCHEMAS));
