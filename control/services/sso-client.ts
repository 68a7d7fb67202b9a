import * as oidc from 'openid-client';

/** What the control API asks of an account's identity provider; one implementation, openid-client's (docs/decisions.md). */
export interface OidcClientSettings {
  /** Accept `http://` issuers (SSO_ALLOW_INSECURE_ISSUERS): tests and labs only. */
  allowInsecureIssuers: boolean;
  /** Deadline of each request to the provider (discovery, JWKS, token endpoint). */
  timeoutSeconds: number;
}

/** The provider as an account's settings name it. */
export interface OidcProvider {
  issuerUrl: string;
  clientId: string;
  clientSecret: string;
}

/** The checks a callback is held to: what the start stored under its state. */
export interface OidcChecks {
  state: string;
  nonce: string;
  codeVerifier: string;
}

/** The identity a verified ID token vouches for. */
export interface OidcIdentity {
  subject: string;
  email: string;
  emailVerified: boolean | undefined;
  name: string | undefined;
}

/** A provider whose discovery document could not be read or is not valid. */
export class DiscoveryFailedError extends Error {
  constructor(cause: unknown) {
    super(`OpenID Connect discovery failed: ${(cause as Error).message}`, { cause });
    this.name = 'DiscoveryFailedError';
  }
}

/**
 * The authorization code flow with PKCE (S256), state and nonce, by openid-client. Nothing
 * here checks a token by hand: `authorizationCodeGrant` verifies the ID token's issuer,
 * audience, nonce and expiry, and the state and code verifier of the callback; with
 * `enableNonRepudiationChecks` its signature too, by the keys the discovery document's
 * `jwks_uri` serves.
 */
export class OidcClient {
  constructor(private readonly settings: OidcClientSettings) {}

  /** Reads the issuer's discovery document; throws DiscoveryFailedError when that fails. */
  async discover(provider: OidcProvider): Promise<oidc.Configuration> {
    const url = new URL(provider.issuerUrl);
    const insecure = url.protocol === 'http:' && this.settings.allowInsecureIssuers;
    try {
      return await oidc.discovery(url, provider.clientId, { client_secret: provider.clientSecret }, oidc.ClientSecretPost(provider.clientSecret), {
        timeout: this.settings.timeoutSeconds,
        // Non-repudiation: the ID token's signature is checked by the provider's published keys (jwks_uri), not left to TLS as OIDC Core §3.1.3.7 would allow.
        execute: insecure ? [oidc.enableNonRepudiationChecks, oidc.allowInsecureRequests] : [oidc.enableNonRepudiationChecks],
      });
    } catch (error) {
      throw new DiscoveryFailedError(error);
    }
  }

  /** Fresh secrets for one sign-in: each goes once to the provider (state, nonce, the verifier's challenge) and is checked on the way back. */
  newChecks(): OidcChecks {
    return { state: oidc.randomState(), nonce: oidc.randomNonce(), codeVerifier: oidc.randomPKCECodeVerifier() };
  }

  async authorizationUrl(provider: OidcProvider, redirectUri: string, checks: OidcChecks): Promise<URL> {
    const config = await this.discover(provider);
    return oidc.buildAuthorizationUrl(config, {
      redirect_uri: redirectUri,
      scope: 'openid email profile',
      response_type: 'code',
      code_challenge: await oidc.calculatePKCECodeChallenge(checks.codeVerifier),
      code_challenge_method: 'S256',
      state: checks.state,
      nonce: checks.nonce,
    });
  }

  /** Trades the callback's code for tokens and returns who the verified ID token names; throws on any failed check. */
  async identify(provider: OidcProvider, callbackUrl: URL, checks: OidcChecks): Promise<OidcIdentity> {
    const config = await this.discover(provider);
    const tokens = await oidc.authorizationCodeGrant(config, callbackUrl, {
      pkceCodeVerifier: checks.codeVerifier,
      expectedState: checks.state,
      expectedNonce: checks.nonce,
      idTokenExpected: true,
    });
    const claims = tokens.claims()!;
    if (typeof claims.email !== 'string') throw new Error('the ID token has no email claim (ask for the email scope)');
    return {
      subject: claims.sub,
      email: claims.email,
      emailVerified: typeof claims.email_verified === 'boolean' ? claims.email_verified : undefined,
      name: typeof claims.name === 'string' ? claims.name : undefined,
    };
  }
}

/**
 * Why openid-client refused, for the log: the messages down its chain of causes and the JWT
 * claim that failed, if one did (`nonce`, `exp`). Never the causes themselves, which hold
 * the token, its claims and keys.
 */
export function refusalReason(error: unknown): string {
  const parts: string[] = [];
  for (let cause = error as { message?: unknown; cause?: unknown; claim?: unknown } | undefined, depth = 0; cause && depth < 4; cause = cause.cause as typeof cause, depth += 1) {
    if (typeof cause.message === 'string') parts.push(cause.message);
    if (typeof cause.claim === 'string') parts.push(`claim ${cause.claim}`);
  }
  return parts.join(': ');
}
