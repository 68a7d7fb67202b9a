import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { check, DockerConfig, JobRegisterRequest, ScalingRequest, VariableRequest } from './schema.js';
import type { FakeNomadState } from './cluster.js';

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

export async function listen(handler: (request: IncomingMessage, body: string, response: ServerResponse) => Promise<void> | void): Promise<HttpFace> {
  const server = createServer((request, response) => {
    let body = '';
    request.on('data', (chunk) => (body += chunk));
    request.on('end', () => {
      Promise.resolve(handler(request, body, response)).catch((error: Error) => {
        if (!response.headersSent) response.writeHead(500).end(error.message);
      });
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return { server, address: `http://127.0.0.1:${(server.address() as AddressInfo).port}` };
}

const send = (response: ServerResponse, status: number, body: unknown, headers: Record<string, string> = {}) => {
  response.writeHead(status, { 'content-type': typeof body === 'string' ? 'text/plain' : 'application/json', ...headers });
  response.end(typeof body === 'string' ? body : JSON.stringify(body));
};

export function nomadHandler(state: FakeNomadState, token: string, faults: FaultPlan, requests: RecordedRequest[]) {
  return (request: IncomingMessage, raw: string, response: ServerResponse) => {
    const url = new URL(request.url!, 'http://nomad');
    record(requests, 'nomad', request, url, response);
    if (faults.failNext > 0) {
      faults.failNext -= 1;
      return send(response, 500, 'rpc error: No cluster leader');
    }
    if (request.headers['x-nomad-token'] !== token) return send(response, 403, 'Permission denied');
    const index = { 'X-Nomad-Index': String(state.index), 'X-Nomad-KnownLeader': 'true', 'X-Nomad-LastContact': '0' };
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
      const stored = state.register(body.Job, body.PreserveCounts === true);
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
    if ((match = /^\/v1\/job\/([^/]+)\/allocations$/.exec(path))) {
      return send(response, 200, state.allocationsOf(decodeURIComponent(match[1]!)), index);
    }
    if ((match = /^\/v1\/job\/([^/]+)\/deployment$/.exec(path))) {
      const stored = state.jobs.get(decodeURIComponent(match[1]!));
      return send(response, 200, stored?.deployment ? { ...stored.deployment, JobID: stored.job.ID } : null, index);
    }
    if ((match = /^\/v1\/job\/([^/]+)\/scale$/.exec(path)) && method === 'POST') {
      const problems = check(body, ScalingRequest, 'ScalingRequest');
      if (problems.length > 0) return send(response, 400, problems.join('\n'));
      const refused = state.scale(decodeURIComponent(match[1]!), body.Target?.Group, body.Count);
      if (refused === 'job not found') return send(response, 404, refused);
      if (refused) return send(response, 400, refused);
      return send(response, 200, { EvalID: crypto.randomUUID(), EvalCreateIndex: state.index, JobModifyIndex: state.index, Index: state.index }, index);
    }
    if ((match = /^\/v1\/allocation\/([^/]+)$/.exec(path))) {
      const alloc = state.allocation(decodeURIComponent(match[1]!));
      return alloc ? send(response, 200, alloc, index) : send(response, 404, 'alloc not found');
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
      const at = Date.now() * 1e6;
      const variable = { Namespace: body.Namespace ?? 'default', Path: varPath, Items: body.Items, CreateIndex: state.bump(), ModifyIndex: state.index, CreateTime: at, ModifyTime: at };
      state.variables.set(varPath, variable);
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

/** Consul's `wait`: "10s", "500ms", "5m"; capped at 10 minutes as Consul caps it. */
function parseWait(text: string | null): number {
  if (!text) return 300_000;
  const match = /^(\d+)(ms|s|m)$/.exec(text);
  if (!match) return 300_000;
  const value = Number(match[1]) * { ms: 1, s: 1_000, m: 60_000 }[match[2] as 'ms' | 's' | 'm'];
  return Math.min(value, 600_000);
}
