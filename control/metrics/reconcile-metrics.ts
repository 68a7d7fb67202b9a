import { Counter, type Registry } from 'prom-client';
import type { ReconcilePassed } from '../services/agent-events.js';

/** The reconciler's agents whose job could not be built (services/agent-runner.ts, `buildJobs`). */
export function reconcileMetrics(registry: Registry): (pass: ReconcilePassed) => void {
  // A counter rather than a gauge: only the copy holding the reconciler's lock runs passes,
  // and a gauge left behind by a copy that lost the lock would go on showing its last pass.
  const unbuildable = new Counter({
    name: 'agent_platform_control_reconcile_unbuildable_jobs_total',
    help: "Agents a reconcile pass could not build a job for (e.g. a sealed value no configured master key opens), once per agent per pass. What runs for them is kept as it is; the control API's warn log names each agent and the error.",
    registers: [registry],
  });
  return (pass) => unbuildable.inc(pass.unbuildable);
}
