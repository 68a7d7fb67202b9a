import { Server, ServerCredentials, type sendUnaryData } from '@grpc/grpc-js';
import { loadAuthorizationService } from '../proto/load.js';

/**
 * The no-op baseline of issue 21: a grpc-js Authorization server on proto-loader's
 * definition (the full decode of every CheckRequest, as a typical ext_authz service in
 * Node does) answering OK to every Check. Prints its port as one JSON line.
 */
const server = new Server();
server.addService(loadAuthorizationService().service, {
  Check(_call: unknown, callback: sendUnaryData<object>) {
    callback(null, { status: { code: 0, message: '' } });
  },
});
server.bindAsync('127.0.0.1:0', ServerCredentials.createInsecure(), (error, port) => {
  if (error) throw error;
  console.log(JSON.stringify({ port }));
});
process.once('SIGTERM', () => server.tryShutdown(() => process.exit(0)));
