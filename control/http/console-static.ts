import { createHash } from 'node:crypto';
import { readFile, stat } from 'node:fs/promises';
import { extname, join, normalize, sep } from 'node:path';
import { fileURLToPath } from 'node:url';
import type Koa from 'koa';

/**
 * Where scripts/build-console.ts writes the web console: console/dist in the repository,
 * and dist/console/dist in the platform image, since both sit two folders above this file.
 */
export const CONSOLE_BUILD_DIR = fileURLToPath(new URL('../../console/dist/', import.meta.url));

const CONTENT_TYPES: Record<string, string> = {
  '.html': 'text/html; charset=utf-8',
  '.js': 'text/javascript; charset=utf-8',
  '.css': 'text/css; charset=utf-8',
  '.svg': 'image/svg+xml',
  '.png': 'image/png',
  '.ico': 'image/x-icon',
  '.json': 'application/json; charset=utf-8',
  '.map': 'application/json; charset=utf-8',
};

export interface ConsoleOptions {
  /** The folder holding index.html and assets/ (CONSOLE_BUILD_DIR unless a test names another). */
  root: string;
  /** The agents' origin pattern (e.g. http://*.agents.localhost:7080), which "Try it" calls. */
  edgeOrigin: string;
  /** Paths the console never answers: the API and the probes keep them. */
  isReserved: (path: string) => boolean;
}

/** The page's security headers: nothing inline runs, nothing frames it, no referrer leaves it. */
export function consoleHeaders(edgeOrigin: string): Record<string, string> {
  const csp = [
    "default-src 'self'",
    "script-src 'self'",
    "style-src 'self'",
    "img-src 'self' data:",
    `connect-src 'self' ${edgeOrigin}`,
    "object-src 'none'",
    "base-uri 'none'",
    "form-action 'self'",
    "frame-ancestors 'none'",
  ].join('; ');
  return {
    'Content-Security-Policy': csp,
    'X-Content-Type-Options': 'nosniff',
    'Referrer-Policy': 'no-referrer',
    'X-Frame-Options': 'DENY',
  };
}

/**
 * Serves the built console for GET and HEAD outside the API: a file under the build folder,
 * else, for a page load (Accept: text/html), index.html, so that a client route such as
 * /agents/ag_1 loads the app; anything else not there goes on to the API's 404. Hashed assets
 * (assets/name-HASH.js) are cached for a year; index.html is revalidated by its ETag each time,
 * so a new build is seen at the next load.
 */
export function serveConsole(options: ConsoleOptions): Koa.Middleware {
  const headers = consoleHeaders(options.edgeOrigin);
  return async (ctx, next) => {
    if ((ctx.method !== 'GET' && ctx.method !== 'HEAD') || options.isReserved(ctx.path)) return next();
    // Only a page load (a browser navigating asks for HTML) falls back to the app: an API
    // client's or a script's request for a path that is not there stays the API's 404.
    const pageLoad = ctx.path === '/' || ctx.get('Accept').includes('text/html');
    const file = (await fileUnder(options.root, ctx.path)) ?? (pageLoad ? await fileUnder(options.root, '/index.html') : undefined);
    if (!file && !pageLoad) return next();
    if (!file) {
      ctx.status = 503;
      ctx.type = 'text/plain';
      ctx.body = 'The web console is not built: run `npm run build:console`.\n';
      return;
    }
    const body = await readFile(file);
    const etag = `"${createHash('sha256').update(body).digest('base64url').slice(0, 27)}"`;
    ctx.set(headers);
    ctx.set('ETag', etag);
    const hashed = file.includes(`${sep}assets${sep}`);
    ctx.set('Cache-Control', hashed ? 'public, max-age=31536000, immutable' : 'no-cache');
    ctx.type = CONTENT_TYPES[extname(file)] ?? 'application/octet-stream';
    if (ctx.get('If-None-Match') === etag) {
      ctx.status = 304;
      return;
    }
    ctx.status = 200;
    ctx.body = body;
  };
}

/** The regular file `path` names inside `root`, or undefined (no escaping the folder with ..). */
async function fileUnder(root: string, path: string): Promise<string | undefined> {
  let decoded: string;
  try {
    decoded = decodeURIComponent(path);
  } catch {
    return undefined;
  }
  if (decoded.includes('\0')) return undefined;
  const file = join(root, normalize(decoded));
  if (!file.startsWith(root.endsWith(sep) ? root : root + sep)) return undefined;
  const info = await stat(file).catch(() => undefined);
  return info?.isFile() ? file : undefined;
}
