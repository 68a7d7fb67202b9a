import type { AccountUsage } from '../../control/schemas/account.js';
import { command, group } from '../command.js';
import { bar, details, printJson, table } from '../terminal.js';

const show = command({
  command: 'show',
  examples: [["$0 usage show", ""], ["$0 usage show --json", "the API's figures, for scripts"]],
  describe: "What runs now against the plan's limits, and what was metered this month",
  builder: (yargs) => yargs,
  run: async (_args, { api, terminal, json }) => {
    const account = await api.request<AccountUsage>('GET', '/account/usage');
    if (json) return printJson(terminal, account);
    const { usage: now, limits, period } = account;
    const rows: [string, number, number][] = [
      ['agents', now.agents, limits.max_agents],
      ['replicas', now.replicas, limits.max_replicas],
      ['vcpu', now.vcpu, limits.max_vcpu],
      ['memory mb', now.memory_mb, limits.max_memory_mb],
    ];
    terminal.out(`plan ${account.plan}${account.exempt ? ' (exempt from limits)' : ''}`);
    terminal.out(table(['', 'used', 'limit', ...(terminal.isTty ? [''] : [])], rows.map(([name, used, limit]) => [name, used, limit, ...(terminal.isTty ? [bar(used, limit)] : [])]), terminal.paint));
    terminal.out(`\nsince ${period.start}`);
    terminal.out(details([['replica hours', period.replica_hours], ['vcpu hours', period.vcpu_hours], ['memory gb hours', period.memory_gb_hours], ['requests', period.requests]]));
  },
});

// `usage` alone was the command before usage became a group: it still shows.
export const usage = group('usage', "The account's usage against its plan's limits", [show], show);
