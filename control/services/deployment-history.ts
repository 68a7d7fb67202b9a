import type { Knex } from 'knex';
import type { DeploymentRow } from '../domain/deployment.js';
import { notFound, PlatformError } from '../domain/errors.js';
import { repositoriesOn } from '../repositories/index.js';
import type { Deployment, DeploymentList, ListDeploymentsQuery } from '../schemas/deployments.js';
import type { PresenterSettings } from './agent-presenter.js';
import { deploymentView } from './deployment-presenter.js';
import { pageEnvelope, pageWindow } from './paging.js';
import type { Principal } from './principal.js';

/** Reading an agent's deployments; recording them is DeploymentRecorder's, in the transaction of each change. */
export class DeploymentHistoryService {
  constructor(
    private readonly db: Knex,
    private readonly presenter: PresenterSettings,
  ) {}

  /** Newest first. */
  async list(principal: Principal, agentId: string, query: ListDeploymentsQuery): Promise<DeploymentList> {
    const repos = repositoriesOn(this.db);
    if (!(await repos.agents.find(principal.accountId, agentId))) throw notFound('Agent');
    const window = pageWindow(query);
    const { rows, total } = await repos.deployments.list(agentId, window.offset, window.pageSize);
    return { deployments: rows.map((row) => deploymentView(row, this.presenter)), ...pageEnvelope(window, total) };
  }

  async get(principal: Principal, agentId: string, deploymentId: string): Promise<Deployment> {
    return deploymentView(await this.find(principal, agentId, deploymentId), this.presenter);
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
