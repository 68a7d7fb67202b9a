import type { Domain, DomainList } from '../../control/schemas/domains.js';
import type { ApiClient } from '../api-client.js';
import { command, group } from '../command.js';
import { ApiRefused } from '../errors.js';
import { resolveAgent } from '../resolve-agent.js';
import { details, printJson, table, type Terminal } from '../terminal.js';

const domainTable = (domains: Domain[]) =>
  table(['id', 'hostname', 'status', 'expires', 'reason'], domains.map((domain) => [domain.id, domain.hostname, domain.status, domain.certificate?.not_after, domain.reason]));

function showDomain(terminal: Terminal, domain: Domain): void {
  terminal.out(details([
    ['id', domain.id],
    ['hostname', domain.hostname],
    ['status', domain.status],
    ['reason', domain.reason],
    ['txt name', domain.verification.name],
    ['txt value', domain.verification.value],
    ['certificate', domain.certificate?.serial],
    ['expires', domain.certificate?.not_after],
    ['renews after', domain.certificate?.renew_after],
  ], terminal.paint));
}

/** `<domain>` as typed: its id (dom_…), or its hostname as the API stores it (lower case, no trailing dot). */
async function resolveDomain(api: ApiClient, agentId: string, reference: string): Promise<Domain> {
  if (reference.startsWith('dom_')) return api.request<Domain>('GET', `/agents/${agentId}/domains/${encodeURIComponent(reference)}`);
  const hostname = reference.toLowerCase().replace(/\.$/, '');
  const { domains } = await api.request<DomainList>('GET', `/agents/${agentId}/domains`);
  const found = domains.find((domain) => domain.hostname === hostname);
  if (!found) throw new ApiRefused(404, 'NOT_FOUND', `the agent has no custom domain ${JSON.stringify(hostname)}`);
  return found;
}

const agentArg = { type: 'string', demandOption: true, describe: 'id, slug or unique name' } as const;
const domainArg = { type: 'string', demandOption: true, describe: 'the domain id (dom_…) or its hostname' } as const;

export const domains = group('domains', "An agent's custom domains: hostnames of yours that route to it over HTTPS", [
  command({
    command: 'add <agent> <hostname>',
    examples: [["$0 domains add support-bot bot.example.com", "then publish the TXT record it prints"]],
    describe: 'Claim a hostname for the agent and print the TXT record that proves it is yours',
    builder: (yargs) => yargs.positional('agent', agentArg).positional('hostname', { type: 'string', demandOption: true, describe: 'a hostname of yours, e.g. bot.example.com' }),
    run: async (args, { api, terminal, json }) => {
      const agent = await resolveAgent(api, args.agent);
      const domain = await api.request<Domain>('POST', `/agents/${agent.id}/domains`, { body: { hostname: args.hostname } });
      if (json) return printJson(terminal, domain);
      // The record on stdout, one line a zone file takes; the explanation on stderr.
      terminal.out(`${domain.verification.name}. TXT "${domain.verification.value}"`);
      terminal.err(`Domain ${domain.id} (${domain.hostname}) is ${domain.status}: create the TXT record above at your DNS provider, and point ${domain.hostname} at the platform's edge. The certificate is ordered once the record is seen; agentctl domains get ${args.agent} ${domain.hostname} shows the status.`);
    },
  }),
  command({
    command: 'list <agent>',
    examples: [["$0 domains list support-bot", ""]],
    describe: "The agent's custom domains and their status",
    builder: (yargs) => yargs.positional('agent', agentArg),
    run: async (args, { api, terminal, json }) => {
      const agent = await resolveAgent(api, args.agent);
      const list = await api.request<DomainList>('GET', `/agents/${agent.id}/domains`);
      terminal.out(json ? JSON.stringify(list, null, 2) : domainTable(list.domains));
    },
  }),
  command({
    command: 'get <agent> <domain>',
    examples: [["$0 domains get support-bot bot.example.com", ""]],
    describe: 'One custom domain: its status, TXT record and certificate',
    builder: (yargs) => yargs.positional('agent', agentArg).positional('domain', domainArg),
    run: async (args, { api, terminal, json }) => {
      const agent = await resolveAgent(api, args.agent);
      const domain = await resolveDomain(api, agent.id, args.domain);
      if (json) return printJson(terminal, domain);
      showDomain(terminal, domain);
    },
  }),
  command({
    command: 'rm <agent> <domain>',
    examples: [["$0 domains rm support-bot bot.example.com", ""]],
    describe: 'Remove a custom domain; the edge stops routing it at once',
    builder: (yargs) => yargs.positional('agent', agentArg).positional('domain', domainArg),
    run: async (args, { api, terminal }) => {
      const agent = await resolveAgent(api, args.agent);
      const domain = await resolveDomain(api, agent.id, args.domain);
      await api.request('DELETE', `/agents/${agent.id}/domains/${domain.id}`);
      terminal.err(`Removed ${domain.hostname}`);
    },
  }),
  command({
    command: 'verify <agent> <domain>',
    examples: [["$0 domains verify support-bot bot.example.com", "check the TXT record now"]],
    describe: 'Check the TXT record now rather than at the next retry; a failed domain starts over',
    builder: (yargs) => yargs.positional('agent', agentArg).positional('domain', domainArg),
    run: async (args, { api, terminal, json }) => {
      const agent = await resolveAgent(api, args.agent);
      const domain = await resolveDomain(api, agent.id, args.domain);
      const asked = await api.request<Domain>('POST', `/agents/${agent.id}/domains/${domain.id}/verify`);
      if (json) return printJson(terminal, asked);
      terminal.err(`Asked for a check of ${asked.hostname} (now ${asked.status})`);
    },
  }),
]);
