// CRC-32C (Castagnoli, reflected polynomial 0x82F63B78), table-driven, as in
// RFC 3720 appendix B.4. Node 20 has no built-in crc32 (zlib.crc32 is Node 22).
// Eight bytes a step through eight tables ("slicing-by-8"): about four times
// the speed of one byte a step, which matters when a start checks every
// checksum of a large store (level-files.ts).

const TABLES = (() => {
  const tables = Array.from({ length: 8 }, () => new Int32Array(256));
  for (let n = 0; n < 256; n++) {
    let c = n;
    for (let k = 0; k < 8; k++) c = c & 1 ? (c >>> 1) ^ 0x82f63b78 : c >>> 1;
    tables[0]![n] = c;
  }
  for (let n = 0; n < 256; n++) {
    for (let t = 1; t < 8; t++) tables[t]![n] = tables[0]![tables[t - 1]![n]! & 0xff]! ^ (tables[t - 1]![n]! >>> 8);
  }
  return tables;
})();
const [T0, T1, T2, T3, T4, T5, T6, T7] = TABLES as [Int32Array, Int32Array, Int32Array, Int32Array, Int32Array, Int32Array, Int32Array, Int32Array];

/** CRC-32C of `bytes` (continuing from `crc` when given), as an unsigned 32-bit number. */
export function crc32c(bytes: Uint8Array, crc = 0): number {
  let c = ~crc;
  let i = 0;
  const whole = bytes.length - (bytes.length % 8);
  for (; i < whole; i += 8) {
    const lo = c ^ (bytes[i]! | (bytes[i + 1]! << 8) | (bytes[i + 2]! << 16) | (bytes[i + 3]! << 24));
    c =
      T7[lo & 0xff]! ^
      T6[(lo >>> 8) & 0xff]! ^
      T5[(lo >>> 16) & 0xff]! ^
      T4[lo >>> 24]! ^
      T3[bytes[i + 4]!]! ^
      T2[bytes[i + 5]!]! ^
      T1[bytes[i + 6]!]! ^
      T0[bytes[i + 7]!]!;
  }
  for (; i < bytes.length; i++) c = T0[(c ^ bytes[i]!) & 0xff]! ^ (c >>> 8);
  return ~c >>> 0;
}
