// Human-readable one-liners for the verbose replay trace.

import type { Message } from '../../src/raft/types.js';

export function describeRange(entries: readonly { index: number; term: number }[]): string {
  const first = entries[0];
  const last = entries[entries.length - 1];
  if (first === undefined || last === undefined) return '-';
  return first === last ? `${first.index}@${first.term}` : `${first.index}@${first.term}..${last.index}@${last.term}`;
}

export function describeMessage(m: Message): string {
  const head = `${m.from}->${m.to} ${m.type} t${m.term}`;
  switch (m.type) {
    case 'app':
      return `${head} prev=${m.prevIndex}@${m.prevTerm} entries=${describeRange(m.entries)} commit=${m.commit}`;
    case 'appResp':
      return `${head} index=${m.index}${m.reject ? ` REJECT hint=${m.hintIndex}@${m.hintTerm}` : ''}`;
    case 'vote':
    case 'preVote':
      return `${head} last=${m.lastLogIndex}@${m.lastLogTerm}${m.transfer ? ' transfer' : ''}`;
    case 'voteResp':
    case 'preVoteResp':
      return `${head}${m.reject ? ' REJECT' : ' grant'}`;
    case 'heartbeat':
      return `${head} commit=${m.commit}${m.context === '' ? '' : ` ctx=${m.context}`}`;
    case 'heartbeatResp':
      return `${head}${m.context === '' ? '' : ` ctx=${m.context}`}`;
    case 'readIndex':
      return `${head} ctx=${m.context}`;
    case 'readIndexResp':
      return `${head} ctx=${m.context} index=${m.index}`;
    case 'snapshot':
      return `${head} meta=${m.meta.index}@${m.meta.term} offset=${m.offset} bytes=${m.chunk.length}${m.done ? ' done' : ''}`;
    case 'timeoutNow':
      return head;
  }
}

/** A small number per message type, for the trace hash. */
export const MESSAGE_CODE: Record<Message['type'], number> = {
  vote: 1,
  voteResp: 2,
  preVote: 3,
  preVoteResp: 4,
  app: 5,
  appResp: 6,
  heartbeat: 7,
  heartbeatResp: 8,
  snapshot: 9,
  timeoutNow: 10,
  readIndex: 11,
  readIndexResp: 12,
};
