import { readFileSync } from 'node:fs';
import { interfaceOnSubnetOf } from '../control/orchestrator/podman/bridge-address.js';
import { startControl } from './support/control-harness.js';
import { lifecycleSuite } from './support/lifecycle-suite.js';
import { containersOf, networkExists } from './support/podman.js';

lifecycleSuite({
  name: 'podman',
  // The default drain (DRAIN_SECONDS, 2 s), as a user runs it, not the harness's 0.5 s. The
  // requests this suite lost under a redeploy (an ECONNRESET a minute or two after the request,
  // in CI at 0.5 s and at 2 s) were the agent bridge changing its MAC address as an old
  // replica's port went, under the ARP entries of the replicas still serving: podman's bridges
  // are pinned since (control/orchestrator/podman/bridge-address.ts). With both CPUs kept busy,
  // 4 of 14 runs of this file back to back stalled a request before, 0 of 10 after.
  start: () => startControl({ DRAIN_SECONDS: '2' }, { orchestrate: true }),
  replicasLeft: async (_control, agentId) => containersOf(agentId).length,
  leftovers: async (_control, agentId) => (networkExists(`agent-${agentId}`) ? [`network agent-${agentId}`] : []),
  silentReplica: 'routed-after-grace',
  // NET_ADDR_SET (include/uapi/linux/netdevice.h): the kernel keeps the address.
  bridgeAddressPinned: (ip) => readFileSync(`/sys/class/net/${interfaceOnSubnetOf(ip)}/addr_assign_type`, 'utf8').trim() === '3',
});
