import { FakeProvider } from '../../runtime-image/test/helpers/fake-provider.js';
import { startControl, type TestControl } from './control-harness.js';
import { startLocalEdgeStack, type LocalEdgeStack } from './local-edge-stack.js';
import { buildRuntimeImage } from './runtime-agents.js';

/** The default runtime image on podman behind authz and the local edge, its model a fake provider speaking OpenAI's wire format. */
export interface RuntimeStack {
  control: TestControl;
  edge: LocalEdgeStack;
  provider: FakeProvider;
  close(): Promise<void>;
}

/**
 * Builds the runtime image (cached by its source hash) and starts the fake provider, the
 * control API with the podman driver (`env` added to its settings), authz, the local edge
 * and, with `wakes`, the control API's wake loop (a parked agent is woken by a request).
 */
export async function startRuntimeStack(env: Record<string, string> = {}, { wakes = false } = {}): Promise<RuntimeStack> {
  const image = buildRuntimeImage();
  const provider = await FakeProvider.start();
  provider.defaultReply = { text: 'noted' };
  const control = await startControl({ RUNTIME_IMAGE: image, PODMAN_AGENT_HOST_PORTS: String(provider.port), ...env }, { orchestrate: true });
  // Replica tokens and warm periods are reckoned by the wall clock (the driver's); the control API's own is a manual one.
  const clockFollower = setInterval(() => control.clock.set(new Date()), 100);
  control.clock.set(new Date());
  const edge = await startLocalEdgeStack(control, { authzRedisTimeoutMs: 2_000 });
  if (wakes) control.control.loops.wakes!.start();
  return {
    control,
    edge,
    provider,
    async close() {
      await control.control.loops.wakes?.stop();
      clearInterval(clockFollower);
      await edge.close();
      await control.close();
      await provider.close();
    },
  };
}
