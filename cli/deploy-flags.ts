import type { Argv } from 'yargs';
import type { DeployInput } from '../control/schemas/agents.js';
import { UsageError } from './errors.js';

/** `K=V` from --env/--secret: the key before the first `=`, the value after it (which may hold more `=`). */
export function keyValue(flag: string, entry: string): { key: string; value: string } {
  const at = entry.indexOf('=');
  if (at <= 0) throw new UsageError(`${flag} takes KEY=VALUE, not ${JSON.stringify(entry)}`);
  return { key: entry.slice(0, at), value: entry.slice(at + 1) };
}

/** The deploy.env list from repeated --env and --secret flags; undefined when neither was given. */
export function envEntries(env: string[] | undefined, secrets: string[] | undefined): DeployInput['env'] {
  if (!env?.length && !secrets?.length) return undefined;
  return [
    ...(env ?? []).map((entry) => keyValue('--env', entry)),
    ...(secrets ?? []).map((entry) => ({ ...keyValue('--secret', entry), secret: true })),
  ];
}

/** --env and --secret, repeatable, as create and deploy take them. */
export const withEnvFlags = <T>(yargs: Argv<T>) =>
  yargs
    .option('env', { type: 'string', array: true, describe: 'KEY=VALUE, repeatable; replaces the whole env list' })
    .option('secret', { type: 'string', array: true, describe: 'KEY=VALUE kept encrypted and shown as ***, repeatable' });
