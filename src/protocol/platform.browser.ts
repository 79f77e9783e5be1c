// Bytes and UTF-8 for the protocol package, in a browser: what platform.ts does
// with Node's Buffer, done with Uint8Array, TextDecoder and a counting loop. The
// browser bundle uses this module in place of platform.ts (scripts/build-ui.ts);
// the exports and their results are the same.
import type { RawFrame } from './types.js';

/** The byte arrays the protocol hands out (frames, packed values). */
export type Bytes = Uint8Array;

// ignoreBOM: a leading U+FEFF stays in the text, as Buffer's toString keeps it.
const lenient = new TextDecoder('utf-8', { ignoreBOM: true });
const strict = new TextDecoder('utf-8', { ignoreBOM: true, fatal: true });

/** A frame's bytes in one piece, copied only when it came in several. */
export function frameBytes(data: RawFrame): Bytes {
  if (data instanceof Uint8Array) return data;
  if (data instanceof ArrayBuffer) return new Uint8Array(data);
  let length = 0;
  for (const part of data) length += part.byteLength;
  const out = new Uint8Array(length);
  let at = 0;
  for (const part of data) {
    out.set(part, at);
    at += part.byteLength;
  }
  return out;
}

/** The text of `bytes[start, end)` read as UTF-8 (invalid sequences become U+FFFD; a BOM is kept). */
export function utf8Slice(bytes: Uint8Array, start: number, end: number): string {
  return lenient.decode(bytes.subarray(start, end));
}

/** Whether `bytes` is well-formed UTF-8. */
export function isUtf8(bytes: Uint8Array): boolean {
  try {
    strict.decode(bytes);
    return true;
  } catch {
    return false;
  }
}

/** The length of `text` in UTF-8 bytes (a lone surrogate counts 3, as U+FFFD). */
export function utf8Length(text: string): number {
  let bytes = 0;
  for (let i = 0; i < text.length; i++) {
    const c = text.charCodeAt(i);
    if (c < 0x80) bytes += 1;
    else if (c < 0x800) bytes += 2;
    else if (c >= 0xd800 && c <= 0xdbff && i + 1 < text.length && (text.charCodeAt(i + 1) & 0xfc00) === 0xdc00) {
      bytes += 4;
      i++;
    } else bytes += 3;
  }
  return bytes;
}

/** `bytes` as standard base64 (how JSON frames and HTTP carry binary values). */
export function toBase64(bytes: Uint8Array): string {
  let binary = '';
  for (let i = 0; i < bytes.length; i += 0x8000) binary += String.fromCharCode(...bytes.subarray(i, i + 0x8000));
  return btoa(binary);
}

/** The bytes of standard base64 text; null when it is not base64. */
export function fromBase64(text: string): Bytes | null {
  if (!BASE64.test(text)) return null;
  const binary = atob(text);
  const out = new Uint8Array(binary.length);
  for (let i = 0; i < binary.length; i++) out[i] = binary.charCodeAt(i);
  return out;
}

const BASE64 = /^(?:[A-Za-z0-9+/]{4})*(?:[A-Za-z0-9+/]{2}==|[A-Za-z0-9+/]{3}=)?$/;
