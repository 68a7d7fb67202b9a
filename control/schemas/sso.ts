import { Type, type Static } from '@sinclair/typebox';
import { SSO_SLUG_PATTERN } from '../domain/sso.js';
import { StringEnum, Timestamp } from './common.js';

const SSO_ROLES = ['admin', 'member', 'viewer'] as const;

const SsoSlug = Type.String({ pattern: SSO_SLUG_PATTERN, description: "The account's public SSO name, used in /auth/sso/{slug}/start and by `agentctl login --sso <slug>`" });

const EmailDomain = Type.String({ pattern: '^[A-Za-z0-9]([A-Za-z0-9-]{0,62}[A-Za-z0-9])?(\\.[A-Za-z0-9]([A-Za-z0-9-]{0,62}[A-Za-z0-9])?)+$', maxLength: 253 });

const example = {
  issuer_url: 'https://login.example.com/realms/acme',
  client_id: 'agent-platform',
  allowed_email_domains: ['example.com'],
  default_role: 'member' as const,
  required: false,
  slug: 'acme',
};

export const SsoSettingsBody = Type.Object(
  {
    issuer_url: Type.String({ format: 'uri', maxLength: 2048, description: 'The OpenID Connect issuer; its discovery document is read when the settings are saved' }),
    client_id: Type.String({ minLength: 1, maxLength: 512 }),
    client_secret: Type.String({ minLength: 1, maxLength: 2048, description: 'Sealed at rest and never shown again' }),
    allowed_email_domains: Type.Array(EmailDomain, { maxItems: 50, uniqueItems: true, description: 'Users with an email at one of these domains are created at their first sign-in; others must be members already' }),
    default_role: StringEnum(SSO_ROLES, { description: 'The role of a user created at their first sign-in' }),
    required: Type.Boolean({ description: "Refuse password sign-in and password sessions' API keys to the account's users, owners excepted (break-glass)" }),
    slug: SsoSlug,
  },
  { additionalProperties: false, examples: [{ ...example, client_secret: 'a-secret-from-the-identity-provider' }] },
);
export type SsoSettingsBody = Static<typeof SsoSettingsBody>;

export const SsoSettings = Type.Object(
  {
    issuer_url: Type.String(),
    client_id: Type.String(),
    client_secret_set: Type.Boolean({ description: 'Always true: the secret is kept, sealed, and never shown' }),
    allowed_email_domains: Type.Array(Type.String()),
    default_role: StringEnum(SSO_ROLES),
    required: Type.Boolean(),
    slug: Type.String(),
    start_url: Type.String({ description: "Where the account's users start signing in" }),
    callback_url: Type.String({ description: "The redirect URI to register with the identity provider" }),
    updated_at: Timestamp,
  },
  {
    $id: 'SsoSettings',
    examples: [{ ...example, client_secret_set: true, start_url: 'https://api.example.com/v1/auth/sso/acme/start', callback_url: 'https://api.example.com/v1/auth/sso/callback', updated_at: '2025-12-01T09:12:44Z' }],
  },
);
export type SsoSettings = Static<typeof SsoSettings>;

export const SsoStartQuery = Type.Object(
  {
    redirect_uri: Type.Optional(Type.String({ maxLength: 2048, description: 'A CLI\'s loopback address (`http://127.0.0.1:<port>/…` or `http://[::1]:<port>/…`, RFC 8252 §7.3) that receives the one-time code; without it, the console does' })),
  },
  { additionalProperties: false },
);

export const SsoCallbackQuery = Type.Object(
  {
    code: Type.Optional(Type.String({ maxLength: 4096 })),
    state: Type.Optional(Type.String({ maxLength: 512 })),
    iss: Type.Optional(Type.String({ maxLength: 2048 })),
    error: Type.Optional(Type.String({ maxLength: 256 })),
    error_description: Type.Optional(Type.String({ maxLength: 2048 })),
  },
  { additionalProperties: true },
);

export const SsoExchangeBody = Type.Object(
  { code: Type.String({ minLength: 1, maxLength: 256, description: 'The one-time code the callback handed to the console or the CLI' }) },
  { additionalProperties: false, examples: [{ code: 'ssoc_Vb8Kq2Wn6Xt4Hm9Rc1Lz7Pf3Jd5Ys0Ga2Tk8Nw4Qe6Bx' }] },
);
export type SsoExchangeBody = Static<typeof SsoExchangeBody>;
