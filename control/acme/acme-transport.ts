import { request as httpRequest, type IncomingHttpHeaders } from 'node:http';
import { Agent, request as httpsRequest } from 'node:https';
import type { KeyObject } from 'node:crypto';
import { rootCertificates } from 'node:tls';
import { AcmeError, AcmeErrorType } from './acme-error.js';
import { signJws, type JwsSigner } from './jws.js';

/**
 * ACME over HTTP: plain GETs, nonces, and signed POSTs (RFC 8555 §6). Every request has
 * a deadline; the one retry is a badNonce's, which the server refused before acting.
 */

export interface AcmeResponse {
  status: number;
  headers: IncomingHttpHeaders;
  body: Buffer;
  /** Retry-After in seconds (RFC 9110 §10.2.3: seconds or an HTTP date), or null. */
  retryAfterSeconds: number | null;
  location: string | null;
}

export interface AcmeTransportOptions {
  /** Extra PEM certificates to trust beside the system's (a test CA, a private ACME CA). */
  ca?: string | null;
  userAgent: string;
  /** Deadline of each request. */
  requestTimeoutMs: number;
}

/** Answers larger than this are no ACME object nor a sane chain. */
const MAX_BODY_BYTES = 1024 * 1024;

export class AcmeTransport {
  private readonly agent: Agent;
  private nonce: string | null = null;
  private newNonceUrl: string | null = null;

  constructor(private readonly options: AcmeTransportOptions) {
    // `ca` on an Agent replaces node's default roots, so the system's are added back: a
    // CA file widens trust, it never narrows it to one CA nor switches verification off.
    this.agent = new Agent({ keepAlive: true, ca: options.ca ? [...rootCertificates, options.ca] : undefined });
  }

  /** Where fresh nonces come from: the directory's newNonce (RFC 8555 §7.2). */
  useNewNonceUrl(url: string): void {
    this.newNonceUrl = url;
  }

  /** Keeps a nonce to sign the next request with; every answer's Replay-Nonce goes here (RFC 8555 §6.5). */
  rememberNonce(nonce: string): void {
    this.nonce = nonce;
  }

  async get(url: string, what: string): Promise<AcmeResponse> {
    const response = await this.send('GET', url, null, {}, what);
    if (response.status >= 400) throw problemOf(response, what);
    return response;
  }

  /**
   * A JWS POST: `payload` JSON, or `''` for POST-as-GET. A badNonce is retried once with
   * the nonce the refusal carried (RFC 8555 §6.5: the server "MUST" include one).
   */
  async post(url: string, payload: unknown | '', signing: { key: KeyObject; signer: JwsSigner }, what: string, accept?: string): Promise<AcmeResponse> {
    for (let attempt = 1; ; attempt++) {
      const nonce = await this.takeNonce();
      const body = Buffer.from(JSON.stringify(signJws(signing.key, { url, nonce, signer: signing.signer }, payload)));
      const response = await this.send('POST', url, body, { 'content-type': 'application/jose+json', ...(accept ? { accept } : {}) }, what);
      if (response.status < 400) return response;
      const error = problemOf(response, what);
      if (error.type === AcmeErrorType.badNonce && attempt === 1) continue;
      throw error;
    }
  }

  close(): void {
    this.agent.destroy();
  }

  private async takeNonce(): Promise<string> {
    if (!this.nonce) {
      if (!this.newNonceUrl) throw new Error('ACME: no nonce and no newNonce URL; read the directory first');
      // HEAD newNonce answers 200 with a Replay-Nonce (RFC 8555 §7.2); send() keeps it.
      const response = await this.send('HEAD', this.newNonceUrl, null, {}, 'newNonce');
      if (response.status >= 400) throw problemOf(response, 'newNonce');
    }
    const nonce = this.nonce;
    if (!nonce) throw new Error(`ACME newNonce (${this.newNonceUrl}) answered without a Replay-Nonce header`);
    // A nonce is good once: forget it so a failed send cannot reuse it.
    this.nonce = null;
    return nonce;
  }

  private send(method: string, url: string, body: Buffer | null, headers: Record<string, string>, what: string): Promise<AcmeResponse> {
    const target = new URL(url);
    const request = target.protocol === 'https:' ? httpsRequest : target.protocol === 'http:' ? httpRequest : null;
    if (!request) return Promise.reject(new Error(`ACME ${what}: unsupported URL scheme in ${url}`));
    return new Promise<AcmeResponse>((resolve, reject) => {
      const req = request(
        target,
        {
          method,
          agent: target.protocol === 'https:' ? this.agent : undefined,
          headers: { 'user-agent': this.options.userAgent, 'accept-language': 'en', ...headers, ...(body ? { 'content-length': String(body.length) } : {}) },
          timeout: this.options.requestTimeoutMs,
        },
        (res) => {
          const chunks: Buffer[] = [];
          let size = 0;
          res.on('data', (chunk: Buffer) => {
            size += chunk.length;
            if (size > MAX_BODY_BYTES) req.destroy(new Error(`ACME ${what}: answer from ${target.origin} is larger than ${MAX_BODY_BYTES} bytes`));
            else chunks.push(chunk);
          });
          res.on('error', reject);
          res.on('end', () => {
            const replayNonce = res.headers['replay-nonce'];
            if (typeof replayNonce === 'string' && replayNonce) this.rememberNonce(replayNonce);
            const location = res.headers.location ? new URL(res.headers.location, target).toString() : null;
            resolve({ status: res.statusCode ?? 0, headers: res.headers, body: Buffer.concat(chunks), retryAfterSeconds: parseRetryAfter(res.headers['retry-after']), location });
          });
        },
      );
      req.on('timeout', () => req.destroy(new Error(`ACME ${what}: ${target.origin} did not answer within ${this.options.requestTimeoutMs} ms`)));
      req.on('error', (error) => reject(error.message.startsWith('ACME ') ? error : new Error(`ACME ${what}: ${method} ${target.origin}${target.pathname} failed: ${error.message}`, { cause: error })));
      req.end(body ?? undefined);
    });
  }
}

/** The answer's JSON object, or a clear error when it is none. */
export function jsonOf<T>(response: AcmeResponse, what: string): T {
  try {
    const value = JSON.parse(response.body.toString('utf8')) as unknown;
    if (value && typeof value === 'object') return value as T;
  } catch {
    // fall through to the error below
  }
  throw new Error(`ACME ${what}: the CA answered ${response.status} without a JSON object`);
}

function problemOf(response: AcmeResponse, what: string): AcmeError {
  let problem: unknown = null;
  try {
    problem = JSON.parse(response.body.toString('utf8'));
  } catch {
    // A body that is no problem document (a proxy's HTML page) leaves type about:blank.
  }
  return AcmeError.fromProblem(problem, response.status, response.retryAfterSeconds, what);
}

export function parseRetryAfter(value: string | string[] | undefined): number | null {
  const text = Array.isArray(value) ? value[0] : value;
  if (!text) return null;
  if (/^\d+$/.test(text.trim())) return Number(text.trim());
  const at = Date.parse(text);
  return Number.isNaN(at) ? null : Math.max(0, Math.ceil((at - Date.now()) / 1000));
}
