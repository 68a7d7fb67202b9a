import type { AuditDetails } from '../domain/audit.js';
import type { DeployInput } from '../schemas/agents.js';

/**
 * What a deploy changed, by name only: the deploy object's fields it sets and `env.NAME`
 * for each variable it lists. Never a value: env values and model keys are secrets.
 */
export function deployChanges(input: DeployInput): string[] {
  const fields = Object.keys(input).filter((field) => field !== 'env' && field !== 'build_path');
  const env = (input.env ?? []).map((entry) => `env.${entry.key}`);
  return [...fields, ...env].sort();
}

/** A from/to pair of one changed setting, as flat details (`access_from`, `access_to`). */
export function fromTo(field: string, from: string | number | null, to: string | number | null): AuditDetails {
  return { [`${field}_from`]: from, [`${field}_to`]: to };
}
