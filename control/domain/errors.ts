/** Headers an error response carries beside its body: the error middleware sets them, the OpenAPI document declares them. */
export type ErrorHeader = 'WWW-Authenticate' | 'Retry-After';

/**
 * The one catalogue of error codes the control API answers with. Domain code throws
 * `PlatformError` by code; the HTTP layer alone turns a code into a status and body.
 * A code with `headers: ['Retry-After']` is thrown with `details.retry_after` (seconds).
 */
export const errorCatalogue = {
  // OTLP/HTTP answers a body it cannot decode with 400 (the OTLP spec, "Failures"), where the control API's own validation says 422.
  // A callback or exchange that does not verify: the browser or CLI made a request that cannot succeed, whoever sent it.
  SSO_SIGN_IN_FAILED: { status: 400, message: "The single sign-on did not complete: the state or code is unknown, used or expired, or the identity provider's answer did not verify" },
  INVALID_TRACES: { status: 400, message: 'The body is not an OTLP/HTTP JSON ExportTraceServiceRequest' },
  AUTHENTICATION_FAILED: { status: 401, message: 'Missing, invalid or expired token', headers: ['WWW-Authenticate'] },
  // The agent services endpoint's own (issue 37): its callers are replicas with a platform-issued token, not users.
  UNAUTHENTICATED: { status: 401, message: 'Missing, invalid or expired agent services token', headers: ['WWW-Authenticate'] },
  AUTHORISATION_DENIED: { status: 403, message: 'Your role does not allow this operation' },
  QUOTA_EXCEEDED: { status: 403, message: 'This would pass a limit of your plan' },
  INVALID_INVITE: { status: 403, message: 'The invite code is not valid' },
  REGISTRATION_CLOSED: { status: 403, message: 'Registration is closed on this platform' },
  INVITE_EMAIL_MISMATCH: { status: 403, message: 'The invite is for another email than the signed-in user' },
  SSO_REQUIRED: { status: 403, message: "This account requires signing in with its identity provider (SSO); password sign-ins and their API keys are refused" },
  SSO_DOMAIN_NOT_ALLOWED: { status: 403, message: "Your email's domain is not one this account admits through SSO; ask an owner to invite you" },
  NOT_FOUND: { status: 404, message: 'Not found' },
  INVITE_NOT_FOUND: { status: 404, message: 'No such invite: the link is wrong, or the invite was used or revoked' },
  DEPLOYMENT_NOT_FOUND: { status: 404, message: 'The agent has no such deployment' },
  SESSION_NOT_FOUND: { status: 404, message: 'The agent has no such session, or it expired' },
  METHOD_NOT_ALLOWED: { status: 405, message: 'Method not allowed' },
  EMAIL_ALREADY_REGISTERED: { status: 409, message: 'This email is already registered' },
  ALREADY_SUBSCRIBED: { status: 409, message: 'The account is already on this plan' },
  NO_BILLING_ACCOUNT: { status: 409, message: 'The billing provider has no customer for this account' },
  DOMAIN_TAKEN: { status: 409, message: 'This hostname is already claimed by an agent on this platform' },
  CANARY_NOT_POSSIBLE: { status: 409, message: 'A canary needs a version that is running and no rollout or canary in progress' },
  NOT_A_RUNNING_CANARY: { status: 409, message: 'This deployment is not a canary that is running now' },
  SESSION_VERSION_CONFLICT: { status: 409, message: 'The session is not at the expected version; details.current_version is the one it is at' },
  SSO_SLUG_TAKEN: { status: 409, message: 'Another account uses this SSO slug; choose another' },
  ALREADY_A_MEMBER: { status: 409, message: 'This user already belongs to the account' },
  LAST_OWNER: { status: 409, message: 'The account would be left without an owner; make another user owner first, or delete the account' },
  INVITE_EXPIRED: { status: 410, message: 'The invite expired; ask for a new one' },
  PRECONDITION_FAILED: { status: 412, message: 'The resource changed since the version in If-Match' },
  PAYLOAD_TOO_LARGE: { status: 413, message: 'The request body is larger than allowed' },
  SESSION_TOO_LARGE: { status: 413, message: 'The session would hold more than SESSION_MAX_BYTES of messages; nothing was written' },
  UNSUPPORTED_MEDIA_TYPE: { status: 415, message: 'The request body must be application/json' },
  VALIDATION_ERROR: { status: 422, message: 'The request is not valid' },
  SSO_DISCOVERY_FAILED: { status: 422, message: "The issuer's OpenID Connect discovery document could not be read or is not valid" },
  RATE_LIMIT_EXCEEDED: { status: 429, message: 'Too many requests', headers: ['Retry-After'] },
  SESSION_RATE_LIMITED: { status: 429, message: "Too many session reads or writes for this agent; retry after the time in Retry-After", headers: ['Retry-After'] },
  TRACE_RATE_LIMITED: { status: 429, message: 'Too many trace requests for this agent; retry after the time in Retry-After', headers: ['Retry-After'] },
  INTERNAL_ERROR: { status: 500, message: 'Internal error' },
  BUILD_NOT_SUPPORTED: { status: 501, message: 'Building from source (build_path) is not supported; give deploy.image' },
  DEPLOYMENT_FAILED: { status: 502, message: 'The container could not be started' },
  SSO_PROVIDER_FAILED: { status: 502, message: "The account's identity provider could not be reached or answered wrongly; nothing was started" },
  BILLING_PROVIDER_FAILED: { status: 502, message: 'The billing provider did not accept the change; the plan is unchanged' },
  BILLING_NOT_CONFIGURED: { status: 503, message: 'No billing provider is configured' },
  SSO_NOT_AVAILABLE: { status: 503, message: 'Single sign-on needs PUBLIC_API_URL, where the identity provider sends the browser back' },
  EDGE_UNAVAILABLE: { status: 503, message: "The edge's store (Redis) cannot be reached; nothing was changed", headers: ['Retry-After'] },
  DATABASE_UNAVAILABLE: { status: 503, message: 'The database (Postgres) cannot be reached; retry after the time in Retry-After', headers: ['Retry-After'] },
  CACHE_UNAVAILABLE: { status: 503, message: 'The cache (Redis) cannot be reached; retry after the time in Retry-After', headers: ['Retry-After'] },
  NOT_READY: { status: 503, message: 'A dependency of the control API (Postgres or Redis) does not answer' },
  BATCH_ANSWER_FULL: { status: 503, message: 'Not answered in this batch: its answer already holds SESSION_MAX_BYTES of messages; send this call alone' },
} as const satisfies Record<string, { status: number; message: string; headers?: readonly ErrorHeader[] }>;

export type ErrorCode = keyof typeof errorCatalogue;

/** The headers a code's response carries (none for most). */
export const errorHeaders = (code: ErrorCode): readonly ErrorHeader[] =>
  (errorCatalogue[code] as { headers?: readonly ErrorHeader[] }).headers ?? [];

export interface ValidationIssue {
  loc: (string | number)[];
  msg: string;
  type: string;
}

export class PlatformError extends Error {
  constructor(
    readonly code: ErrorCode,
    message: string = errorCatalogue[code].message,
    readonly details: Record<string, unknown> = {},
  ) {
    super(message);
    this.name = 'PlatformError';
  }
}

export const notFound = (what: string) => new PlatformError('NOT_FOUND', `${what} not found`);

export const validationError = (errors: ValidationIssue[]) =>
  new PlatformError('VALIDATION_ERROR', errors.map((e) => `${e.loc.join('.')}: ${e.msg}`).join('; '), { errors });

/** A limit of the caller's plan would be passed; `details` names it, its value and what was asked. */
export const quotaExceeded = (limit: string, value: number, requested: number) =>
  new PlatformError('QUOTA_EXCEEDED', `Plan limit ${limit} is ${value}; this request needs ${requested}`, {
    limit,
    value,
    requested,
  });

export const isQuotaExceeded = (error: unknown): error is PlatformError =>
  error instanceof PlatformError && error.code === 'QUOTA_EXCEEDED';

export const rateLimited = (retryAfterSeconds: number) =>
  new PlatformError('RATE_LIMIT_EXCEEDED', `Too many requests; retry in ${retryAfterSeconds} s`, {
    retry_after: retryAfterSeconds,
  });
