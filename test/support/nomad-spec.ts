/**
 * What Nomad's and Consul's HCL files may name, as allow-lists, and a checker that walks
 * the JSON @cdktf/hcl2json makes of a file. Nomad's job parser accepts unknown keys in
 * some places and only complains at run time (or never), so a misspelled stanza in
 * nomad-jobs/ would otherwise go unnoticed until an operator runs it.
 *
 * Sources: Nomad's job specification docs (developer.hashicorp.com/nomad/docs/job-specification,
 * one page per block), the docker driver's task configuration page, Nomad's ACL policy
 * specification and acl/policy.go (capability names), and Consul's ACL rules reference.
 *
 * hcl2json renders a block as an array of bodies (`name { … }` → `name: [{…}]`), a labelled
 * block as an object of label → array of bodies, and an attribute as its value. So the
 * checker can tell `env { … }` (a block) from `env = { … }` (an attribute), as Nomad does.
 */

export interface BlockSpec {
  /** Labels the block takes: `group "web" { … }` has 1. */
  readonly labels?: number;
  readonly attributes?: readonly string[];
  readonly blocks?: Readonly<Record<string, BlockSpec>>;
  /** Any attribute name (env, meta): a map of the user's own keys with scalar values. */
  readonly freeform?: boolean;
  /** Not checked inside: a nested schema of its own we do not use (connect, multiregion). */
  readonly opaque?: boolean;
  /** A task's `config`: the schema is the task driver's (DRIVER_CONFIGS). */
  readonly driverConfig?: boolean;
  /** Attribute values that must come from a fixed set (policy dispositions, capabilities). */
  readonly values?: Readonly<Record<string, readonly string[]>>;
}

export interface SpecIssue {
  readonly path: string;
  readonly message: string;
}

const freeform: BlockSpec = { freeform: true };
const opaque: BlockSpec = { opaque: true };

const constraint: BlockSpec = { attributes: ['attribute', 'operator', 'value'] };
const affinity: BlockSpec = { attributes: ['attribute', 'operator', 'value', 'weight'] };
const spread: BlockSpec = { attributes: ['attribute', 'weight'], blocks: { target: { labels: 1, attributes: ['value', 'percent'] } } };

const update: BlockSpec = {
  attributes: ['max_parallel', 'health_check', 'min_healthy_time', 'healthy_deadline', 'progress_deadline', 'auto_revert', 'auto_promote', 'canary', 'stagger'],
};
const restart: BlockSpec = { attributes: ['attempts', 'delay', 'interval', 'mode', 'render_templates'] };
const reschedule: BlockSpec = { attributes: ['attempts', 'interval', 'delay', 'delay_function', 'max_delay', 'unlimited'] };
const migrate: BlockSpec = { attributes: ['max_parallel', 'health_check', 'min_healthy_time', 'healthy_deadline'] };

const check: BlockSpec = {
  attributes: [
    'name', 'type', 'path', 'port', 'interval', 'timeout', 'method', 'protocol', 'command', 'args', 'address_mode',
    'expose', 'grpc_service', 'grpc_use_tls', 'initial_status', 'success_before_passing', 'failures_before_critical',
    'failures_before_warning', 'on_update', 'task', 'tls_server_name', 'tls_skip_verify', 'body', 'notes',
  ],
  blocks: {
    header: opaque,
    check_restart: { attributes: ['limit', 'grace', 'ignore_warnings'] },
  },
  values: { type: ['http', 'tcp', 'grpc', 'script'] },
};

const service: BlockSpec = {
  attributes: [
    'name', 'port', 'tags', 'canary_tags', 'provider', 'address_mode', 'address', 'task', 'enable_tag_override',
    'on_update', 'cluster',
  ],
  blocks: {
    check,
    connect: opaque,
    meta: freeform,
    canary_meta: freeform,
    tagged_addresses: freeform,
    weights: { attributes: ['passing', 'warning'] },
    identity: { attributes: ['name', 'aud', 'env', 'file', 'ttl', 'change_mode', 'change_signal'] },
  },
  values: { provider: ['consul', 'nomad'] },
};

const network: BlockSpec = {
  attributes: ['mode', 'hostname'],
  blocks: {
    port: { labels: 1, attributes: ['static', 'to', 'host_network', 'ignore_collision'] },
    dns: { attributes: ['servers', 'searches', 'options'] },
  },
  values: { mode: ['none', 'bridge', 'host'] },
};

/** The docker driver's `config` (docs: task drivers → docker → task configuration). */
const dockerConfig: BlockSpec = {
  attributes: [
    'image', 'args', 'command', 'entrypoint', 'ports', 'network_mode', 'network_aliases', 'cap_add', 'cap_drop',
    'security_opt', 'pids_limit', 'init', 'labels', 'hostname', 'cpu_hard_limit', 'cpu_cfs_period', 'readonly_rootfs',
    'work_dir', 'volumes', 'volume_driver', 'dns_servers', 'dns_search_domains', 'dns_options', 'extra_hosts',
    'force_pull', 'image_pull_timeout', 'interactive', 'ipc_mode', 'memory_hard_limit', 'oom_score_adj', 'runtime',
    'shm_size', 'storage_opt', 'sysctl', 'tty', 'userns_mode', 'uts_mode', 'auth_soft_fail', 'isolation', 'mac_address',
    'group_add', 'pid_mode', 'ipv4_address', 'ipv6_address', 'advertise_ipv6_address', 'load', 'ulimit', 'privileged',
    'cgroupns', 'container_exists_attempts', 'infra_image', 'infra_image_pull_timeout',
  ],
  blocks: {
    auth: { attributes: ['username', 'password', 'email', 'server_address', 'helper', 'config'] },
    logging: { attributes: ['type', 'driver', 'config'], blocks: { config: freeform } },
    mount: {
      attributes: ['type', 'target', 'source', 'readonly'],
      blocks: {
        volume_options: opaque,
        bind_options: { attributes: ['propagation'] },
        tmpfs_options: { attributes: ['size', 'mode'] },
      },
    },
    devices: { attributes: ['host_path', 'container_path', 'cgroup_permissions'] },
    healthchecks: { attributes: ['disable'] },
    ulimit: freeform,
    sysctl: freeform,
    labels: freeform,
  },
};

/** `config` is the driver's own schema; only the drivers we use are known here. */
export const DRIVER_CONFIGS: Readonly<Record<string, BlockSpec>> = { docker: dockerConfig };

const template: BlockSpec = {
  attributes: [
    'data', 'source', 'destination', 'change_mode', 'change_signal', 'splay', 'perms', 'uid', 'gid', 'left_delimiter',
    'right_delimiter', 'env', 'error_on_missing_key', 'vault_grace', 'once',
  ],
  blocks: {
    wait: { attributes: ['min', 'max'] },
    change_script: { attributes: ['command', 'args', 'timeout', 'fail_on_error'] },
  },
  values: { change_mode: ['noop', 'restart', 'signal', 'script'] },
};

const resources: BlockSpec = {
  attributes: ['cpu', 'cores', 'memory', 'memory_max', 'secrets'],
  blocks: { device: { labels: 1, attributes: ['count'], blocks: { constraint, affinity } }, numa: { attributes: ['affinity', 'devices'] } },
};

const task: BlockSpec = {
  labels: 1,
  attributes: ['driver', 'kill_timeout', 'kill_signal', 'leader', 'shutdown_delay', 'user', 'kind'],
  blocks: {
    config: { driverConfig: true },
    env: freeform,
    meta: freeform,
    template,
    resources,
    service,
    restart,
    constraint,
    affinity,
    artifact: { attributes: ['source', 'destination', 'mode', 'options', 'headers', 'chown'], blocks: { options: freeform, headers: freeform } },
    logs: { attributes: ['max_files', 'max_file_size', 'disabled', 'enabled'] },
    identity: { attributes: ['name', 'aud', 'env', 'file', 'ttl', 'change_mode', 'change_signal'] },
    lifecycle: { attributes: ['hook', 'sidecar'] },
    dispatch_payload: { attributes: ['file'] },
    volume_mount: { attributes: ['volume', 'destination', 'read_only', 'propagation_mode', 'selinux_label'] },
    vault: { attributes: ['role', 'policies', 'change_mode', 'change_signal', 'env', 'disable_file', 'cluster', 'namespace', 'allow_token_expiration'] },
    consul: { attributes: ['cluster', 'namespace', 'partition'] },
  },
};

const scaling: BlockSpec = { attributes: ['min', 'max', 'enabled'], blocks: { policy: opaque } };

const group: BlockSpec = {
  labels: 1,
  attributes: ['count', 'shutdown_delay', 'stop_after_client_disconnect', 'max_client_disconnect', 'prevent_reschedule_on_lost'],
  blocks: {
    task,
    constraint,
    affinity,
    spread,
    network,
    service,
    meta: freeform,
    update,
    restart,
    reschedule,
    migrate,
    scaling,
    ephemeral_disk: { attributes: ['migrate', 'size', 'sticky'] },
    volume: { labels: 1, attributes: ['type', 'source', 'read_only', 'access_mode', 'attachment_mode', 'per_alloc'] },
    consul: { attributes: ['cluster', 'namespace', 'partition'] },
    disconnect: { attributes: ['lost_after', 'replace', 'reconcile', 'stop_on_client_after'] },
  },
};

const job: BlockSpec = {
  labels: 1,
  attributes: ['all_at_once', 'datacenters', 'node_pool', 'id', 'name', 'namespace', 'priority', 'region', 'type', 'vault_token', 'consul_token'],
  blocks: {
    group,
    constraint,
    affinity,
    spread,
    meta: freeform,
    update,
    reschedule,
    migrate,
    periodic: { attributes: ['cron', 'crons', 'prohibit_overlap', 'time_zone', 'enabled'] },
    parameterized: { attributes: ['meta_optional', 'meta_required', 'payload'] },
    multiregion: opaque,
    vault: task.blocks!.vault!,
    ui: opaque,
  },
  values: { type: ['service', 'system', 'batch', 'sysbatch'] },
};

/** A Nomad job file: HCL2 input variables, locals and one job. */
export const NOMAD_JOB_FILE: BlockSpec = {
  blocks: {
    job,
    variable: { labels: 1, attributes: ['type', 'default', 'description', 'sensitive'], blocks: { validation: { attributes: ['condition', 'error_message'] } } },
    locals: opaque,
  },
};

/** Capability names of a namespace rule, as Nomad's acl/policy.go validates them. */
export const NOMAD_NAMESPACE_CAPABILITIES = [
  'deny', 'list-jobs', 'parse-job', 'read-job', 'submit-job', 'dispatch-job', 'read-logs', 'read-fs', 'alloc-exec',
  'alloc-node-exec', 'alloc-lifecycle', 'sentinel-override', 'csi-register-plugin', 'csi-write-volume', 'csi-read-volume',
  'csi-list-volume', 'csi-mount-volume', 'host-volume-create', 'host-volume-register', 'host-volume-read',
  'host-volume-write', 'host-volume-delete', 'list-scaling-policies', 'read-scaling-policy', 'read-job-scaling',
  'scale-job', 'submit-recommendation', 'register-job', 'revert-job', 'deregister-job', 'purge-job', 'evaluate-job',
  'plan-job', 'tag-job-version', 'stable-job', 'fail-deployment', 'pause-deployment', 'promote-deployment',
  'unblock-deployment', 'cancel-deployment', 'set-alloc-health-deployment', 'gc-allocation', 'pause-allocation',
  'force-periodic-job', 'delete-service-registration',
] as const;

export const NOMAD_VARIABLE_CAPABILITIES = ['list', 'read', 'write', 'destroy', 'deny'] as const;

const dispositions = ['deny', 'read', 'write'];
const simpleRule: BlockSpec = { attributes: ['policy'], values: { policy: dispositions } };

/** A Nomad ACL policy (other-specifications/acl-policy). */
export const NOMAD_ACL_POLICY_FILE: BlockSpec = {
  blocks: {
    namespace: {
      labels: 1,
      attributes: ['policy', 'capabilities'],
      values: { policy: [...dispositions, 'scale'], capabilities: NOMAD_NAMESPACE_CAPABILITIES },
      blocks: { variables: { blocks: { path: { labels: 1, attributes: ['capabilities'], values: { capabilities: NOMAD_VARIABLE_CAPABILITIES } } } } },
    },
    node_pool: { labels: 1, attributes: ['policy', 'capabilities'], values: { policy: dispositions } },
    host_volume: { labels: 1, attributes: ['policy', 'capabilities'], values: { policy: dispositions } },
    agent: simpleRule,
    node: simpleRule,
    operator: { attributes: ['policy', 'capabilities'], values: { policy: dispositions } },
    quota: simpleRule,
    plugin: { attributes: ['policy'], values: { policy: [...dispositions, 'list'] } },
  },
};

const consulRule = (extra: string[] = []): BlockSpec => ({ attributes: ['policy', ...extra], values: { policy: ['read', 'write', 'deny', 'list'] } });

/** A Consul ACL policy's rules (security/acl/acl-rules). */
export const CONSUL_ACL_RULES_FILE: BlockSpec = {
  attributes: ['acl', 'keyring', 'mesh', 'operator', 'peering'],
  values: { acl: ['read', 'write', 'deny'], keyring: ['read', 'write', 'deny'], mesh: ['read', 'write', 'deny'], operator: ['read', 'write', 'deny'], peering: ['read', 'write', 'deny'] },
  blocks: {
    agent: { ...consulRule(), labels: 1 },
    agent_prefix: { ...consulRule(), labels: 1 },
    event: { ...consulRule(), labels: 1 },
    event_prefix: { ...consulRule(), labels: 1 },
    identity: { ...consulRule(['intentions']), labels: 1 },
    identity_prefix: { ...consulRule(['intentions']), labels: 1 },
    key: { ...consulRule(), labels: 1 },
    key_prefix: { ...consulRule(), labels: 1 },
    node: { ...consulRule(), labels: 1 },
    node_prefix: { ...consulRule(), labels: 1 },
    query: { ...consulRule(), labels: 1 },
    query_prefix: { ...consulRule(), labels: 1 },
    service: { ...consulRule(['intentions']), labels: 1 },
    service_prefix: { ...consulRule(['intentions']), labels: 1 },
    session: { ...consulRule(), labels: 1 },
    session_prefix: { ...consulRule(), labels: 1 },
  },
};

type Json = unknown;
const isBody = (value: Json): value is Record<string, Json> => typeof value === 'object' && value !== null && !Array.isArray(value);
const isBlockList = (value: Json): value is Record<string, Json>[] => Array.isArray(value) && value.length > 0 && value.every(isBody);

/** Every name the file uses that its spec does not have, and every value outside a fixed set. */
export function checkHcl(spec: BlockSpec, body: Record<string, Json>, path = ''): SpecIssue[] {
  const issues: SpecIssue[] = [];
  for (const [name, value] of Object.entries(body)) {
    const at = path ? `${path}.${name}` : name;
    const block = spec.blocks?.[name];
    if (block && (isBlockList(value) || (block.labels && isBody(value)))) {
      issues.push(...checkBlock(block, value, at, body));
      continue;
    }
    if (spec.attributes?.includes(name)) {
      if (isBlockList(value)) issues.push({ path: at, message: `"${name}" is an attribute (name = value), not a block` });
      else issues.push(...checkValue(spec, name, value, at));
      continue;
    }
    if (spec.freeform) {
      if (typeof value === 'object' && value !== null) issues.push({ path: at, message: 'expected a scalar value in a free-form map' });
      continue;
    }
    issues.push({ path: at, message: block ? `"${name}" is a block (name { … }), not an attribute` : `unknown ${isBlockList(value) || isBody(value) ? 'block' : 'attribute'} "${name}"` });
  }
  return issues;
}

function checkBlock(block: BlockSpec, value: Json, at: string, parent: Record<string, Json>): SpecIssue[] {
  if (!block.labels) return (value as Record<string, Json>[]).flatMap((inner, i) => checkBody(block, inner, `${at}[${i}]`, parent));
  if (!isBody(value)) return [{ path: at, message: 'expected a labelled block' }];
  return Object.entries(value).flatMap(([label, bodies]) =>
    isBlockList(bodies)
      ? bodies.flatMap((inner, i) => checkBody(block, inner, `${at}.${label}[${i}]`, parent))
      : [{ path: `${at}.${label}`, message: `expected ${block.labels} label(s)` }],
  );
}

function checkBody(block: BlockSpec, body: Record<string, Json>, at: string, parent: Record<string, Json>): SpecIssue[] {
  if (block.opaque) return [];
  if (!block.driverConfig) return checkHcl(block, body, at);
  const driverSpec = typeof parent.driver === 'string' ? DRIVER_CONFIGS[parent.driver] : undefined;
  if (!driverSpec) return [{ path: at, message: `no known config schema for driver ${JSON.stringify(parent.driver)}` }];
  return checkHcl(driverSpec, body, at);
}

function checkValue(spec: BlockSpec, name: string, value: Json, at: string): SpecIssue[] {
  const allowed = spec.values?.[name];
  if (!allowed) return [];
  const values = Array.isArray(value) ? value : [value];
  return values
    .filter((v) => typeof v !== 'string' || (!allowed.includes(v) && !v.startsWith('${')))
    .map((v) => ({ path: at, message: `${JSON.stringify(v)} is not one of ${allowed.join(', ')}` }));
}
