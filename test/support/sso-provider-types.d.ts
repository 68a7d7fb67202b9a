/**
 * The little of oidc-provider 9's API test/support/sso-provider.ts uses: the package ships
 * no type declarations, and @types/oidc-provider is not among this project's packages.
 */
declare module 'oidc-provider' {
  import type { IncomingMessage, ServerResponse } from 'node:http';

  export interface ProviderAccount {
    accountId: string;
    claims(): Promise<Record<string, unknown>>;
  }

  export interface ProviderConfiguration {
    clients?: Record<string, unknown>[];
    pkce?: { required?: () => boolean; methods?: string[] };
    jwks?: { keys: Record<string, unknown>[] };
    claims?: Record<string, string[]>;
    conformIdTokenClaims?: boolean;
    cookies?: { keys?: string[] };
    findAccount?: (ctx: unknown, sub: string) => Promise<ProviderAccount | undefined>;
  }

  export default class Provider {
    constructor(issuer: string, configuration?: ProviderConfiguration);
    callback(): (req: IncomingMessage, res: ServerResponse) => void;
  }
}
