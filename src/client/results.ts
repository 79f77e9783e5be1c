// Checks that a reply carries what its op promises before the client hands it
// out, so a misbehaving server surfaces as one clear INTERNAL error instead of
// an `undefined` somewhere in application code.
import { isItem, isItemList, VeraError, type Op, type ResultOf } from '../protocol/index.js';

type Fields = Readonly<Record<string, unknown>>;

const isIndex = (v: unknown): v is number => typeof v === 'number' && Number.isSafeInteger(v) && v >= 0;

const CHECKS: { readonly [O in Op]: (r: Fields) => string | null } = {
  hello: (r) =>
    typeof r.session !== 'string' ? 'session is not a string'
    : !isIndex(r.timeoutMs) ? 'timeoutMs is not a non-negative integer'
    : r.resume !== undefined && typeof r.resume !== 'string' ? 'resume is not a string'
    : null,
  ping: (r) => (isIndex(r.index) ? null : 'index is not a non-negative integer'),
  bye: () => null,
  push: (r) => (isItem(r.item) ? null : 'item is missing or malformed'),
  get: (r) => (!isIndex(r.index) ? 'index is not a non-negative integer' : !isItemList(r.items) ? 'items is not a list of items' : null),
  ls: (r) =>
    !isIndex(r.index) ? 'index is not a non-negative integer'
    : !Array.isArray(r.children) || !r.children.every((c) => typeof c === 'string') ? 'children is not a list of strings'
    : null,
  delete: () => null,
  watch: (r) =>
    !isIndex(r.index) ? 'index is not a non-negative integer'
    : r.items !== undefined && !isItemList(r.items) ? 'items is not a list of items'
    : null,
  unwatch: () => null,
};

/**
 * Advisory fields are hints the client can do without: one in a shape this client does
 * not know (a newer server's, say) is dropped rather than failing the reply, which would
 * keep the client from connecting to any member that sends it.
 */
const HINTS: { readonly [O in Op]?: (r: Fields) => Fields } = {
  hello: ({ role, members, ...rest }) => ({
    ...rest,
    // Any string: a newer server may name a role this client does not know.
    ...(typeof role === 'string' ? { role } : {}),
    ...(Array.isArray(members) ? { members: members.filter((m: unknown): m is string => typeof m === 'string') } : {}),
  }),
};

export function checkResult<O extends Op>(op: O, result: Fields): ResultOf<O> {
  const problem = CHECKS[op](result);
  if (problem !== null) throw new VeraError('INTERNAL', `malformed ${op} reply from the server: ${problem}`);
  const hints = HINTS[op];
  return (hints === undefined ? result : hints(result)) as unknown as ResultOf<O>;
}
