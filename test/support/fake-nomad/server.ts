import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { check, DeploymentPromoteRequest, DockerConfig, JobRegisterRequest, ScalingRequest, VariableRequest } from './schema.js';
import type { FakeNomadState } from './cluster.js';
import { serveLogs } from './fs-logs.js';
import { addServerConstraints } from './server-constraints.js';
import { admitJobRegistration } from './validate/register.js';
import { admitScale } from './validate/scale.js';
import { admitVariable } from './validate/variables.js';

/**
 * The HTTP faces of the fake: Nomad's /v1 API (token in X-Nomad-Token) and Consul's
 * health API (token in X-Consul-Token), answering with their real status codes, bodies
 * and index headers.
 */
type Json = Record<string, any>;

export interface HttpFace {
  address: string;
  server: Server;
}

/** One request as the fake saw and answered it. */
export interface RecordedRequest {
  api: 'nomad' | 'consul';
  method: string;
  path: string;
  query: Record<string, string>;
  status?: number;
}

const record = (requests: RecordedRequest[], api: 'nomad' | 'consul', request: IncomingMessage, url: URL, response: ServerResponse) => {
  const entry: RecordedRequest = { api, method: request.method!, path: url.pathname, query: Object.fromEntries(url.searchParams) };
  requests.push(entry);
  response.on('finish', () => (entry.status = response.statusCode));
};

export interface FaultPlan {
  /** Answer this many requests with 500, then behave. */
  failNext: number;
}

/**
 * Connections open at once from one client address, and the most seen. Past `limit`,
 * the connection gets Nomad's own answer and is closed: a 429 with "Your IP is issuing too
 * many concurrent connections" (nomad command/agent/http.go, `connLimiter`, over
 * go-connlimit; Consul's agent/agent.go does the same with its own limit). Defaults:
 * Nomad `limits.http_max_conns_per_client` 100, Consul's 200.
 */
export interface ConnectionLimit {
  limit: number;
  open: Map<string, number>;
  peak: number;
  refused: number;
}

export const connectionLimit = (limit: number): ConnectionLimit => ({ limit, open: new Map(), peak: 0, refused: 0 });

const TOO_MANY = 'Your IP is issuing too many concurrent connections, please rate limit your calls\n';

function enforce(server: Server, limits: ConnectionLimit): void {
  server.on('connection', (socket) => {
    const address = socket.remoteAddress ?? '?';
    const open = (limits.open.get(address) ?? 0) + 1;
    if (open > limits.limit) {
      limits.refused += 1;
      socket.end(`HTTP/1.1 429 Too Many Requests\r\nContent-Type: text/plain\r\nContent-Length: ${TOO_MANY.length}\r\nConnection: close\r\n\r\n${TOO_MANY}`);
      return;
    }
    limits.open.set(address, open);
    limits.peak = Math.max(limits.peak, open);
    socket.once('close', () => limits.open.set(address, (limits.open.get(address) ?? 1) - 1));
  });
}

export async function listen(handler: (request: IncomingMessage, body: string, response: ServerResponse) => Promise<void> | void, limits?: ConnectionLimit): Promise<HttpFace> {
  const server = createServer((request, response) => {
    let body = '';
    request.on('data', (chunk) => (body += chunk));
    request.on('end', () => {
      Promise.resolve(handler(request, body, response)).catch((error: Error) => {
        if (!response.headersSent) response.writeHead(500).end(error.message);
      });
    });
  });
  if (limits) enforce(server, limits);
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return { server, address: `http://127.0.0.1:${(server.address() as AddressInfo).port}` };
}

const send = (response: ServerResponse, status: number, body: unknown, headers: Record<string, string> = {}) => {
  response.writeHead(status, { 'content-type': typeof body === 'string' ? 'text/plain' : 'application/json', ...headers });
  response.end(typeof body === 'string' ? body : JSON.stringify(body));
};

export function nomadHandler(state: FakeNomadState, token: string, faults: FaultPlan, requests: RecordedRequest[]) {
  return async (request: IncomingMessage, raw: string, response: ServerResponse) => {
    const url = new URL(request.url!, 'http://nomad');
    record(requests, 'nomad', request, url, response);
    if (faults.failNext > 0) {
      faults.failNext -= 1;
      return send(response, 500, 'rpc error: No cluster leader');
    }
    const index = { 'X-Nomad-Index': String(state.index), 'X-Nomad-KnownLeader': 'true', 'X-Nomad-LastContact': '0' };
    if (url.pathname === '/.well-known/jwks.json') {
      // command/agent/keyring_endpoint.go, `JWKSRequest` (GET only), before any token is
      // asked: nomad/keyring_endpoint.go, `Keyring.ListPublic`, "JWKS is a public endpoint".
      // Cache-Control: about half the time until the newest key is due for rotation
      // (`root_key_rotation_threshold`, 30 days by default), as for a key made just now.
      if (request.method !== 'GET') return send(response, 405, 'Invalid method');
      return send(response, 200, state.keyring.jwks(), { ...index, 'Cache-Control': 'max-age=1296000' });
    }
    if (request.headers['x-nomad-token'] !== token) return send(response, 403, 'Permission denied');
    let body: Json = {};
    if (raw) {
      try {
        body = JSON.parse(raw);
      } catch (error) {
        return send(response, 400, `Failed to decode request: ${(error as Error).message}`);
      }
    }
    const path = url.pathname;
    const method = request.method!;
    let match: RegExpExecArray | null;

    if (path === '/v1/jobs' && (method === 'PUT' || method === 'POST')) {
      const problems = check(body, JobRegisterRequest, 'JobRegisterRequest');
      if (!body.Job) problems.push('Job must be specified');
      for (const [g, group] of (body.Job?.TaskGroups ?? []).entries()) {
        for (const [t, task] of (group.Tasks ?? []).entries()) {
          if (task.Driver === 'docker') check(task.Config, DockerConfig, `Job.TaskGroups[${g}].Tasks[${t}].Config`, problems);
          else problems.push(`Job.TaskGroups[${g}].Tasks[${t}].Driver: the fake client runs docker tasks only`);
        }
      }
      if (problems.length > 0) return send(response, 400, problems.join('\n'));
      // Then Nomad's own rules, ported from its source (validate/register.ts).
      const existing = state.jobs.get(body.Job.ID);
      const facts = { region: 'global', namespaces: state.namespaces, nodePools: state.nodePools };
      const admitted = admitJobRegistration(body, url.searchParams, facts, existing && { Type: existing.job.Type ?? 'service', JobModifyIndex: existing.modifyIndex });
      if ('status' in admitted) return send(response, admitted.status, admitted.message);
      // What Nomad's mutators add is stored with the job, and compared with it (Job.Register's SpecChanged).
      const stored = state.register(addServerConstraints(body.Job), body.PreserveCounts === true);
      return send(response, 200, { EvalID: crypto.randomUUID(), EvalCreateIndex: state.index, JobModifyIndex: stored.modifyIndex, Warnings: '', Index: state.index, LastContact: 0, KnownLeader: true }, index);
    }
    if (path === '/v1/jobs' && method === 'GET') {
      const prefix = url.searchParams.get('prefix') ?? '';
      const stubs = [...state.jobs.values()].filter((s) => s.job.ID.startsWith(prefix)).map((s) => ({
        ID: s.job.ID, ParentID: '', Name: s.job.Name, Namespace: s.job.Namespace ?? 'default', Datacenters: s.job.Datacenters, Type: s.job.Type,
        Priority: s.job.Priority ?? 50, Periodic: false, ParameterizedJob: false, Stop: s.job.Stop, Status: s.job.Stop ? 'dead' : 'running',
        StatusDescription: '', Version: s.version, Meta: s.job.Meta ?? null, CreateIndex: s.modifyIndex, ModifyIndex: s.modifyIndex, JobModifyIndex: s.modifyIndex, SubmitTime: Date.now() * 1e6,
      }));
      return send(response, 200, stubs, index);
    }
    if ((match = /^\/v1\/job\/([^/]+)$/.exec(path))) {
      const id = decodeURIComponent(match[1]!);
      const stored = state.jobs.get(id);
      if (method === 'DELETE') {
        if (!state.deregister(id, url.searchParams.get('purge') === 'true')) return send(response, 404, 'job not found');
        return send(response, 200, { EvalID: crypto.randomUUID(), EvalCreateIndex: state.index, JobModifyIndex: state.index, Index: state.index }, index);
      }
      if (!stored) return send(response, 404, 'job not found');
      return send(response, 200, { ...stored.job, Version: stored.version, JobModifyIndex: stored.modifyIndex, ModifyIndex: stored.modifyIndex }, index);
    }
    if (path === '/v1/allocations' && method === 'GET') {
      // nomad/alloc_endpoint.go, `Alloc.List`: a blocking query on the "allocs" table index,
      // the go-bexpr `filter` applied to each allocation, list entries with task states and
      // (when resources=true) AllocatedResources (nomad/structs/alloc.go, `Allocation.Stub`).
      let filter: ((item: Json) => boolean) | null = null;
      try {
        filter = compileFilter(url.searchParams.get('filter'));
      } catch (error) {
        return send(response, 400, `failed to read filter expression: ${(error as Error).message}`);
      }
      const namespace = url.searchParams.get('namespace') ?? 'default';
      const waitIndex = Number(url.searchParams.get('index') ?? 0);
      const deadline = Date.now() + parseWait(url.searchParams.get('wait'));
      while (state.allocsIndex <= waitIndex && Date.now() < deadline) await state.waitForAllocs(deadline - Date.now());
      const withResources = url.searchParams.get('resources') === 'true';
      const withTaskStates = url.searchParams.get('task_states') !== 'false';
      const entries = state.allAllocations()
        .filter((alloc) => namespace === '*' || alloc.Namespace === namespace)
        .filter((alloc) => !filter || filter(alloc))
        .map((alloc) => allocationListEntry(alloc, { resources: withResources, taskStates: withTaskStates }));
      return send(response, 200, entries, { ...index, 'X-Nomad-Index': String(state.allocsIndex) });
    }
    if ((match = /^\/v1\/node\/pool\/([^/]+)$/.exec(path)) && method === 'GET') {
      const name = decodeURIComponent(match[1]!);
      if (!state.nodePools.has(name)) return send(response, 404, 'node pool not found');
      return send(response, 200, { Name: name, Description: '', Meta: null, SchedulerConfiguration: null, CreateIndex: 1, ModifyIndex: 1 }, index);
    }
    if ((match = /^\/v1\/job\/([^/]+)\/allocations$/.exec(path))) {
      // command/agent/job_endpoint.go, `jobAllocations` (GET only), and nomad/job_endpoint.go,
      // `Job.Allocations`: list entries with no fields asked for; an unknown job has none.
      if (method !== 'GET') return send(response, 405, 'Invalid method');
      return send(response, 200, state.allocationsOf(decodeURIComponent(match[1]!)).map((alloc) => allocationListEntry(alloc)), index);
    }
    if ((match = /^\/v1\/job\/([^/]+)\/versions$/.exec(path)) && method === 'GET') {
      // nomad/job_endpoint.go, `Job.GetJobVersions`: every version, the highest first (api/jobs.go, `JobVersionsResponse`).
      const stored = state.jobs.get(decodeURIComponent(match[1]!));
      if (!stored) return send(response, 404, 'job versions not found');
      return send(response, 200, { Versions: [...stored.history].reverse(), Diffs: null }, index);
    }
    if ((match = /^\/v1\/job\/([^/]+)\/deployment$/.exec(path))) {
      const stored = state.jobs.get(decodeURIComponent(match[1]!));
      return send(response, 200, stored?.deployment ? { ...stored.deployment, JobID: stored.job.ID } : null, index);
    }
    if ((match = /^\/v1\/deployment\/(promote|fail)\/([^/]+)$/.exec(path))) {
      // command/agent/deployment_endpoint.go, `deploymentPromote` and `deploymentFail`:
      // PUT or POST; a promotion's body names the deployment again. The RPC's errors
      // (nomad/deployment_endpoint.go) come back as 500 with their text (`errCodeFromHandler`).
      if (method !== 'PUT' && method !== 'POST') return send(response, 405, 'Invalid method');
      const deploymentId = decodeURIComponent(match[2]!);
      if (match[1] === 'promote') {
        const problems = check(body, DeploymentPromoteRequest, 'DeploymentPromoteRequest');
        if (problems.length > 0) return send(response, 400, problems.join('\n'));
        if (!body.DeploymentID) return send(response, 400, 'DeploymentID must be specified');
        if (body.DeploymentID !== deploymentId) return send(response, 400, 'Deployment ID does not match');
        const promoted = state.promote(deploymentId, body.All === true, body.Groups ?? []);
        if ('error' in promoted) return send(response, 500, promoted.error);
        return send(response, 200, { EvalID: crypto.randomUUID(), EvalCreateIndex: promoted.index, DeploymentModifyIndex: promoted.index, Index: promoted.index }, index);
      }
      const failed = state.fail(deploymentId);
      if ('error' in failed) return send(response, 500, failed.error);
      return send(response, 200, {
        EvalID: crypto.randomUUID(), EvalCreateIndex: failed.index, DeploymentModifyIndex: failed.index, Index: failed.index,
        ...(failed.revertedJobVersion !== null ? { RevertedJobVersion: failed.revertedJobVersion } : {}),
      }, index);
    }
    if ((match = /^\/v1\/job\/([^/]+)\/scale$/.exec(path)) && method === 'POST') {
      const problems = check(body, ScalingRequest, 'ScalingRequest');
      if (problems.length > 0) return send(response, 400, problems.join('\n'));
      const target = state.jobs.get(decodeURIComponent(match[1]!));
      const admitted = admitScale(body, decodeURIComponent(match[1]!), url.searchParams, target && {
        job: target.job, jobModifyIndex: target.modifyIndex, deploymentActive: target.deployment?.Status === 'running',
      });
      if ('status' in admitted) return send(response, admitted.status, admitted.message);
      // No count: Nomad records a scaling event and changes nothing.
      if (admitted.count === null) return send(response, 200, { EvalID: '', EvalCreateIndex: 0, JobModifyIndex: target!.modifyIndex, Index: state.index }, index);
      const scaled = state.scale(decodeURIComponent(match[1]!), body.Target?.Group, body.Count);
      return send(response, 200, { EvalID: crypto.randomUUID(), EvalCreateIndex: state.index, JobModifyIndex: scaled.modifyIndex, Index: state.index }, index);
    }
    if ((match = /^\/v1\/allocation\/([^/]+)$/.exec(path))) {
      // command/agent/alloc_endpoint.go, `allocGet`: GET only, 404 "alloc not found"; the
      // allocation whatever the namespace asked (nomad/alloc_endpoint.go, `Alloc.GetAlloc`
      // looks it up by id and checks read-job in its own namespace), with the job it runs.
      if (method !== 'GET') return send(response, 405, 'Invalid method');
      const alloc = state.allocation(decodeURIComponent(match[1]!));
      if (!alloc) return send(response, 404, 'alloc not found');
      const stored = state.jobs.get(alloc.JobID);
      return send(response, 200, { ...alloc, Job: stored ? stored.job : { ID: alloc.JobID, Namespace: alloc.Namespace } }, index);
    }
    if ((match = /^\/v1\/client\/fs\/logs\/(.*)$/.exec(path)) && method === 'GET') {
      return serveLogs(state, decodeURIComponent(match[1]!), url.searchParams, response);
    }
    if ((match = /^\/v1\/var\/(.+)$/.exec(path))) {
      const varPath = decodeURIComponent(match[1]!);
      if (method === 'GET') {
        const variable = state.variables.get(varPath);
        return variable ? send(response, 200, variable, index) : send(response, 404, 'variable not found');
      }
      if (method === 'DELETE') {
        state.variables.delete(varPath);
        state.bump();
        return send(response, 204, '', index);
      }
      const problems = check(body, VariableRequest, 'Variable');
      if (!body.Items || Object.keys(body.Items).length === 0) problems.push('variable missing required Items object');
      if (problems.length > 0) return send(response, 400, problems.join('\n'));
      const refusedVariable = admitVariable(body, varPath, url.searchParams);
      if (refusedVariable) return send(response, refusedVariable.status, refusedVariable.message);
      const at = Date.now() * 1e6;
      const variable = { Namespace: body.Namespace ?? 'default', Path: varPath, Items: body.Items, CreateIndex: state.bump(), ModifyIndex: state.index, CreateTime: at, ModifyTime: at };
      state.variables.set(varPath, variable);
      state.variableWritten(varPath);
      return send(response, 200, variable, index);
    }
    return send(response, 404, `Invalid URL path ${path}`);
  };
}

export function consulHandler(state: FakeNomadState, token: string, faults: FaultPlan, requests: RecordedRequest[]) {
  return async (request: IncomingMessage, _raw: string, response: ServerResponse) => {
    const url = new URL(request.url!, 'http://consul');
    record(requests, 'consul', request, url, response);
    if (faults.failNext > 0) {
      faults.failNext -= 1;
      return send(response, 500, 'No cluster leader');
    }
    if (request.headers['x-consul-token'] !== token) return send(response, 403, 'ACL not found');
    if (url.pathname === '/v1/status/leader' && request.method === 'GET') return send(response, 200, '"127.0.0.1:8300"');
    const stateMatch = /^\/v1\/health\/state\/([^/]+)$/.exec(url.pathname);
    if (stateMatch && request.method === 'GET') {
      // agent/health_endpoint.go, `HealthChecksInState` (Consul): any|passing|warning|critical,
      // a blocking query on the checks index, `filter` (go-bexpr) over each HealthCheck.
      const wanted = decodeURIComponent(stateMatch[1]!);
      if (!['any', 'passing', 'warning', 'critical'].includes(wanted)) return send(response, 400, `Invalid check state: "${wanted}"`);
      let filter: ((item: Json) => boolean) | null = null;
      try {
        filter = compileFilter(url.searchParams.get('filter'));
      } catch (error) {
        return send(response, 400, `Failed to create boolean expression evaluator: ${(error as Error).message}`);
      }
      const waitIndex = Number(url.searchParams.get('index') ?? 0);
      const deadline = Date.now() + parseWait(url.searchParams.get('wait'));
      while (state.checksIndex <= waitIndex && Date.now() < deadline) await state.waitForConsul(deadline - Date.now());
      const checks = state.healthChecks().filter((check) => wanted === 'any' || check.Status === wanted).filter((check) => !filter || filter(check));
      return send(response, 200, checks, { 'X-Consul-Index': String(state.checksIndex), 'X-Consul-KnownLeader': 'true', 'X-Consul-LastContact': '0' });
    }
    const match = /^\/v1\/health\/service\/([^/]+)$/.exec(url.pathname);
    if (!match || request.method !== 'GET') return send(response, 404, 'not found');
    const service = decodeURIComponent(match[1]!);
    const waitIndex = Number(url.searchParams.get('index') ?? 0);
    const wait = parseWait(url.searchParams.get('wait'));
    const deadline = Date.now() + wait;
    // A blocking query: answers at once when the index moved past the caller's, else when it does or the wait ends.
    while (state.passing(service).index <= waitIndex && Date.now() < deadline) await state.waitForConsul(deadline - Date.now());
    const { index, entries } = state.passing(service);
    return send(response, 200, entries, { 'X-Consul-Index': String(index), 'X-Consul-KnownLeader': 'true', 'X-Consul-LastContact': '0' });
  };
}

/**
 * The go-bexpr expressions the driver sends, and only those: clauses joined by `or`, each
 * `<Field> matches "<regex>"`, `<Field> contains "<value>"` (a list field holds the value),
 * `<Field> == "<value>"` or `<Field> is empty` (github.com/hashicorp/go-bexpr grammar.peg:
 * OrExpression, MatchMatches, MatchIn/contains, MatchEqual, MatchIsEmpty). Anything else is
 * refused, so a filter the fake does not understand fails a test instead of matching everything.
 */
export function compileFilter(text: string | null): ((item: Json) => boolean) | null {
  if (text === null || text.trim() === '') return null;
  const clauses = text.split(/\s+or\s+(?=(?:[^"]*"[^"]*")*[^"]*$)/).map(compileClause);
  return (item) => clauses.some((clause) => clause(item));
}

function compileClause(text: string): (item: Json) => boolean {
  const match = /^\s*([A-Za-z][A-Za-z0-9.]*)\s+(?:(matches|contains|==)\s+"((?:[^"\\]|\\.)*)"|(is empty))\s*$/.exec(text);
  if (!match) throw new Error(`the fake supports only "<Field> matches|contains|== \"value\"" and "<Field> is empty", joined by "or", got: ${text}`);
  const [, field, operator, quoted, isEmpty] = match;
  const read = (item: Json) => field!.split('.').reduce<any>((current, part) => (current == null ? undefined : current[part]), item);
  // go-bexpr's MatchIsEmpty: a string, list or map of length 0 (or a missing value).
  if (isEmpty) return (item) => {
    const found = read(item);
    return found == null || (typeof found === 'object' ? Object.keys(found).length === 0 : String(found).length === 0);
  };
  const value = JSON.parse(`"${quoted}"`) as string;
  if (operator === 'matches') {
    const pattern = new RegExp(value);
    return (item) => typeof read(item) === 'string' && pattern.test(read(item));
  }
  if (operator === 'contains') return (item) => {
    const found = read(item);
    return Array.isArray(found) ? found.includes(value) : typeof found === 'string' && found.includes(value);
  };
  return (item) => read(item) === value;
}

/** Consul's `wait`: "10s", "500ms", "5m"; capped at 10 minutes as Consul caps it. */
function parseWait(text: string | null): number {
  if (!text) return 300_000;
  const match = /^(\d+)(ms|s|m)$/.exec(text);
  if (!match) return 300_000;
  const value = Number(match[1]) * { ms: 1, s: 1_000, m: 60_000 }[match[2] as 'ms' | 's' | 'm'];
  return Math.min(value, 600_000);
}

/**
 * An allocation as Nomad's lists give it (nomad/structs/alloc.go, the `Stub` method of
 * `Allocation`, type `AllocListStub`): no DeploymentID; AllocatedResources only when
 * `fields` ask for them (null otherwise, as Go encodes a nil pointer), TaskStates unless
 * `fields` turn them off. Without `fields`, as Nomad calls it with nil.
 */
function allocationListEntry({ AllocatedResources, TaskStates, DeploymentID: _deployment, ...rest }: Json, fields?: { resources: boolean; taskStates: boolean }): Json {
  return {
    ...rest,
    AllocatedResources: fields?.resources ? AllocatedResources : null,
    TaskStates: !fields || fields.taskStates ? TaskStates : null,
  };
}
