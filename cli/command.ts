import type { ArgumentsCamelCase, Argv, CommandModule } from 'yargs';
import { contextOf, type Context, type GlobalOptions } from './context.js';

export interface CommandSpec<A> {
  command: string;
  describe: string;
  builder: (yargs: Argv<GlobalOptions>) => Argv<A>;
  /** `[command line, what it does]` pairs shown under Examples in the command's help ($0 is agentctl). */
  examples?: [string, string][];
  run: (args: ArgumentsCamelCase<A>, context: Context) => Promise<void>;
}

/** What command() makes: a yargs command whose name, description and builder alias() can reuse. */
export interface Command<A> extends CommandModule<GlobalOptions, A> {
  command: string;
  describe: string;
  builder: (yargs: Argv<GlobalOptions>) => Argv<A>;
}

/** A command whose handler gets its context (settings, API client, terminal) built from the global options. */
export const command = <A>(spec: CommandSpec<A>): Command<A> => ({
  command: spec.command,
  describe: spec.describe,
  builder: (yargs) => (spec.examples ? spec.builder(yargs).example(spec.examples) : spec.builder(yargs)),
  // Every command has the global options: main.ts declares them with `global: true`.
  handler: (args) => spec.run(args, contextOf(args as GlobalOptions)),
});

/**
 * A command of subcommands (`agents list`, `keys create`): one of them is required, unless
 * the group has a `fallback`, which runs when none is named: `audit` was a command before
 * it was a group, and `audit --action X` must still list (see alias()).
 */
export const group = (name: string, describe: string, commands: Command<any>[], fallback?: Command<any>): CommandModule<GlobalOptions, GlobalOptions> => ({
  command: `${name} <command>`,
  describe,
  builder: (yargs) => {
    const withCommands = commands.reduce((built, sub) => built.command(sub), yargs);
    if (fallback) return withCommands.command(alias(fallback, name, '$0'));
    return withCommands.demandCommand(1, `${name}: name a command (agentctl ${name} --help lists them)`);
  },
  handler: () => undefined,
});

/**
 * A command line of agentctl before its noun-then-verb layout, kept working: `module`, a
 * command of group `home`, registered once more. Where it is registered at the top level it
 * answers to its own name (`login` for `auth login`); as `$0` it is its group's default, so
 * `deployments <agent>` lists as `deployments list <agent>` does. The builder and handler
 * are the module's own, so flags and behaviour cannot drift apart; `describe: false` keeps
 * the alias out of every command list and completion, so help shows one layout (docs/cli.md,
 * "Aliases").
 */
export function alias<A>(module: Command<A>, home: string, name?: '$0'): CommandModule<GlobalOptions, A> {
  const verb = module.command.split(' ')[0]!;
  const command = `${name ?? verb}${module.command.slice(verb.length)}`;
  // yargs builds a group's default for `deployments --help` too: its usage must stay the group's.
  const described = (yargs: Argv<GlobalOptions>) =>
    name === '$0' ? yargs : yargs.usage(`$0 ${command}\n\n${module.describe}\n\nAn alias of \`$0 ${home} ${verb}\`, its name in the noun-then-verb layout.`);
  return { ...module, command, describe: false, builder: (yargs) => module.builder(described(yargs)) };
}
