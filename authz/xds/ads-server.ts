import { Server, ServerCredentials, type ServerDuplexStream } from '@grpc/grpc-js';
import { loadPackageDefinition } from '@grpc/grpc-js';
import { loadSync } from '@grpc/proto-loader';
import { GRPC_LOADER_OPTIONS, loadEnvoyRoot, ENVOY_CONFIG_PROTO_FILES } from '../../proto/load.js';
import { packAny } from '../../proto/proto-json.js';
import { clearStaleSocket, openToEnvoy } from '../unix-socket.js';
import type { EdgeTlsState } from './edge-tls-state.js';

/**
 * Envoy's Aggregated Discovery Service, state of the world, for the two types Envoy asks
 * authz for: the HTTPS listener (LDS, envoy.yaml's dynamic_resources) and the custom
 * domains' certificates (SDS, named by that listener's chains). It follows the xDS protocol
 * (envoy api/envoy/service/discovery/v3/discovery.proto, and docs "xDS REST and gRPC
 * protocol"): each response carries a version and a nonce; Envoy answers each with a request
 * naming that nonce, an ACK, or a NACK when it carries error_detail; a request naming an
 * older nonce is stale and ignored; a type is sent again only when its resources changed or
 * Envoy asked for other names. A NACKed version is not sent again: the next change is.
 *
 * On grpc-js, on a socket of its own (AUTHZ_XDS_SOCKET), not on authz's own HTTP/2 server:
 * that one serves Checks and has no server streaming on purpose (authz/grpc-server.ts), and
 * this stream is one long call per Envoy, off every request's path.
 */

export const LISTENER_TYPE_URL = 'type.googleapis.com/envoy.config.listener.v3.Listener';
export const SECRET_TYPE_URL = 'type.googleapis.com/envoy.extensions.transport_sockets.tls.v3.Secret';
const ADS_PROTO = 'envoy/service/discovery/v3/ads.proto';
/** The Listener, Secret and every extension the listener's typed_configs name (proto/load.ts). */
export const XDS_PROTO_FILES: readonly string[] = ENVOY_CONFIG_PROTO_FILES;

export type XdsLog = (level: 'info' | 'warn' | 'error', message: string, fields: Record<string, unknown>) => void;

interface DiscoveryRequest {
  version_info: string;
  resource_names: string[];
  type_url: string;
  response_nonce: string;
  error_detail: { code: number; message: string } | null;
}

interface DiscoveryResponse {
  version_info: string;
  resources: { type_url: string; value: Buffer }[];
  type_url: string;
  nonce: string;
}

/** One type on one stream: what Envoy asked for and what it was last sent. */
interface Subscription {
  names: string[];
  sent: string | null;
  nonce: string | null;
}

export interface AdsServer {
  /** Streams open now (one per Envoy). */
  readonly streams: number;
  close(graceMs?: number): Promise<void>;
}

export async function startAdsServer(options: { socketPath: string; state: EdgeTlsState; log: XdsLog }): Promise<AdsServer> {
  const root = loadEnvoyRoot(XDS_PROTO_FILES);
  const definition = loadSync(ADS_PROTO, { ...GRPC_LOADER_OPTIONS });
  const grpcObject = loadPackageDefinition(definition) as any;
  const service = grpcObject.envoy.service.discovery.v3.AggregatedDiscoveryService.service;
  const streams = new Set<ServerDuplexStream<DiscoveryRequest, DiscoveryResponse>>();
  let version = 0;
  let nonce = 0;

  const resourcesOf = (typeUrl: string, names: string[]) => {
    if (typeUrl === LISTENER_TYPE_URL) return [packAny(root, typeName(typeUrl), options.state.listener())];
    return names.flatMap((name) => {
      const secret = options.state.secret(name);
      return secret ? [packAny(root, typeName(typeUrl), secret)] : [];
    });
  };

  // A template Envoy's protos cannot carry stops authz at start, not at Envoy's first request.
  resourcesOf(LISTENER_TYPE_URL, []);

  function serve(call: ServerDuplexStream<DiscoveryRequest, DiscoveryResponse>): void {
    streams.add(call);
    const subscriptions = new Map<string, Subscription>();

    const send = (typeUrl: string, subscription: Subscription, force: boolean) => {
      const resources = resourcesOf(typeUrl, subscription.names);
      const digest = resources.map((resource) => resource.value.toString('base64')).join(',');
      if (!force && digest === subscription.sent) return;
      subscription.sent = digest;
      subscription.nonce = String(++nonce);
      call.write({ version_info: String(++version), resources, type_url: typeUrl, nonce: subscription.nonce });
    };

    const onChange = () => {
      try {
        for (const [typeUrl, subscription] of subscriptions) send(typeUrl, subscription, false);
      } catch (error) {
        options.log('error', 'xDS: a change could not be encoded for Envoy; it keeps what it has', { reason: (error as Error).message });
      }
    };
    options.state.on('change', onChange);
    const end = () => {
      options.state.off('change', onChange);
      streams.delete(call);
    };

    call.on('data', (request: DiscoveryRequest) => {
      const typeUrl = request.type_url;
      if (typeUrl !== LISTENER_TYPE_URL && typeUrl !== SECRET_TYPE_URL) {
        options.log('warn', 'xDS: Envoy asked for a type authz does not serve', { type: typeUrl });
        return;
      }
      const subscription = subscriptions.get(typeUrl);
      // An answer to an older response: Envoy has a newer one to answer (the protocol's stale nonce).
      if (subscription && request.response_nonce !== '' && request.response_nonce !== subscription.nonce) return;
      if (request.error_detail) {
        options.log('error', 'xDS: Envoy refused what authz sent (NACK); it keeps its previous version', {
          type: typeUrl,
          version: request.version_info,
          reason: request.error_detail.message,
        });
      }
      const names = [...request.resource_names].sort();
      const sameNames = subscription !== undefined && names.join('\n') === subscription.names.join('\n');
      if (sameNames && request.response_nonce !== '') return; // an ACK or NACK: nothing new asked
      const next: Subscription = subscription ?? { names, sent: null, nonce: null };
      next.names = names;
      subscriptions.set(typeUrl, next);
      try {
        send(typeUrl, next, true);
      } catch (error) {
        options.log('error', 'xDS: a response could not be encoded', { type: typeUrl, reason: (error as Error).message });
      }
    });
    call.on('end', () => {
      end();
      call.end();
    });
    call.on('cancelled', end);
    call.on('error', end);
  }

  const server = new Server({ 'grpc.max_receive_message_length': 4 * 1024 * 1024, 'grpc.keepalive_time_ms': 60_000, 'grpc.keepalive_timeout_ms': 20_000 });
  server.addService(service, { StreamAggregatedResources: serve });
  await clearStaleSocket(options.socketPath);
  await new Promise<number>((resolve, reject) =>
    server.bindAsync(`unix:${options.socketPath}`, ServerCredentials.createInsecure(), (error, port) => (error ? reject(error) : resolve(port))),
  );
  await openToEnvoy(options.socketPath);

  return {
    get streams() {
      return streams.size;
    },
    close(graceMs = 2_000) {
      // ADS streams never end on their own: end them, then give the server a moment.
      for (const call of streams) call.end();
      return new Promise<void>((resolve) => {
        const timer = setTimeout(() => {
          server.forceShutdown();
          resolve();
        }, graceMs);
        server.tryShutdown(() => {
          clearTimeout(timer);
          resolve();
        });
      });
    },
  };
}

const typeName = (typeUrl: string) => typeUrl.slice(typeUrl.lastIndexOf('/') + 1);
