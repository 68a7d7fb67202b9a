import { X509Certificate } from 'node:crypto';
import { DerTag, contextTag, decodeOid, derChildren, readDer, type DerNode } from './der.js';

/** What the caller stores about an issued certificate, read from its leaf. */
export interface CertificateInfo {
  /** The serial as upper-case hex without a sign byte, as node and `openssl x509 -serial` print it. */
  serial: string;
  notBefore: Date;
  notAfter: Date;
  /** The RFC 9773 CertID, which names the certificate to the CA's renewalInfo resource. */
  certId: string;
  /** The leaf's DNS subjectAltNames. */
  dnsNames: string[];
}

const AUTHORITY_KEY_IDENTIFIER = '2.5.29.35';

/** The certificates of a PEM chain, leaf first (RFC 8555 §9.1 orders them so). */
export function splitPemChain(chainPem: string): string[] {
  const blocks = chainPem.match(/-----BEGIN CERTIFICATE-----[\s\S]+?-----END CERTIFICATE-----/g) ?? [];
  if (blocks.length === 0) throw new Error('the certificate chain holds no PEM certificate');
  return blocks.map((block) => `${block}\n`);
}

export function certificateInfo(chainPem: string): CertificateInfo {
  const leaf = new X509Certificate(splitPemChain(chainPem)[0]!);
  const { serialContent, authorityKeyId } = readLeafFields(leaf.raw);
  if (!authorityKeyId) throw new Error('the leaf certificate has no authorityKeyIdentifier keyIdentifier, so it has no RFC 9773 CertID');
  return {
    serial: leaf.serialNumber.toUpperCase().replace(/^(?:00)+(?=.)/, ''),
    notBefore: new Date(leaf.validFrom),
    notAfter: new Date(leaf.validTo),
    certId: renewalCertId(authorityKeyId, serialContent),
    dnsNames: dnsNamesOf(leaf),
  };
}

/**
 * RFC 9773 §4.1: base64url (unpadded) of the AKI's keyIdentifier, a dot, base64url of the
 * serial's DER INTEGER content octets: sign byte included, tag and length not.
 */
export function renewalCertId(authorityKeyId: Buffer, serialIntegerContent: Buffer): string {
  return `${authorityKeyId.toString('base64url')}.${serialIntegerContent.toString('base64url')}`;
}

/**
 * From a certificate's DER (RFC 5280 §4.1): the serial INTEGER's content octets and the
 * authorityKeyIdentifier's keyIdentifier [0] (§4.2.1.1), null when absent.
 */
export function readLeafFields(certificateDer: Buffer): { serialContent: Buffer; authorityKeyId: Buffer | null } {
  const [tbs] = derChildren(readDer(certificateDer));
  if (!tbs || tbs.tag !== DerTag.sequence) throw new Error('not an X.509 certificate: no tbsCertificate');
  const fields = derChildren(tbs);
  // version is [0] EXPLICIT and DEFAULT v1, so it may be absent.
  const serialAt = fields[0]?.tag === contextTag(0, true) ? 1 : 0;
  const serial = fields[serialAt];
  if (!serial || serial.tag !== DerTag.integer) throw new Error('not an X.509 certificate: no serialNumber');
  const extensions = fields.find((field) => field.tag === contextTag(3, true));
  return { serialContent: Buffer.from(serial.content), authorityKeyId: extensions ? authorityKeyIdIn(extensions) : null };
}

function authorityKeyIdIn(extensionsTag: DerNode): Buffer | null {
  const [extensionList] = derChildren(extensionsTag);
  for (const extension of extensionList ? derChildren(extensionList) : []) {
    const parts = derChildren(extension);
    if (parts[0]?.tag !== DerTag.oid || decodeOid(parts[0].content) !== AUTHORITY_KEY_IDENTIFIER) continue;
    // critical BOOLEAN DEFAULT FALSE may sit between the OID and the value.
    const value = parts[parts.length - 1];
    if (!value || value.tag !== DerTag.octetString) return null;
    const keyIdentifier = derChildren(readDer(value.content)).find((field) => field.tag === contextTag(0, false));
    return keyIdentifier ? Buffer.from(keyIdentifier.content) : null;
  }
  return null;
}

function dnsNamesOf(leaf: X509Certificate): string[] {
  return (leaf.subjectAltName ?? '')
    .split(', ')
    .filter((entry) => entry.startsWith('DNS:'))
    .map((entry) => entry.slice('DNS:'.length));
}
