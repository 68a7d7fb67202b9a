import type { KeyObject } from 'node:crypto';
import { AcmeError } from './acme-error.js';
import { AcmeTransport, jsonOf, type AcmeResponse } from './acme-transport.js';
import { certificateInfo } from './certificate-info.js';
import { createCertificateRequest } from './csr.js';
import { assertP256PrivateKey, keyAuthorization, publicJwk } from './jws.js';

export { AcmeError, AcmeErrorType, isAcmeError } from './acme-error.js';

/**
 * An RFC 8555 client for one thing: a certificate for one DNS name by HTTP-01. The caller
 * stores the account key and URL; whoever answers HTTP-01 on port 80 serves what
 * `challenges.publish` is handed.
 */

export interface AcmeClientOptions {
  directoryUrl: string;
  /** The account's EC P-256 private key: the account is this key (RFC 8555 §7.3). */
  accountKey: KeyObject;
  /** The account URL from an earlier open; without it, newAccount finds or makes the account. */
  accountUrl?: string | null;
  /** A contact for the CA's notices, sent as mailto: on newAccount. */
  email?: string | null;
  /** Extra PEM to trust for the CA's HTTPS (a test CA, a private CA), besides the system's roots. */
  ca?: string | null;
  userAgent?: string;
  /** Deadline of one HTTP request; default 30 s. */
  requestTimeoutMs?: number;
  /** Bound on waiting for an authorization, and again for the order, to leave pending/processing; default 60 s. */
  pollTimeoutMs?: number;
}

/** Who answers HTTP-01 (RFC 8555 §8.3): serves `keyAuthorization` at /.well-known/acme-challenge/<token>. */
export interface Http01Publisher {
  publish(token: string, keyAuthorization: string): Promise<void>;
  withdraw(token: string): Promise<void>;
}

export type IssuePhase = 'authorizing' | 'finalizing';

export interface IssuedCertificate {
  /** Leaf first, then the intermediates, as the CA sent them. */
  chainPem: string;
  /** The certificate's own key (PKCS#8 PEM): store it sealed; it appears in no message. */
  privateKeyPem: string;
  serial: string;
  notBefore: Date;
  notAfter: Date;
  /** RFC 9773 CertID, for renewalInfo. */
  certId: string;
}

export interface RenewalWindow {
  start: Date;
  end: Date;
  retryAfterSeconds: number | null;
}

interface Directory {
  newNonce: string;
  newAccount: string;
  newOrder: string;
  /** RFC 9773 §3; Pebble 2.4.0 has no renewalInfo (ARI came to Pebble in a later release). */
  renewalInfo?: string;
}

interface Order {
  status: 'pending' | 'ready' | 'processing' | 'valid' | 'invalid';
  authorizations: string[];
  finalize: string;
  certificate?: string;
  error?: unknown;
}

interface Challenge {
  type: string;
  url: string;
  token: string;
  status: string;
  error?: unknown;
}

interface Authorization {
  status: 'pending' | 'valid' | 'invalid' | 'deactivated' | 'expired' | 'revoked';
  identifier: { type: string; value: string };
  challenges: Challenge[];
}

const DEFAULT_USER_AGENT = 'agent-platform-acme/1';
const DEFAULT_REQUEST_TIMEOUT_MS = 30_000;
const DEFAULT_POLL_TIMEOUT_MS = 60_000;
/** Polls without Retry-After start here and double to the cap. */
const FIRST_POLL_MS = 250;
const MAX_POLL_MS = 5_000;

const DNS_NAME = /^(?=.{1,253}$)[a-z0-9](?:[a-z0-9-]{0,61}[a-z0-9])?(?:\.[a-z0-9](?:[a-z0-9-]{0,61}[a-z0-9])?)+$/;

export class AcmeClient {
  private constructor(
    private readonly transport: AcmeTransport,
    private readonly directory: Directory,
    private readonly accountKey: KeyObject,
    private readonly account: string,
    private readonly pollTimeoutMs: number,
  ) {}

  static async open(options: AcmeClientOptions): Promise<AcmeClient> {
    assertP256PrivateKey(options.accountKey, 'the ACME account key');
    const transport = new AcmeTransport({ ca: options.ca ?? null, userAgent: options.userAgent ?? DEFAULT_USER_AGENT, requestTimeoutMs: options.requestTimeoutMs ?? DEFAULT_REQUEST_TIMEOUT_MS });
    try {
      const directory = readDirectory(await transport.get(options.directoryUrl, 'directory'), options.directoryUrl);
      transport.useNewNonceUrl(directory.newNonce);
      const accountUrl = options.accountUrl ?? (await newAccount(transport, directory, options.accountKey, options.email ?? null));
      return new AcmeClient(transport, directory, options.accountKey, accountUrl, options.pollTimeoutMs ?? DEFAULT_POLL_TIMEOUT_MS);
    } catch (error) {
      transport.close();
      throw error;
    }
  }

  /** The account's URL (its `kid`), for the caller to store and pass to the next open. */
  get accountUrl(): string {
    return this.account;
  }

  /** Lets go of the pooled connections. */
  close(): void {
    this.transport.close();
  }

  async issue(hostname: string, challenges: Http01Publisher, progress?: (phase: IssuePhase) => void): Promise<IssuedCertificate> {
    if (!DNS_NAME.test(hostname)) throw new TypeError(`"${hostname}" is no lower-case DNS name with at least two labels; ACME identifiers of type dns take one (RFC 8555 §7.1.4)`);
    const created = await this.post(this.directory.newOrder, { identifiers: [{ type: 'dns', value: hostname }] }, 'newOrder');
    if (!created.location) throw new Error('ACME newOrder: the CA answered without the order URL (Location)');
    const orderUrl = created.location;
    let order = jsonOf<Order>(created, 'newOrder');

    progress?.('authorizing');
    for (const authorizationUrl of order.authorizations) await this.authorize(authorizationUrl, challenges);

    progress?.('finalizing');
    const request = createCertificateRequest(hostname);
    order = await this.poll<Order>(orderUrl, (current) => current.status !== 'pending', 'order to be ready');
    if (order.status === 'ready') order = jsonOf<Order>(await this.post(order.finalize, { csr: request.der.toString('base64url') }, 'finalize'), 'finalize');
    if (order.status !== 'valid') order = await this.poll<Order>(orderUrl, (current) => current.status !== 'processing', 'certificate to be issued');
    if (order.status !== 'valid' || !order.certificate) throw orderFailure(order, hostname);

    // RFC 8555 §7.4.2: the certificate is fetched POST-as-GET, the chain in one PEM document.
    const chainPem = (await this.post(order.certificate, '', 'certificate download', 'application/pem-certificate-chain')).body.toString('utf8');
    const info = certificateInfo(chainPem);
    if (!info.dnsNames.includes(hostname)) throw new Error(`ACME: the certificate the CA issued does not name ${hostname} (it names ${info.dnsNames.join(', ') || 'nothing'})`);
    const privateKeyPem = request.privateKey.export({ type: 'pkcs8', format: 'pem' }) as string;
    return { chainPem, privateKeyPem, serial: info.serial, notBefore: info.notBefore, notAfter: info.notAfter, certId: info.certId };
  }

  /**
   * RFC 9773 §4: the CA's suggested renewal window for a certificate. Null when the CA has
   * no renewalInfo resource (Pebble 2.4.0 has none): the caller falls back to its own rule.
   * The GET is unauthenticated (§4.1).
   */
  async renewalInfo(certId: string): Promise<RenewalWindow | null> {
    if (!this.directory.renewalInfo) return null;
    const url = `${this.directory.renewalInfo.replace(/\/$/, '')}/${encodeURIComponent(certId)}`;
    const response = await this.transport.get(url, 'renewalInfo');
    const body = jsonOf<{ suggestedWindow?: { start?: string; end?: string } }>(response, 'renewalInfo');
    const start = new Date(body.suggestedWindow?.start ?? NaN);
    const end = new Date(body.suggestedWindow?.end ?? NaN);
    if (Number.isNaN(start.getTime()) || Number.isNaN(end.getTime()) || end < start) throw new Error('ACME renewalInfo: the CA answered without a valid suggestedWindow');
    return { start, end, retryAfterSeconds: response.retryAfterSeconds };
  }

  /** One authorization to `valid`: HTTP-01 published, the CA told to look, the token withdrawn whatever happens. */
  private async authorize(authorizationUrl: string, challenges: Http01Publisher): Promise<void> {
    const authorization = jsonOf<Authorization>(await this.post(authorizationUrl, '', 'authorization'), 'authorization');
    if (authorization.status === 'valid') return; // reused from an earlier order (RFC 8555 §7.1.4)
    const name = authorization.identifier.value;
    if (authorization.status !== 'pending') throw authorizationFailure(authorization);
    const challenge = authorization.challenges.find((candidate) => candidate.type === 'http-01');
    if (!challenge) throw new Error(`ACME: the CA offers no http-01 challenge for ${name} (only ${authorization.challenges.map((c) => c.type).join(', ')})`);

    await challenges.publish(challenge.token, keyAuthorization(challenge.token, this.accountKey));
    let failed = true;
    try {
      // An empty object tells the CA to validate (RFC 8555 §7.5.1).
      await this.post(challenge.url, {}, `challenge for ${name}`);
      const settled = await this.poll(authorizationUrl, (current: Authorization) => current.status !== 'pending', `authorization of ${name}`);
      if (settled.status !== 'valid') throw authorizationFailure(settled);
      failed = false;
    } finally {
      // A withdraw that fails after a failure must not hide why the order failed.
      await challenges.withdraw(challenge.token).catch((error: unknown) => {
        if (!failed) throw error;
      });
    }
  }

  /**
   * POST-as-GET `url` until `done`, honouring Retry-After (RFC 8555 §7.5.1, §7.4), no
   * longer than pollTimeoutMs in all.
   */
  private async poll<T>(url: string, done: (value: T) => boolean, what: string): Promise<T> {
    const deadline = Date.now() + this.pollTimeoutMs;
    for (let pauseMs = FIRST_POLL_MS; ; pauseMs = Math.min(pauseMs * 2, MAX_POLL_MS)) {
      const response = await this.post(url, '', what);
      const value = jsonOf<T>(response, what);
      if (done(value)) return value;
      const wait = response.retryAfterSeconds !== null ? response.retryAfterSeconds * 1000 : pauseMs;
      if (Date.now() + wait > deadline) throw new Error(`ACME: gave up waiting for the ${what} after ${this.pollTimeoutMs} ms (status still ${(value as { status?: string }).status ?? 'unknown'})`);
      await new Promise((resolve) => setTimeout(resolve, wait));
    }
  }

  private post(url: string, payload: unknown | '', what: string, accept?: string): Promise<AcmeResponse> {
    return this.transport.post(url, payload, { key: this.accountKey, signer: { kid: this.account } }, what, accept);
  }
}

function readDirectory(response: AcmeResponse, url: string): Directory {
  const directory = jsonOf<Partial<Directory>>(response, 'directory');
  for (const field of ['newNonce', 'newAccount', 'newOrder'] as const) {
    if (typeof directory[field] !== 'string') throw new Error(`ACME directory ${url} has no ${field} URL; is this an RFC 8555 directory?`);
  }
  return directory as Directory;
}

/**
 * newAccount signed with the key itself. For a key the CA knows it answers 200 with the
 * existing account's URL (RFC 8555 §7.3.1), so calling it again is how an account is found.
 */
async function newAccount(transport: AcmeTransport, directory: Directory, accountKey: KeyObject, email: string | null): Promise<string> {
  const payload = { termsOfServiceAgreed: true, ...(email ? { contact: [`mailto:${email}`] } : {}) };
  const response = await transport.post(directory.newAccount, payload, { key: accountKey, signer: { jwk: publicJwk(accountKey) } }, 'newAccount');
  if (!response.location) throw new Error('ACME newAccount: the CA answered without the account URL (Location)');
  return response.location;
}

/** The CA's reason an authorization failed: its challenge's error (RFC 8555 §7.1.6, §8). */
function authorizationFailure(authorization: Authorization): AcmeError {
  const name = authorization.identifier.value;
  const failed = authorization.challenges.find((challenge) => challenge.error);
  if (failed) return AcmeError.fromProblem(failed.error, 0, null, `${failed.type} challenge for ${name}`);
  return new AcmeError('about:blank', 0, `the authorization of ${name} is ${authorization.status}, and the CA gave no reason`, null, undefined, `authorization of ${name}`);
}

function orderFailure(order: Order, hostname: string): AcmeError {
  if (order.error) return AcmeError.fromProblem(order.error, 0, null, `order for ${hostname}`);
  return new AcmeError('about:blank', 0, `the order ended ${order.status}${order.status === 'valid' ? ' without a certificate URL' : ''}`, null, undefined, `order for ${hostname}`);
}
