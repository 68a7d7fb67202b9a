import type { IncomingMessage } from 'node:http';
import { invalidRequest } from '../errors.js';

/** Reads and parses a JSON body, refusing it once it passes `maxBytes`. */
export async function readJsonBody(request: IncomingMessage, maxBytes: number): Promise<unknown> {
  const tooLarge = () => invalidRequest(`request body is larger than ${maxBytes} bytes`);
  const declared = Number(request.headers['content-length']);
  if (Number.isFinite(declared) && declared > maxBytes) throw tooLarge();

  const chunks: Buffer[] = [];
  let received = 0;
  for await (const chunk of request as AsyncIterable<Buffer>) {
    received += chunk.length;
    if (received > maxBytes) throw tooLarge();
    chunks.push(chunk);
  }
  const text = Buffer.concat(chunks).toString('utf8');
  try {
    return JSON.parse(text) as unknown;
  } catch {
    throw invalidRequest('request body is not valid JSON');
  }
}
