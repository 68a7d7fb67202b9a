import type { Clock } from '../../contract/clock.js';
import { ID_PREFIX, newId } from '../crypto/tokens.js';
import type { AgentRow } from '../domain/agent.js';
import type { DeploymentRow } from '../domain/deployment.js';
import type { WebhookEventType } from '../domain/webhooks.js';
import type { Repositories } from '../repositories/index.js';
import type { User } from '../schemas/auth.js';
import { agentView, type PresenterSettings } from './agent-presenter.js';
import { deploymentView } from './deployment-presenter.js';
import type { DomainRow } from '../domain/custom-domain.js';
import { domainView } from './domain-presenter.js';

export interface EventDetails {
  deployment?: DeploymentRow;
  /** Why: a failed deployment's error, a crash's last error, the quota refused, the CA's or resolver's word. */
  reason?: string;
  /** The custom domain of a `domain.*` event, as the API shows it (no key, no chain). */
  domain?: DomainRow;
}

/**
 * Writes a webhook event into the outbox with the repositories of the transaction that
 * causes it, so the event is sent if and only if the change commits (the dispatcher
 * delivers it after the commit). The body is fixed here, once: every attempt sends and
 * signs the same bytes. The agent and deployment appear as the API shows them, secret
 * values masked and the model key left out.
 */
export class WebhookEvents {
  constructor(private readonly clock: Clock, private readonly presenter: PresenterSettings) {}

  async record(repos: Repositories, type: WebhookEventType, agent: AgentRow, details: EventDetails = {}): Promise<void> {
    const data = {
      agent: agentView(agent, this.presenter),
      ...(details.deployment ? { deployment: deploymentView(details.deployment, this.presenter) } : {}),
      ...(details.domain ? { domain: domainView(details.domain) } : {}),
      ...(details.reason !== undefined ? { reason: details.reason } : {}),
    };
    await this.enqueue(repos, agent.account_id, type, data);
  }

  /** Someone joined the account (an accepted invite) or left it (removed): `member` as GET /account/users shows them. */
  async recordMember(repos: Repositories, type: 'member.added' | 'member.removed', accountId: string, member: User): Promise<void> {
    await this.enqueue(repos, accountId, type, { member });
  }

  private async enqueue(repos: Repositories, accountId: string, type: WebhookEventType, data: Record<string, unknown>): Promise<void> {
    const at = this.clock.now();
    const body = JSON.stringify({ type, timestamp: at.toISOString(), data });
    await repos.webhookOutbox.enqueue({ accountId, eventId: newId(ID_PREFIX.webhookEvent), type, body, at });
  }
}
