import yargs from 'yargs';
import { hideBin } from 'yargs/helpers';
import { agents } from './commands/agents.js';
import { audit } from './commands/audit.js';
import { login, logout, register, whoami } from './commands/auth.js';
import { deployments, rollback } from './commands/deployments.js';
import { domains } from './commands/domains.js';
import { invoke } from './commands/invoke.js';
import { apiKeys, keys } from './commands/keys.js';
import { logs, metrics } from './commands/observability.js';
import { usage } from './commands/usage.js';
import { CliError, EXIT, UsageError, type ExitCode } from './errors.js';
import { DEFAULT_API_URL, type Environment } from './settings.js';

/** The command line: every command, its help, completion, and strict checking of flags. */
function parser(argv: string[]) {
  return yargs(argv)
    .scriptName('agentctl')
    .usage('$0 <command> [options]\n\nThe command line of the agent platform: sign in, deploy, watch, call.')
    .option('api', { type: 'string', global: true, describe: `the control API (else AGENTCTL_API_URL, the URL you logged in to, ${DEFAULT_API_URL})` })
    .option('edge', { type: 'string', global: true, describe: "where invoke connects instead of the agent URL's host (else AGENTCTL_EDGE_URL)" })
    .option('json', { type: 'boolean', global: true, describe: "print the API's JSON as is" })
    .command(register)
    .command(login)
    .command(logout)
    .command(whoami)
    .command(agents)
    .command(logs)
    .command(metrics)
    .command(keys)
    .command(apiKeys)
    .command(domains)
    .command(usage)
    .command(deployments)
    .command(rollback)
    .command(audit)
    .command(invoke)
    .completion('completion', 'Print a shell completion script (bash, zsh): agentctl completion >> ~/.bashrc')
    .demandCommand(1, 'Name a command: agentctl --help lists them')
    .recommendCommands()
    .strict()
    .help()
    .alias('help', 'h')
    // --env A=1 <agent>: each --env takes one value, so a positional after it stays one.
    .parserConfiguration({ 'greedy-arrays': false })
    .version(false)
    .wrap(null)
    .exitProcess(false)
    // Bad usage and failures in a command alike leave through the one handler in main().
    .fail((message, error) => {
      throw error ?? new UsageError(`${message}\nRun with --help for usage.`);
    });
}

/** Runs one command line in `environment` and returns the exit code (docs/cli.md, "Exit codes"). */
export async function main(argv: string[], environment: Environment): Promise<ExitCode> {
  try {
    // The parse context reaches every handler merged into its arguments (GlobalOptions.environment), as no flag can.
    await parser(argv).parseAsync(argv, { environment });
    return EXIT.ok;
  } catch (error) {
    if (error instanceof CliError) {
      process.stderr.write(`agentctl: ${error.message}\n`);
      return error.exitCode;
    }
    process.stderr.write(`agentctl: ${(error as Error).stack ?? String(error)}\n`);
    return EXIT.refused;
  }
}

process.exitCode = await main(hideBin(process.argv), process.env);
