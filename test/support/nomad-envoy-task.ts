import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { parse as parseYaml } from 'yaml';

/**
 * nomad-jobs/envoy.nomad.hcl's edge group as the tests render it: its templates' one
 * consul-template action on the task's environment, and what envoy/envoy.yaml and
 * envoy/tls-listener.yaml (both rendered by the authz task, into the allocation's shared
 * directory) and envoy/tls-sds.yaml (the Envoy task's) must become in the allocation.
 */

type Body = Record<string, any>;

/** NOMAD_ALLOC_DIR in a docker task: the allocation's shared directory (client/allocdir/fs_unix.go, SharedAllocContainerPath). */
export const ALLOC_DIR_IN_DOCKER = '/alloc';

/**
 * NOMAD_SECRETS_DIR in a docker task: the task's own secrets directory (client/allocdir/fs_unix.go,
 * TaskSecretsContainerPath, set by client/allocrunner/taskrunner/task_dir_hook.go `setEnvvars`;
 * drivers/docker/driver.go `containerBinds` binds the task's secrets/ there).
 */
export const SECRETS_DIR_IN_DOCKER = '/secrets';

/** The Envoy task's env as its templates (the TLS files) are rendered in these tests: Nomad's directories. */
export const ENVOY_TASK_ENV: Readonly<Record<string, string>> = {
  NOMAD_ALLOC_DIR: ALLOC_DIR_IN_DOCKER,
  NOMAD_SECRETS_DIR: SECRETS_DIR_IN_DOCKER,
};

/**
 * The authz task's env as its envoy.yaml and tls-listener.yaml templates are rendered in these
 * tests: the console origin envoy/envoy.yaml holds, and the allocation's directory. Not
 * NOMAD_SECRETS_DIR: authz's own secrets are not Envoy's, so a template of authz's that named
 * them for Envoy's certificate would be wrong, and renderEnvTemplate refuses it.
 */
export const AUTHZ_TASK_ENV: Readonly<Record<string, string>> = {
  CONSOLE_ORIGIN: 'http://127.0.0.1:7070',
  NOMAD_ALLOC_DIR: ALLOC_DIR_IN_DOCKER,
};

/** Where envoy.nomad.hcl's authz task listens, as its Envoy sees the path. */
export const ALLOC_SOCKET = `${ALLOC_DIR_IN_DOCKER}/tmp/authz.sock`;
/** Where authz's xDS server listens (AUTHZ_XDS_SOCKET), as its Envoy sees the path. */
export const ALLOC_XDS_SOCKET = `${ALLOC_DIR_IN_DOCKER}/tmp/authz-xds.sock`;

/** The authz task's template destinations of envoy.yaml and tls-listener.yaml, in the allocation's shared directory. */
export const ENVOY_YAML_DESTINATION = '${NOMAD_ALLOC_DIR}/envoy/envoy.yaml';
export const TLS_LISTENER_DESTINATION = '${NOMAD_ALLOC_DIR}/envoy/tls-listener.yaml';
/** A destination or setting as a docker task sees it: `${NOMAD_ALLOC_DIR}` is /alloc. */
export const inDocker = (path: string) => path.replaceAll('${NOMAD_ALLOC_DIR}', ALLOC_DIR_IN_DOCKER);

/** The TLS listener's port on Nomad: unprivileged, 443 being the load balancer's. */
export const NOMAD_TLS_PORT = 7443;

/** The directory of the TLS files in the task: a destination `secrets/tls/…` is `/secrets/tls/…` in the container. */
export const TLS_DIR_IN_TASK = 'secrets/tls';
export const TLS_DIR_IN_DOCKER = `${SECRETS_DIR_IN_DOCKER}/tls`;

const ENVOY_YAML = new URL('../../envoy/envoy.yaml', import.meta.url);
const TLS_LISTENER_YAML = new URL('../../envoy/tls-listener.yaml', import.meta.url);
const TLS_SDS_YAML = new URL('../../envoy/tls-sds.yaml', import.meta.url);

/**
 * Renders the one consul-template action these templates use, `{{ env "NAME" }}`, raw
 * or `| toJSON`, from `env`: the task's env, which Nomad hands the template
 * (client/allocrunner/taskrunner/template/template.go, `templateRunner` sets runner.Env;
 * consul-template's toJSON is json.Marshal, as JSON.stringify for a string). Any other
 * action throws, so a template cannot grow one this test would not render (a Consul
 * lookup or a Variable, which would re-render it and restart Envoy whenever its answer changed).
 */
export function renderEnvTemplate(template: string, env: Readonly<Record<string, string>>): string {
  const rendered = template.replace(/\{\{ env "([A-Z_]+)"( \| toJSON)? \}\}/g, (_, name: string, toJson?: string) => {
    assert.ok(name in env, `the template reads ${name}, which this test's task env lacks`);
    return toJson ? JSON.stringify(env[name]) : env[name]!;
  });
  assert.ok(!rendered.includes('{{'), `the template has an action this test does not render: ${rendered.slice(rendered.indexOf('{{'), rendered.indexOf('{{') + 60)}`);
  return rendered;
}

/** The task's template whose destination is `destination`. */
export function templateAt(task: Body, destination: string): Body {
  const found = ((task.template ?? []) as Body[]).find((t) => t.destination === destination);
  assert.ok(found, `no template renders ${destination}`);
  return found;
}

/** Cluster `name`'s one endpoint address: authz's by default, or authz_xds. */
export function authzAddressOf(config: Body, name: 'authz' | 'authz_xds' = 'authz'): Body {
  const authz = (config.static_resources.clusters as Body[]).find((cluster) => cluster.name === name);
  assert.ok(authz, `cluster ${name}`);
  return authz.load_assignment.endpoints[0].lb_endpoints[0].endpoint.address;
}

export function listenerOf(config: Body, name: string): Body {
  const found = (config.static_resources.listeners as Body[]).find((l) => l.name === name);
  assert.ok(found, `listener ${name}`);
  return found;
}

/** The HTTPS listener's (tls-listener.yaml's) one SDS source from a file: the agent domain's certificate. */
export function sdsSourceOf(tlsListener: Body): Body {
  const context = tlsListener.filter_chains[0].transport_socket.typed_config;
  return context.common_tls_context.tls_certificate_sds_secret_configs[0].sds_config.path_config_source;
}

/**
 * envoy/envoy.yaml as parsed, as it must be in the allocation: clusters authz's and
 * authz_xds's sockets in the allocation's directory. The redirect's port_redirect stays 443:
 * the port callers use.
 */
export function envoyYamlOnNomad(): Body {
  const config = parseYaml(readFileSync(ENVOY_YAML, 'utf8')) as Body;
  authzAddressOf(config).pipe.path = ALLOC_SOCKET;
  authzAddressOf(config, 'authz_xds').pipe.path = ALLOC_XDS_SOCKET;
  return config;
}

/**
 * envoy/tls-listener.yaml as parsed, as it must be in the allocation: the listener on
 * NOMAD_TLS_PORT, and its SDS file in the Envoy task's secrets, as Envoy's container sees them.
 */
export function tlsListenerYamlOnNomad(): Body {
  const listener = parseYaml(readFileSync(TLS_LISTENER_YAML, 'utf8')) as Body;
  listener.address.socket_address.port_value = NOMAD_TLS_PORT;
  const source = sdsSourceOf(listener);
  source.path = `${TLS_DIR_IN_DOCKER}/sds.yaml`;
  source.watched_directory.path = TLS_DIR_IN_DOCKER;
  return listener;
}

/** envoy/tls-sds.yaml as parsed, its certificate, key and watched directory in the task's secrets. */
export function tlsSdsYamlOnNomad(): Body {
  const sds = parseYaml(readFileSync(TLS_SDS_YAML, 'utf8')) as Body;
  const certificate = sds.resources[0].tls_certificate;
  certificate.certificate_chain.filename = `${TLS_DIR_IN_DOCKER}/tls.crt`;
  certificate.private_key.filename = `${TLS_DIR_IN_DOCKER}/tls.key`;
  certificate.watched_directory.path = TLS_DIR_IN_DOCKER;
  return sds;
}
