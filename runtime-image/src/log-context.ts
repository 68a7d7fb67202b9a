import { AsyncLocalStorage } from 'node:async_hooks';
import type { LogFields } from './logger.js';

/**
 * The field naming the trace of the invoke a line was logged in: the invocation id the
 * control API serves traces and log lines under. `trace_id`, as OpenTelemetry's log data
 * model and pino-opentelemetry name it.
 */
export const TRACE_ID_FIELD = 'trace_id';

/**
 * What every line logged during an invoke adds: its trace id. Carried through the invoke's
 * awaits (AsyncLocalStorage) rather than handed to each caller, since some lines are logged
 * where no invoke is in reach: the ai SDK's model warnings arrive through a global hook.
 */
export class LogContext {
  private readonly traceIds = new AsyncLocalStorage<string>();

  /** Runs `work` so that each line logged in it, until it settles, names `traceId`. */
  withTrace<T>(traceId: string, work: () => T): T {
    return this.traceIds.run(traceId, work);
  }

  /** The fields of the invoke running here; none outside an invoke. */
  fields(): LogFields {
    const traceId = this.traceIds.getStore();
    return traceId === undefined ? {} : { [TRACE_ID_FIELD]: traceId };
  }
}
