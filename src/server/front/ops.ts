// Reading a list for a get (WebSocket or HTTP), wherever its items are held
// (path-guard.ts), and how stored items become wire items. Reads are served
// locally after a ReadIndex barrier unless the client asked for a stale read. The other client ops belong to the command
// families (src/families/*/server.ts).

import { wireItems } from '../../families/lists/item.js';
import type { FrontEnd } from './context.js';
import { VeraError, type GetRequest, type GetResult } from '../../protocol/index.js';
import { readListPages } from '../guard/path-guard.js';

/** A linearizable get waits for its read index; a stale one reads what this member has applied. */
export async function readBarrier(fe: FrontEnd, req: GetRequest): Promise<void> {
  if ((req.consistency ?? 'linearizable') === 'linearizable') await fe.node.linearizableBarrier(fe.readTimeoutMs);
}

/** The whole list in one result, or TOO_LARGE once its items pass `replyBytes` (read no further). */
export async function readWholeList(fe: FrontEnd, path: string): Promise<GetResult> {
  let whole: GetResult | null = null;
  await readListPages(fe, path, fe.limits.replyBytes, (page) => {
    // One page that fits is the whole list; anything more stops the read here.
    if (page.more || page.bytes > fe.limits.replyBytes) {
      throw new VeraError('TOO_LARGE', `the list ${path} holds more than ${fe.limits.replyBytes} bytes of items, more than one reply carries; read it with a streamed get (stream: true)`);
    }
    whole = { index: page.index, items: wireItems(page.items) };
  });
  return whole!;
}

/**
 * The list from one read, in pages of at most `replyBytes`: every page but the last
 * goes to `sendPage` (with `more: true`), which may wait for the client to read;
 * the last is returned.
 */
export async function streamList(fe: FrontEnd, path: string, sendPage: (page: GetResult) => Promise<void>): Promise<GetResult> {
  let last: GetResult | null = null;
  await readListPages(fe, path, fe.limits.replyBytes, async (page) => {
    const result = { index: page.index, items: wireItems(page.items) };
    if (page.more) await sendPage({ ...result, more: true });
    else last = result;
  });
  return last!;
}
