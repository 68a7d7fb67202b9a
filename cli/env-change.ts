import type { Agent, DeployInput } from '../control/schemas/agents.js';
import { CliError, EXIT, UsageError } from './errors.js';

type EnvInput = NonNullable<DeployInput['env']>;

/** What `env set|unset` and `secrets set|unset` ask for: entries to set (of one kind) and keys to drop. */
export interface EnvChange {
  secret: boolean;
  set: { key: string; value: string }[];
  unset: string[];
}

/**
 * The deploy.env list to send: the agent's list as the API shows it with `change` applied.
 * Entries it does not name stay: plain ones with their value, secrets as their key alone,
 * which the API reads as "keep the stored value" (control/domain/deploy.ts,
 * withKeptSecrets). A set key keeps its place; a new one goes last. Plain variables and
 * secrets are changed by their own commands, so one cannot turn a secret into a plain
 * variable by mistake; a plain variable may become a secret (`secrets set`).
 */
export function changedEnv(current: Agent['deploy']['env'], change: EnvChange): EnvInput {
  const kind = change.secret ? 'secret' : 'variable';
  const other = change.secret ? '`agentctl env`' : '`agentctl secrets`';
  const byKey = new Map(current.map((entry) => [entry.key, entry]));
  for (const { key } of change.set) {
    if (!change.secret && byKey.get(key)?.secret) throw new UsageError(`${key} is a secret: change it with agentctl secrets set, or unset it there first`);
  }
  const missing = change.unset.filter((key) => byKey.get(key)?.secret !== change.secret);
  if (missing.length) {
    const wrongKind = missing.filter((key) => byKey.has(key));
    if (wrongKind.length) throw new UsageError(`not a ${kind}: ${wrongKind.join(', ')} (${other} unsets it)`);
    throw new CliError(`no ${kind} named ${missing.join(', ')}: nothing was changed`, EXIT.refused);
  }
  const given = new Map(change.set.map((entry) => [entry.key, entry.value]));
  const kept: EnvInput = current
    .filter((entry) => !change.unset.includes(entry.key))
    .map((entry) => {
      if (given.has(entry.key)) return setEntry(entry.key, given.get(entry.key)!, change.secret);
      return entry.secret ? { key: entry.key, secret: true } : { key: entry.key, value: entry.value };
    });
  const added = change.set.filter((entry) => !byKey.has(entry.key)).map((entry) => setEntry(entry.key, entry.value, change.secret));
  return [...kept, ...added];
}

const setEntry = (key: string, value: string, secret: boolean) => (secret ? { key, value, secret: true } : { key, value });
