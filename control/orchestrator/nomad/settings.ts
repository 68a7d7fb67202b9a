import type { SettingReader } from '../../../contract/settings-reader.js';

/** Where one HTTP API (Nomad's or Consul's) is and how to authenticate to it. */
export interface ApiEndpoint {
  address: string;
  /** Sent as X-Nomad-Token or X-Consul-Token; null sends no header (ACLs off). */
  token: string | null;
  /** PEM contents, read once at start (a missing file is a configuration error then, not at the first call). */
  ca: string | null;
  cert: string | null;
  key: string | null;
  /**
   * Do not verify the server's certificate. Never from the environment: the control API
   * always verifies (NOMAD_CACERT names a private CA). A test that reaches a server it has
   * no CA for builds its endpoint with this set.
   */
  skipVerify: boolean;
}

/** How the Nomad driver reaches Nomad and Consul and shapes the agents' jobs. */
export interface NomadSettings {
  nomad: ApiEndpoint;
  consul: ApiEndpoint;
  namespace: string;
  region: string | null;
  datacenters: string[];
  /**
   * MHz of Nomad `cpu` per vCPU of `deploy.resources.cpu`. Nomad's CPU is MHz (shares
   * unless the docker `cpu_hard_limit` is set, which the driver sets); `cores` cannot
   * express 0.5 vCPU. 1000 MHz per vCPU is a round figure below most clients' clock.
   */
  mhzPerVcpu: number;
  /**
   * The node pool agent jobs are placed in (NOMAD_AGENT_NODE_POOL, default "agents").
   * Nomad refuses a job whose pool does not exist, so a cluster that has not set one up
   * runs no agent rather than running them next to the platform (docs/nomad.md).
   */
  agentNodePool: string;
  /**
   * Shortest time between two blocking queries of one watch (Consul's blocking-query
   * docs ask clients to rate-limit: an index that keeps moving would otherwise loop).
   */
  watchMinIntervalMs: number;
  /**
   * Most connections the driver opens to each of Nomad and Consul. Both refuse more than
   * a limit per client address (Nomad `limits.http_max_conns_per_client`, 100 by default;
   * Consul `limits.http_max_conns_per_client`, 200), with a 429 that closes the connection.
   */
  maxConnections: number;
  /**
   * The `target` of the scaling block's target-value strategy on `avg_cpu-allocated`
   * (NOMAD_SCALING_TARGET_CPU_PERCENT): the mean percent of its allocated CPU the Nomad
   * Autoscaler keeps each replica at.
   */
  scalingTargetCpuPercent: number;
  /** Exits allowed before a replica is `crashed` (the podman driver's RESTART_BUDGET, same meaning). */
  restartBudget: number;
  /** Nomad's restart delay (fixed, Nomad adds jitter); at least the podman driver's base backoff. */
  restartDelayMs: number;
  /** Window in which `restartBudget` restarts may happen before the allocation fails (Nomad needs one). */
  restartIntervalMs: number;
  /** Group `shutdown_delay`: Consul drops the instance, then the container gets SIGTERM. */
  shutdownDelayMs: number;
  /** Task `kill_timeout`: seconds between SIGTERM and SIGKILL. */
  killTimeoutMs: number;
  /** Update block: how long an allocation must be healthy, and the deadline to get there. */
  minHealthyTimeMs: number;
  healthyDeadlineMs: number;
  progressDeadlineMs: number;
  /** Per-request timeout of Nomad and Consul calls (a blocking query adds its wait to it). */
  requestTimeoutMs: number;
  /** Attempts of one call on a 5xx or a connection error, with back-off between them. */
  requestAttempts: number;
  /** How long one Consul blocking query waits for a change. */
  consulWaitSeconds: number;
  /** How long one Nomad blocking query on the allocations waits for a change. */
  nomadWaitSeconds: number;
  /**
   * NOMAD_AGENT_SERVICES_URL: the agent services listener (AGENT_SERVICES_PORT) as agent
   * nodes reach it, given to every replica as AGENT_SERVICES_URL; null: replicas are not
   * given the agent services and keep conversations in memory.
   */
  agentServicesUrl: string | null;
}

/**
 * Reads the NOMAD_* and CONSUL_* settings, and the replica lifecycle ones shared with the
 * podman driver (same bounds, so a bad value is listed once).
 */
export function readNomadSettings(read: SettingReader): NomadSettings {
  const url = (name: string, fallback: string) => read.url(name, ['http:', 'https:'], fallback).replace(/\/+$/, '');
  // PEM files are read now: a missing one is a problem at start, not at the first call.
  const endpoint = (address: string, fallback: string, token: string, tls: 'NOMAD' | 'CONSUL') => ({
    address: url(address, fallback),
    token: read.optionalString(token),
    ca: read.file(`${tls}_CACERT`),
    cert: read.file(`${tls}_CLIENT_CERT`),
    key: read.file(`${tls}_CLIENT_KEY`),
  });
  const name = (setting: string, fallback: string) => read.matching(setting, fallback, /^[a-zA-Z0-9_-]{1,128}$/, 'letters, digits, "_" or "-" (1 to 128)');

  const restartBudget = read.integer('RESTART_BUDGET', 5, 0, 100);
  // Nomad's restart delay is fixed and at least a second: the podman driver's base backoff, raised to 1 s.
  const restartDelayMs = Math.max(read.number('RESTART_BACKOFF_BASE_MS', 1000, 0, 3_600_000), 1000);
  const region = read.optionalString('NOMAD_REGION');
  if (read.optionalString('NOMAD_SKIP_VERIFY') !== null) {
    read.report("NOMAD_SKIP_VERIFY: not read: the control API always verifies Nomad's certificate; name a private CA in NOMAD_CACERT");
  }

  return {
    nomad: { ...endpoint('NOMAD_ADDR', 'http://127.0.0.1:4646', 'NOMAD_TOKEN', 'NOMAD'), skipVerify: false },
    consul: { ...endpoint('CONSUL_HTTP_ADDR', 'http://127.0.0.1:8500', 'CONSUL_HTTP_TOKEN', 'CONSUL'), skipVerify: false },
    namespace: name('NOMAD_NAMESPACE', 'default'),
    region: region === null ? null : name('NOMAD_REGION', region),
    datacenters: read.list('NOMAD_DATACENTERS', 'dc1', 'dc1'),
    mhzPerVcpu: read.number('NOMAD_MHZ_PER_VCPU', 1000, 1, 100_000),
    agentNodePool: readNodePool(read),
    watchMinIntervalMs: read.number('NOMAD_WATCH_MIN_INTERVAL_MS', 1000, 0, 60_000),
    maxConnections: read.integer('NOMAD_MAX_CONNECTIONS', 32, 4, 90),
    // The Nomad Autoscaler's nomad-apm `avg_cpu-allocated` is CPU ticks over the group's
    // allocated MHz × 100 (plugins/builtin/apm/nomad/plugin/job.go,
    // `getTaskGroupResourceUsage`); cpu_hard_limit keeps it at or under 100. A target of 0
    // would make the target-value strategy scale by the raw metric
    // (plugins/builtin/strategy/target-value/plugin/plugin.go, `Run`), so at least 1.
    scalingTargetCpuPercent: read.integer('NOMAD_SCALING_TARGET_CPU_PERCENT', 70, 1, 100, 'percent of the allocated CPU, which cpu_hard_limit caps at 100'),
    restartBudget,
    restartDelayMs,
    // Nomad refuses attempts × delay > interval; 30 minutes is far above both.
    restartIntervalMs: Math.max(30 * 60_000, (restartBudget + 1) * restartDelayMs),
    shutdownDelayMs: read.number('DRAIN_SECONDS', 5, 0, 3600) * 1000,
    killTimeoutMs: read.integer('STOP_TIMEOUT_SECONDS', 10, 0, 3600) * 1000,
    minHealthyTimeMs: 10_000,
    healthyDeadlineMs: 5 * 60_000,
    progressDeadlineMs: 10 * 60_000,
    requestTimeoutMs: 10_000,
    requestAttempts: 4,
    consulWaitSeconds: 60,
    nomadWaitSeconds: 60,
    agentServicesUrl: readAgentServicesUrl(read),
  };
}

/** The runtime appends `/v1/…` to it (docs/contract.md, "Sessions API v1"): a base URL, nothing after the path. */
function readAgentServicesUrl(read: SettingReader): string | null {
  if (read.optionalString('NOMAD_AGENT_SERVICES_URL') === null) return null;
  const url = read.url('NOMAD_AGENT_SERVICES_URL', ['http:', 'https:']).replace(/\/+$/, '');
  if (URL.canParse(url)) {
    const parsed = new URL(url);
    if (parsed.search || parsed.hash || parsed.username || parsed.password) {
      read.report('NOMAD_AGENT_SERVICES_URL: a URL without credentials, query or fragment (replicas append /v1/… to it)');
    }
  }
  return url;
}

// nomad/structs/node_pool.go, `validNodePoolName`: letters, digits, "_" and "-", at most 128.
function readNodePool(read: SettingReader): string {
  const pool = read.matching('NOMAD_AGENT_NODE_POOL', 'agents', /^[a-zA-Z0-9-_]{1,128}$/, 'a Nomad node pool name (letters, digits, "_" or "-")');
  if (pool === 'all') read.report('NOMAD_AGENT_NODE_POOL: "all" is every node, platform nodes too; name the pool of agent nodes');
  return pool;
}
