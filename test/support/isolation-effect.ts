import { strict as assert } from 'node:assert';
import type { TestControl } from './control-harness.js';
import { execIn, inspect, podman, type RunningAgent } from './orch-helpers.js';

/**
 * What the isolation promise of docs/contract.md means from inside a replica, checked by its effect:
 * whether a TCP connection opens (busybox `nc -w 3`: refused, reset, unreachable or
 * timed out all count as not opened). No HTTP: a service that accepts the connection
 * but answers oddly is still reachable.
 */
export async function connects(control: TestControl, replicaId: string, host: string, port: number): Promise<boolean> {
  const result = await execIn(control, replicaId, `nc -w 3 ${host} ${port} </dev/null >/dev/null 2>&1 && echo OPENED || echo NOT-OPENED`, 30_000);
  assert.match(result.stdout, /OPENED/, `nc did not run in ${replicaId}: ${result.stderr}`);
  return !result.stdout.includes('NOT-OPENED');
}

/** The replica's address and gateway on its agent's network. */
export async function agentNetwork(control: TestControl, agent: RunningAgent): Promise<{ IPAddress: string; Gateway: string }> {
  const info = await inspect(control, agent.replica.id);
  const network = info.NetworkSettings?.Networks?.[`agent-${agent.id}`] as { IPAddress: string; Gateway: string } | undefined;
  assert.ok(network?.IPAddress && network.Gateway, `${agent.replica.id} has no address on agent-${agent.id}: ${JSON.stringify(info.NetworkSettings?.Networks)}`);
  return network;
}

/** No port of the replica is published on the host, and its address is the one on its agent's network. */
export async function assertNothingPublished(control: TestControl, agent: RunningAgent): Promise<void> {
  const info = await inspect(control, agent.replica.id);
  assert.deepEqual(Object.keys(info.HostConfig?.PortBindings ?? {}), [], `published ports: ${JSON.stringify(info.HostConfig?.PortBindings)}`);
  const ports = await podman(control, ['port', agent.replica.id]);
  assert.equal(ports.code, 0, ports.stderr);
  assert.equal(ports.stdout.trim(), '', `podman port lists: ${ports.stdout}`);
  const { IPAddress } = await agentNetwork(control, agent);
  assert.equal(agent.replica.address, `${IPAddress}:8080`, 'the edge is given the address on the agent network');
}

export interface IsolationExpectations {
  /** Ports of the platform's services on the host (on 127.0.0.1 or 0.0.0.0): none may open. */
  platformPorts: Record<string, number>;
  /** A host port on 0.0.0.0 named in PODMAN_AGENT_HOST_PORTS (a model server on the host): it must open, so nc can tell. */
  openHostPort: number;
  /** A host port on 0.0.0.0 that no setting names (sshd, a database, a dev server): input from agents is default-deny. */
  unrelatedHostPort: number;
}

/**
 * From A's replica: B's listener, the platform's ports and an unrelated host service at every
 * host address a container routes to, and the metadata service do not open; the host port
 * the operator opened to agents does.
 */
export async function assertIsolated(control: TestControl, a: RunningAgent, b: RunningAgent, expect: IsolationExpectations): Promise<void> {
  const netA = await agentNetwork(control, a);
  const netB = await agentNetwork(control, b);

  assert.equal(await connects(control, b.replica.id, netB.IPAddress, 8080), true, 'B does not listen on its own address');
  assert.equal(await connects(control, a.replica.id, netB.IPAddress, 8080), false, `A opened a connection to B at ${netB.IPAddress}:8080`);

  for (const host of ['host.containers.internal', netA.Gateway]) {
    assert.equal(await connects(control, a.replica.id, host, expect.openHostPort), true, `the host port opened to agents does not open at ${host}`);
    assert.equal(await connects(control, a.replica.id, host, expect.unrelatedHostPort), false, `an unrelated host service opens at ${host}:${expect.unrelatedHostPort}`);
    for (const [name, port] of Object.entries(expect.platformPorts)) {
      assert.equal(await connects(control, a.replica.id, host, port), false, `${name} (${host}:${port}) opens from a replica`);
    }
  }

  assert.equal(await connects(control, a.replica.id, '169.254.169.254', 80), false, 'a connection to the metadata service opened');
}
