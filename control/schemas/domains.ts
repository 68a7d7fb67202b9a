import { Type, type Static } from '@sinclair/typebox';
import { DOMAIN_STATUSES } from '../domain/custom-domain.js';
import { StringEnum, Timestamp } from './common.js';
import * as ex from './examples.js';

export const CreateDomainBody = Type.Object(
  {
    hostname: Type.String({
      minLength: 1,
      // Room for a 253-character name and a trailing dot; the hostname's own rules (control/domain/custom-domain.ts) say what is wrong past that.
      maxLength: 512,
      description: 'a DNS name such as app.example.com: RFC 1123 labels, two or more, no wildcard, no IP address, not under the agent domain; stored lower-case without a trailing dot',
    }),
  },
  { additionalProperties: false, examples: [{ hostname: ex.domain.hostname }] },
);
export type CreateDomainBody = Static<typeof CreateDomainBody>;

export const DomainCertificate = Type.Object(
  {
    serial: Type.String({ description: 'the serial number, hexadecimal' }),
    not_before: Timestamp,
    not_after: Timestamp,
    renew_after: Timestamp,
  },
  { $id: 'DomainCertificate', examples: [ex.domain.certificate], description: 'the certificate served for the hostname; its private key is never shown' },
);

export const Domain = Type.Object(
  {
    id: Type.String({ description: 'dom_…' }),
    hostname: Type.String(),
    status: StringEnum(DOMAIN_STATUSES, { description: 'pending_verification → verifying → issuing → active, or failed (see reason)' }),
    verification: Type.Object(
      {
        type: StringEnum(['TXT'] as const),
        name: Type.String({ description: '_agent-platform.<hostname>: where to create the record' }),
        value: Type.String({ description: 'what the record must hold' }),
      },
      { description: 'the DNS record proving the hostname is yours' },
    ),
    reason: Type.Union([Type.String(), Type.Null()], { description: "the resolver's or the CA's reason of the last failure; null when none" }),
    certificate: Type.Union([Type.Ref(DomainCertificate), Type.Null()]),
    created_at: Timestamp,
    updated_at: Timestamp,
  },
  { $id: 'Domain', examples: [ex.domain] },
);
export type Domain = Static<typeof Domain>;

export const DomainList = Type.Object({ domains: Type.Array(Type.Ref(Domain), { description: 'oldest first' }) }, { $id: 'DomainList', examples: [{ domains: [ex.domain] }] });
export type DomainList = Static<typeof DomainList>;
