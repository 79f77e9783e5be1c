// GET /v1/data/<path>: one list as JSON `{index, items}`, from one read at one
// index, streamed page by page at the pace the client reads. Requests pipelined
// on one socket are served one after another (HTTP answers them in order anyway),
// so a client that sends many and reads nothing holds one page of this server's
// memory; past a handful waiting, its socket is closed.

import type { IncomingMessage, ServerResponse } from 'node:http';
import { jsonText } from '../../protocol/json.js';
import type { Socket } from 'node:net';
import { validatePath, VeraError } from '../../protocol/index.js';
import type { FrontEnd } from '../front/context.js';
import { guarded, readListPages } from '../guard/path-guard.js';
import { writeWithBackpressure } from './http-write.js';

/** Requests one socket may have waiting behind the one being answered. */
export const HTTP_PIPELINE_MAX = 16;

interface SocketQueue {
  tail: Promise<void>;
  waiting: number;
}

const queues = new WeakMap<Socket, SocketQueue>();

export type SendError = (res: ServerResponse, err: unknown) => void;

export function serveList(fe: FrontEnd, req: IncomingMessage, res: ServerResponse, sendError: SendError): void {
  const socket = req.socket;
  let queue = queues.get(socket);
  if (queue === undefined) {
    queue = { tail: Promise.resolve(), waiting: 0 };
    queues.set(socket, queue);
  }
  if (queue.waiting >= HTTP_PIPELINE_MAX) {
    fe.logger.debug({ event: 'http-pipeline-overflow', remote: socket.remoteAddress }, 'too many pipelined reads on one socket');
    socket.destroy();
    return;
  }
  const q = queue;
  q.waiting++;
  q.tail = q.tail.then(async () => {
    q.waiting--;
    if (socket.destroyed) return;
    try {
      await answer(fe, req, res);
    } catch (err) {
      if (res.headersSent) res.destroy();
      else sendError(res, err);
    }
  });
}

async function answer(fe: FrontEnd, req: IncomingMessage, res: ServerResponse): Promise<void> {
  const { path, consistency } = parseRequest(req.url ?? '/');
  await fe.guard.admitHttp(req, [{ perm: 'read', resource: path }], `GET ${path}`);
  // As a WebSocket get: past the path guards, and read wherever the list is held (a hibernated one from its cold file).
  await guarded(fe, [{ path, use: 'read', stale: consistency === 'stale' }], async () => {
    if (consistency === 'linearizable') await fe.node.linearizableBarrier(fe.readTimeoutMs);
    await respond(fe, req, res, path);
  });
}

/** Streams the list as JSON. */
async function respond(fe: FrontEnd, req: IncomingMessage, res: ServerResponse, path: string): Promise<void> {
  let opened = false;
  let separator = '';
  await readListPages(fe, path, fe.limits.replyBytes, async (page) => {
    if (!opened) {
      opened = true;
      res.writeHead(200, { 'content-type': 'application/json' });
      if (req.method === 'HEAD') throw new HeadDone();
      await writeWithBackpressure(res, `{"index":${page.index},"items":[`);
    }
    let text = '';
    for (const item of page.items) {
      text += separator + jsonText(item);
      separator = ',';
    }
    if (text !== '') await writeWithBackpressure(res, text);
  }).catch((err: unknown) => {
    if (!(err instanceof HeadDone)) throw err;
  });
  res.end(req.method === 'HEAD' ? undefined : ']}\n');
}

class HeadDone extends Error {}

/**
 * The list path from the raw request target, under the same rule as the WebSocket:
 * percent-decoded but never normalised (URL parsing would quietly turn `/a/../b` into `/b`).
 */
function parseRequest(target: string): { path: string; consistency: 'stale' | 'linearizable' } {
  const query = target.indexOf('?');
  const rawPath = query === -1 ? target : target.slice(0, query);
  let path: string;
  try {
    path = decodeURIComponent(rawPath.slice('/v1/data'.length));
  } catch {
    throw new VeraError('BAD_REQUEST', 'path is not valid percent-encoded UTF-8');
  }
  const problem = validatePath(path, { allowRoot: false });
  if (problem !== null) throw new VeraError('BAD_REQUEST', `bad path ${JSON.stringify(path)}: ${problem}`);
  const params = new URLSearchParams(query === -1 ? '' : target.slice(query + 1));
  const consistency = params.get('consistency') ?? 'stale';
  if (consistency !== 'stale' && consistency !== 'linearizable') {
    throw new VeraError('BAD_REQUEST', `consistency must be "stale" or "linearizable", not ${JSON.stringify(consistency)}`);
  }
  return { path, consistency };
}
