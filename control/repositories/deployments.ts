import type { Knex } from 'knex';
import type { DeploymentEventRow, DeploymentRow, DeploymentStatus } from '../domain/deployment.js';
import { pageOf, type Page } from './page.js';

export type NewDeployment = Omit<DeploymentRow, 'number' | 'status' | 'orchestrator_version' | 'error' | 'finished_at'>;

export class DeploymentRepository {
  constructor(private readonly db: Knex) {}

  /** Records a new in-progress deployment with the agent's next number; run under the agent's row lock. */
  async insert(deployment: NewDeployment): Promise<DeploymentRow> {
    const [row] = await this.db('deployments')
      .insert({
        ...deployment,
        deploy: JSON.stringify(deployment.deploy),
        strategy: deployment.strategy === null ? null : JSON.stringify(deployment.strategy),
        status: 'in_progress',
        number: this.db.raw('(SELECT coalesce(max(number), 0) + 1 FROM deployments WHERE agent_id = ?)', [deployment.agent_id]),
      })
      .returning('*');
    return row as DeploymentRow;
  }

  async find(agentId: string, id: string): Promise<DeploymentRow | undefined> {
    return this.db<DeploymentRow>('deployments').where({ agent_id: agentId, id }).first();
  }

  async findByVersion(agentId: string, agentVersion: number): Promise<DeploymentRow | undefined> {
    return this.db<DeploymentRow>('deployments').where({ agent_id: agentId, agent_version: agentVersion }).first();
  }

  /** Newest first. */
  async list(agentId: string, offset: number, limit: number): Promise<Page<DeploymentRow>> {
    const scoped = this.db<DeploymentRow>('deployments').where({ agent_id: agentId });
    return pageOf(scoped, [{ column: 'number', order: 'desc' }], offset, limit);
  }

  /** The agent's deployments still in progress, oldest first. */
  async inProgress(agentId: string): Promise<DeploymentRow[]> {
    return this.db<DeploymentRow>('deployments').where({ agent_id: agentId, status: 'in_progress' }).orderBy('number');
  }

  /** Ends a deployment once: a deployment already terminal keeps its status (returns undefined). */
  async finish(id: string, status: Exclude<DeploymentStatus, 'in_progress'>, error: string | null, now: Date): Promise<DeploymentRow | undefined> {
    const [row] = await this.db<DeploymentRow>('deployments')
      .where({ id, status: 'in_progress' })
      .update({ status, error, finished_at: now }, '*');
    return row as DeploymentRow | undefined;
  }

  async setOrchestratorVersion(id: string, version: number): Promise<void> {
    await this.db('deployments').where({ id }).update({ orchestrator_version: version });
  }

  /**
   * Keeps the agent's newest `keep` deployments and deletes the rest (their events go with
   * them), never the one a running canary runs beside: an abort returns to its configuration.
   */
  async prune(agentId: string, keep: number): Promise<number> {
    return this.db('deployments')
      .where({ agent_id: agentId })
      .whereNotIn('id', this.db('deployments').select('id').where({ agent_id: agentId }).orderBy('number', 'desc').limit(keep))
      .whereNotIn('id', this.db('agents').select(this.db.raw("canary->>'stable_deployment_id'")).where({ id: agentId }).whereNotNull('canary'))
      .delete();
  }

  async addEvent(event: Omit<DeploymentEventRow, 'id'>): Promise<DeploymentEventRow> {
    const [row] = await this.db('deployment_events').insert(event).returning('*');
    return { ...(row as DeploymentEventRow), id: Number((row as DeploymentEventRow).id) };
  }

  /** The deployment's events after `afterId` (0: from the start), in order. */
  async eventsAfter(deploymentId: string, afterId: number): Promise<DeploymentEventRow[]> {
    const rows = await this.db<DeploymentEventRow>('deployment_events').where({ deployment_id: deploymentId }).andWhere('id', '>', afterId).orderBy('id');
    return rows.map((row) => ({ ...row, id: Number(row.id) }));
  }
}
