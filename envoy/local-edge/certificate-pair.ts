import { createHash, createPrivateKey, X509Certificate } from 'node:crypto';
import { readFile } from 'node:fs/promises';

/** A certificate chain and its private key, as the operator provides them (PEM files). */
export interface CertificateFiles {
  /** The PEM chain: the leaf first, then its intermediates. */
  readonly certFile: string;
  /** The leaf's PEM private key (unencrypted). */
  readonly keyFile: string;
}

/** A pair a TLS server can serve: read, parsed and known to belong together. */
export interface CertificatePair {
  readonly cert: Buffer;
  readonly key: Buffer;
  readonly leaf: X509Certificate;
  /** SHA-256 over both files' bytes: tells one pair from the next. */
  readonly digest: string;
}

/** Why a pair cannot be served; the message names the problem, never a key's bytes. */
export class CertificatePairError extends Error {
  override readonly name = 'CertificatePairError';
}

interface PairBytes {
  readonly cert: Buffer;
  readonly key: Buffer;
  readonly digest: string;
}

/** How many times the two files are read again while they keep changing under the reader. */
const STABLE_READ_ATTEMPTS = 5;

/**
 * Both files' bytes, read until two reads in a row agree, so a pair replaced while it is
 * being read is read again rather than mixed: as Envoy's SdsApi::onWatchUpdate does
 * (source/common/secret/sds_api.cc, up to 5 re-reads compared by hash). A pair still
 * changing after that is returned as last read; the next change reads it again.
 */
export async function readPairBytes(files: CertificateFiles): Promise<PairBytes> {
  let previous = await readOnce(files);
  for (let attempt = 0; attempt < STABLE_READ_ATTEMPTS; attempt++) {
    const next = await readOnce(files);
    if (next.digest === previous.digest) return next;
    previous = next;
  }
  return previous;
}

/**
 * What a TLS server needs of the bytes: a PEM certificate first in the chain file, a PEM
 * private key, and the key being the certificate's. A half-replaced pair (a new
 * certificate beside the old key) fails the last check. Pure.
 */
export function certificatePairOf(bytes: PairBytes): CertificatePair {
  let leaf: X509Certificate;
  try {
    leaf = new X509Certificate(bytes.cert);
  } catch (error) {
    throw new CertificatePairError(`the certificate file holds no readable PEM certificate (${(error as Error).message})`);
  }
  let key;
  try {
    key = createPrivateKey(bytes.key);
  } catch (error) {
    throw new CertificatePairError(`the key file holds no readable unencrypted PEM private key (${(error as Error).message})`);
  }
  if (!leaf.checkPrivateKey(key)) throw new CertificatePairError('the private key does not match the certificate');
  return { cert: bytes.cert, key: bytes.key, leaf, digest: bytes.digest };
}

/** Reads and checks a pair: what the edge does at start, where a bad pair stops it. */
export async function loadCertificatePair(files: CertificateFiles): Promise<CertificatePair> {
  return certificatePairOf(await readPairBytes(files));
}

/** What to log of a pair: never its key. */
export function describePair(pair: CertificatePair) {
  return { serial: pair.leaf.serialNumber, names: pair.leaf.subjectAltName ?? pair.leaf.subject, notAfter: new Date(pair.leaf.validTo).toISOString() };
}

async function readOnce(files: CertificateFiles): Promise<PairBytes> {
  let cert: Buffer;
  let key: Buffer;
  try {
    [cert, key] = await Promise.all([readFile(files.certFile), readFile(files.keyFile)]);
  } catch (error) {
    throw new CertificatePairError(`cannot read the pair: ${(error as Error).message}`);
  }
  const digest = createHash('sha256').update(cert).update('\0').update(key).digest('hex');
  return { cert, key, digest };
}
