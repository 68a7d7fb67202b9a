/**
 * What the orchestrator is asked to do for one agent. Each reads the agent's row when it
 * runs, so a later request covers an earlier one still waiting: `remove` covers all,
 * `run` (the whole job, with its replica count) covers `scale`.
 */
export type AgentOperation = 'scale' | 'run' | 'remove';

const STRENGTH: Record<AgentOperation, number> = { scale: 1, run: 2, remove: 3 };

export interface Step {
  accountId: string;
  agentId: string;
  operation: AgentOperation;
}

/**
 * The order of orchestrator work, without running any: one waiting operation per agent
 * (merged, see AgentOperation), at most one in flight per agent so an agent's operations
 * stay ordered, at most `limit` in flight overall, and the slot that frees goes to the
 * account served least recently, so one account's fifty waiting deploys delay another's
 * one by at most one step.
 */
export class FairQueue {
  /** Per account, its agents with waiting work, oldest first; accounts in the order they first waited. */
  private readonly waitingAgents = new Map<string, string[]>();
  private readonly waiting = new Map<string, Step>();
  /** Agent → account, for the steps in flight. */
  private readonly inFlight = new Map<string, string>();
  /** When each account with work waiting or in flight last had a step started (a counter, not a time). */
  private readonly lastServed = new Map<string, number>();
  private served = 0;

  constructor(private readonly limit: number) {
    if (!Number.isInteger(limit) || limit < 1) throw new Error(`concurrency must be a whole number of at least 1, got ${limit}`);
  }

  add(step: Step): void {
    const queued = this.waiting.get(step.agentId);
    if (queued) {
      if (STRENGTH[step.operation] > STRENGTH[queued.operation]) queued.operation = step.operation;
      return;
    }
    this.waiting.set(step.agentId, { ...step });
    const agents = this.waitingAgents.get(step.accountId);
    if (agents) agents.push(step.agentId);
    else this.waitingAgents.set(step.accountId, [step.agentId]);
  }

  /** The next step to start, or null when the slots are full or nothing waiting may start yet. */
  take(): Step | null {
    if (this.inFlight.size >= this.limit) return null;
    let chosen: { accountId: string; index: number; served: number } | null = null;
    for (const [accountId, agents] of this.waitingAgents) {
      // An agent whose previous step still runs waits; the account's next agent may go instead.
      const index = agents.findIndex((agentId) => !this.inFlight.has(agentId));
      if (index === -1) continue;
      const served = this.lastServed.get(accountId) ?? -1;
      if (!chosen || served < chosen.served) chosen = { accountId, index, served };
    }
    if (!chosen) return null;
    const agents = this.waitingAgents.get(chosen.accountId)!;
    const [agentId] = agents.splice(chosen.index, 1) as [string];
    if (agents.length === 0) this.waitingAgents.delete(chosen.accountId);
    const step = this.waiting.get(agentId)!;
    this.waiting.delete(agentId);
    this.inFlight.set(agentId, chosen.accountId);
    this.lastServed.set(chosen.accountId, this.served++);
    return step;
  }

  /** The agent's step finished (or failed): its next one may start. */
  finish(agentId: string): void {
    const accountId = this.inFlight.get(agentId);
    this.inFlight.delete(agentId);
    // An account with nothing left is forgotten; it comes back as one not served for long.
    if (accountId && !this.waitingAgents.has(accountId) && ![...this.inFlight.values()].includes(accountId)) {
      this.lastServed.delete(accountId);
    }
  }

  get size(): { waiting: number; inFlight: number } {
    return { waiting: this.waiting.size, inFlight: this.inFlight.size };
  }
}
