/**
 * One small story told by every example of the OpenAPI document: Ada registers, creates the
 * agent support-bot, deploys it twice, adds a domain and a webhook. The schemas' `examples`
 * are built from these, so ids, times and values agree across operations
 * (test/openapi-examples.test.ts validates each against its schema).
 */
import { PLAN_LIMITS } from '../domain/plans.js';

export const ids = {
  account: 'acc_7Hq2Lm9Xc4Vb8Nz1Rt5K',
  user: 'usr_3Fp8Wd6Jk1Qs9Zx2Cv7B',
  agent: 'agt_9Kd3Mf7Qx2Lp8Vn4Rb6T',
  deployment: 'dep_5Gh1Tc8Ws3Xj6Ym9Pq2D',
  previousDeployment: 'dep_2Bn7Yk4Hs9Mc1Qv6Lt3F',
  accessKey: 'akey_6Tr2Vn8Kd4Pq1Xm7Zs3C',
  apiKey: 'pkey_8Lw4Bq1Nf6Hy3Jc9Tk2G',
  webhook: 'whk_1Cz6Pm3Rx8Vd5Qf2Kw9H',
  domain: 'dom_4Js9Nb2Wt7Gk1Lx6Yc3M',
  auditEvent: 'aud_7Yv3Kq9Md2Xs5Bh8Nr1P',
  webhookEvent: 'evt_3Qm8Zt1Hc6Wk4Fv9Ld2S',
} as const;

export const times = {
  registered: '2025-12-01T09:12:44Z',
  created: '2025-12-01T09:30:00Z',
  deployed: '2025-12-01T09:30:14Z',
  redeployed: '2025-12-02T14:05:09Z',
  now: '2025-12-02T14:06:30Z',
} as const;

export const user = { id: ids.user, email: 'ada@example.com', name: 'Ada Lovelace', role: 'owner', account_id: ids.account, created_at: times.registered };

export const deploy = {
  image: 'ghcr.io/acme/support-bot:1.4.0',
  port: 8080,
  replicas: 2,
  resources: { cpu: 0.5, memory_mb: 512, gpu: 0, disk_gb: 1, ephemeral_storage_gb: 1 },
  env: [
    { key: 'LOG_LEVEL', value: 'info', secret: false },
    { key: 'CRM_TOKEN', value: '***', secret: true },
  ],
  auto_scale: false,
  min_replicas: 1,
  max_replicas: 4,
  scale_to_zero_after_seconds: 900,
  warm_park_seconds: 600,
  session_ttl_seconds: 86_400,
  trace_content: false,
};

export const agent = {
  id: ids.agent,
  name: 'support-bot',
  runtime: 'container',
  framework: 'custom',
  model: 'claude-sonnet-4-5',
  status: 'running',
  url: 'https://agt-9kd3mf7qx2lp8vn4rb6t.agents.example.com',
  access: 'private',
  rate_limit_rpm: 120,
  access_key: null,
  replicas: 2,
  deploy,
  tags: ['support'],
  metadata: { team: 'customer-care' },
  error: null,
  version: 3,
  created_at: times.created,
  updated_at: times.redeployed,
};

export const deployment = {
  id: ids.deployment,
  agent_id: ids.agent,
  number: 2,
  agent_version: 3,
  status: 'succeeded',
  image: deploy.image,
  deploy,
  model: agent.model,
  system_prompt_sha256: '9f2c4e1b7a3d5f60c8e2a4b6d8f0e1c3a5b7d9f1e3c5a7b9d1f3e5c7a9b1d3f5',
  rollback_of: null,
  created_by: ids.user,
  created_at: times.redeployed,
  finished_at: '2025-12-02T14:05:31Z',
  error: null,
  nomad_job_version: null,
  strategy: null,
  phase: null,
  canary: null,
};

export const logEntry = {
  agent_id: ids.agent,
  replica_id: 'support-bot-r1',
  timestamp: '2025-12-02T14:06:12.418Z',
  level: 'info',
  message: 'answered ticket 4812 in 1.9 s',
  source: 'stdout',
  invocation_id: '4bf92f3577b34da6a3ce929d0e0e4736',
};

export const metricsSample = {
  agent_id: ids.agent,
  timestamp: times.now,
  cpu_percent: 23.5,
  memory_mb: 188.2,
  memory_percent: 36.8,
  replicas: 2,
  request_count: 42,
  error_count: 1,
  avg_latency_ms: 1840.5,
  p95_latency_ms: 3900,
};

const keyOf = (id: string, label: string, preview: string) => ({ id, label, key_preview: preview, created_at: times.deployed });
export const accessKey = keyOf(ids.accessKey, 'helpdesk widget', 'agk_Xa3r…');
export const apiKey = keyOf(ids.apiKey, 'CI deploys', 'agnt_Pq7c…');

/** The plans' own limits, so the examples change with them. */
export const limits = PLAN_LIMITS.free;
export const proLimits = PLAN_LIMITS.pro;

export const domain = {
  id: ids.domain,
  hostname: 'support.acme.com',
  status: 'active',
  verification: { type: 'TXT', name: '_agent-platform.support.acme.com', value: 'agent-platform-verify=Wm4Qz8Tc2Hk6Yb1Np9Vs' },
  reason: null,
  certificate: {
    serial: '04a1f3c9e27b5d8806f2',
    not_before: '2025-12-01T10:02:00Z',
    not_after: '2026-03-01T10:01:59Z',
    renew_after: '2026-01-30T10:02:00Z',
  },
  created_at: times.deployed,
  updated_at: '2025-12-01T10:03:12Z',
};

export const webhook = {
  id: ids.webhook,
  url: 'https://hooks.acme.com/agent-platform',
  events: ['agent.deployed', 'agent.crashed'],
  description: 'Deploys and crashes to the on-call channel',
  created_at: times.deployed,
};

export const webhookDelivery = {
  event_id: ids.webhookEvent,
  event_type: 'agent.deployed',
  attempt: 1,
  status_code: 200,
  duration_ms: 184,
  error: null,
  at: '2025-12-02T14:05:32Z',
};

export const auditEvent = {
  id: ids.auditEvent,
  at: times.redeployed,
  action: 'agent.deploy',
  actor: { type: 'user', id: ids.user, email: user.email },
  target: { type: 'agent', id: ids.agent },
  request_id: 'req_b1e4c7d2a9f3',
  ip: '203.0.113.24',
  details: { version: 3, fields: ['image'] },
};

export const agentSession = {
  session_id: 'conv-3f9a2c71',
  version: 12,
  size_bytes: 18_432,
  message_count: 24,
  created_at: '2025-12-02T14:05:32Z',
  last_used_at: '2025-12-02T14:31:07Z',
  expires_at: '2025-12-03T14:31:07Z',
};

const sessionMessages = [
  { role: 'user', content: 'Where is my order 1042?' },
  { role: 'assistant', content: 'It left the warehouse this morning and arrives on Thursday.' },
];

/** One session with its messages, as the owner reads it by name: size_bytes is its messages' JSON. */
export const agentSessionWithMessages = {
  ...agentSession,
  version: 1,
  message_count: sessionMessages.length,
  size_bytes: Buffer.byteLength(JSON.stringify(sessionMessages)),
  messages: sessionMessages,
};

/** A page of one item, as every paged listing answers. */
export const onePage = { total: 1, page: 1, page_size: 20, has_next: false };

/** A month's model use: one agent's, as GET /account/usage shows it. */
export const modelUsage = {
  input_tokens: 1_830_400,
  output_tokens: 412_900,
  estimated_cost_usd: 8.705,
  unpriced_model_calls: 0,
  by_agent: [{ agent_id: ids.agent, input_tokens: 1_830_400, output_tokens: 412_900, estimated_cost_usd: 8.705, unpriced_model_calls: 0 }],
};
