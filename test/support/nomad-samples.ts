import { readNomadSettings, type NomadSettings } from '../../control/orchestrator/nomad/settings.js';
import type { JobSpec } from '../../control/orchestrator/types.js';

/** A sample agent's job spec: what control/domain/job-spec.ts makes of a default-runtime agent with a model key. */
export function sampleSpec(overrides: Partial<JobSpec> = {}): JobSpec {
  return {
    agentId: 'ag_0123456789abcdef',
    slug: 'support-bot',
    version: 3,
    image: 'localhost/agent-runtime:latest',
    port: 8080,
    count: 2,
    cpu: 0.5,
    memoryMb: 256,
    env: { AGENT_ID: 'ag_0123456789abcdef', AGENT_NAME: 'Support bot', SYSTEM_PROMPT: 'Be kind.', LLM_MODEL: 'gpt-4o-mini', LLM_PROVIDER: 'openai' },
    secretEnv: { OPENAI_API_KEY: 'sk-sample-not-a-real-key' },
    check: 'http',
    scaling: { enabled: true, min: 1, max: 5 },
    ...overrides,
  };
}

/** The driver's settings from an environment with only the defaults. */
export function defaultNomadSettings(env: Record<string, string> = {}): NomadSettings {
  const problems: string[] = [];
  const settings = readNomadSettings({ ORCHESTRATOR: 'nomad', ...env }, problems);
  if (problems.length > 0) throw new Error(problems.join('; '));
  return settings;
}
