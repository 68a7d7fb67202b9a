import { PlatformError } from '../domain/errors.js';

/** The agent version an If-Match header names (`"3"`, `W/"3"` or `3`); `*` names none. */
export function parseIfMatch(header: string | undefined): number | undefined {
  if (header === undefined || header.trim() === '*') return undefined;
  const match = /^\s*(?:W\/)?"?(\d+)"?\s*$/.exec(header);
  if (!match) {
    throw new PlatformError('PRECONDITION_FAILED', 'If-Match must name an agent version, as the ETag gives it (e.g. "3")');
  }
  return Number(match[1]);
}

export const etagOf = (version: number) => `"${version}"`;

/** A write's 202 with the changed resource and its ETag, so the next write can send If-Match. */
export const acceptedWithEtag = <T extends { version: number }>(resource: T) => ({ status: 202 as const, body: resource, headers: { ETag: etagOf(resource.version) } });
