import { randomBytes } from 'node:crypto';
import { FakeNomadState } from './cluster.js';
import type { DockerRegistryAuth } from './secrets.js';
import { FakeKeyring, type KeyringAlgorithm } from './identities.js';
import { connectionLimit, consulHandler, listen, nomadHandler, type ConnectionLimit, type FaultPlan, type RecordedRequest } from './server.js';

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
  /** The registry credentials an allocation's docker driver would pull with, once its task got that far (secrets.ts). */
  registryAuth(allocId: string): DockerRegistryAuth | null | undefined;
  /** Writes to an allocation's task log, as its process would (alloc/logs/<task>.<stream>.<N>). */
  appendLog(allocId: string, task: string, stream: 'stdout' | 'stderr', text: string | Buffer): void;
  /** Starts the stream's next log file, as logmon does when the current one is full. */
  rotateLog(allocId: string, task: string, stream: 'stdout' | 'stderr'): void;
  /** Connections per client address: open now, the peak, and how many were refused past the limit. */
  connections: { nomad: ConnectionLimit; consul: ConnectionLimit };
  /**
   * The JWT the client would write for the named identity of the allocation's task
   * (cluster.ts, `identityToken`), signed by the active root key as of `now`; throws
   * "allocation not found" or "identity not found" as the server rejects such a request.
   */
  identityToken(allocId: string, identityName: string, now?: Date): string;
  /** The root keys: `rotate()` makes a new one sign (the old ones stay published), `remove(kid)` unpublishes one. */
  keyring: FakeKeyring;
  /** Turns an allocation's Consul checks passing or critical. */
  setHealthy(allocationId: string, healthy: boolean): void;
  /** Turns the client node's serfHealth critical (its Consul agent out of gossip) or passing again; Nomad is told nothing. */
  setNodeAlive(alive: boolean): void;
  failNomad(times: number): void;
  failConsul(times: number): void;
  close(): Promise<void>;
}

export interface FakeClusterOptions {
  /**
   * Play allocations without containers: running and passing at once (for scale tests),
   * unless the docker driver would pull their image and no registry serves it (docker-image.ts).
   */
  simulate?: boolean;
  /**
   * Image references a registry the client reaches serves, so a pull of them succeeds (the
   * task then runs from this host's copy, which must exist). None by default: the docker
   * driver pulls an image tagged "latest" even when the node holds it, and that pull fails.
   */
  registryImages?: string[];
  /** The most an update block's MinHealthyTime is waited (500 ms): higher for a test that must see a deployment still running. */
  minHealthyTimeCapMs?: number;
  /** Node pools besides "default" and "all"; the driver's default, "agents", unless given. */
  nodePools?: string[];
  /** Namespaces besides Nomad's built-in "default" (a job in any other is refused). */
  namespaces?: string[];
  /** Per-address connection limits: Nomad's and Consul's defaults unless given. */
  nomadMaxConnsPerClient?: number;
  consulMaxConnsPerClient?: number;
  /** The keyring's algorithm: RS256 as Nomad 1.7+ signs, EdDSA as a keyring from before signs. */
  keyAlgorithm?: KeyringAlgorithm;
  /** The servers' `oidc_issuer`, put in every identity's `iss`; none unless given. */
  oidcIssuer?: string;
}

export async function startFakeCluster(options: FakeClusterOptions = {}): Promise<FakeCluster> {
  const state = new FakeNomadState(randomBytes(4).toString('hex'), options.simulate ?? false, options.minHealthyTimeCapMs);
  for (const pool of options.nodePools ?? ['agents']) state.nodePools.add(pool);
  for (const namespace of options.namespaces ?? []) state.namespaces.add(namespace);
  for (const image of options.registryImages ?? []) state.registry.add(image);
  if (options.keyAlgorithm) state.keyring = new FakeKeyring(options.keyAlgorithm);
  state.issuer = options.oidcIssuer;
  const connections = {
    nomad: connectionLimit(options.nomadMaxConnsPerClient ?? 100),
    consul: connectionLimit(options.consulMaxConnsPerClient ?? 200),
  };
  const nomadToken = randomBytes(18).toString('hex');
  const consulToken = randomBytes(18).toString('hex');
  const requests: RecordedRequest[] = [];
  const nomadFaults: FaultPlan = { failNext: 0 };
  const consulFaults: FaultPlan = { failNext: 0 };
  const nomad = await listen(nomadHandler(state, nomadToken, nomadFaults, requests), connections.nomad);
  const consul = await listen(consulHandler(state, consulToken, consulFaults, requests), connections.consul);
  return {
    nomadAddr: nomad.address,
    consulAddr: consul.address,
    nomadToken,
    consulToken,
    requests,
    connections,
    job: (id) => state.jobs.get(id)?.job,
    variable: (path) => state.variables.get(path),
    allocations: (jobId) => state.allocationsOf(jobId),
    registryAuth: (allocId) => state.registryAuths.get(allocId),
    appendLog: (allocId, task, stream, text) => state.logs.append(allocId, task, stream, text),
    rotateLog: (allocId, task, stream) => state.logs.rotate(allocId, task, stream),
    identityToken: (allocId, identityName, now) => state.identityToken(allocId, identityName, now),
    get keyring() {
      return state.keyring;
    },
    setHealthy: (allocationId, healthy) => state.setHealthy(allocationId, healthy),
    setNodeAlive: (alive) => state.setNodeAlive(alive),
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
