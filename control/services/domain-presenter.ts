import { verificationRecordName, type DomainRow } from '../domain/custom-domain.js';
import type { Domain } from '../schemas/domains.js';

/**
 * A custom domain as the API and the webhook events show it: the certificate by its serial
 * and dates only. The chain is public but long; the private key never leaves the row.
 */
export function domainView(row: DomainRow): Domain {
  return {
    id: row.id,
    hostname: row.hostname,
    status: row.status,
    verification: { type: 'TXT', name: verificationRecordName(row.hostname), value: row.verification_value },
    reason: row.reason,
    certificate:
      row.certificate_serial && row.certificate_not_before && row.certificate_not_after && row.renew_after
        ? {
            serial: row.certificate_serial,
            not_before: row.certificate_not_before.toISOString(),
            not_after: row.certificate_not_after.toISOString(),
            renew_after: row.renew_after.toISOString(),
          }
        : null,
    created_at: row.created_at.toISOString(),
    updated_at: row.updated_at.toISOString(),
  };
}
