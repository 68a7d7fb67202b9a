import type { CommandModule } from 'yargs';
import { alias } from './command.js';
import { login, logout, register, whoami } from './commands/auth.js';
import { rollback } from './commands/deployments.js';
import { invoke } from './commands/invoke.js';
import { logs, metrics } from './commands/observability.js';
import type { GlobalOptions } from './context.js';

/**
 * The top-level commands agentctl had before its noun-then-verb layout, each the command of
 * its group under its own name, so scripts written against them keep working (docs/cli.md,
 * "Aliases"). `deployments <agent>`, `audit` and `usage` are their groups' defaults instead
 * (group()'s fallback), since the group took the word.
 */
export const topLevelAliases: CommandModule<GlobalOptions, any>[] = [
  alias(register, 'auth'),
  alias(login, 'auth'),
  alias(logout, 'auth'),
  alias(whoami, 'auth'),
  alias(logs, 'agents'),
  alias(metrics, 'agents'),
  alias(invoke, 'agents'),
  alias(rollback, 'deployments'),
];
