/**
 * The environment podman runs with: what podman and the libraries it uses read, and nothing
 * else. It used to get the control API's whole environment, MASTER_KEYS and DATABASE_URL
 * included, which any podman child (conmon, the OCI runtime, netavark, a credential helper)
 * could then read from /proc/<pid>/environ.
 *
 * - where it runs and finds its helpers and files: PATH, HOME, USER, LOGNAME, TMPDIR, XDG_*
 *   (rootless storage and the default auth file under XDG_RUNTIME_DIR);
 * - containers-common's own variables: CONTAINERS_* (CONTAINERS_CONF, CONTAINERS_STORAGE_CONF,
 *   CONTAINERS_REGISTRIES_CONF, ...), REGISTRY_AUTH_FILE, STORAGE_DRIVER, STORAGE_OPTS, and
 *   the remote client's CONTAINER_HOST, CONTAINER_CONNECTION, CONTAINER_SSHKEY, CONTAINER_PASSPHRASE;
 * - Go's network and TLS settings for pulls: the proxies and SSL_CERT_FILE, SSL_CERT_DIR;
 * - the locale and time zone, and the session bus (rootless podman with systemd cgroups).
 *
 * podman 4.3 runs every command of the driver as root with this much: the podman suites
 * run on it, and test/registry-podman.test.ts records what podman was given.
 */
export const PODMAN_ENVIRONMENT = {
  names: [
    'PATH', 'HOME', 'USER', 'LOGNAME', 'TMPDIR', 'LANG', 'TZ',
    'REGISTRY_AUTH_FILE', 'STORAGE_DRIVER', 'STORAGE_OPTS',
    'CONTAINER_HOST', 'CONTAINER_CONNECTION', 'CONTAINER_SSHKEY', 'CONTAINER_PASSPHRASE',
    'HTTP_PROXY', 'HTTPS_PROXY', 'NO_PROXY', 'http_proxy', 'https_proxy', 'no_proxy',
    'SSL_CERT_FILE', 'SSL_CERT_DIR', 'DBUS_SESSION_BUS_ADDRESS',
  ],
  prefixes: ['XDG_', 'CONTAINERS_', 'LC_'],
} as const;

/** The variables of `env` podman is handed (what SettingReader.passthrough picks with PODMAN_ENVIRONMENT). */
export function podmanEnvironmentOf(env: Record<string, string | undefined>): Record<string, string> {
  const { names, prefixes } = PODMAN_ENVIRONMENT;
  return Object.fromEntries(
    Object.entries(env).filter(
      (entry): entry is [string, string] => entry[1] !== undefined && ((names as readonly string[]).includes(entry[0]) || prefixes.some((prefix) => entry[0].startsWith(prefix))),
    ),
  );
}

