import type { AuditEvent, AuditEventList } from '../../control/schemas/audit.js';
import { command, group } from '../command.js';
import { resolveAgent } from '../resolve-agent.js';
import { printJson, table } from '../terminal.js';

const actorOf = (event: AuditEvent) => (event.actor.type === 'system' ? 'system' : `${event.actor.email ?? event.actor.id}${event.actor.type === 'api_key' ? ` (key ${event.actor.id})` : ''}`);

const row = (event: AuditEvent) => [
  event.at, event.action, actorOf(event), `${event.target.type} ${event.target.id ?? ''}`.trim(), event.ip, event.request_id,
  Object.keys(event.details).length > 0 ? JSON.stringify(event.details) : '',
];

const list = command({
  command: 'list',
  examples: [["$0 audit list", "the newest events"], ["$0 audit list --action agent.deploy --agent support-bot", "one action on one agent"]],
  describe: "The account's audit log, newest first (owners and admins)",
  builder: (yargs) =>
    yargs
      .option('action', { type: 'string', describe: 'one action, e.g. agent.deploy' })
      .option('agent', { type: 'string', describe: 'events about an agent and its access keys: an id (also of a deleted agent), a slug or a name' })
      .option('actor', { type: 'string', describe: 'a user id (with what they did through their API keys) or an API key id' })
      .option('since', { type: 'string', describe: 'RFC 3339 time, inclusive' })
      .option('until', { type: 'string', describe: 'RFC 3339 time, exclusive' })
      .option('page', { type: 'number', default: 1, describe: 'which page, from 1' })
      .option('page-size', { type: 'number', default: 20, describe: 'events per page (1–100)' }),
  run: async (args, { api, terminal, json }) => {
    // An id is taken as given: a deleted agent's history stays readable.
    const agentId = args.agent === undefined || args.agent.startsWith('agt_') ? args.agent : (await resolveAgent(api, args.agent)).id;
    const list = await api.request<AuditEventList>('GET', '/account/audit-events', {
      query: { action: args.action, agent_id: agentId, actor_id: args.actor, since: args.since, until: args.until, page: args.page, page_size: args.pageSize },
    });
    if (json) return printJson(terminal, list);
    terminal.out(table(['at', 'action', 'actor', 'target', 'ip', 'request id', 'details'], list.events.map(row), terminal.paint));
    if (list.has_next) terminal.err(`${list.total} events; this is page ${list.page}: --page ${list.page + 1} for more`);
  },
});

// `audit [--action A] …` was the listing before audit became a group: it still is.
export const audit = group('audit', "The account's audit log (owners and admins)", [list], list);
