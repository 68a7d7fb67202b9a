import { startControl } from './support/control-harness.js';
import { lifecycleSuite } from './support/lifecycle-suite.js';
import { containersOf, networkExists } from './support/podman.js';

lifecycleSuite({
  name: 'podman',
  // The default drain (DRAIN_SECONDS, 2 s), as a user runs it, not the harness's 0.5 s. Two runs
  // saw one of a redeploy's ~4,000 requests fail ("fetch failed"): a request still on its way when
  // the drain ends fails with its replica, and a loaded CI machine can stall one past 0.5 s.
  start: () => startControl({ DRAIN_SECONDS: '2' }, { orchestrate: true }),
  replicasLeft: async (_control, agentId) => containersOf(agentId).length,
  leftovers: async (_control, agentId) => (networkExists(`agent-${agentId}`) ? [`network agent-${agentId}`] : []),
  silentReplica: 'routed-after-grace',
});
