import { randomBytes } from 'node:crypto';
import { FakeNomadState } from './cluster.js';
import { consulHandler, listen, nomadHandler, type FaultPlan, type RecordedRequest } from './server.js';

/**
 * A strict fake Nomad + Consul for tests (see cluster.ts for what it plays and
 * schema.ts for how strict it is):
 *
 *   const cluster = await startFakeCluster();
 *   startControl({}, { nomad: cluster });   // the Nomad driver against it
 *   cluster.allocations('agent-…'); cluster.failConsul(3); await cluster.close();
 */
export interface FakeCluster {
  nomadAddr: string;
  consulAddr: string;
  nomadToken: string;
  consulToken: string;
  /** Every request, with its query and the status it was answered with. */
  requests: RecordedRequest[];
  job(id: string): Record<string, any> | undefined;
  variable(path: string): Record<string, any> | undefined;
  allocations(jobId: string): Record<string, any>[];
  failNomad(times: number): void;
  failConsul(times: number): void;
  close(): Promise<void>;
}

export async function startFakeCluster(_options: Record<string, never> = {}): Promise<FakeCluster> {
  const state = new FakeNomadState(randomBytes(4).toString('hex'));
  const nomadToken = randomBytes(18).toString('hex');
  const consulToken = randomBytes(18).toString('hex');
  const requests: RecordedRequest[] = [];
  const nomadFaults: FaultPlan = { failNext: 0 };
  const consulFaults: FaultPlan = { failNext: 0 };
  const nomad = await listen(nomadHandler(state, nomadToken, nomadFaults, requests));
  const consul = await listen(consulHandler(state, consulToken, consulFaults, requests));
  return {
    nomadAddr: nomad.address,
    consulAddr: consul.address,
    nomadToken,
    consulToken,
    requests,
    job: (id) => state.jobs.get(id)?.job,
    variable: (path) => state.variables.get(path),
    allocations: (jobId) => state.allocationsOf(jobId),
    failNomad: (times) => (nomadFaults.failNext = times),
    failConsul: (times) => (consulFaults.failNext = times),
    async close() {
      await state.close();
      for (const face of [nomad, consul]) {
        face.server.closeAllConnections();
        await new Promise((resolve) => face.server.close(resolve));
      }
    },
  };
}
