import { readFileSync } from 'node:fs';

/** Where one HTTP API (Nomad's or Consul's) is and how to authenticate to it. */
export interface ApiEndpoint {
  address: string;
  /** Sent as X-Nomad-Token or X-Consul-Token; null sends no header (ACLs off). */
  token: string | null;
  /** PEM contents, read once at start (a missing file is a configuration error then, not at the first call). */
  ca: string | null;
  cert: string | null;
  key: string | null;
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
}

type Env = Record<string, string | undefined>;

const present = (env: Env, name: string) => (env[name] === undefined || env[name] === '' ? undefined : env[name]);

/** Reads the NOMAD_* and CONSUL_* settings; every problem goes to `problems` (config.ts reports them all at once). */
export function readNomadSettings(env: Env, problems: string[]): NomadSettings {
  const url = (name: string, fallback: string) => {
    const value = present(env, name) ?? fallback;
    try {
      const parsed = new URL(value);
      if (parsed.protocol !== 'http:' && parsed.protocol !== 'https:') problems.push(`${name}: expected an http:// or https:// URL, got ${parsed.protocol}//`);
    } catch {
      problems.push(`${name}: not a valid URL ("${value}")`);
    }
    return value.replace(/\/+$/, '');
  };
  const pem = (name: string) => {
    const path = present(env, name);
    if (!path) return null;
    try {
      return readFileSync(path, 'utf8');
    } catch (error) {
      problems.push(`${name}: cannot read ${path} (${(error as Error).message})`);
      return null;
    }
  };
  const number = (name: string, fallback: number, min: number, max: number) => {
    const value = present(env, name);
    if (value === undefined) return fallback;
    const parsed = Number(value);
    if (!Number.isFinite(parsed) || parsed < min || parsed > max) {
      problems.push(`${name}: expected a number from ${min} to ${max}, got "${value}"`);
      return fallback;
    }
    return parsed;
  };
  const boolean = (name: string) => {
    const value = present(env, name);
    if (value === undefined) return false;
    if (['1', 'true', 'yes'].includes(value)) return true;
    if (['0', 'false', 'no'].includes(value)) return false;
    problems.push(`${name}: expected true or false, got "${value}"`);
    return false;
  };
  const name = (setting: string, fallback: string) => {
    const value = present(env, setting) ?? fallback;
    if (!/^[a-zA-Z0-9_-]{1,128}$/.test(value)) problems.push(`${setting}: letters, digits, "_" or "-" only, got "${value}"`);
    return value;
  };

  // nomad/structs/node_pool.go, `validNodePoolName`: letters, digits, "_" and "-", at most 128.
  const nodePool = (setting: string, fallback: string) => {
    const value = present(env, setting) ?? fallback;
    if (!/^[a-zA-Z0-9-_]{1,128}$/.test(value)) problems.push(`${setting}: a Nomad node pool name (letters, digits, "_" or "-"), got "${value}"`);
    if (value === 'all') problems.push(`${setting}: "all" is every node, platform nodes too; name the pool of agent nodes`);
    return value;
  };

  const datacenters = (present(env, 'NOMAD_DATACENTERS') ?? 'dc1').split(',').map((dc) => dc.trim()).filter(Boolean);
  if (datacenters.length === 0) problems.push('NOMAD_DATACENTERS: at least one datacenter (comma-separated), e.g. dc1');
  const region = present(env, 'NOMAD_REGION');
  const restartBudget = number('RESTART_BUDGET', 5, 0, 100);
  const restartDelayMs = Math.max(number('RESTART_BACKOFF_BASE_MS', 1000, 0, 3_600_000), 1000);

  return {
    nomad: {
      address: url('NOMAD_ADDR', 'http://127.0.0.1:4646'),
      token: present(env, 'NOMAD_TOKEN') ?? null,
      ca: pem('NOMAD_CACERT'),
      cert: pem('NOMAD_CLIENT_CERT'),
      key: pem('NOMAD_CLIENT_KEY'),
      skipVerify: boolean('NOMAD_SKIP_VERIFY'),
    },
    consul: {
      address: url('CONSUL_HTTP_ADDR', 'http://127.0.0.1:8500'),
      token: present(env, 'CONSUL_HTTP_TOKEN') ?? null,
      ca: pem('CONSUL_CACERT'),
      cert: pem('CONSUL_CLIENT_CERT'),
      key: pem('CONSUL_CLIENT_KEY'),
      skipVerify: false,
    },
    namespace: name('NOMAD_NAMESPACE', 'default'),
    region: region === undefined ? null : name('NOMAD_REGION', region),
    datacenters,
    mhzPerVcpu: number('NOMAD_MHZ_PER_VCPU', 1000, 1, 100_000),
    agentNodePool: nodePool('NOMAD_AGENT_NODE_POOL', 'agents'),
    watchMinIntervalMs: number('NOMAD_WATCH_MIN_INTERVAL_MS', 1000, 0, 60_000),
    maxConnections: number('NOMAD_MAX_CONNECTIONS', 32, 4, 90),
    restartBudget,
    restartDelayMs,
    // Nomad refuses attempts × delay > interval; 30 minutes is far above both.
    restartIntervalMs: Math.max(30 * 60_000, (restartBudget + 1) * restartDelayMs),
    shutdownDelayMs: number('DRAIN_SECONDS', 5, 0, 3600) * 1000,
    killTimeoutMs: number('STOP_TIMEOUT_SECONDS', 10, 0, 3600) * 1000,
    minHealthyTimeMs: 10_000,
    healthyDeadlineMs: 5 * 60_000,
    progressDeadlineMs: 10 * 60_000,
    requestTimeoutMs: 10_000,
    requestAttempts: 4,
    consulWaitSeconds: 60,
    nomadWaitSeconds: 60,
  };
}
