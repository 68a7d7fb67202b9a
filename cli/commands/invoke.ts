import type { IncomingMessage } from 'node:http';
import { command } from '../command.js';
import { ApiRefused } from '../errors.js';
import { postThroughEdge, readText } from '../edge-request.js';
import { readEvents } from '../event-stream.js';
import { resolveAgent } from '../resolve-agent.js';
import { printJson } from '../terminal.js';

/** Runtime contract v1's answer to POST /invoke (docs/contract.md, "What a container serves"). */
interface InvokeResult {
  output: string;
  session_id: string;
  agent_id: string;
}

/**
 * A refusal by the edge (401, 404, 429: plain text) or by the agent (`{error: {code, message}}`,
 * runtime contract v1) as exit 1 with its code.
 */
async function refused(response: IncomingMessage): Promise<ApiRefused> {
  const text = await readText(response);
  try {
    const { error } = JSON.parse(text) as { error?: { code?: string; message?: string } };
    if (error?.code) return new ApiRefused(response.statusCode ?? 0, error.code, error.message ?? '');
  } catch {
    // the edge's plain text, below
  }
  return new ApiRefused(response.statusCode ?? 0, `HTTP_${response.statusCode}`, text.trim().slice(0, 200) || 'no body');
}

/** The edge's 401 to a call without a key says only "Bearer": name the two ways to give one. */
function withHint(refusal: ApiRefused, keyMissing: boolean): ApiRefused {
  if (refusal.status !== 401 || !keyMissing) return refusal;
  return new ApiRefused(refusal.status, refusal.code, `${refusal.message.replace(/\.?$/, '.')} The agent is private: pass --key agk_… or set AGENTCTL_ACCESS_KEY`);
}

export const invoke = command({
  command: 'invoke <agent> <input>',
  examples: [["$0 agents invoke support-bot 'Where is my order?'", "print its answer"], ["$0 agents invoke support-bot 'Tell me more' --stream", "print the answer as it comes"]],
  describe: "Call the agent through the edge (its url) and print its answer",
  builder: (yargs) =>
    yargs
      .positional('agent', { type: 'string', demandOption: true, describe: 'id, slug or unique name' })
      .positional('input', { type: 'string', demandOption: true, describe: 'what to ask' })
      .option('session', { type: 'string', describe: 'continue this session' })
      .option('stream', { type: 'boolean', describe: 'print the answer as it is written' })
      .option('key', { type: 'string', describe: 'an access key of a private agent (else AGENTCTL_ACCESS_KEY)' }),
  run: async (args, { api, settings, terminal, json }) => {
    const agent = await resolveAgent(api, args.agent);
    const key = args.key ?? settings.accessKey;
    const headers: Record<string, string> = { accept: args.stream ? 'text/event-stream' : 'application/json' };
    if (key) headers.authorization = `Bearer ${key}`;
    const body = { input: args.input, ...(args.session ? { session_id: args.session } : {}) };
    const response = await postThroughEdge(agent.url, settings.edgeUrl, '/invoke', body, headers);
    // The edge, not this command, decides who may call (the agent may have been made private meanwhile).
    if ((response.statusCode ?? 0) >= 300) throw withHint(await refused(response), agent.access === 'private' && !key);

    const streamed = String(response.headers['content-type'] ?? '').startsWith('text/event-stream');
    if (!streamed) {
      const result = JSON.parse(await readText(response)) as InvokeResult;
      if (json) return printJson(terminal, result);
      terminal.out(result.output);
      return terminal.err(`session ${result.session_id}`);
    }
    // The runtime's stream (runtime-image/README.md, "Streaming"): delta texts, then done or error.
    for await (const event of readEvents(response)) {
      const data = JSON.parse(event.data) as Record<string, unknown>;
      if (json) terminal.out(JSON.stringify({ event: event.event, data }));
      else if (event.event === 'delta') process.stdout.write(String(data.text ?? ''));
      if (event.event === 'error') {
        const error = (data.error ?? {}) as { code?: string; message?: string };
        throw new ApiRefused(200, error.code ?? 'STREAM_ERROR', error.message ?? 'the agent ended the stream with an error');
      }
      if (event.event === 'done') {
        if (!json) {
          process.stdout.write('\n');
          terminal.err(`session ${String(data.session_id)}`);
        }
        return;
      }
    }
  },
});
