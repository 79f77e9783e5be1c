// Opens a WebSocket to a member's /v1/connect with chosen headers and says how the
// upgrade went: 101 when it opened (closed again at once), else the refusal's HTTP status.
import WebSocket, { type ClientOptions } from 'ws';

export function upgradeStatus(url: string, options: ClientOptions = {}): Promise<number> {
  return new Promise((resolve, reject) => {
    const ws = new WebSocket(`${url}/v1/connect`, options);
    ws.on('open', () => {
      ws.close();
      resolve(101);
    });
    ws.on('unexpected-response', (_req, res) => {
      resolve(res.statusCode ?? 0);
      ws.terminate();
    });
    ws.on('error', reject);
  });
}
