/**
 * Writes nomad-jobs/agent.example.json: the request body the Nomad driver sends to
 * PUT /v1/jobs for a sample agent (default runtime, two replicas, a model key, auto-scaling
 * on, the runtime image as `npm run images -- push` names it in an operator's registry), with
 * the default settings and the agent services at EXAMPLE_AGENT_SERVICES_URL. `npm run nomad:example` rewrites it; a test fails when
 * the committed file no longer matches what the driver generates.
 *
 *   curl -X PUT -H "X-Nomad-Token: $NOMAD_TOKEN" -d @nomad-jobs/agent.example.json "$NOMAD_ADDR/v1/jobs"
 */
import { writeFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import type { JobRegisterRequest } from '../control/orchestrator/nomad/api-types.js';
import { nomadJobFor } from '../control/orchestrator/nomad/job-spec.js';
import type { NomadAgentServices } from '../control/orchestrator/nomad/agent-identity.js';
import { readNomadSettings } from '../control/orchestrator/nomad/settings.js';
import { readSettings } from '../contract/settings-reader.js';
import type { JobSpec } from '../control/domain/job.js';

export const EXAMPLE_PATH = fileURLToPath(new URL('../nomad-jobs/agent.example.json', import.meta.url));

export const EXAMPLE_AGENT: JobSpec = {
  agentId: 'agt_7Qm2XbR9kLp4TzW1nVc8',
  slug: 'support-bot-x7k2p9qa',
    name: 'Support bot',
    accountId: 'acc_3Jd8Kq1ZrT5mWn2Vb7Xc',
    url: 'https://support-bot-x7k2p9qa.agents.example.com',
  version: 3,
  image: 'registry.example.com/platform/agent-runtime:0.1.0-3f2c1ab',
  port: 8080,
  count: 2,
  cpu: 0.5,
  memoryMb: 256,
  env: { AGENT_ID: 'agt_7Qm2XbR9kLp4TzW1nVc8', AGENT_NAME: 'Support bot', SYSTEM_PROMPT: 'You answer questions about our product.', LLM_MODEL: 'gpt-4o-mini', LLM_PROVIDER: 'openai' },
  // Lives in the Variable nomad/jobs/agent-agt_7Qm2XbR9kLp4TzW1nVc8, never in the job below.
  secretEnv: { OPENAI_API_KEY: 'sk-example' },
  check: 'http',
  scaling: { enabled: true, min: 1, max: 5 },
};

/** NOMAD_AGENT_SERVICES_URL of the example: a platform node's address, the listener's default port. */
export const EXAMPLE_AGENT_SERVICES_URL = 'http://10.0.1.5:7090';

export function renderExample(): string {
  const settings = readSettings({ ORCHESTRATOR: 'nomad', NOMAD_AGENT_SERVICES_URL: EXAMPLE_AGENT_SERVICES_URL }, readNomadSettings);
  // AGENT_SERVICES_TOKEN_TTL_SECONDS and SESSION_MAX_BYTES at their defaults (control/config/config.ts).
  const agentServices: NomadAgentServices = { url: settings.agentServicesUrl!, tokenTtlSeconds: 3600, maxSessionBytes: 1_048_576 };
  const request: JobRegisterRequest = { Job: nomadJobFor(EXAMPLE_AGENT, settings, agentServices), PreserveCounts: EXAMPLE_AGENT.scaling.enabled };
  return `${JSON.stringify(request, null, 2)}\n`;
}

if (process.argv[1] && fileURLToPath(import.meta.url) === process.argv[1]) {
  writeFileSync(EXAMPLE_PATH, renderExample());
  console.log(`wrote ${EXAMPLE_PATH}`);
}
