import { lookup as dnsLookup } from 'node:dns/promises';
import http, { type IncomingMessage } from 'node:http';
import https from 'node:https';
import { isIP, type LookupFunction } from 'node:net';
import { performance } from 'node:perf_hooks';
import { Webhook } from 'standardwebhooks';
import { refusedAddress } from '../domain/public-address.js';

export interface WebhookSenderSettings {
  /** One attempt's deadline, the host's resolution included (10 s by the issue). */
  readonly timeoutMs: number;
  /**
   * Deliver to loopback, private and other special-purpose addresses too: a single-host
   * install's receivers live there. Link-local and metadata addresses stay refused.
   */
  readonly allowPrivateNetworks: boolean;
}

export interface OutgoingEvent {
  url: string;
  /** whsec_…, as the account was shown it. */
  secret: string;
  eventId: string;
  body: string;
}

export interface AttemptResult {
  /** Null when no answer came: a refused address, a connection error, the deadline. */
  statusCode: number | null;
  /** Null when delivered (a 2xx). */
  error: string | null;
  durationMs: number;
}

interface ResolvedAddress {
  address: string;
  family: number;
}

export type Resolver = (host: string) => Promise<ResolvedAddress[]>;

const resolveAll: Resolver = (host) => dnsLookup(host, { all: true, verbatim: true });

/**
 * One attempt to deliver one event (docs/webhooks.md): signed per Standard Webhooks, sent
 * to an address checked when it is sent, with no redirect followed and a deadline.
 *
 * The host is resolved here and every address it has is checked (refusedAddress, under
 * the same policy as the URL was when saved); the connection then goes to the address checked, handed
 * to Node through the request's `lookup`, so a second resolution that answers otherwise
 * (DNS rebinding) is never made. An IP literal is checked as it stands and connected to
 * without any lookup.
 */
export class WebhookSender {
  constructor(private readonly settings: WebhookSenderSettings, private readonly resolve: Resolver = resolveAll) {}

  async send(event: OutgoingEvent, now: Date): Promise<AttemptResult> {
    const started = performance.now();
    const result = (statusCode: number | null, error: string | null): AttemptResult => ({ statusCode, error, durationMs: Math.round(performance.now() - started) });
    const deadline = AbortSignal.timeout(this.settings.timeoutMs);
    try {
      const url = new URL(event.url);
      if (url.protocol !== 'http:' && url.protocol !== 'https:') return result(null, `refused: ${url.protocol} is not http or https`);
      const target = await withDeadline(this.checkedAddress(url.hostname.replace(/^\[|\]$/g, '')), deadline);
      if ('refused' in target) return result(null, target.refused);
      const response = await post(url, signedHeaders(event, now), event.body, target, deadline);
      response.resume();
      const status = response.statusCode ?? 0;
      if (status >= 200 && status < 300) return result(status, null);
      const redirect = status >= 300 && status < 400 ? ' (redirects are not followed)' : '';
      return result(status, `answered ${status}${redirect}`);
    } catch (error) {
      if (deadline.aborted) return result(null, `no answer within ${this.settings.timeoutMs / 1000} s`);
      return result(null, (error as Error).message);
    }
  }

  private async checkedAddress(host: string): Promise<ResolvedAddress | { refused: string }> {
    const family = isIP(host);
    const addresses = family === 0 ? await this.resolve(host) : [{ address: host, family }];
    if (addresses.length === 0) return { refused: `${host} resolves to no address` };
    // Every one, not only the first: a name whose addresses mix public and refused ones is refused.
    for (const { address } of addresses) {
      const why = refusedAddress(address, this.settings);
      if (why) return { refused: `refused: ${host} resolves to ${address}, ${why}` };
    }
    return addresses[0]!;
  }
}

/** Standard Webhooks' headers; the library signs "id.timestamp.body" with HMAC-SHA256 under the secret's decoded bytes. */
function signedHeaders(event: OutgoingEvent, now: Date): Record<string, string> {
  return {
    'content-type': 'application/json',
    'user-agent': 'agent-platform-webhooks/1',
    'webhook-id': event.eventId,
    'webhook-timestamp': String(Math.floor(now.getTime() / 1000)),
    'webhook-signature': new Webhook(event.secret).sign(event.eventId, now, event.body),
  };
}

function post(url: URL, headers: Record<string, string>, body: string, target: ResolvedAddress, signal: AbortSignal): Promise<IncomingMessage> {
  // Node asks for every address when it tries both families (autoSelectFamily), one otherwise: either way, only the checked one.
  const pinned: LookupFunction = (_host, options, callback) => {
    if ((options as { all?: boolean }).all) (callback as unknown as (error: null, addresses: ResolvedAddress[]) => void)(null, [target]);
    else callback(null, target.address, target.family);
  };
  const client = url.protocol === 'https:' ? https : http;
  return new Promise((resolve, reject) => {
    const request = client.request(url, { method: 'POST', headers: { ...headers, 'content-length': String(Buffer.byteLength(body)) }, lookup: pinned, agent: false, signal }, resolve);
    request.on('error', reject);
    request.end(body);
  });
}

function withDeadline<T>(work: Promise<T>, deadline: AbortSignal): Promise<T> {
  return new Promise((resolve, reject) => {
    const abort = () => reject(deadline.reason);
    if (deadline.aborted) abort();
    deadline.addEventListener('abort', abort, { once: true });
    work.then(resolve, reject).finally(() => deadline.removeEventListener('abort', abort));
  });
}
