import type { IncomingMessage } from 'node:http';
import { PlatformError, validationError } from '../domain/errors.js';

export const MAX_BODY_BYTES = 1024 * 1024;

/** How large a body may be, and the error that refuses a larger one. */
export interface BodyLimit {
  maxBytes: number;
  tooLarge: () => PlatformError;
}

/** The control API's: 1 MiB. */
const API_BODY_LIMIT: BodyLimit = {
  maxBytes: MAX_BODY_BYTES,
  tooLarge: () => new PlatformError('PAYLOAD_TOO_LARGE', `The request body is larger than ${MAX_BODY_BYTES} bytes`),
};

/** Reads a body of at most `limit.maxBytes` whole; an oversized body is `limit.tooLarge` (413) before it is all read. */
export async function readBodyBytes(request: IncomingMessage, limit: BodyLimit = API_BODY_LIMIT): Promise<Buffer> {
  const declared = Number(request.headers['content-length'] ?? 0);
  if (declared > limit.maxBytes) throw limit.tooLarge();
  const chunks: Buffer[] = [];
  let size = 0;
  for await (const chunk of request) {
    size += (chunk as Buffer).length;
    if (size > limit.maxBytes) throw limit.tooLarge();
    chunks.push(chunk as Buffer);
  }
  return Buffer.concat(chunks);
}

/**
 * Reads a JSON body of at most `limit.maxBytes` (1 MiB unless told). Returns undefined for
 * an empty body; malformed JSON is a 422 at `["body"]`, an oversized body `limit.tooLarge`
 * (413) before it is all read, a body declared as something other than JSON a 415 (no
 * Content-Type is read as JSON, as curl -d sends).
 */
export async function readJsonBody(request: IncomingMessage, limit: BodyLimit = API_BODY_LIMIT): Promise<unknown> {
  const text = (await readBodyBytes(request, limit)).toString('utf8');
  if (text.trim() === '') return undefined;
  const type = request.headers['content-type'];
  if (type !== undefined && !/^application\/(?:[\w.+-]+\+)?json\s*(?:;|$)/i.test(type)) {
    throw new PlatformError('UNSUPPORTED_MEDIA_TYPE', `The body must be JSON (Content-Type: application/json), not ${type.split(';')[0]}`);
  }
  try {
    return JSON.parse(text);
  } catch (error) {
    throw validationError([{ loc: ['body'], msg: `malformed JSON: ${(error as Error).message}`, type: 'json_invalid' }]);
  }
}
