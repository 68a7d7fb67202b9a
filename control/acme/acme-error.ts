/**
 * A CA's refusal, from its problem document (RFC 7807; ACME's types in RFC 8555 §6.7).
 * It carries what the CA said, never anything of the request (no key, no JWS).
 */

const ACME_ERROR_PREFIX = 'urn:ietf:params:acme:error:';

/** The ACME error types this client acts on (RFC 8555 §6.7). */
export const AcmeErrorType = {
  badNonce: `${ACME_ERROR_PREFIX}badNonce`,
  rateLimited: `${ACME_ERROR_PREFIX}rateLimited`,
  rejectedIdentifier: `${ACME_ERROR_PREFIX}rejectedIdentifier`,
  unauthorized: `${ACME_ERROR_PREFIX}unauthorized`,
  accountDoesNotExist: `${ACME_ERROR_PREFIX}accountDoesNotExist`,
} as const;

/** A subproblem names the identifier it is about (RFC 8555 §6.7.1). */
export interface AcmeSubproblem {
  type: string;
  detail: string;
  identifier?: { type: string; value: string };
}

export class AcmeError extends Error {
  override readonly name = 'AcmeError';

  constructor(
    /** The problem type, e.g. `urn:ietf:params:acme:error:rejectedIdentifier`. */
    readonly type: string,
    /** The HTTP status of the answer, or the one the problem document states (a challenge's error has no answer of its own). */
    readonly status: number,
    /** The CA's own words. */
    readonly detail: string,
    /** Seconds the CA asked us to wait (Retry-After), kept for rateLimited above all (RFC 8555 §6.6). */
    readonly retryAfterSeconds: number | null = null,
    readonly subproblems?: AcmeSubproblem[],
    /** What we were doing, for the message: "newOrder", "challenge for example.com". */
    readonly during?: string,
  ) {
    super(`ACME ${during ? `${during}: ` : ''}${shortType(type)}${status ? ` (${status})` : ''}: ${detail || 'no detail given'}${subproblemText(subproblems)}`);
  }

  /** From a problem document, which may be malformed: the CA's body is not trusted to be one. */
  static fromProblem(problem: unknown, httpStatus: number, retryAfterSeconds: number | null, during?: string): AcmeError {
    const doc = (problem && typeof problem === 'object' ? problem : {}) as Record<string, unknown>;
    const type = typeof doc.type === 'string' ? doc.type : 'about:blank';
    const status = typeof doc.status === 'number' ? doc.status : httpStatus;
    const detail = typeof doc.detail === 'string' ? doc.detail : '';
    const subproblems = Array.isArray(doc.subproblems) ? doc.subproblems.filter(isSubproblem) : undefined;
    return new AcmeError(type, httpStatus || status, detail, retryAfterSeconds, subproblems, during);
  }

  get isRateLimited(): boolean {
    return this.type === AcmeErrorType.rateLimited;
  }
}

export function isAcmeError(error: unknown, type?: string): error is AcmeError {
  return error instanceof AcmeError && (type === undefined || error.type === type);
}

function isSubproblem(value: unknown): value is AcmeSubproblem {
  const candidate = value as Partial<AcmeSubproblem> | null;
  return !!candidate && typeof candidate.type === 'string' && typeof candidate.detail === 'string';
}

const shortType = (type: string) => (type.startsWith(ACME_ERROR_PREFIX) ? type.slice(ACME_ERROR_PREFIX.length) : type);

function subproblemText(subproblems: AcmeSubproblem[] | undefined): string {
  if (!subproblems?.length) return '';
  return ` [${subproblems.map((sub) => `${sub.identifier?.value ?? '?'}: ${shortType(sub.type)}: ${sub.detail}`).join('; ')}]`;
}
