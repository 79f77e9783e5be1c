// JSON text for frames and HTTP bodies, carrying the two kinds of value JSON has
// no word for, so that a JSON client and a MessagePack client see the same data:
// - binary (MessagePack bin): `{"$binary": "<standard base64>"}`, both ways;
// - integers beyond ±(2^53 - 1), which MessagePack carries exactly (int64,
//   uint64) and JSON.parse would round: read exactly (as bigints) from their
//   digits when a double cannot hold them, and written as strings of their digits (as the proto3 JSON mapping
//   writes 64-bit integers), so that no JSON parser rounds them on the way out.
// A map whose only key is "$binary" with a base64 string is therefore binary in
// JSON; docs/protocol.md says so.
import { VeraError } from './errors.js';
import { fromBase64, toBase64 } from './platform.js';

export const BINARY_KEY = '$binary';

/**
 * JSON text of `value`: bytes as {"$binary": base64}; bigints as strings of their
 * digits, or with `bigints: 'digits'` (a client's requests, which the server reads
 * exactly) as bare digits.
 */
export function jsonText(value: unknown, bigints: 'strings' | 'digits' = 'strings'): string {
  if (bigints === 'strings') return JSON.stringify(value, replacer);
  // JSON.stringify cannot write bare digits for a value: write a marked string, then unwrap it.
  let marked = false;
  const text = JSON.stringify(value, function (this: unknown, key: string, v: unknown): unknown {
    if (typeof v !== 'bigint') return replacer.call(this, key, v);
    marked = true;
    return `${MARK}${v}${MARK}`;
  });
  return marked ? text.replace(MARKED, '$1') : text;
}

// A NUL and a random word no value of ours can hold by chance: JSON writes the NUL as \u0000.
const NONCE = Array.from(globalThis.crypto.getRandomValues(new Uint32Array(2)), (n) => n.toString(36)).join('');
const MARK = `\u0000${NONCE}`;
const MARKED = new RegExp(`"\\\\u0000${NONCE}(-?\\d+)\\\\u0000${NONCE}"`, 'g');

function replacer(this: unknown, key: string, value: unknown): unknown {
  // `value` has been through toJSON (a Buffer's gives {type, data}); the holder still has the original.
  const original = (this as Record<string, unknown>)[key];
  if (original instanceof Uint8Array) return { [BINARY_KEY]: toBase64(original) };
  if (typeof value === 'bigint') return value.toString();
  return value;
}

// Only text that could hold either needs the slower reviving parse: a "$binary"
// key, or a run of 16 or more digits (2^53 has 16).
const MAYBE_SPECIAL = /"\$binary"|\d{16}/;

/** Parses JSON text: {"$binary": base64} maps become bytes, integer literals a double cannot hold exactly become bigints. */
export function parseJson(text: string): unknown {
  if (!MAYBE_SPECIAL.test(text)) return JSON.parse(text);
  const exact = bigIntegerLiterals(text);
  return JSON.parse(text, (_key: string, value: unknown): unknown => {
    if (typeof value === 'number') return Number.isSafeInteger(value) ? value : (exact.get(value) ?? value);
    if (typeof value === 'object' && value !== null && !Array.isArray(value)) {
      const keys = Object.keys(value);
      if (keys.length === 1 && keys[0] === BINARY_KEY) {
        const encoded = (value as Record<string, unknown>)[BINARY_KEY];
        const bytes = typeof encoded === 'string' ? fromBase64(encoded) : null;
        if (bytes === null) throw new VeraError('BAD_REQUEST', `a {"${BINARY_KEY}": ...} map must hold standard base64 text`);
        return bytes;
      }
    }
    return value;
  });
}

// A string (skipped whole, escapes and all), or an integer literal of 16 or more digits
// with no fraction or exponent after it.
const TOKEN = /"(?:[^"\\]|\\.)*"|-?\d{16,}(?![.eE\d])/g;

/**
 * The integer literals of `text` that are not a double's own digits, by the double
 * JSON.parse reads them as: the reviver puts the exact value back. A literal that is
 * exactly how JavaScript writes its double (JSON.stringify of 1e17, or of
 * -28463688501455710, whose double is ...712) stays that number. Literals that read
 * as one double cannot be told apart there, so that text is refused.
 */
function bigIntegerLiterals(text: string): Map<number, bigint> {
  const out = new Map<number, bigint>();
  const heldExactly = new Set<number>();
  for (const [token] of text.matchAll(TOKEN)) {
    if (token.startsWith('"')) continue;
    const read = Number(token);
    if (Number.isSafeInteger(read)) continue;
    const exact = BigInt(token);
    // The digits JavaScript writes for that double: a number JSON.stringify wrote stays a number.
    if (String(read) === token) heldExactly.add(read);
    else if (out.has(read) && out.get(read) !== exact) throw sameNumber(out.get(read)!, exact);
    else out.set(read, exact);
  }
  for (const read of heldExactly) if (out.has(read)) throw sameNumber(out.get(read)!, String(read));
  return out;
}

function sameNumber(a: bigint, b: bigint | string): VeraError {
  return new VeraError('BAD_REQUEST', `the integers ${a} and ${b} read as the same JSON number: send them as strings, or in a MessagePack frame`);
}
