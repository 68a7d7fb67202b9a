import { notFound } from '../domain/errors.js';
import type { Repositories } from '../repositories/index.js';
import type { Principal } from './principal.js';

/** 404 unless the agent is the caller's account's: another account's agent is answered as if it did not exist. */
export async function assertAgentOf(repos: Repositories, principal: Principal, agentId: string): Promise<void> {
  if (!(await repos.agents.find(principal.accountId, agentId))) throw notFound('Agent');
}
