import { readFileSync } from 'node:fs';
import { parse } from 'yaml';

/**
 * The HTTPS listener authz serves Envoy by LDS: envoy/tls-listener.yaml, whose chains get the
 * connection manager of envoy.yaml's plain listener, and one chain per custom domain ahead of
 * them. Plain proto3 JSON, as Envoy's YAML is written; authz/xds/resources.ts encodes it.
 */

type Node = Record<string, any>;

/** The listener of envoy.yaml whose filters the HTTPS listener shares. */
export const PLAIN_LISTENER_NAME = 'agent_edge';
/** The SDS name of a custom domain's certificate, served on the same ADS stream. */
export const customDomainSecretName = (hostname: string) => `custom_domain:${hostname}`;

export interface TlsListenerTemplate {
  /** envoy/tls-listener.yaml as parsed, its chains' `filters` filled in. */
  readonly listener: Node;
  readonly name: string;
}

export class ListenerTemplateError extends Error {}

/** Reads the two files once, at start: a template that cannot be built stops authz. */
export function loadTlsListenerTemplate(files: { tlsListenerFile: string; envoyConfigFile: string }): TlsListenerTemplate {
  const listener = parse(readFileSync(files.tlsListenerFile, 'utf8')) as Node;
  const bootstrap = parse(readFileSync(files.envoyConfigFile, 'utf8')) as Node;
  return tlsListenerTemplate(listener, bootstrap, files);
}

export function tlsListenerTemplate(listener: Node, bootstrap: Node, where = { tlsListenerFile: 'the TLS listener', envoyConfigFile: 'the bootstrap' }): TlsListenerTemplate {
  if (typeof listener?.name !== 'string' || !Array.isArray(listener.filter_chains) || listener.filter_chains.length !== 1) {
    throw new ListenerTemplateError(`${where.tlsListenerFile}: a Listener with a name and exactly one filter chain (the agent domain's)`);
  }
  const plain = (bootstrap?.static_resources?.listeners as Node[] | undefined)?.find((candidate) => candidate.name === PLAIN_LISTENER_NAME);
  const filters = plain?.filter_chains?.[0]?.filters;
  if (!Array.isArray(filters) || filters.length === 0) {
    throw new ListenerTemplateError(`${where.envoyConfigFile}: no static listener ${PLAIN_LISTENER_NAME} with filters to share`);
  }
  const [chain] = listener.filter_chains as Node[];
  if (chain!.filter_chain_match?.server_names) {
    throw new ListenerTemplateError(`${where.tlsListenerFile}: the agent domain's chain must match every name (no server_names)`);
  }
  return { name: listener.name, listener: { ...listener, filter_chains: [{ ...chain, filters }] } };
}

/**
 * The listener for these custom hostnames (each with a certificate authz serves): one chain
 * per hostname, matched by SNI exactly, with its certificate by SDS over ADS, then the
 * template's chain for everything else. Each chain's proto depends only on its hostname, so
 * adding or removing one leaves the others' protos equal, and Envoy's in-place update keeps
 * (does not drain) them: it shares an old chain whose whole proto is unchanged
 * (source/common/listener_manager/filter_chain_manager_impl.cc,
 * FilterChainManagerImpl::findExistingFilterChain, keyed by the whole FilterChain message). Sorted, so the same
 * set always makes the same listener.
 */
export function tlsListenerFor(template: TlsListenerTemplate, hostnames: Iterable<string>): Node {
  const [agentDomainChain] = template.listener.filter_chains as Node[];
  const customChains = [...hostnames].sort().map((hostname) => customDomainChain(agentDomainChain!, hostname));
  return { ...template.listener, filter_chains: [...customChains, agentDomainChain] };
}

function customDomainChain(agentDomainChain: Node, hostname: string): Node {
  const tls = agentDomainChain.transport_socket?.typed_config;
  if (!tls) throw new ListenerTemplateError("the agent domain's chain has no TLS transport socket");
  const secret = { name: customDomainSecretName(hostname), sds_config: { ads: {}, resource_api_version: 'V3' } };
  return {
    ...agentDomainChain,
    name: customDomainSecretName(hostname),
    filter_chain_match: { server_names: [hostname] },
    transport_socket: {
      ...agentDomainChain.transport_socket,
      typed_config: { ...tls, common_tls_context: { ...tls.common_tls_context, tls_certificate_sds_secret_configs: [secret] } },
    },
  };
}
