import { clientVersion } from '../client-version.js';
import { command } from '../command.js';
import { CliError } from '../errors.js';
import { details, printJson } from '../terminal.js';

/** What GET /v1/version answers; only `version` is read, so more fields do no harm. */
interface ApiVersion {
  version?: unknown;
}

export const version = command({
  command: 'version',
  describe: "agentctl's version and the control API's (GET /v1/version); the API's is `unknown` when it does not say",
  builder: (yargs) =>
    yargs.example([
      ['$0 version', 'client and API versions'],
      ['$0 version --json', 'the same as JSON, for scripts'],
      ['$0 --version', "agentctl's version alone, without asking the API"],
    ]),
  run: async (_args, { api, terminal, json, settings }) => {
    const client = clientVersion();
    // An older API has no /v1/version and an unreachable one cannot answer: neither fails the command.
    const answer = await api.request<ApiVersion>('GET', '/version').then(
      (body) => ({ version: typeof body?.version === 'string' ? body.version : null, error: null }),
      (error: unknown) => ({ version: null, error: error instanceof CliError ? error.message : String(error) }),
    );
    if (json) return printJson(terminal, { client: { version: client }, api: { url: settings.apiUrl, version: answer.version } });
    terminal.out(details([['client', client], ['api', answer.version ?? 'unknown'], ['api url', settings.apiUrl]], terminal.paint));
    if (answer.error) terminal.err(`The API's version is unknown: ${answer.error}`);
  },
});
