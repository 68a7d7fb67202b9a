/** The API's shapes the console reads, named from control/schemas (type-only: nothing of the API runs here). */
import type { Static } from '@sinclair/typebox';
import type { Agent } from '../../control/schemas/agents.js';
import type { SessionList as SessionListSchema, SessionWithMessages as SessionWithMessagesSchema } from '../../control/schemas/agent-sessions.js';
import type { InvocationList as InvocationListSchema, InvocationSummary } from '../../control/schemas/invocations.js';
import type { KeyView } from '../../control/schemas/keys.js';
import type { User } from '../../control/schemas/auth.js';

export type { Agent, MetricsSample } from '../../control/schemas/agents.js';
export type { AccountUsage } from '../../control/schemas/account.js';
export type { Domain, DomainList } from '../../control/schemas/domains.js';
export type { Deployment, DeploymentList } from '../../control/schemas/deployments.js';
export type { CurrentUser, Membership, User } from '../../control/schemas/auth.js';
export type { CreatedInvite, Invite } from '../../control/schemas/invites.js';
export type { SsoSettings, SsoSettingsBody } from '../../control/schemas/sso.js';
export type { SessionSummary } from '../../control/schemas/agent-sessions.js';
export type SessionList = Static<typeof SessionListSchema>;
export type SessionWithMessages = Static<typeof SessionWithMessagesSchema>;
export type { InvocationDetail, InvocationSpan, InvocationSummary } from '../../control/schemas/invocations.js';
export type InvocationList = Static<typeof InvocationListSchema>;
export type AccessKey = KeyView;
export type AccessKeyCreated = KeyView & { key: string };

/** The status filter's choices: the API's statuses (a value the schema file cannot lend without running it). */
export const AGENT_STATUSES = ['pending', 'starting', 'running', 'scaling', 'stopped', 'failed', 'crashed'] as const satisfies readonly Agent['status'][];

/** The roles of an account, highest first (control/domain/roles.ts). */
export const ROLES = ['owner', 'admin', 'member', 'viewer'] as const satisfies readonly User['role'][];

/** The invocations filter's choices, as the API's (control/schemas/invocations.ts). */
export const INVOCATION_STATUSES = ['ok', 'error'] as const satisfies readonly InvocationSummary['status'][];
