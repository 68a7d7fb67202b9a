import { dirname, join } from 'node:path';
import { HTTP_REDIRECT_RUNTIME_KEY } from '../../envoy/local-edge/envoy-parity.js';
import { ensureLocalTls } from './local-tls.js';

type Env = Record<string, string | undefined>;

/** How `npm run up` gives the edge HTTPS. */
export interface UpEdgeTls {
  /** Settings up.ts adds for the edge and the control API (the operator's own win). */
  readonly env: Readonly<Record<string, string>>;
  /** The local CA to tell the user to trust, or null when the operator brought a certificate. */
  readonly caFile: string | null;
  /** What was made this run, for the log. */
  readonly made: 'nothing' | 'certificate' | 'ca and certificate';
}

/**
 * The HTTPS listener's port, SDS file and its directory, as envoy/tls-listener.yaml names them
 * for a host without Nomad (authz serves Envoy that listener by LDS), and the port envoy.yaml's
 * redirect sends plain HTTP to.
 */
export const ENVOY_TLS_PORT = 443;
export const ENVOY_SDS_FILE = '/etc/agent-platform/tls/sds.yaml';
/** envoy/tls-sds.yaml's certificate, key and watched directory. */
export const ENVOY_TLS_DIR = '/etc/agent-platform/tls';

/**
 * The operator's EDGE_TLS_CERT_FILE and EDGE_TLS_KEY_FILE, or else a local CA and a
 * certificate for `*.<AGENT_DOMAIN>` under `<data dir>/tls` (scripts/lib/local-tls.ts).
 * Agent URLs become https on EDGE_HTTPS_PORT (7443), unless AGENT_URL_SCHEME or
 * AGENT_URL_PORT say otherwise.
 */
export function upEdgeTls(env: Env, dataDir: string): UpEdgeTls {
  const httpsPort = env.EDGE_HTTPS_PORT || '7443';
  let files: { certFile: string; keyFile: string; caFile: string | null; made: UpEdgeTls['made'] };
  if (env.EDGE_TLS_CERT_FILE || env.EDGE_TLS_KEY_FILE) {
    // The local edge refuses one without the other, with the message that says so.
    files = { certFile: env.EDGE_TLS_CERT_FILE ?? '', keyFile: env.EDGE_TLS_KEY_FILE ?? '', caFile: null, made: 'nothing' };
  } else {
    const local = ensureLocalTls({ dir: join(dataDir, 'tls'), domain: env.AGENT_DOMAIN || 'agents.localhost' });
    files = { ...local };
  }
  return {
    env: {
      EDGE_TLS_CERT_FILE: files.certFile,
      EDGE_TLS_KEY_FILE: files.keyFile,
      EDGE_HTTPS_PORT: httpsPort,
      AGENT_URL_SCHEME: env.AGENT_URL_SCHEME || 'https',
      AGENT_URL_PORT: env.AGENT_URL_PORT ?? (env.AGENT_URL_SCHEME === 'http' ? env.EDGE_PORT || '7080' : httpsPort),
    },
    caFile: files.caFile,
    made: files.made,
  };
}

export interface EnvoyTlsFiles {
  readonly certFile: string;
  readonly keyFile: string;
  /** Where the SDS file is written; its directory is watched for it alone. */
  readonly sdsFile: string;
  readonly httpsPort: number;
}

/**
 * envoy.yaml, envoy/tls-listener.yaml and envoy/tls-sds.yaml for an installed Envoy under
 * `npm run up`: the redirect to `httpsPort` in envoy.yaml; the HTTPS listener authz serves
 * Envoy on `httpsPort` (443 needs privileges) with its SDS file at `sdsFile`; that file naming
 * the operator's or the local CA's files. Only those values change.
 */
export function envoyTlsFor(bootstrapYaml: string, tlsListenerYaml: string, sdsYaml: string, files: EnvoyTlsFiles): { bootstrap: string; tlsListener: string; sds: string } {
  const bootstrap = replaceOnce(bootstrapYaml, `port_redirect: ${ENVOY_TLS_PORT}`, `port_redirect: ${files.httpsPort}`);
  let tlsListener = replaceOnce(tlsListenerYaml, `socket_address: { address: 0.0.0.0, port_value: ${ENVOY_TLS_PORT} }`, `socket_address: { address: 0.0.0.0, port_value: ${files.httpsPort} }`);
  tlsListener = replaceOnce(tlsListener, `path: ${ENVOY_SDS_FILE}`, `path: ${JSON.stringify(files.sdsFile)}`);
  tlsListener = replaceOnce(tlsListener, `watched_directory: { path: ${ENVOY_TLS_DIR} }`, `watched_directory: { path: ${JSON.stringify(dirname(files.sdsFile))} }`);
  let sds = replaceOnce(sdsYaml, `{ filename: ${ENVOY_TLS_DIR}/tls.crt }`, `{ filename: ${JSON.stringify(files.certFile)} }`);
  sds = replaceOnce(sds, `{ filename: ${ENVOY_TLS_DIR}/tls.key }`, `{ filename: ${JSON.stringify(files.keyFile)} }`);
  // One directory to watch when both files are in it; else Envoy watches each file's own (sds_api.cc).
  const watched = `      watched_directory: { path: ${ENVOY_TLS_DIR} }\n`;
  sds = dirname(files.certFile) === dirname(files.keyFile)
    ? replaceOnce(sds, watched, `      watched_directory: { path: ${JSON.stringify(dirname(files.certFile))} }\n`)
    : replaceOnce(sds, watched, '');
  return { bootstrap, tlsListener, sds };
}

/**
 * EDGE_HTTP_REDIRECT for Envoy: the runtime layer that turns envoy.yaml's redirect route
 * on, as arguments to `envoy` (--config-yaml is merged into the bootstrap; envoy.yaml has
 * no layered_runtime of its own). None when the redirect is off.
 */
export function envoyRedirectArgs(httpRedirect: boolean): string[] {
  if (!httpRedirect) return [];
  const layer = { layered_runtime: { layers: [{ name: 'edge_settings', static_layer: { [HTTP_REDIRECT_RUNTIME_KEY]: 100 } }] } };
  return ['--config-yaml', JSON.stringify(layer)];
}

function replaceOnce(text: string, expected: string, replacement: string): string {
  const at = text.indexOf(expected);
  if (at < 0 || text.indexOf(expected, at + 1) >= 0) throw new Error(`expected "${expected.trim()}" once in Envoy's file`);
  return text.slice(0, at) + replacement + text.slice(at + expected.length);
}
