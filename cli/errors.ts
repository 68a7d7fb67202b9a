/** The exit codes agentctl promises (docs/cli.md, "Exit codes"). */
export const EXIT = { ok: 0, refused: 1, usage: 2, unreachable: 3 } as const;
export type ExitCode = (typeof EXIT)[keyof typeof EXIT];

/** A failure that ends the command with its exit code and a one-line message on stderr. */
export class CliError extends Error {
  constructor(message: string, readonly exitCode: ExitCode) {
    super(message);
  }
}

/** The command line itself is wrong: exit 2, as the parser exits for an unknown flag. */
export class UsageError extends CliError {
  constructor(message: string) {
    super(message, EXIT.usage);
  }
}

/** The platform answered and said no: exit 1 with the API's code and message. */
export class ApiRefused extends CliError {
  constructor(
    readonly status: number,
    readonly code: string,
    message: string,
    /** The error body's `details`, empty when it had none. */
    readonly details: Record<string, unknown> = {},
  ) {
    super(`${code}: ${message}`, EXIT.refused);
  }
}

/** The platform did not answer (connection refused, DNS, deadline): exit 3. */
export class Unreachable extends CliError {
  constructor(where: string, cause: unknown) {
    super(`cannot reach ${where}: ${describeCause(cause)}`, EXIT.unreachable);
  }
}

/** fetch hides the socket's error behind "fetch failed"; its cause says what happened. */
function describeCause(cause: unknown): string {
  const error = cause as { name?: string; message?: string; code?: string; cause?: { code?: string; message?: string } };
  if (error?.name === 'TimeoutError') return 'no answer before the deadline';
  return error?.cause?.code ?? error?.code ?? error?.cause?.message ?? error?.message ?? String(cause);
}
