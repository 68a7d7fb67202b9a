import type { Knex } from 'knex';

/** One agent's model use added by one request of spans, or summed for a month. */
export interface ModelUse {
  inputTokens: number;
  outputTokens: number;
  /** USD of the model calls that had a price. */
  costUsd: number;
  /** Model calls without a price (or without token counts): their cost is unknown, not 0. */
  unpricedCalls: number;
}

export interface AgentModelUse extends ModelUse {
  agentId: string;
}

/** `model_usage` (migration 012): tokens and estimated cost per agent per UTC month, what GET /account/usage shows. */
export class ModelUsageRepository {
  constructor(private readonly db: Knex) {}

  async add(entry: { accountId: string; agentId: string; month: string } & ModelUse): Promise<void> {
    await this.db.raw(
      `INSERT INTO model_usage (account_id, agent_id, month, input_tokens, output_tokens, cost_usd, unpriced_calls) VALUES (?, ?, ?, ?, ?, ?, ?)
       ON CONFLICT (agent_id, month) DO UPDATE SET input_tokens = model_usage.input_tokens + EXCLUDED.input_tokens,
         output_tokens = model_usage.output_tokens + EXCLUDED.output_tokens, cost_usd = model_usage.cost_usd + EXCLUDED.cost_usd,
         unpriced_calls = model_usage.unpriced_calls + EXCLUDED.unpriced_calls`,
      [entry.accountId, entry.agentId, entry.month, entry.inputTokens, entry.outputTokens, entry.costUsd, entry.unpricedCalls],
    );
  }

  /** The account's agents' use in the month, by agent id. */
  async ofAccount(accountId: string, month: string): Promise<AgentModelUse[]> {
    const rows = await this.db('model_usage').where({ account_id: accountId, month }).orderBy('agent_id')
      .select<{ agent_id: string; input_tokens: string; output_tokens: string; cost_usd: string; unpriced_calls: string }[]>('agent_id', 'input_tokens', 'output_tokens', 'cost_usd', 'unpriced_calls');
    return rows.map((row) => ({
      agentId: row.agent_id,
      inputTokens: Number(row.input_tokens),
      outputTokens: Number(row.output_tokens),
      costUsd: Number(row.cost_usd),
      unpricedCalls: Number(row.unpriced_calls),
    }));
  }
}
