import { credentials, makeGenericClientConstructor, type ServiceDefinition } from '@grpc/grpc-js';
import { loadAuthorizationService } from '../proto/load.js';

/**
 * Check load as Envoy makes it: realistic CheckRequests (12 headers as Envoy sends them,
 * source and destination addresses) over several HTTP/2 connections, so the workers of a
 * cluster each get some. Requests are encoded once, up front: the generator's own CPU
 * goes to sending, and a server's CPU is measured apart from it.
 */
export interface CheckLoad {
  /** Resolves true when the Check was allowed. */
  check(i: number): Promise<boolean>;
  close(): void;
}

type Client = {
  Check(request: Buffer, options: object, callback: (error: Error | null, response?: { status: { code: number } }) => void): void;
  close(): void;
};

const VARIANTS = 200;

export function envoyShapedCheckRequest(host: string, i: number) {
  return {
    attributes: {
      source: { address: { socket_address: { address: `198.51.100.${i % 200}`, port_value: 40_000 + i } } },
      destination: { address: { socket_address: { address: '10.0.0.5', port_value: 7080 } } },
      request: {
        time: { seconds: 1_900_000_000, nanos: i },
        http: {
          id: String(1_000_000 + i), method: 'POST', host, path: '/v1/chat', scheme: 'http', protocol: 'HTTP/1.1', size: 512,
          headers: {
            ':authority': host, ':method': 'POST', ':path': '/v1/chat', ':scheme': 'http',
            accept: 'application/json', 'accept-encoding': 'gzip, br', 'content-length': '512', 'content-type': 'application/json',
            'user-agent': 'bench/1.0', 'x-forwarded-proto': 'http', 'x-request-id': `6b4c3f0e-8a1d-4c3e-9f2a-${String(i).padStart(12, '0')}`,
            'x-envoy-external-address': `198.51.100.${i % 200}`,
          },
        },
      },
    },
  };
}

export function checkLoad(address: string, host: string, connections = 8): CheckLoad {
  const { service } = loadAuthorizationService();
  const check = service.Check!;
  const requests = Array.from({ length: VARIANTS }, (_, i) => check.requestSerialize(envoyShapedCheckRequest(host, i)) as Buffer);
  const definition: ServiceDefinition = { Check: { ...check, requestSerialize: (bytes: Buffer) => bytes } };
  const Constructor = makeGenericClientConstructor(definition, 'Authorization');
  // A subchannel pool of its own per client: one connection each.
  const clients = Array.from({ length: connections }, () => new Constructor(address, credentials.createInsecure(), { 'grpc.use_local_subchannel_pool': 1 }) as unknown as Client);
  return {
    check: (i) =>
      new Promise((resolve, reject) =>
        clients[i % connections]!.Check(requests[i % VARIANTS]!, { deadline: new Date(Date.now() + 10_000) }, (error, response) =>
          error ? reject(error) : resolve(response?.status.code === 0),
        ),
      ),
    close: () => clients.forEach((client) => client.close()),
  };
}

/**
 * Open loop: `rate` Checks a second for `seconds`, each sent when its time comes whatever
 * the others are doing. A latency counts from the scheduled send, so a server that falls
 * behind shows it (no coordinated omission).
 */
export async function paced(rate: number, seconds: number, task: (i: number) => Promise<unknown>): Promise<number[]> {
  const total = Math.round(rate * seconds);
  const samples: number[] = [];
  const pending: Promise<unknown>[] = [];
  const started = performance.now();
  let sent = 0;
  while (sent < total) {
    const due = Math.min(total, Math.floor(((performance.now() - started) / 1000) * rate));
    for (; sent < due; sent += 1) {
      const scheduled = started + (sent / rate) * 1000;
      pending.push(task(sent).then(() => samples.push(performance.now() - scheduled)));
    }
    await new Promise((resolve) => setTimeout(resolve, 1));
  }
  await Promise.all(pending);
  return samples;
}
