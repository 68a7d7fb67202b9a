import type { Knex } from 'knex';
import { AccountRepository } from './accounts.js';
import { AgentSessionRepository } from './agent-sessions.js';
import { AgentRepository } from './agents.js';
import { AuditEventRepository } from './audit-events.js';
import { DeploymentRepository } from './deployments.js';
import { AcmeAccountRepository } from './acme-accounts.js';
import { DomainRepository } from './domains.js';
import { InviteRepository } from './invites.js';
import { AccessKeyRepository, ApiKeyRepository } from './keys.js';
import { LoopLockRepository } from './loop-locks.js';
import { MemberRepository } from './members.js';
import { ModelUsageRepository } from './model-usage.js';
import { SealedValueRepository } from './sealed-values.js';
import { SessionRepository } from './sessions.js';
import { SsoRepository } from './sso.js';
import { TracePartitionRepository } from './trace-partitions.js';
import { TraceRepository } from './traces.js';
import { UsageRepository } from './usage.js';
import { UserRepository } from './users.js';
import { WebhookOutboxRepository } from './webhook-outbox.js';
import { WebhookRepository } from './webhooks.js';

/** Every repository bound to one executor: the pool, or a transaction. */
export interface Repositories {
  accounts: AccountRepository;
  users: UserRepository;
  members: MemberRepository;
  sessions: SessionRepository;
  sso: SsoRepository;
  apiKeys: ApiKeyRepository;
  invites: InviteRepository;
  agents: AgentRepository;
  deployments: DeploymentRepository;
  accessKeys: AccessKeyRepository;
  usage: UsageRepository;
  loopLocks: LoopLockRepository;
  sealedValues: SealedValueRepository;
  auditEvents: AuditEventRepository;
  webhooks: WebhookRepository;
  webhookOutbox: WebhookOutboxRepository;
  domains: DomainRepository;
  acmeAccounts: AcmeAccountRepository;
  agentSessions: AgentSessionRepository;
  traces: TraceRepository;
  tracePartitions: TracePartitionRepository;
  modelUsage: ModelUsageRepository;
}

export function repositoriesOn(db: Knex): Repositories {
  return {
    accounts: new AccountRepository(db),
    users: new UserRepository(db),
    members: new MemberRepository(db),
    sessions: new SessionRepository(db),
    sso: new SsoRepository(db),
    apiKeys: new ApiKeyRepository(db),
    invites: new InviteRepository(db),
    agents: new AgentRepository(db),
    deployments: new DeploymentRepository(db),
    accessKeys: new AccessKeyRepository(db),
    usage: new UsageRepository(db),
    loopLocks: new LoopLockRepository(db),
    sealedValues: new SealedValueRepository(db),
    auditEvents: new AuditEventRepository(db),
    webhooks: new WebhookRepository(db),
    webhookOutbox: new WebhookOutboxRepository(db),
    domains: new DomainRepository(db),
    acmeAccounts: new AcmeAccountRepository(db),
    agentSessions: new AgentSessionRepository(db),
    traces: new TraceRepository(db),
    tracePartitions: new TracePartitionRepository(db),
    modelUsage: new ModelUsageRepository(db),
  };
}

/**
 * Runs `work` in one transaction with repositories bound to it, at READ COMMITTED whatever
 * the database's or role's default_transaction_isolation. The transactions here take a lock
 * and then read what those before them committed (a session creation takes its agent's
 * turn, then counts its sessions), which needs each statement's own snapshot: at REPEATABLE
 * READ the first statement's would stand for the whole transaction (PostgreSQL manual,
 * "Transaction Isolation"). Said in the BEGIN itself (knex's pg-transaction.js), so it costs
 * no round trip and holds behind a pooler in transaction mode, where a session SET would not.
 */
export function inTransaction<T>(db: Knex, work: (repos: Repositories) => Promise<T>): Promise<T> {
  return db.transaction((trx) => work(repositoriesOn(trx)), { isolationLevel: 'read committed' });
}
