import type { Logger } from 'pino';
import type { Clock } from '../../../contract/clock.js';
import { KeySetCache } from '../../crypto/json-web-key-set.js';
import { nomadClient } from './http-client.js';
import type { NomadSettings } from './settings.js';

/** Nomad's JWKS endpoint (nomad/structs/keyring.go, `JWKSPath`; served by command/agent/keyring_endpoint.go, `JWKSRequest`). */
export const JWKS_PATH = '/.well-known/jwks.json';

/**
 * The public keys Nomad signs workload identities with, from NOMAD_ADDR, held as
 * json-web-key-set.ts holds them. The endpoint is public (nomad/keyring_endpoint.go,
 * `Keyring.ListPublic`: "JWKS is a public endpoint: intentionally ignore auth errors");
 * the client sends NOMAD_TOKEN all the same, and NOMAD_CACERT's CA verifies the server.
 * A replica's request waits for a fetch, so it gets a tight budget of its own: two
 * attempts of two seconds, on two connections apart from the driver's.
 */
export function nomadIdentityKeys(settings: Pick<NomadSettings, 'nomad'>, clock: Clock, logger: Logger): KeySetCache {
  const client = nomadClient(settings.nomad, 2_000, 2, 2);
  return new KeySetCache(
    () => client.json('GET', JWKS_PATH),
    clock,
    // Nomad advises caching its key set for at least 15 minutes (keyring_endpoint.go,
    // `jwksMinMaxAge`): a key it drops stops verifying within that.
    { minRefetchMs: 10_000, maxAgeMs: 15 * 60_000 },
    (error) => logger.warn({ err: error }, `could not fetch Nomad's JWKS (${settings.nomad.address}${JWKS_PATH}): identities signed by a key not held are refused until it answers`),
  );
}
