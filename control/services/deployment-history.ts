import type { Knex } from 'knex';
import type { DeploymentRow } from '../domain/deployment.js';
import { notFound, PlatformError } from '../domain/errors.js';
import { repositoriesOn } from '../repositories/index.js';
import type { CanaryState as CanaryStateSchema, Deployment, DeploymentList, ListDeploymentsQuery } from '../schemas/deployments.js';

type CanaryState = Static<typeof CanaryStateSchema>;
import { agentUrl, type PresenterSettings } from './agent-presenter.js';
import type { AgentRow } from '../domain/agent.js';
import { servingSince } from '../domain/canary.js';
import { previewLabel } from '../../contract/edge-keys.js';
import type { VersionFigures } from '../../contract/request-figures.js';
import type { Static } from '@sinclair/typebox';
import { deploymentView } from './deployment-presenter.js';
import { pageEnvelope, pageWindow } from './paging.js';
import type { Principal } from './principal.js';

/** Both versions' figures over the last minute, as the edge counted them (RequestFiguresReader.byVersion). */
export type CanaryFiguresSource = (agentId: string) => Promise<VersionFigures>;

/** Reading an agent's deployments; recording them is DeploymentRecorder's, in the transaction of each change. */
export class DeploymentHistoryService {
  constructor(
    private readonly db: Knex,
    private readonly presenter: PresenterSettings,
    private readonly figures?: CanaryFiguresSource,
  ) {}

  /** Newest first; the agent's running canary with its figures. */
  async list(principal: Principal, agentId: string, query: ListDeploymentsQuery): Promise<DeploymentList> {
    const repos = repositoriesOn(this.db);
    const agent = await repos.agents.find(principal.accountId, agentId);
    if (!agent) throw notFound('Agent');
    const window = pageWindow(query);
    const { rows, total } = await repos.deployments.list(agentId, window.offset, window.pageSize);
    const live = await this.liveCanary(agent, rows);
    return { deployments: rows.map((row) => deploymentView(row, this.presenter, row.id === agent.canary?.deployment_id ? live : null)), ...pageEnvelope(window, total) };
  }

  async get(principal: Principal, agentId: string, deploymentId: string): Promise<Deployment> {
    const row = await this.find(principal, agentId, deploymentId);
    const agent = await repositoriesOn(this.db).agents.find(principal.accountId, agentId);
    return deploymentView(row, this.presenter, agent && agent.canary?.deployment_id === row.id ? await this.liveCanary(agent, [row]) : null);
  }

  /**
   * The running canary's state, when one of `rows` is it and it serves (its `canary` event:
   * its replicas are routable; before that it shows as a rollout in progress): one Redis
   * read of the last minute's figures.
   */
  private async liveCanary(agent: AgentRow, rows: DeploymentRow[]): Promise<CanaryState | null> {
    const canary = agent.canary;
    if (!canary || !rows.some((row) => row.id === canary.deployment_id)) return null;
    const startedAt = servingSince(await repositoriesOn(this.db).deployments.eventsAfter(canary.deployment_id, 0));
    if (startedAt === null) return null;
    const figures = this.figures ? await this.figures(agent.id) : null;
    const shown = (version: 'stable' | 'canary') => {
      const of = figures?.[version];
      return { request_count: of?.requestCount ?? 0, error_count: of?.errorCount ?? 0, avg_latency_ms: of?.avgLatencyMs ?? 0, p95_latency_ms: of?.p95LatencyMs ?? 0 };
    };
    return {
      started_at: startedAt.toISOString(),
      preview_url: agentUrl(previewLabel(agent.slug, canary.number), this.presenter.agentUrl),
      percent: canary.strategy.percent,
      figures: { stable: shown('stable'), canary: shown('canary') },
    };
  }

  /** The stored deployment; another account's agent is answered exactly like a missing one. */
  async find(principal: Principal, agentId: string, deploymentId: string): Promise<DeploymentRow> {
    const repos = repositoriesOn(this.db);
    const [agent, row] = await Promise.all([repos.agents.find(principal.accountId, agentId), repos.deployments.find(agentId, deploymentId)]);
    if (!agent) throw notFound('Agent');
    if (!row) throw new PlatformError('DEPLOYMENT_NOT_FOUND');
    return row;
  }
}
