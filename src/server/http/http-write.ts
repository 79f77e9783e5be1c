// Writing an HTTP response body at the pace the client reads it.
import type { ServerResponse } from 'node:http';

/** res.write with backpressure: resolves once the chunk is written or drained; rejects if the client goes away while we wait. */
export function writeWithBackpressure(res: ServerResponse, chunk: Buffer | string): Promise<void> {
  if (res.destroyed) return Promise.reject(new Error('the client went away'));
  if (res.write(chunk)) return Promise.resolve();
  return new Promise((resolve, reject) => {
    const onDrain = (): void => {
      res.off('close', onClose);
      resolve();
    };
    const onClose = (): void => {
      res.off('drain', onDrain);
      reject(new Error('the client went away'));
    };
    res.once('drain', onDrain);
    res.once('close', onClose);
  });
}
