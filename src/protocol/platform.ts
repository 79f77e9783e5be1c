// Bytes and UTF-8 for the protocol package, on Node: Buffer's native code, which
// the server runs on every frame it decodes (so the hot path keeps its speed).
// The browser bundle swaps this module for platform.browser.ts, which has the
// same exports built on Uint8Array, TextEncoder and TextDecoder (the swap is a
// rule of scripts/build-ui.ts: a module `x.ts` with a sibling `x.browser.ts` is
// replaced by it; test/architecture/browser-bundle.test.ts keeps the two alike).
import { Buffer, isUtf8 as nodeIsUtf8 } from 'node:buffer';
import type { RawFrame } from './types.js';

/** The byte arrays the protocol hands out (frames, packed values): Buffers on Node. */
export type Bytes = Buffer;

/** A frame's bytes in one piece, copied only when it came in several (on Node, a Buffer). */
export function frameBytes(data: RawFrame): Bytes {
  if (Buffer.isBuffer(data)) return data;
  if (Array.isArray(data)) return Buffer.concat(data);
  if (data instanceof ArrayBuffer) return Buffer.from(data);
  return Buffer.from(data.buffer, data.byteOffset, data.byteLength);
}

/** The text of `bytes[start, end)` read as UTF-8 (invalid sequences become U+FFFD; a BOM is kept). */
export function utf8Slice(bytes: Uint8Array, start: number, end: number): string {
  return (Buffer.isBuffer(bytes) ? bytes : Buffer.from(bytes.buffer, bytes.byteOffset, bytes.byteLength)).toString('utf8', start, end);
}

/** Whether `bytes` is well-formed UTF-8. */
export function isUtf8(bytes: Uint8Array): boolean {
  return nodeIsUtf8(bytes);
}

/** The length of `text` in UTF-8 bytes (a lone surrogate counts 3, as U+FFFD). */
export function utf8Length(text: string): number {
  return Buffer.byteLength(text, 'utf8');
}

/** `bytes` as standard base64 (how JSON frames and HTTP carry binary values). */
export function toBase64(bytes: Uint8Array): string {
  return (Buffer.isBuffer(bytes) ? bytes : Buffer.from(bytes.buffer, bytes.byteOffset, bytes.byteLength)).toString('base64');
}

/** The bytes of standard base64 text; null when it is not base64. */
export function fromBase64(text: string): Bytes | null {
  if (!BASE64.test(text)) return null;
  return Buffer.from(text, 'base64');
}

const BASE64 = /^(?:[A-Za-z0-9+/]{4})*(?:[A-Za-z0-9+/]{2}==|[A-Za-z0-9+/]{3}=)?$/;
