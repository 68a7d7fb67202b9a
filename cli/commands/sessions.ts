import type { Static } from '@sinclair/typebox';
import type { SessionList, SessionSummary, SessionWithMessages } from '../../control/schemas/agent-sessions.js';
import { pathSegment } from '../api-client.js';
import { command, group } from '../command.js';
import { resolveAgent, slugOf } from '../resolve-agent.js';
import { formatBytes, printJson, table } from '../terminal.js';

const agentArg = { type: 'string', demandOption: true, describe: 'id, slug or unique name' } as const;

const sessionArg = { type: 'string', demandOption: true, describe: 'the session id, as `sessions list` shows it' } as const;

const sessionRow = (session: SessionSummary) => [session.session_id, session.message_count, formatBytes(session.size_bytes), session.last_used_at, session.expires_at];

const list = command({
  command: 'list <agent>',
  examples: [["$0 sessions list support-bot", "its conversations, most recently used first: sizes and use, never their messages"], ["$0 sessions list support-bot --page 2", "older ones"]],
  describe: "The agent's conversation sessions, most recently used first: messages, size, last use and expiry (never their contents)",
  builder: (yargs) =>
    yargs
      .positional('agent', agentArg)
      .option('page', { type: 'number', default: 1, describe: 'which page, from 1' })
      .option('page-size', { type: 'number', default: 20, describe: 'sessions per page (1–100)' }),
  run: async (args, { api, terminal, json }) => {
    const agent = await resolveAgent(api, args.agent);
    const list = await api.request<Static<typeof SessionList>>('GET', `/agents/${agent.id}/sessions`, { query: { page: args.page, page_size: args.pageSize } });
    if (json) return printJson(terminal, list);
    terminal.out(table(['session id', 'messages', 'size', 'last used', 'expires'], list.sessions.map(sessionRow), terminal.paint));
    if (list.total === 0) terminal.err(`${agent.name} has no sessions: the agent keeps a conversation when a caller sends a session_id back`);
    if (list.has_next) terminal.err(`${list.total} sessions; this is page ${list.page}: --page ${list.page + 1} for more`);
  },
});

const show = command({
  command: 'show <agent> <session>',
  examples: [["$0 sessions show support-bot conv-3f9a2c71", "its messages, oldest first, one JSON message a line (audited; viewers may not)"]],
  describe: "One session's messages, oldest first, as the agent's replicas stored them: one JSON message a line, the session's size and use on stderr",
  builder: (yargs) => yargs.positional('agent', agentArg).positional('session', sessionArg),
  run: async (args, { api, terminal, json }) => {
    const session = pathSegment(args.session, 'session id');
    const agent = await resolveAgent(api, args.agent);
    const shown = await api.request<Static<typeof SessionWithMessages>>('GET', `/agents/${agent.id}/sessions/${session}`);
    if (json) return printJson(terminal, shown);
    for (const message of shown.messages) terminal.out(JSON.stringify(message));
    terminal.err(`${shown.session_id} of ${agent.name}: ${shown.message_count} messages, ${formatBytes(shown.size_bytes)}, version ${shown.version}, last used ${shown.last_used_at}, expires ${shown.expires_at}`);
  },
});

const rm = command({
  command: 'rm <agent> <session>',
  examples: [["$0 sessions rm support-bot conv-3f9a2c71", "delete one conversation; a caller who sends its id again starts a new one"]],
  describe: "Delete one of the agent's sessions with its messages",
  builder: (yargs) => yargs.positional('agent', agentArg).positional('session', sessionArg),
  run: async (args, { api, terminal }) => {
    const session = pathSegment(args.session, 'session id');
    const agent = await resolveAgent(api, args.agent);
    await api.request('DELETE', `/agents/${agent.id}/sessions/${session}`);
    terminal.err(`Deleted session ${args.session} of ${agent.name} (${slugOf(agent)})`);
  },
});

export const sessions = group('sessions', "An agent's conversation sessions, which its replicas keep for callers who send a session_id back", [list, show, rm]);
