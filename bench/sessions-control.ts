import { readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { AgentTokens } from '../control/crypto/agent-token.js';
import { controlApiClient } from './api-client.js';
import { startBenchControl } from './control-fixture.js';

/**
 * The control API side of bench/sessions.bench.ts, in a process of its own as in a
 * deployment (its Postgres and Redis are its children, on the CPU it is pinned to): one
 * agent, a replica token for it in a file, and on stdout one JSON line saying where they
 * are and which process is Postgres's. It stops, and removes what it made, when its stdin closes.
 */
async function main(): Promise<void> {
  const control = await startBenchControl();
  const call = controlApiClient(control.apiUrl);
  const { token, user } = await call('POST', '/auth/register', undefined, { email: 'bench@example.com', password: 'bench password', name: 'Bench' });
  await control.db('accounts').where({ id: user.account_id }).update({ exempt: true });
  const agent = await call('POST', '/agents', token, { name: 'remembers' });
  const tokenFile = join(control.workDir, 'token');
  writeFileSync(tokenFile, new AgentTokens(control.config.masterKeys, control.config.agentServices.tokenTtlSeconds).mint(agent.id, 'bench-replica', new Date()).token);
  process.stdin.on('data', async (line) => {
    // A request for how many sessions are stored, answered on stdout.
    if (String(line).trim() !== 'count') return;
    const [row] = await control.db('agent_sessions').where({ agent_id: agent.id }).count<{ count: string }[]>('* as count');
    process.stdout.write(`${JSON.stringify({ sessions: Number(row?.count ?? 0) })}\n`);
  });
  process.stdin.on('end', () => void control.close().then(() => process.exit(0)));
  // The postmaster leaves pg_ctl's process tree: its pid, from the first line of postmaster.pid, is how its CPU is found.
  const postgresPid = Number(readFileSync(join(control.workDir, 'pg', 'postmaster.pid'), 'utf8').split('\n')[0]);
  process.stdout.write(`${JSON.stringify({ agentServicesUrl: control.agentServicesUrl, tokenFile, postgresPid })}\n`);
}

main().catch((error) => {
  console.error(error);
  process.exit(1);
});
