import { ApiClient } from './api-client.js';
import { loadSettings, type Environment, type Settings } from './settings.js';
import { processTerminal, stdoutIsTty, type Terminal } from './terminal.js';

/** What every command gets: the settings, a client of the API, where to write, and --json. */
export interface Context {
  settings: Settings;
  api: ApiClient;
  terminal: Terminal;
  json: boolean;
}

/** The global options every command takes (cli/main.ts declares them), and the environment main.ts hands down with them. */
export interface GlobalOptions {
  api?: string | undefined;
  edge?: string | undefined;
  json?: boolean | undefined;
  context?: string | undefined;
  /** false for --no-color. */
  color?: boolean | undefined;
  /** process.env, passed by cli/main.ts as yargs' parse context, which yargs merges into every command's arguments. */
  environment?: Environment | undefined;
}

/** Built per run from the global options, so each command is handed its collaborators. */
export function contextOf(options: GlobalOptions, terminal?: Terminal): Context {
  if (!options.environment) throw new Error('no environment: cli/main.ts passes process.env as the parse context');
  const settings = loadSettings({ api: options.api, edge: options.edge, context: options.context, color: options.color }, options.environment, stdoutIsTty());
  return { settings, api: new ApiClient(settings.apiUrl, settings.token, settings.accountId), terminal: terminal ?? processTerminal(settings.colour), json: Boolean(options.json) };
}
