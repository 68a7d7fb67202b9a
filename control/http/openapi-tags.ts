/**
 * The document's tags, one per resource, in the order a reader meets them: each operation
 * names one (RouteSpec.tag), and generated clients and the reference page group by it.
 */
export const TAGS = {
  Auth: 'Registration, sign-in and sign-out. A session token (60 minutes) or a personal API key is the bearer token of every other operation.',
  'API keys': 'Personal API keys (agnt_…): long-lived bearer tokens for scripts and CI, shown once when created.',
  Agents: 'Agents: a container image run as replicas behind the edge, reachable at its own URL.',
  Deployments: 'Every rollout of an agent (create, deploy, rollback): its configuration, status and progress events.',
  'Access keys': "Access keys (agk_…) with which callers invoke a private agent's URL.",
  Sessions: "Conversation sessions an agent's replicas keep through the agent services endpoint: listed by size and use, never by content, and deleted.",
  Invocations: "Traces of an agent's invokes, sent by its replicas: each invoke's model and tool calls, tokens, estimated cost and status, kept for TRACE_RETENTION_DAYS.",
  Domains: 'Custom hostnames of an agent: proved by a TXT record, served with an ACME certificate.',
  Observability: "An agent's container logs and live CPU and memory, as pages or server-sent event streams.",
  Account: "The account's plan, usage, users, and its deletion.",
  Audit: 'Who changed what in the account.',
  Webhooks: 'Signed HTTP callbacks (Standard Webhooks) for events of the account, and their delivery attempts.',
  Meta: 'About the API itself: its version and this document.',
} as const;

export type Tag = keyof typeof TAGS;
