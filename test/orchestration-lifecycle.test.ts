import { startControl } from './support/control-harness.js';
import { lifecycleSuite } from './support/lifecycle-suite.js';
import { containersOf, networkExists } from './support/podman.js';

lifecycleSuite({
  name: 'podman',
  start: () => startControl({}, { orchestrate: true }),
  replicasLeft: async (_control, agentId) => containersOf(agentId).length,
  leftovers: async (_control, agentId) => (networkExists(`agent-${agentId}`) ? [`network agent-${agentId}`] : []),
  silentReplica: 'routed-after-grace',
});
