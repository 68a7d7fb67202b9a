import { AuditEventList, ListAuditEventsQuery } from '../../schemas/audit.js';
import { ErrorBody } from '../../schemas/common.js';
import type { AuditEventService } from '../../services/audit-event-service.js';
import { defineRoute } from '../route.js';

/** The account's audit log (docs/audit.md). */
export const auditEventRoutes = (auditEvents: AuditEventService) => [
  defineRoute({
    method: 'get',
    path: '/account/audit-events',
    operationId: 'listAuditEvents',
    tag: 'Audit',
    summary: 'List audit events',
    description: "Who changed what in the account, newest first (owners and admins)",
    auth: 'any',
    query: ListAuditEventsQuery,
    responses: {
      200: { description: 'One page of audit events', schema: AuditEventList },
      403: { description: 'AUTHORISATION_DENIED: members and viewers do not read the audit log', schema: ErrorBody },
    },
    handler: async ({ principal, query }) => ({ status: 200, body: await auditEvents.list(principal, query) }),
  }),
];
