// CRC-32C (Castagnoli, reflected polynomial 0x82F63B78), table-driven, as in
// RFC 3720 appendix B.4. Node 20 has no built-in crc32 (zlib.crc32 is Node 22).

const TABLE = (() => {
  const table = new Int32Array(256);
  for (let n = 0; n < 256; n++) {
    let c = n;
    for (let k = 0; k < 8; k++) c = c & 1 ? (c >>> 1) ^ 0x82f63b78 : c >>> 1;
    table[n] = c;
  }
  return table;
})();

/** CRC-32C of `bytes` (continuing from `crc` when given), as an unsigned 32-bit number. */
export function crc32c(bytes: Uint8Array, crc = 0): number {
  let c = ~crc;
  for (let i = 0; i < bytes.length; i++) c = TABLE[(c ^ bytes[i]!) & 0xff]! ^ (c >>> 8);
  return ~c >>> 0;
}
