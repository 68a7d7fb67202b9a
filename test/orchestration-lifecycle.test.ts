import { startControl } from './support/control-harness.js';
import { lifecycleSuite } from './support/lifecycle-suite.js';
import { containersOf, networkExists } from './support/podman.js';

lifecycleSuite({
  name: 'podman',
  // The default drain (DRAIN_SECONDS, 2 s), as a user runs it, not the harness's 0.5 s. A request
  // still unanswered when its old replica stops is lost with it, and a loaded machine stalls some:
  // with both CPUs kept busy, 1 of 8 runs at 0.5 s lost one (ECONNRESET from an old replica's
  // address), 0 of 8 at 2 s. Two CI runs had lost one at 0.5 s.
  start: () => startControl({ DRAIN_SECONDS: '2' }, { orchestrate: true }),
  replicasLeft: async (_control, agentId) => containersOf(agentId).length,
  leftovers: async (_control, agentId) => (networkExists(`agent-${agentId}`) ? [`network agent-${agentId}`] : []),
  silentReplica: 'routed-after-grace',
});
