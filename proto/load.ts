import { accessSync, constants } from 'node:fs';
import { createRequire } from 'node:module';
import { dirname, isAbsolute, join } from 'node:path';
import { loadPackageDefinition, type ServiceClientConstructor, type ServiceDefinition } from '@grpc/grpc-js';
import { loadSync, type Options, type PackageDefinition } from '@grpc/proto-loader';
import protobuf from 'protobufjs';

/**
 * Envoy's own API protos, loaded from the copies that ship inside @grpc/grpc-js-xds
 * (never copied into this repository). Importing @grpc/proto-loader above also registers
 * google/protobuf/descriptor.proto with protobufjs, which validate.proto imports.
 */

const require = createRequire(import.meta.url);
const XDS_PACKAGE_DIR = dirname(require.resolve('@grpc/grpc-js-xds/package.json'));

/** Include paths, in lookup order, for every Envoy proto and its imports. */
export const ENVOY_PROTO_INCLUDE_DIRS: readonly string[] = Object.freeze(
  ['envoy-api', 'xds', 'googleapis', 'protoc-gen-validate'].map((dir) => join(XDS_PACKAGE_DIR, 'deps', dir)),
);

/** The ext_authz service authz implements. */
export const EXTERNAL_AUTH_PROTO = 'envoy/service/auth/v3/external_auth.proto';
export const AUTHORIZATION_SERVICE = 'envoy.service.auth.v3.Authorization';
/** The access-log service authz also implements: Envoy's http_grpc logger streams to it. */
export const ACCESS_LOG_PROTO = 'envoy/service/accesslog/v3/als.proto';
export const ACCESS_LOG_SERVICE = 'envoy.service.accesslog.v3.AccessLogService';

/**
 * The Bootstrap message and every extension envoy/envoy.yaml names in a `typed_config`
 * (an Any resolved by its `@type`; Bootstrap's imports alone do not reach them), the
 * Listener authz serves from envoy/tls-listener.yaml with its TLS inspector, and the
 * DiscoveryResponse of envoy/tls-sds.yaml with the Secret it carries.
 */
export const ENVOY_CONFIG_PROTO_FILES: readonly string[] = Object.freeze([
  'envoy/config/bootstrap/v3/bootstrap.proto',
  'envoy/config/listener/v3/listener.proto',
  'envoy/extensions/filters/listener/tls_inspector/v3/tls_inspector.proto',
  'envoy/service/discovery/v3/discovery.proto',
  'envoy/extensions/transport_sockets/tls/v3/tls.proto',
  'envoy/extensions/transport_sockets/tls/v3/secret.proto',
  'envoy/extensions/filters/network/http_connection_manager/v3/http_connection_manager.proto',
  'envoy/extensions/filters/http/cors/v3/cors.proto',
  'envoy/extensions/filters/http/ext_authz/v3/ext_authz.proto',
  'envoy/extensions/filters/http/router/v3/router.proto',
  'envoy/extensions/upstreams/http/v3/http_protocol_options.proto',
  'envoy/extensions/access_loggers/stream/v3/stream.proto',
  'envoy/extensions/access_loggers/file/v3/file.proto',
  'envoy/extensions/access_loggers/grpc/v3/als.proto',
  'envoy/extensions/resource_monitors/downstream_connections/v3/downstream_connections.proto',
]);

/**
 * The same options grpc-js servers usually load with: proto field names as written
 * (snake_case), 64-bit integers and enums as strings, defaults filled in, and the name
 * of the set member on each oneof.
 */
export const GRPC_LOADER_OPTIONS: Readonly<Options> = Object.freeze({
  keepCase: true,
  longs: String,
  enums: String,
  defaults: true,
  oneofs: true,
  includeDirs: [...ENVOY_PROTO_INCLUDE_DIRS],
});

function resolveFromIncludeDirs(root: protobuf.Root, includeDirs: readonly string[]): void {
  const fallback = root.resolvePath.bind(root);
  root.resolvePath = (origin: string, target: string): string | null => {
    if (isAbsolute(target)) return target;
    for (const dir of includeDirs) {
      const candidate = join(dir, target);
      try {
        accessSync(candidate, constants.R_OK);
        return candidate;
      } catch {
        // not in this include dir; try the next one
      }
    }
    return fallback(origin, target);
  };
}

/**
 * A protobufjs Root holding `files` (paths relative to the include dirs) and everything
 * they import, with every type resolved. Field names stay snake_case, as in the .proto
 * files and in Envoy's YAML.
 */
export function loadEnvoyRoot(files: readonly string[] = ENVOY_CONFIG_PROTO_FILES): protobuf.Root {
  const root = new protobuf.Root();
  resolveFromIncludeDirs(root, ENVOY_PROTO_INCLUDE_DIRS);
  root.loadSync([...files], { keepCase: true });
  root.resolveAll();
  return root;
}

export interface LoadedService {
  /** proto-loader's package definition of the service's file (and its imports). */
  packageDefinition: PackageDefinition;
  /** For `server.addService(service, { …methods })`. */
  service: ServiceDefinition;
  /** A generic client constructor, for tests (and the local edge) that call it as Envoy does. */
  Client: ServiceClientConstructor;
}

const loaded = new Map<string, LoadedService>();

/** A service of Envoy's API, loaded once per process (loading takes a while). */
function loadService(file: string, fullName: string): LoadedService {
  const cached = loaded.get(fullName);
  if (cached) return cached;
  const packageDefinition = loadSync(file, { ...GRPC_LOADER_OPTIONS });
  const Client = lookupService(loadPackageDefinition(packageDefinition), fullName, file);
  const service = { packageDefinition, service: Client.service, Client };
  loaded.set(fullName, service);
  return service;
}

/** `envoy.service.auth.v3.Authorization`. */
export const loadAuthorizationService = (): LoadedService => loadService(EXTERNAL_AUTH_PROTO, AUTHORIZATION_SERVICE);

/** `envoy.service.accesslog.v3.AccessLogService`. */
export const loadAccessLogService = (): LoadedService => loadService(ACCESS_LOG_PROTO, ACCESS_LOG_SERVICE);

function lookupService(grpcObject: object, fullName: string, file: string): ServiceClientConstructor {
  let node: unknown = grpcObject;
  for (const part of fullName.split('.')) {
    const container = (typeof node === 'object' && node !== null) || typeof node === 'function';
    node = container ? (node as Record<string, unknown>)[part] : undefined;
  }
  if (typeof node !== 'function' || !('service' in node)) {
    throw new Error(`${fullName} is not a service in ${file}`);
  }
  return node as ServiceClientConstructor;
}
