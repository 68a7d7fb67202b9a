import { credentials, type ServiceError } from '@grpc/grpc-js';
import { loadAuthorizationService } from '../../proto/load.js';
import type { buildCheckRequest } from './check-request.js';
import type { CheckResponse } from './authz-answer.js';

export type CheckRequestMessage = ReturnType<typeof buildCheckRequest>;

export interface AuthzClient {
  /** Rejects on any gRPC error, including the deadline: the caller fails closed. */
  check(request: CheckRequestMessage, deadlineMs: number): Promise<CheckResponse>;
  close(): void;
}

interface GeneratedAuthorizationClient {
  Check(request: CheckRequestMessage, options: { deadline: Date }, callback: (error: ServiceError | null, response?: CheckResponse) => void): void;
  close(): void;
}

/** A gRPC client of envoy.service.auth.v3.Authorization at `address` (host:port, plaintext HTTP/2). */
export function createAuthzClient(address: string): AuthzClient {
  const { Client } = loadAuthorizationService();
  const client = new Client(address, credentials.createInsecure()) as unknown as GeneratedAuthorizationClient;
  return {
    check: (request, deadlineMs) =>
      new Promise((resolve, reject) =>
        client.Check(request, { deadline: new Date(Date.now() + deadlineMs) }, (error, response) =>
          error || !response ? reject(error ?? new Error('authz sent no CheckResponse')) : resolve(response),
        ),
      ),
    close: () => client.close(),
  };
}
