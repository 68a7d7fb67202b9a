import { readNomadSettings, type NomadSettings } from '../../control/orchestrator/nomad/settings.js';
import { readSettings } from '../../contract/settings-reader.js';
import type { JobSpec } from '../../control/domain/job.js';
import { createNomadDriver } from '../../control/orchestrator/create.js';
import type { NomadDriver } from '../../control/orchestrator/nomad/driver.js';
import { pino } from 'pino';
import { systemClock } from '../../contract/clock.js';
import type { FakeCluster } from './fake-nomad/index.js';
import { LOCAL_RUNTIME_IMAGE } from '../../control/config/runtime-image.js';

/** A sample agent's job spec: what control/domain/job-spec.ts makes of a default-runtime agent with a model key. */
export function sampleSpec(overrides: Partial<JobSpec> = {}): JobSpec {
  return {
    agentId: 'agt_7Qm2XbR9kLp4TzW1nVc8',
    slug: 'support-bot-x7k2p9qa',
    name: 'Support bot',
    accountId: 'acc_3Jd8Kq1ZrT5mWn2Vb7Xc',
    url: 'https://support-bot-x7k2p9qa.agents.example.com',
    version: 3,
    image: LOCAL_RUNTIME_IMAGE,
    port: 8080,
    count: 2,
    cpu: 0.5,
    memoryMb: 256,
    env: { AGENT_ID: 'agt_7Qm2XbR9kLp4TzW1nVc8', AGENT_NAME: 'Support bot', SYSTEM_PROMPT: 'Be kind.', LLM_MODEL: 'gpt-4o-mini', LLM_PROVIDER: 'openai' },
    secretEnv: { OPENAI_API_KEY: 'sk-sample-not-a-real-key' },
    check: 'http',
    scaling: { enabled: true, min: 1, max: 5 },
    ...overrides,
  };
}

/** The driver's settings from an environment with only the defaults (and `env`); a bad value throws its ConfigError. */
export function defaultNomadSettings(env: Record<string, string> = {}): NomadSettings {
  return readSettings({ ORCHESTRATOR: 'nomad', ...env }, readNomadSettings);
}

/** The driver's settings for a fake cluster (test/support/fake-nomad): its addresses and tokens, with `env` on top. */
export function fakeClusterSettings(cluster: FakeCluster, env: Record<string, string> = {}): NomadSettings {
  return defaultNomadSettings({
    NOMAD_ADDR: cluster.nomadAddr, NOMAD_TOKEN: cluster.nomadToken, CONSUL_HTTP_ADDR: cluster.consulAddr, CONSUL_HTTP_TOKEN: cluster.consulToken, ...env,
  });
}

/** A Nomad driver on a fake cluster, with a silent logger and the system clock. */
export function fakeClusterDriver(cluster: FakeCluster, env: Record<string, string> = {}): NomadDriver {
  return createNomadDriver(fakeClusterSettings(cluster, env), systemClock, pino({ level: 'silent' }));
}
