import { generateKeyPairSync, sign, type KeyObject } from 'node:crypto';
import { createServer, request as httpRequest, type IncomingMessage, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import Provider from 'oidc-provider';

/** Someone the provider knows: the login typed at its sign-in form is their `sub`. */
export interface ProviderUser {
  email: string;
  name: string;
}

/** What the next ID token from the token endpoint is made into on its way to the control API. */
export type IdTokenTamper = 'bad_signature' | 'wrong_nonce' | 'expired';

export interface TestIdentityProvider {
  /** `http://127.0.0.1:<port>`: the front every party talks to (discovery, authorize, token). */
  issuer: string;
  clientId: string;
  clientSecret: string;
  /** Rewrites the ID token of the next token response only. */
  tamperNext(tamper: IdTokenTamper): void;
  /** Token responses that went through the front, as sent. */
  tokenResponses: number;
  close(): Promise<void>;
}

const listen = async (server: Server): Promise<number> => {
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return (server.address() as AddressInfo).port;
};

const close = (server: Server) => new Promise<void>((resolve) => (server.closeAllConnections(), server.close(() => resolve())));

/**
 * A real OpenID provider (`oidc-provider`, a certified implementation) with one confidential
 * client whose redirect URI is `redirectUri`, PKCE required, its dev interactions (a login
 * form taking any password, then consent) and `users`. It listens on 127.0.0.1 behind a
 * front of the test's own that passes every request through and can rewrite the next
 * ID token: re-signed with the provider's own key (a wrong nonce, an expiry in the past),
 * or with one byte of its signature flipped.
 */
export async function startIdentityProvider(redirectUri: string, users: Record<string, ProviderUser>): Promise<TestIdentityProvider> {
  const { privateKey } = generateKeyPairSync('rsa', { modulusLength: 2048 });
  const signingKey = { ...privateKey.export({ format: 'jwk' }), kid: 'test-key', alg: 'RS256', use: 'sig' };
  const front = createServer();
  const issuer = `http://127.0.0.1:${await listen(front)}`;
  const clientId = 'agent-platform';
  const clientSecret = `idp-secret-${Math.random().toString(36).slice(2)}`;

  const provider = new Provider(issuer, {
    clients: [{
      client_id: clientId,
      client_secret: clientSecret,
      redirect_uris: [redirectUri],
      grant_types: ['authorization_code'],
      response_types: ['code'],
      token_endpoint_auth_method: 'client_secret_post',
    }],
    pkce: { required: () => true },
    jwks: { keys: [signingKey] },
    claims: { openid: ['sub'], email: ['email', 'email_verified'], profile: ['name'] },
    // The claims of the granted scopes in the ID token itself, as Okta, Entra ID and Keycloak send them.
    conformIdTokenClaims: false,
    cookies: { keys: ['test-cookie-key'] },
    findAccount: async (_ctx, sub) => {
      const user = users[sub];
      return user && { accountId: sub, claims: async () => ({ sub, email: user.email, email_verified: true, name: user.name }) };
    },
  });
  const backend = createServer(provider.callback());
  const backendPort = await listen(backend);

  let tamper: IdTokenTamper | undefined;
  const state = { tokenResponses: 0 };
  front.on('request', (req, res) => {
    const upstream = httpRequest({ host: '127.0.0.1', port: backendPort, path: req.url, method: req.method, headers: req.headers }, (answer) => {
      if (!req.url?.startsWith('/token')) {
        res.writeHead(answer.statusCode!, answer.headers);
        answer.pipe(res);
        return;
      }
      void readAll(answer).then((text) => {
        state.tokenResponses += 1;
        const applied = tamper;
        tamper = undefined;
        const body = applied && answer.statusCode === 200 ? JSON.stringify(rewrite(JSON.parse(text), applied, privateKey)) : text;
        const { 'content-length': _, ...headers } = answer.headers;
        res.writeHead(answer.statusCode!, { ...headers, 'content-length': Buffer.byteLength(body) });
        res.end(body);
      });
    });
    req.pipe(upstream);
  });

  return {
    issuer,
    clientId,
    clientSecret,
    tamperNext: (next) => (tamper = next),
    get tokenResponses() {
      return state.tokenResponses;
    },
    close: async () => {
      await close(front);
      await close(backend);
    },
  };
}

async function readAll(stream: IncomingMessage): Promise<string> {
  let text = '';
  for await (const chunk of stream) text += chunk;
  return text;
}

/** The token response with its ID token tampered with. */
function rewrite(tokens: { id_token: string }, tamper: IdTokenTamper, key: KeyObject): object {
  const [header, payload, signature] = tokens.id_token.split('.') as [string, string, string];
  if (tamper === 'bad_signature') {
    const bytes = Buffer.from(signature, 'base64url');
    bytes[0] = bytes[0]! ^ 0x01;
    return { ...tokens, id_token: `${header}.${payload}.${bytes.toString('base64url')}` };
  }
  const claims = JSON.parse(Buffer.from(payload, 'base64url').toString());
  const now = Math.floor(Date.now() / 1000);
  const changed = tamper === 'wrong_nonce' ? { ...claims, nonce: 'a-nonce-this-sign-in-never-sent' } : { ...claims, iat: now - 7200, exp: now - 3600 };
  const signed = `${header}.${Buffer.from(JSON.stringify(changed)).toString('base64url')}`;
  // RS256, as the provider signs with this key: RSASSA-PKCS1-v1_5 with SHA-256.
  return { ...tokens, id_token: `${signed}.${sign('sha256', Buffer.from(signed), key).toString('base64url')}` };
}

/**
 * A browser as far as sign-in needs one: it keeps cookies per origin, follows redirects
 * one at a time, fills the provider's login form (any password) and its consent form, and
 * reaches the control API's public address (PUBLIC_API_URL, a name no DNS knows) at the
 * port the test's control API listens on, as a hosts entry would.
 */
export class TestBrowser {
  private readonly cookies = new Map<string, Map<string, string>>();

  constructor(private readonly publicOrigin: string, private readonly controlOrigin: string) {}

  /** Fetches `url` once (no redirect followed), sending and keeping cookies. */
  async fetch(url: string, init: { method?: string; form?: Record<string, string> } = {}): Promise<Response> {
    const target = new URL(url.startsWith(this.publicOrigin) ? this.controlOrigin + url.slice(this.publicOrigin.length) : url);
    const jar = this.cookies.get(target.origin) ?? new Map<string, string>();
    this.cookies.set(target.origin, jar);
    const headers: Record<string, string> = {};
    if (jar.size) headers.cookie = [...jar].map(([name, value]) => `${name}=${value}`).join('; ');
    if (init.form) headers['content-type'] = 'application/x-www-form-urlencoded';
    const response = await fetch(target, { method: init.method ?? 'GET', headers, body: init.form && new URLSearchParams(init.form).toString(), redirect: 'manual' });
    for (const cookie of response.headers.getSetCookie()) {
      const [pair] = cookie.split(';');
      const at = pair!.indexOf('=');
      jar.set(pair!.slice(0, at), pair!.slice(at + 1));
    }
    return response;
  }

  /**
   * From `startUrl`, through the provider's login (as `login`) and consent, to the redirect
   * back to the control API's callback: returns the callback's address, not yet visited.
   */
  async throughProvider(startUrl: string, login: string): Promise<string> {
    let url = startUrl;
    for (let hop = 0; hop < 20; hop += 1) {
      const response = await this.fetch(url);
      const location = response.headers.get('location');
      if (location) {
        url = new URL(location, url).href;
        if (url.startsWith(`${this.publicOrigin}/v1/auth/sso/callback`)) return url;
        continue;
      }
      const page = await response.text();
      const prompt = /name="prompt" value="(\w+)"/.exec(page)?.[1];
      const action = /<form[^>]*action="([^"]+)"/.exec(page)?.[1];
      if (!prompt || !action) throw new Error(`the provider answered ${response.status} at ${url} with no form: ${page.slice(0, 300)}`);
      const submitted = await this.fetch(new URL(action, url).href, { method: 'POST', form: prompt === 'login' ? { prompt, login, password: 'any' } : { prompt } });
      url = new URL(submitted.headers.get('location')!, url).href;
    }
    throw new Error('no redirect to the callback after 20 hops');
  }
}
