// The sessions family's stored values: 0x0004 client value { timeoutMs, remote, resumeHash?, principal?, member? }.
import { CorruptValueError, decodeMap, pack } from '../../statemachine/codec.js';

/** A session's record (0x0004 value): what the session was opened with. */
export interface SessionInfo {
  readonly timeoutMs: number;
  readonly remote: string;
  /** SHA-256 (hex) of the resume token given to the session's creator; absent for sessions opened before version 6. */
  readonly resumeHash?: string;
  /** The user that opened the session, when authentication was on (version 7). */
  readonly principal?: string;
  /**
   * The member holding the session's connection (version 9): the one whose liveness reports
   * the leader takes for it. Absent for sessions opened before, which any member may report.
   */
  readonly member?: string;
}

export function encodeClientValue(info: SessionInfo): Buffer {
  // Fields only when present, so a record written before they existed re-encodes to the same bytes.
  return pack({
    timeoutMs: info.timeoutMs,
    remote: info.remote,
    ...(info.resumeHash === undefined ? {} : { resumeHash: info.resumeHash }),
    ...(info.principal === undefined ? {} : { principal: info.principal }),
    ...(info.member === undefined ? {} : { member: info.member }),
  });
}

export function decodeClientValue(bytes: Uint8Array): SessionInfo {
  const v = decodeMap(bytes, 'client');
  if (typeof v.timeoutMs !== 'number' || typeof v.remote !== 'string') {
    throw new CorruptValueError('client value lacks timeoutMs/remote');
  }
  if (v.resumeHash !== undefined && typeof v.resumeHash !== 'string') throw new CorruptValueError('client value has a resumeHash that is not a string');
  if (v.principal !== undefined && typeof v.principal !== 'string') throw new CorruptValueError('client value has a principal that is not a string');
  if (v.member !== undefined && typeof v.member !== 'string') throw new CorruptValueError('client value has a member that is not a string');
  return {
    timeoutMs: v.timeoutMs,
    remote: v.remote,
    ...(v.resumeHash === undefined ? {} : { resumeHash: v.resumeHash }),
    ...(v.principal === undefined ? {} : { principal: v.principal }),
    ...(v.member === undefined ? {} : { member: v.member }),
  };
}
