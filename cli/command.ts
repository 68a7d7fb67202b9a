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

/** A command whose handler gets its context (settings, API client, terminal) built from the global options. */
export const command = <A>(spec: CommandSpec<A>): CommandModule<GlobalOptions, A> => ({
  command: spec.command,
  describe: spec.describe,
  builder: (yargs) => (spec.examples ? spec.builder(yargs).example(spec.examples) : spec.builder(yargs)),
  // Every command has the global options: main.ts declares them with `global: true`.
  handler: (args) => spec.run(args, contextOf(args as GlobalOptions)),
});

/** A command of subcommands (`agents list`, `keys create`): one of them is required. */
export const group = (name: string, describe: string, commands: CommandModule<GlobalOptions, any>[]): CommandModule<GlobalOptions, GlobalOptions> => ({
  command: `${name} <command>`,
  describe,
  builder: (yargs) => commands.reduce((built, sub) => built.command(sub), yargs).demandCommand(1, `${name}: name a command (agentctl ${name} --help lists them)`),
  handler: () => undefined,
});
