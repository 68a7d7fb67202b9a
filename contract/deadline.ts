export class DeadlineError extends Error {
  constructor(what: string, ms: number) {
    super(`${what} did not answer within ${ms} ms`);
    this.name = 'DeadlineError';
  }
}

/**
 * `work`, or a DeadlineError after `ms`. The work itself is not cancelled (a Redis reply
 * that arrives late is dropped), but the caller is answered in time.
 */
export async function withDeadline<T>(work: Promise<T>, ms: number, what = 'Redis'): Promise<T> {
  let timer: NodeJS.Timeout | undefined;
  const deadline = new Promise<never>((_, reject) => {
    timer = setTimeout(() => reject(new DeadlineError(what, ms)), ms);
  });
  try {
    return await Promise.race([work, deadline]);
  } finally {
    clearTimeout(timer);
  }
}
