import { execFileSync } from 'node:child_process';
import { createPrivateKey, randomBytes, X509Certificate } from 'node:crypto';
import { chmodSync, existsSync, mkdirSync, mkdtempSync, readFileSync, renameSync, rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';

/** The files `npm run up` makes for HTTPS on this host, under `<data dir>/tls`. */
export interface LocalTls {
  /** The local CA's certificate: what clients trust (curl --cacert, the system store). */
  readonly caFile: string;
  /** The edge's chain and key (EDGE_TLS_CERT_FILE, EDGE_TLS_KEY_FILE). */
  readonly certFile: string;
  readonly keyFile: string;
  /** What this call made: nothing (all reused), the certificate, or both. */
  readonly made: 'nothing' | 'certificate' | 'ca and certificate';
}

export interface LocalTlsOptions {
  /** Where the files live; made 0700 (the CA's key is in it). */
  readonly dir: string;
  /** The agent domain: the certificate is for `*.<domain>` and `<domain>`. */
  readonly domain: string;
  /** The openssl binary (default: `openssl` on PATH). */
  readonly openssl?: string;
  /** For the renewal check; default now. */
  readonly now?: Date;
}

/** A certificate with less left than this is made again. */
const RENEW_BEFORE_MS = 30 * 24 * 3600 * 1000;
/** The CA lives ten years; trusting it is a manual step, so it should rarely change. */
const CA_DAYS = 3650;
/** Under the 398 days browsers accept for a server certificate. */
const LEAF_DAYS = 397;
/** openssl's own deadline per command: key generation and signing take milliseconds. */
const OPENSSL_TIMEOUT_MS = 30_000;

/**
 * A local CA and a wildcard certificate for the agent domain, made with the openssl CLI
 * when missing, expiring within 30 days, or no longer for this domain or this CA; what is
 * still good is reused, the CA above all, since clients were told to trust it. The CA may
 * sign names under the agent domain only (a critical nameConstraints extension), so its
 * key, should it leak from the data dir, cannot mint a certificate a client that trusts
 * it would take for any other site. Keys are EC P-256, files 0600.
 */
export function ensureLocalTls(options: LocalTlsOptions): LocalTls {
  if (!DNS_NAME.test(options.domain)) throw new Error(`the agent domain "${options.domain}" is no lower-case DNS name, so no certificate can name it`);
  const openssl = options.openssl ?? 'openssl';
  const now = options.now ?? new Date();
  const files = { caFile: join(options.dir, 'ca.crt'), caKeyFile: join(options.dir, 'ca.key'), certFile: join(options.dir, 'tls.crt'), keyFile: join(options.dir, 'tls.key') };
  mkdirSync(options.dir, { recursive: true, mode: 0o700 });
  checkOpenssl(openssl);

  let made: LocalTls['made'] = 'nothing';
  const ca = usable(files.caFile, files.caKeyFile, now);
  if (!ca || ca.subject !== caSubject(options.domain)) {
    makeCa(openssl, options.dir, options.domain, files);
    made = 'ca and certificate';
  }
  const caCert = new X509Certificate(readFileSync(files.caFile));
  const leaf = made === 'nothing' ? usable(files.certFile, files.keyFile, now) : null;
  const leafGood = leaf !== null && leaf.checkIssued(caCert) && leaf.verify(caCert.publicKey) && covers(leaf, options.domain);
  if (!leafGood) {
    makeCertificate(openssl, options.dir, options.domain, files);
    if (made === 'nothing') made = 'certificate';
  }
  return { caFile: files.caFile, certFile: files.certFile, keyFile: files.keyFile, made };
}

/** How to trust the local CA, for up.ts to print. */
export function trustInstructions(caFile: string, exampleUrl: string): string {
  return [
    `curl:            curl --cacert ${caFile} ${exampleUrl}`,
    `Node:            NODE_EXTRA_CA_CERTS=${caFile}`,
    `Debian, Ubuntu:  sudo cp ${caFile} /usr/local/share/ca-certificates/agent-platform-local-ca.crt && sudo update-ca-certificates`,
    `macOS:           sudo security add-trusted-cert -d -r trustRoot -k /Library/Keychains/System.keychain ${caFile}`,
  ].join('\n');
}

const DNS_NAME = /^[a-z0-9](?:[a-z0-9-]{0,61}[a-z0-9])?(?:\.[a-z0-9](?:[a-z0-9-]{0,61}[a-z0-9])?)*$/;

const caSubject = (domain: string) => `CN=Agent platform local CA for ${domain}`;

function covers(leaf: X509Certificate, domain: string): boolean {
  return leaf.checkHost(domain) !== undefined && leaf.checkHost(`any.${domain}`) !== undefined;
}

/** The certificate when it parses, matches its key and has more than RENEW_BEFORE_MS left; else null. */
function usable(certFile: string, keyFile: string, now: Date): X509Certificate | null {
  if (!existsSync(certFile) || !existsSync(keyFile)) return null;
  try {
    const cert = new X509Certificate(readFileSync(certFile));
    if (!cert.checkPrivateKey(createPrivateKey(readFileSync(keyFile)))) return null;
    if (new Date(cert.validTo).getTime() - now.getTime() < RENEW_BEFORE_MS || new Date(cert.validFrom) > now) return null;
    return cert;
  } catch {
    return null;
  }
}

function checkOpenssl(openssl: string): void {
  try {
    execFileSync(openssl, ['version'], { stdio: 'pipe', timeout: OPENSSL_TIMEOUT_MS });
  } catch (error) {
    throw new Error(`making the local CA needs the openssl command (${openssl}: ${(error as Error).message.split('\n')[0]}); install it (Debian: apt-get install openssl), or set EDGE_TLS_CERT_FILE and EDGE_TLS_KEY_FILE to a certificate of your own`);
  }
}

/** openssl's configuration for both certificates: their extensions, nothing from the system's openssl.cnf. */
function opensslConfig(domain: string): string {
  return [
    '[req]', 'distinguished_name = dn', 'prompt = no', '[dn]', 'CN = placeholder',
    '[ca_ext]',
    'basicConstraints = critical, CA:TRUE, pathlen:0',
    'keyUsage = critical, keyCertSign, cRLSign',
    'subjectKeyIdentifier = hash',
    `nameConstraints = critical, permitted;DNS:${domain}`,
    '[leaf_ext]',
    'basicConstraints = critical, CA:FALSE',
    'keyUsage = critical, digitalSignature',
    'extendedKeyUsage = serverAuth',
    `subjectAltName = DNS:*.${domain}, DNS:${domain}`,
    'subjectKeyIdentifier = hash',
    'authorityKeyIdentifier = keyid',
    '',
  ].join('\n');
}

type Files = { caFile: string; caKeyFile: string; certFile: string; keyFile: string };

function makeCa(openssl: string, dir: string, domain: string, files: Files): void {
  inScratch(dir, domain, (scratch, config) => {
    const [cert, key] = [join(scratch, 'ca.crt'), join(scratch, 'ca.key')];
    run(openssl, ['req', '-x509', '-new', '-config', config, '-extensions', 'ca_ext', ...EC_KEY, '-sha256', '-days', String(CA_DAYS), '-subj', `/${caSubject(domain)}`, '-keyout', key, '-out', cert]);
    chmodSync(key, 0o600);
    // The key first: a CA certificate is only ever read beside its key.
    renameSync(key, files.caKeyFile);
    renameSync(cert, files.caFile);
  });
}

function makeCertificate(openssl: string, dir: string, domain: string, files: Files): void {
  inScratch(dir, domain, (scratch, config) => {
    const [cert, key, request] = [join(scratch, 'tls.crt'), join(scratch, 'tls.key'), join(scratch, 'tls.csr')];
    run(openssl, ['req', '-new', '-config', config, ...EC_KEY, '-subj', `/CN=*.${domain}`, '-keyout', key, '-out', request]);
    // A random positive 128-bit serial, as CAs use (RFC 5280 §4.1.2.2 allows up to 20 octets).
    const serial = randomBytes(16);
    serial[0]! &= 0x7f;
    run(openssl, ['x509', '-req', '-in', request, '-CA', files.caFile, '-CAkey', files.caKeyFile, '-set_serial', `0x${serial.toString('hex')}`, '-days', String(LEAF_DAYS), '-sha256', '-extfile', config, '-extensions', 'leaf_ext', '-out', cert]);
    chmodSync(key, 0o600);
    // Moved in, not written over, as an edge watching the directory expects (envoy/README.md, "HTTPS").
    renameSync(key, files.keyFile);
    renameSync(cert, files.certFile);
  });
}

const EC_KEY = ['-newkey', 'ec', '-pkeyopt', 'ec_paramgen_curve:P-256', '-nodes'];

/** A scratch directory beside the files (so renames stay on one file system), removed afterwards. */
function inScratch(dir: string, domain: string, make: (scratch: string, config: string) => void): void {
  const scratch = mkdtempSync(join(dir, '.making-'));
  try {
    const config = join(scratch, 'openssl.cnf');
    writeFileSync(config, opensslConfig(domain));
    make(scratch, config);
  } finally {
    rmSync(scratch, { recursive: true, force: true });
  }
}

function run(openssl: string, args: string[]): void {
  try {
    execFileSync(openssl, args, { stdio: 'pipe', timeout: OPENSSL_TIMEOUT_MS });
  } catch (error) {
    const stderr = (error as { stderr?: Buffer }).stderr?.toString().trim();
    throw new Error(`openssl ${args[0]} failed: ${stderr || (error as Error).message}`);
  }
}
