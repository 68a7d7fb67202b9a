import { Server, ServerCredentials, type sendUnaryData } from '@grpc/grpc-js';
import { createGrpcServer } from '../authz/grpc-server.js';
import { loadAuthorizationService } from '../proto/load.js';

/**
 * The no-op baseline of issue 21: a grpc-js Authorization server on proto-loader's
 * definition (the full decode of every CheckRequest, as a typical ext_authz service in
 * Node does) answering OK to every Check. With `--lean`, the same on authz's own server
 * (authz/grpc-server.ts): what authz costs before its decision and Redis. Prints its port
 * as one JSON line.
 */
const { service } = loadAuthorizationService();
const answerOk = (_call: unknown, callback: sendUnaryData<object>) => callback(null, { status: { code: 0, message: '' } });

if (process.argv.includes('--lean')) {
  const server = createGrpcServer();
  server.addService(service, { Check: answerOk });
  const { port } = await server.listen({ host: '127.0.0.1', port: 0 });
  console.log(JSON.stringify({ port }));
  process.once('SIGTERM', () => void server.shutdown().then(() => process.exit(0)));
} else {
  const server = new Server();
  server.addService(service, { Check: answerOk });
  server.bindAsync('127.0.0.1:0', ServerCredentials.createInsecure(), (error, port) => {
    if (error) throw error;
    console.log(JSON.stringify({ port }));
  });
  process.once('SIGTERM', () => server.tryShutdown(() => process.exit(0)));
}
