import { AUTHZ_SERVER_KINDS, type AuthzServerKind } from '../../authz/config.js';

/**
 * authz serves gRPC on its own HTTP/2 server or, with AUTHZ_SERVER=grpc-js, on grpc-js's
 * (authz/server.ts, GRPC_SERVERS). A suite that starts authz's gRPC server runs once on
 * each, its title naming the server, so the fallback is as tested as the default. Suites
 * about the own server's HTTP/2 internals run on it alone.
 */
export const AUTHZ_SERVERS: readonly AuthzServerKind[] = AUTHZ_SERVER_KINDS;

export function describeOnEachAuthzServer(title: string, suite: (this: Mocha.Suite, server: AuthzServerKind) => void): void {
  for (const server of AUTHZ_SERVERS) {
    describe(`${title} (${server} server)`, function () {
      suite.call(this, server);
    });
  }
}
