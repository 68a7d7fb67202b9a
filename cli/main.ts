import yargs from 'yargs';
import { hideBin } from 'yargs/helpers';
import { topLevelAliases } from './aliases.js';
import { agents } from './commands/agents.js';
import { audit } from './commands/audit.js';
import { auth } from './commands/auth.js';
import { deployments } from './commands/deployments.js';
import { domains } from './commands/domains.js';
import { invocations } from './commands/invocations.js';
import { sessions } from './commands/sessions.js';
import { apiKeys, keys } from './commands/keys.js';
import { usage } from './commands/usage.js';
import { contexts } from './commands/contexts.js';
import { accounts } from './commands/accounts.js';
import { team } from './commands/team.js';
import { env, secrets } from './commands/env.js';
import { version } from './commands/version.js';
import { completion } from './commands/completion.js';
import { clientVersion } from './client-version.js';
import { CliError, EXIT, UsageError, type ExitCode } from './errors.js';
import { DEFAULT_API_URL, type Environment } from './settings.js';

/** The command line: every command, its help, completion, and strict checking of flags. */
function parser(argv: string[]) {
  return yargs(argv)
    .scriptName('agentctl')
    .usage('$0 <command> [options]\n\nThe command line of the agent platform: sign in, deploy, watch, call.')
    .option('api', { type: 'string', global: true, describe: `the control API (else AGENTCTL_API_URL, the URL you logged in to, ${DEFAULT_API_URL})` })
    .option('edge', { type: 'string', global: true, describe: "where agents invoke connects instead of the agent URL's host (else AGENTCTL_EDGE_URL)" })
    .option('json', { type: 'boolean', global: true, describe: "print the API's JSON as is" })
    .option('context', { type: 'string', global: true, describe: 'the named API target to use (else AGENTCTL_CONTEXT, then the one `agentctl context use` chose)' })
    .option('color', { type: 'boolean', global: true, describe: 'colour output; --no-color (or NO_COLOR=1) turns it off. Default: only when stdout is a terminal' })
    // Noun then verb, as gh and flyctl: every command is in a group but version and completion, which gh too has at the top.
    .command(auth)
    .command(agents)
    .command(deployments)
    .command(env)
    .command(secrets)
    .command(keys)
    .command(apiKeys)
    .command(domains)
    .command(sessions)
    .command(invocations)
    .command(usage)
    .command(audit)
    .command(team)
    .command(accounts)
    .command(contexts)
    .command(version)
    .command(completion)
    // The verbs that were top-level commands, hidden from help (cli/aliases.ts).
    .command(topLevelAliases)
    // Answers --get-yargs-completions for the scripts `completion` prints; its own command is hidden.
    .completion('yargs-completion', false)
    .example([
      ['$0 auth login --email ada@example.com', 'sign in (the password is asked for)'],
      ['$0 agents create --name support-bot --deploy', 'create an agent and wait until it runs'],
      ['$0 agents invoke support-bot "Where is my order?"', 'call it and print its answer'],
      ['printf %s "$TOKEN" | $0 secrets set support-bot API_TOKEN', 'add a secret from stdin; a new deployment rolls it out'],
      ['$0 context add staging --api-url https://staging.example.com/v1', 'another API target'],
    ])
    .demandCommand(1, 'Name a command: agentctl --help lists them')
    .recommendCommands()
    .strict()
    .help()
    .alias('help', 'h')
    // --env A=1 <agent>: each --env takes one value, so a positional after it stays one.
    .parserConfiguration({ 'greedy-arrays': false })
    .version('version', "print agentctl's version and exit (`agentctl version` adds the API's)", `agentctl ${clientVersion()}`)
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
