import { ApiClient } from './api-client.js';
import { loadSettings, type Settings } from './settings.js';
import { processTerminal, type Terminal } from './terminal.js';

/** What every command gets: the settings, a client of the API, where to write, and --json. */
export interface Context {
  settings: Settings;
  api: ApiClient;
  terminal: Terminal;
  json: boolean;
}

/** The global options every command takes (cli/main.ts declares them). */
export interface GlobalOptions {
  api?: string | undefined;
  edge?: string | undefined;
  json?: boolean | undefined;
}

/** Built per run from the global options, so each command is handed its collaborators. */
export function contextOf(options: GlobalOptions, terminal: Terminal = processTerminal): Context {
  const settings = loadSettings({ api: options.api, edge: options.edge });
  return { settings, api: new ApiClient(settings.apiUrl, settings.token), terminal, json: Boolean(options.json) };
}
