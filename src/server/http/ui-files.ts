// The dashboard's static files, served by every member on the client port:
// GET /ui redirects to /ui/, /ui/ is index.html, /ui/<file> a file of dist/ui
// (built by `npm run build`: scripts/build-ui.ts). GET and HEAD only. A name is
// served only if every segment of the raw target is plain ([A-Za-z0-9._-], not
// starting with a dot), so no encoding, `..` or hidden file reaches the disk,
// and the resolved path must still lie inside the directory.
//
// Any page may load the files (CORS `*`: they are public, and what a page may do
// with a member is decided at its WebSocket by origin.ts).
//
// Caching: the files keep their names from one build to the next, so every
// answer is `no-cache` with an ETag (size and mtime): a browser asks again and
// gets a 304 while nothing changed, and the new build right after an upgrade.
import { createReadStream, statSync, type Stats } from 'node:fs';
import type { IncomingMessage, ServerResponse } from 'node:http';
import { basename, dirname, extname, join, resolve, sep } from 'node:path';
import { fileURLToPath } from 'node:url';

/** The prefix of the dashboard's URLs. */
export const UI_PATH = '/ui';

const CONTENT_TYPES: Readonly<Record<string, string>> = {
  '.html': 'text/html; charset=utf-8',
  '.js': 'text/javascript; charset=utf-8',
  '.mjs': 'text/javascript; charset=utf-8',
  '.css': 'text/css; charset=utf-8',
  '.map': 'application/json; charset=utf-8',
  '.json': 'application/json; charset=utf-8',
  '.txt': 'text/plain; charset=utf-8',
  '.svg': 'image/svg+xml',
  '.png': 'image/png',
  '.ico': 'image/x-icon',
  '.woff2': 'font/woff2',
};

/**
 * The tab icon, kept in the code rather than dist/ui so it is there even before the dashboard is
 * built: a browser asks /favicon.ico of every page it shows, the dashboard links /ui/favicon.svg.
 */
export const FAVICON_SVG =
  '<svg xmlns="http://www.w3.org/2000/svg" viewBox="0 0 32 32"><rect width="32" height="32" rx="6" fill="#1f4e79"/><path d="M8 8l8 17 8-17" fill="none" stroke="#fff" stroke-width="4" stroke-linecap="round" stroke-linejoin="round"/></svg>';

/** Where a browser looks for a site's icon without being told. */
export const FAVICON_PATHS: ReadonlySet<string> = new Set(['/favicon.ico', `${UI_PATH}/favicon.svg`]);

/** Answers GET or HEAD of a FAVICON_PATHS entry with FAVICON_SVG (SVG under an .ico name: browsers go by the content). */
export function serveFavicon(req: IncomingMessage, res: ServerResponse): void {
  const body = req.method === 'HEAD' ? '' : FAVICON_SVG;
  res.writeHead(200, {
    'content-type': 'image/svg+xml',
    'content-length': Buffer.byteLength(FAVICON_SVG),
    'cache-control': 'public, max-age=86400',
    'x-content-type-options': 'nosniff',
  });
  res.end(body);
}

const SEGMENT = /^[A-Za-z0-9_-][A-Za-z0-9._-]*$/;

/**
 * dist/ui of this build: beside the server's directory when it runs compiled
 * (dist/server/http -> dist/ui), and the project's dist/ui when it runs from its
 * sources (src/server/http, under vitest or tsx), never src/ui (the sources).
 */
export function defaultUiDirectory(): string {
  const here = dirname(fileURLToPath(import.meta.url));
  const top = dirname(dirname(here));
  return basename(top) === 'src' ? join(dirname(top), 'dist', 'ui') : join(top, 'ui');
}

/** Whether a request's raw target (path and query) is the dashboard's: /ui or /ui/... */
export function isUiTarget(target: string): boolean {
  const path = target.split('?', 1)[0]!;
  return path === UI_PATH || path.startsWith(`${UI_PATH}/`);
}

/**
 * What a dashboard page may load and reach (Content-Security-Policy): its own scripts and
 * stylesheets only, nothing inline, no frames, and connections to this member and the
 * WebSocket URLs of its cluster's members (`connectTo`; the client library follows the
 * leader). The page holds an admin's token: script injected into it could neither run
 * inline nor send the token anywhere else.
 */
export function dashboardPolicy(connectTo: readonly string[]): string {
  return [
    "default-src 'none'",
    "script-src 'self'",
    "style-src 'self'",
    "img-src 'self' data:",
    "font-src 'self'",
    `connect-src ${["'self'", ...connectTo].join(' ')}`,
    "base-uri 'none'",
    "form-action 'none'",
    "frame-ancestors 'none'",
  ].join('; ');
}

/** Answers a request isUiTarget accepted, from the files in `dir`; pages get dashboardPolicy(connectTo). */
export function serveUi(dir: string, req: IncomingMessage, res: ServerResponse, connectTo: readonly string[] = []): void {
  const target = req.url ?? '/';
  const queryAt = target.indexOf('?');
  const path = queryAt < 0 ? target : target.slice(0, queryAt);
  const query = queryAt < 0 ? '' : target.slice(queryAt);
  if (req.method !== 'GET' && req.method !== 'HEAD') {
    send(res, 405, `method ${req.method ?? '?'} is not allowed here; use GET\n`, { allow: 'GET, HEAD' });
    return;
  }
  if (path === UI_PATH) {
    send(res, 301, `moved to ${UI_PATH}/\n`, { location: `${UI_PATH}/${query}` });
    return;
  }
  if (FAVICON_PATHS.has(path)) {
    serveFavicon(req, res);
    return;
  }
  const name = path === `${UI_PATH}/` ? 'index.html' : path.slice(UI_PATH.length + 1);
  const segments = name.split('/');
  const root = resolve(dir);
  const file = resolve(root, ...segments);
  if (!segments.every((s) => SEGMENT.test(s)) || !file.startsWith(root + sep)) {
    notFound(res, path, dir);
    return;
  }
  let stats: Stats;
  try {
    stats = statSync(file);
  } catch {
    notFound(res, path, dir);
    return;
  }
  if (!stats.isFile()) {
    notFound(res, path, dir);
    return;
  }
  const etag = `"${stats.size.toString(16)}-${Math.floor(stats.mtimeMs).toString(16)}"`;
  const headers: Record<string, string | number> = {
    'content-type': CONTENT_TYPES[extname(file).toLowerCase()] ?? 'application/octet-stream',
    'cache-control': 'no-cache',
    etag,
    'x-content-type-options': 'nosniff',
    // Pages of other origins may load the client library (a module script is fetched with CORS). Its
    // WebSocket is still judged by origin.ts: such a page reaches a member only from an allowed origin.
    'access-control-allow-origin': '*',
  };
  // The dashboard acts for its user (deletes, requeues, leadership transfers): no other site may frame it.
  if (extname(file) === '.html') {
    headers['x-frame-options'] = 'DENY';
    headers['content-security-policy'] = dashboardPolicy(connectTo);
  }
  if (matches(req.headers['if-none-match'], etag)) {
    res.writeHead(304, headers).end();
    return;
  }
  headers['content-length'] = stats.size;
  res.writeHead(200, headers);
  if (req.method === 'HEAD') {
    res.end();
    return;
  }
  const stream = createReadStream(file);
  stream.on('error', () => res.destroy()); // removed or replaced since the stat: the client sees a cut response
  stream.pipe(res);
}

function matches(header: string | undefined, etag: string): boolean {
  if (header === undefined) return false;
  return header.split(',').some((tag) => {
    const t = tag.trim();
    return t === '*' || t === etag || t === `W/${etag}`;
  });
}

function notFound(res: ServerResponse, path: string, dir: string): void {
  // Only the path the client sent, never the directory: a member's layout is its own business.
  const built = statSafe(join(dir, 'index.html'));
  send(res, 404, built ? `no file ${path}\n` : `the dashboard is not built on this member (npm run build makes dist/ui)\n`);
}

function statSafe(path: string): boolean {
  try {
    return statSync(path).isFile();
  } catch {
    return false;
  }
}

function send(res: ServerResponse, code: number, body: string, headers: Record<string, string> = {}): void {
  res.writeHead(code, { 'content-type': 'text/plain; charset=utf-8', 'content-length': Buffer.byteLength(body), 'x-content-type-options': 'nosniff', ...headers });
  res.end(body);
}
