/**
 * Whether an allocation of `existing` (the job version it runs) must be replaced to run
 * `updated`, or can move to it in place: hashicorp/nomad scheduler/util.go, `tasksUpdated`,
 * over the api JSON the fake stores. Ported for the fields schema.ts lets a job carry; the
 * rest of `tasksUpdated` (Consul namespace and cluster, Connect services, volumes and volume
 * mounts, artifacts, Vault, secrets, CSI, devices, NUMA, identities) compares fields the
 * fake refuses, so they cannot differ here. Returns what changed, or null (in place).
 */
type Json = Record<string, any>;

export function tasksUpdated(updated: Json, existing: Json, groupName: string): string | null {
  const a = groupOf(updated, groupName);
  const b = groupOf(existing, groupName);
  if (!a || !b) return 'task group';
  const tasksA: Json[] = a.Tasks ?? [];
  const tasksB: Json[] = b.Tasks ?? [];
  if (tasksA.length !== tasksB.length) return 'number of tasks';
  if (!equal(a.EphemeralDisk, b.EphemeralDisk)) return 'ephemeral disk';
  const network = networkUpdated(a.Networks, b.Networks);
  if (network) return network;
  if (renderTemplates(a.RestartPolicy) !== renderTemplates(b.RestartPolicy)) return 'group restart render_templates';
  for (const taskA of tasksA) {
    const taskB = tasksB.find((task) => task.Name === taskA.Name);
    if (!taskB) return 'task deleted';
    if ((taskA.Driver ?? '') !== (taskB.Driver ?? '')) return 'task driver';
    if ((taskA.User ?? '') !== (taskB.User ?? '')) return 'task user';
    // helper.OpaqueMapsEqual and maps.Equal: a missing map equals an empty one.
    if (!equal(taskA.Config, taskB.Config)) return 'task config';
    if (!equal(taskA.Env, taskB.Env)) return 'task env';
    if (!equal(taskA.Templates, taskB.Templates)) return 'task templates';
    if (!equal(combinedTaskMeta(updated, a, taskA), combinedTaskMeta(existing, b, taskB))) return 'task meta';
    const taskNetwork = networkUpdated(taskA.Resources?.Networks, taskB.Resources?.Networks);
    if (taskNetwork) return taskNetwork;
    // `nonNetworkResourcesUpdated`.
    for (const field of ['CPU', 'Cores', 'MemoryMB', 'MemoryMaxMB']) {
      if ((taskA.Resources?.[field] ?? 0) !== (taskB.Resources?.[field] ?? 0)) return `task ${field}`;
    }
    if ((taskA.LogConfig?.Disabled ?? false) !== (taskB.LogConfig?.Disabled ?? false)) return 'task log disabled';
    if (renderTemplates(taskA.RestartPolicy) !== renderTemplates(taskB.RestartPolicy)) return 'task restart render_templates';
  }
  return null;
}

const groupOf = (job: Json, name: string): Json | undefined => (job.TaskGroups ?? []).find((group: Json) => group.Name === name);

const renderTemplates = (policy: Json | undefined) => policy?.RenderTemplates === true;

/** structs.Job.CombinedTaskMeta: the task's Meta, then the group's, then the job's, the nearer one winning. */
function combinedTaskMeta(job: Json, group: Json, task: Json): Json {
  return { ...(job.Meta ?? {}), ...(group.Meta ?? {}), ...(task.Meta ?? {}) };
}

/** `networkUpdated`: mode, MBits, hostname, DNS, and the ports, a dynamic port's value disregarded (`networkPortMap`). */
function networkUpdated(a: Json[] | undefined, b: Json[] | undefined): string | null {
  const netA = a ?? [];
  const netB = b ?? [];
  if (netA.length !== netB.length) return 'network lengths';
  for (const [index, an] of netA.entries()) {
    const bn = netB[index]!;
    if ((an.Mode ?? '') !== (bn.Mode ?? '')) return 'network mode';
    if ((an.MBits ?? 0) !== (bn.MBits ?? 0)) return 'network mbits';
    if ((an.Hostname ?? '') !== (bn.Hostname ?? '')) return 'network hostname';
    if (!equal(an.DNS, bn.DNS)) return 'network dns';
    if (!equal(portMap(an), portMap(bn))) return 'network port map';
  }
  return null;
}

function portMap(network: Json): Json[] {
  const mapping = (port: Json, value: number) => ({ Label: port.Label ?? '', Value: value, To: port.To ?? 0, HostIP: port.HostNetwork ?? '' });
  return [...(network.ReservedPorts ?? []).map((port: Json) => mapping(port, port.Value ?? 0)), ...(network.DynamicPorts ?? []).map((port: Json) => mapping(port, -1))];
}

/** Deep equality where a missing value, null, an empty list and an empty object are all Go's zero value. */
function equal(a: unknown, b: unknown): boolean {
  return canonical(a) === canonical(b);
}

function canonical(value: unknown): string {
  if (value === null || value === undefined) return 'null';
  if (Array.isArray(value)) return value.length === 0 ? 'null' : `[${value.map(canonical).join(',')}]`;
  if (typeof value === 'object') {
    const keys = Object.keys(value).filter((key) => canonical((value as Json)[key]) !== 'null').sort();
    return keys.length === 0 ? 'null' : `{${keys.map((key) => `${JSON.stringify(key)}:${canonical((value as Json)[key])}`).join(',')}}`;
  }
  return JSON.stringify(value);
}
