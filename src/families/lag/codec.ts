// The lag family's stored values: 0x0007 lag value { index }, as in the seed's `/lag/A -> { index: }`.
import { CorruptValueError, decodeMap, pack } from '../../statemachine/codec.js';

export function encodeLagValue(index: number): Buffer {
  return pack({ index });
}

export function decodeLagValue(bytes: Uint8Array): number {
  const v = decodeMap(bytes, 'lag');
  if (typeof v.index !== 'number') throw new CorruptValueError('lag value lacks index');
  return v.index;
}
