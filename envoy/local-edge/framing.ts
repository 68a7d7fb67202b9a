import type { IncomingMessage } from 'node:http';

/**
 * Request framing the local edge refuses with 400 before asking authz, because two
 * readers of the same request could disagree about it (issue 13 item 8). Node folds
 * duplicate `Host` and `Authorization` into the first value in `request.headers`, so
 * duplicates are counted in `rawHeaders`. `scheme` is the port's: an absolute-form target
 * must name it. Returns what is wrong, or null. Pure.
 */
export function framingProblem(request: Pick<IncomingMessage, 'rawHeaders' | 'url' | 'headers'>, scheme: 'http' | 'https' = 'http'): string | null {
  // RFC 9112 §3.2: "A server MUST respond with a 400 (Bad Request) status code to any
  // HTTP/1.1 request message that lacks a Host header field and to any request message
  // that contains more than one Host header field line".
  const hosts = countOf(request.rawHeaders, 'host');
  if (hosts > 1) return 'more than one Host header';
  // One key per request: with two, authz would check one and the agent might read the other.
  if (countOf(request.rawHeaders, 'authorization') > 1) return 'more than one Authorization header';

  const url = request.url ?? '/';
  if (url.startsWith('/') || url === '*') return null;
  // RFC 9112 §3.2.2: in absolute-form the request line's authority wins over Host and a
  // proxy replaces Host with it. Authz routes by Host, so a request whose two
  // authorities disagree is refused rather than routed by either.
  if (!URL.canParse(url)) return 'unparseable request target';
  const target = new URL(url);
  if (target.protocol !== `${scheme}:`) return `request target is not an ${scheme} URL`;
  const host = String(request.headers.host ?? '').toLowerCase();
  const defaultPort = scheme === 'https' ? 443 : 80;
  if (target.host !== host && `${target.hostname}:${defaultPort}` !== host) return 'request target authority does not match Host';
  return null;
}

function countOf(rawHeaders: string[], name: string): number {
  let count = 0;
  for (let i = 0; i < rawHeaders.length; i += 2) if (rawHeaders[i]!.toLowerCase() === name) count += 1;
  return count;
}
