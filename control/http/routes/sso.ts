import type { SsoService } from '../../services/sso-service.js';
import { SessionGrant } from '../../schemas/auth.js';
import { ErrorBody } from '../../schemas/common.js';
import { SsoCallbackQuery, SsoExchangeBody, SsoSettings, SsoSettingsBody, SsoStartQuery } from '../../schemas/sso.js';
import { defineRoute } from '../route.js';

const redirect = (location: string) => ({ status: 302, headers: { Location: location } });

/** Single sign-on: an account's OpenID Connect settings, and the sign-in through them (issue 39). */
export const ssoRoutes = (sso: SsoService) => [
  defineRoute({
    method: 'get',
    path: '/account/sso',
    operationId: 'getSsoSettings',
    tag: 'Account',
    summary: "Get the account's single sign-on",
    description: "The account's OpenID Connect settings (owners only); the client secret is never shown",
    auth: 'any',
    responses: {
      200: { description: 'The settings', schema: SsoSettings },
      403: { description: 'AUTHORISATION_DENIED: owners only', schema: ErrorBody },
      404: { description: 'NOT_FOUND: the account has no single sign-on', schema: ErrorBody },
      503: { description: 'SSO_NOT_AVAILABLE: PUBLIC_API_URL is not set', schema: ErrorBody },
    },
    handler: async ({ principal }) => ({ status: 200, body: await sso.settings(principal) }),
  }),
  defineRoute({
    method: 'put',
    path: '/account/sso',
    operationId: 'putSsoSettings',
    tag: 'Account',
    summary: "Set the account's single sign-on",
    description: "Configure the account's OpenID Connect provider (owners only). The issuer's discovery document is read first; the client secret is sealed and never returned. Register `callback_url` as the redirect URI at the provider.",
    auth: 'any',
    writes: true,
    body: SsoSettingsBody,
    responses: {
      200: { description: 'Saved', schema: SsoSettings },
      403: { description: 'AUTHORISATION_DENIED: owners only', schema: ErrorBody },
      409: { description: 'SSO_SLUG_TAKEN: another account uses the slug', schema: ErrorBody },
      422: { description: "VALIDATION_ERROR, or SSO_DISCOVERY_FAILED: the issuer's discovery document could not be read (an `http://` issuer needs SSO_ALLOW_INSECURE_ISSUERS)", schema: ErrorBody },
      503: { description: 'SSO_NOT_AVAILABLE: PUBLIC_API_URL is not set', schema: ErrorBody },
    },
    handler: async ({ principal, audit, body }) => ({ status: 200, body: await sso.configure(principal, audit, body) }),
  }),
  defineRoute({
    method: 'delete',
    path: '/account/sso',
    operationId: 'deleteSsoSettings',
    tag: 'Account',
    summary: "Remove the account's single sign-on",
    description: 'Remove the OpenID Connect settings (owners only): password sign-in applies to everyone again',
    auth: 'any',
    writes: true,
    responses: {
      204: { description: 'Removed' },
      403: { description: 'AUTHORISATION_DENIED: owners only', schema: ErrorBody },
      404: { description: 'NOT_FOUND: the account has no single sign-on', schema: ErrorBody },
    },
    handler: async ({ principal, audit }) => {
      await sso.remove(principal, audit);
      return { status: 204 };
    },
  }),
  defineRoute({
    method: 'get',
    path: '/auth/sso/:slug/start',
    operationId: 'startSsoSignIn',
    tag: 'Auth',
    summary: 'Start signing in with SSO',
    description: "Redirects the browser to the account's identity provider (authorization code with PKCE S256, state and nonce); the sign-in must come back within 10 minutes. A CLI passes its loopback `redirect_uri` to receive the one-time code there instead of the console.",
    auth: 'none',
    query: SsoStartQuery,
    responses: {
      302: { description: 'To the identity provider', headers: ['Location'] },
      404: { description: 'NOT_FOUND: no account has this SSO slug (a malformed one included)', schema: ErrorBody },
      422: { description: 'VALIDATION_ERROR: redirect_uri is not a loopback address', schema: ErrorBody },
      429: { description: 'RATE_LIMIT_EXCEEDED (per client address, SSO_START_RATE_LIMIT_PER_MINUTE), with Retry-After', schema: ErrorBody },
      502: { description: 'SSO_PROVIDER_FAILED: the identity provider could not be reached', schema: ErrorBody },
      503: { description: 'SSO_NOT_AVAILABLE: PUBLIC_API_URL is not set', schema: ErrorBody },
    },
    handler: async ({ params, query, clientIp }) => redirect(await sso.start(params.slug!, query.redirect_uri, clientIp)),
  }),
  defineRoute({
    method: 'get',
    path: '/auth/sso/callback',
    operationId: 'finishSsoSignIn',
    tag: 'Auth',
    summary: 'Finish signing in with SSO',
    description: "Where the identity provider sends the browser back. The ID token is verified (issuer, audience, signature by the provider's published keys, nonce, expiry); then the browser goes to the console's /sso page, or the CLI's loopback address, with a one-time code for POST /auth/sso/exchange: never with a session token.",
    auth: 'none',
    query: SsoCallbackQuery,
    responses: {
      302: { description: 'To the console or the CLI, with a one-time code', headers: ['Location'] },
      400: { description: 'SSO_SIGN_IN_FAILED: unknown, used or expired state, or an answer of the provider that did not verify', schema: ErrorBody },
      403: { description: "SSO_DOMAIN_NOT_ALLOWED: not a member, and the email's domain is not one the account admits", schema: ErrorBody },
      503: { description: 'SSO_NOT_AVAILABLE: PUBLIC_API_URL is not set', schema: ErrorBody },
    },
    handler: async ({ query }) => redirect(await sso.callback(query as Record<string, string>)),
  }),
  defineRoute({
    method: 'post',
    path: '/auth/sso/exchange',
    operationId: 'exchangeSsoCode',
    tag: 'Auth',
    summary: 'Trade an SSO code for a session',
    description: 'Trade the one-time code of an SSO callback (valid one minute, once) for a session, as POST /auth/login answers',
    auth: 'none',
    body: SsoExchangeBody,
    responses: {
      200: { description: 'Signed in', schema: SessionGrant },
      400: { description: 'SSO_SIGN_IN_FAILED: the code is unknown, used or expired', schema: ErrorBody },
    },
    handler: async ({ body, clientIp, requestId }) => ({ status: 200, body: await sso.exchange(body.code, clientIp, requestId) }),
  }),
];
