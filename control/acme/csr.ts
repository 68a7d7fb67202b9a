import { generateKeyPairSync, sign, type KeyObject } from 'node:crypto';
import { contextTag, derBitString, derElement, derOctetString, derOid, derSequence, derSet, derUnsignedInteger, derUtf8String } from './der.js';

/**
 * A PKCS#10 certificate request (RFC 2986) for one DNS name, as ACME's finalize takes it
 * (RFC 8555 §7.4): subject CN and a subjectAltName dNSName, signed ES256 by a key made
 * for this certificate alone, so the account key never doubles as a TLS key.
 */

const OID = {
  commonName: '2.5.4.3',
  extensionRequest: '1.2.840.113549.1.9.14', // PKCS#9, RFC 2985 §5.4.2
  subjectAltName: '2.5.29.17',
  ecdsaWithSha256: '1.2.840.10045.4.3.2',
} as const;

/** X.520's upper bound on a common name (ub-common-name, RFC 5280 Appendix A.1). */
const MAX_COMMON_NAME = 64;

export interface CertificateRequest {
  /** The request in DER, what finalize carries base64url-encoded. */
  der: Buffer;
  /** The certificate's private key: the caller keeps it, nothing here logs it. */
  privateKey: KeyObject;
}

/** A fresh P-256 key and a request signed with it for `hostname`. */
export function createCertificateRequest(hostname: string): CertificateRequest {
  const { privateKey, publicKey } = generateKeyPairSync('ec', { namedCurve: 'P-256' });
  return { der: certificateRequestDer(hostname, privateKey, publicKey), privateKey };
}

export function certificateRequestDer(hostname: string, privateKey: KeyObject, publicKey: KeyObject): Buffer {
  const info = derSequence(
    derUnsignedInteger(0), // version v1 (RFC 2986 §4.1)
    subjectName(hostname),
    publicKey.export({ type: 'spki', format: 'der' }),
    // attributes [0] IMPLICIT SET OF Attribute: the extensions the certificate should carry.
    derElement(contextTag(0, true), derSequence(derOid(OID.extensionRequest), derSet(derSequence(subjectAltName(hostname))))),
  );
  // X.509 and PKCS#10 carry ECDSA signatures as DER SEQUENCE { r, s } (RFC 5758 §3.2): node's default encoding.
  const signature = sign('sha256', info, privateKey);
  return derSequence(info, derSequence(derOid(OID.ecdsaWithSha256)), derBitString(signature));
}

/**
 * CN = hostname when it fits; a longer name has an empty subject, the SAN alone naming it,
 * as RFC 8555 §7.4 lets the CA take names from the SAN and CAs do for such names.
 */
function subjectName(hostname: string): Buffer {
  if (hostname.length > MAX_COMMON_NAME) return derSequence();
  return derSequence(derSet(derSequence(derOid(OID.commonName), derUtf8String(hostname))));
}

/** Extension { subjectAltName, extnValue OCTET STRING { GeneralNames { dNSName [2] IMPLICIT IA5String } } } (RFC 5280 §4.2.1.6). */
function subjectAltName(hostname: string): Buffer {
  const dnsName = derElement(contextTag(2, false), Buffer.from(hostname, 'ascii'));
  return derSequence(derOid(OID.subjectAltName), derOctetString(derSequence(dnsName)));
}

/** PEM for openssl and logs of the request (it holds no secret). */
export function certificateRequestPem(der: Buffer): string {
  const lines = der.toString('base64').match(/.{1,64}/g) ?? [];
  return `-----BEGIN CERTIFICATE REQUEST-----\n${lines.join('\n')}\n-----END CERTIFICATE REQUEST-----\n`;
}
