import type { ServiceDefinition } from '@grpc/grpc-js';
import { GrpcStatus } from '../proto/grpc-wire.js';
import type { GrpcCallback, ServiceImplementation, UnaryCall } from './grpc-server.js';
import protobuf from 'protobufjs';

/**
 * The standard gRPC health service (grpc.health.v1.Health/Check), which Envoy's
 * `grpc_health_check` calls. No health.proto ships in node_modules and the
 * grpc-health-check package is not installed, so its two messages are declared here,
 * field for field as in grpc/grpc's src/proto/grpc/health/v1/health.proto. Watch is left
 * out: authz/grpc-server.ts answers UNIMPLEMENTED, which the protocol allows and Envoy never calls.
 */
const HEALTH_PROTO = `
syntax = "proto3";
package grpc.health.v1;
message HealthCheckRequest { string service = 1; }
message HealthCheckResponse {
  enum ServingStatus { UNKNOWN = 0; SERVING = 1; NOT_SERVING = 2; SERVICE_UNKNOWN = 3; }
  ServingStatus status = 1;
}
`;

const root = protobuf.parse(HEALTH_PROTO, { keepCase: true }).root;
const HealthCheckRequest = root.lookupType('grpc.health.v1.HealthCheckRequest');
const HealthCheckResponse = root.lookupType('grpc.health.v1.HealthCheckResponse');

export type ServingStatus = 'UNKNOWN' | 'SERVING' | 'NOT_SERVING' | 'SERVICE_UNKNOWN';
export interface HealthCheckReply { status: ServingStatus }

const toObject = (message: protobuf.Message) => HealthCheckResponse.toObject(message, { enums: String, defaults: true });

export const HEALTH_SERVICE_NAME = 'grpc.health.v1.Health';

export const healthServiceDefinition: ServiceDefinition = {
  Check: {
    path: `/${HEALTH_SERVICE_NAME}/Check`,
    requestStream: false,
    responseStream: false,
    requestSerialize: (value: { service?: string }) => Buffer.from(HealthCheckRequest.encode(HealthCheckRequest.fromObject(value)).finish()),
    requestDeserialize: (bytes: Buffer) => HealthCheckRequest.toObject(HealthCheckRequest.decode(bytes), { defaults: true }),
    responseSerialize: (value: HealthCheckReply) => Buffer.from(HealthCheckResponse.encode(HealthCheckResponse.fromObject(value)).finish()),
    responseDeserialize: (bytes: Buffer) => toObject(HealthCheckResponse.decode(bytes)),
  },
};

/**
 * `isServing` answers for the whole server; `services` are the names, besides the empty
 * one (the server as a whole), that a health check may ask about.
 */
export function healthService(services: readonly string[], isServing: () => Promise<boolean>): ServiceImplementation {
  return {
    Check(call: UnaryCall<{ service?: string }>, callback: GrpcCallback<HealthCheckReply>) {
      const service = call.request.service ?? '';
      if (service !== '' && !services.includes(service)) {
        callback({ code: GrpcStatus.NOT_FOUND, details: `unknown service ${service}` });
        return;
      }
      isServing().then(
        (serving) => callback(null, { status: serving ? 'SERVING' : 'NOT_SERVING' }),
        () => callback(null, { status: 'NOT_SERVING' }),
      );
    },
  };
}
