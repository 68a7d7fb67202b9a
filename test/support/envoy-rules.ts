/**
 * Checks Envoy makes when it loads a config, past its protos (test/support/envoy-schema.ts
 * has those): ported from Envoy's source, each with the message Envoy refuses with, so a
 * bootstrap or a listener authz serves fails a test here instead of an Envoy start or an
 * LDS update (a rejected update leaves Envoy on the last listener it took).
 */

type Node = Record<string, any>;

/**
 * Envoy's node identity for xDS: an SDS subscription (a file's included: TlsCertificateSdsApi::create,
 * source/common/secret/sds_api.cc), the ADS mux ("ads") and LDS ("lds") each call
 * Utility::checkLocalInfo (source/common/config/utility.cc), which refuses an empty node id or
 * cluster. envoy.yaml sets them in `node`; the command line (--service-node, --service-cluster)
 * could too, and no job or script here passes those.
 */
export function localInfoProblems(bootstrap: Node, served: readonly Node[] = []): string[] {
  const subscribers = [
    ...(bootstrap.dynamic_resources?.ads_config ? ['ads'] : []),
    ...(bootstrap.dynamic_resources?.lds_config ? ['lds'] : []),
    ...(bootstrap.dynamic_resources?.cds_config ? ['cds'] : []),
    ...(someKey([bootstrap.static_resources, ...served], 'sds_config') ? ['TlsCertificateSdsApi'] : []),
  ];
  const { id, cluster } = bootstrap.node ?? {};
  if (typeof id === 'string' && id !== '' && typeof cluster === 'string' && cluster !== '') return [];
  return subscribers.map(
    (prefix) => `${prefix}: node 'id' and 'cluster' are required. Set it either in 'node' config or via --service-node and --service-cluster options.`,
  );
}

/**
 * Every `envoy_grpc.cluster_name`, in the bootstrap (ads_config, ext_authz, the gRPC access log)
 * and in the listeners authz serves, names a static cluster of the bootstrap: Envoy's gRPC
 * client factory refuses any other (source/common/grpc/async_client_manager_impl.cc,
 * AsyncClientFactoryImpl: "Unknown gRPC client cluster '…'", "gRPC client cluster '…' is not static").
 * No CDS here, so every cluster is in static_resources.
 */
export function grpcClusterProblems(bootstrap: Node, served: readonly Node[] = []): string[] {
  const clusters = new Set(((bootstrap.static_resources?.clusters ?? []) as Node[]).map((cluster) => cluster.name));
  const named: string[] = [];
  walk([bootstrap, ...served], (node) => {
    const name = node.envoy_grpc?.cluster_name;
    if (typeof name === 'string') named.push(name);
  });
  return [...new Set(named)].filter((name) => !clusters.has(name)).map((name) => `Unknown gRPC client cluster '${name}'`);
}

/** The `envoy_grpc.cluster_name`s named anywhere in `nodes`. */
export function grpcClusterNames(...nodes: Node[]): string[] {
  const named = new Set<string>();
  walk(nodes, (node) => {
    if (typeof node.envoy_grpc?.cluster_name === 'string') named.add(node.envoy_grpc.cluster_name);
  });
  return [...named];
}

/**
 * A listener's filter chains as Envoy indexes them without a filter_chain_matcher
 * (source/common/listener_manager/filter_chain_manager_impl.cc):
 * - FilterChainManagerImpl::verifyNoDuplicateMatchers: two chains whose FilterChainMatch
 *   messages are equal (an absent one equals an empty one) are "… has the same matching
 *   rules defined as …", and address_suffix / suffix_len are "unimplemented fields";
 * - setupFilterChainMatcher: a `*` anywhere but a leading `*.` is a partial wildcard, refused;
 *   names are lowercased;
 * - addFilterChainForDestinationPorts … addFilterChainForSourcePorts: each chain fills one leaf
 *   per combination of its repeated fields (destination port, prefix range, server name, transport
 *   protocol, ALPN, direct source range, source type, source range, source port), and a leaf
 *   filled twice is "multiple filter chains with overlapping matching rules are defined".
 * CIDR ranges are compared as written (Envoy normalizes them first): the listeners here have none.
 */
export function filterChainProblems(listener: Node): string[] {
  const where = `error adding listener '${addressOf(listener)}'`;
  const problems: string[] = [];
  const matches: { match: string; name: string }[] = [];
  const leaves = new Set<string>();
  for (const chain of (listener.filter_chains ?? []) as Node[]) {
    const match = (chain.filter_chain_match ?? {}) as Node;
    const name = (chain.name as string | undefined) ?? '';
    if ((match.address_suffix ?? '') !== '' || match.suffix_len !== undefined) {
      problems.push(`${where}: filter chain '${name}' contains unimplemented fields`);
    }
    const canonical = canonicalJson(match);
    const same = matches.find((earlier) => earlier.match === canonical);
    if (same) {
      problems.push(`${where}: filter chain '${name}' has the same matching rules defined as '${same.name}'`);
      continue;
    }
    matches.push({ match: canonical, name });
    const serverNames = ((match.server_names ?? []) as string[]).map((serverName) => serverName.toLowerCase());
    if (serverNames.some((serverName) => serverName.includes('*') && !serverName.startsWith('*.'))) {
      problems.push(`${where}: partial wildcards are not supported in "server_names"`);
      continue;
    }
    const cidr = (range: Node) => `${range.address_prefix}/${range.prefix_len ?? ''}`;
    const axes: string[][] = [
      [String(match.destination_port ?? 0)],
      orEmpty(((match.prefix_ranges ?? []) as Node[]).map(cidr)),
      orEmpty(serverNames.map((serverName) => (serverName.startsWith('*.') ? serverName.slice(1) : serverName))),
      [match.transport_protocol ?? ''],
      orEmpty((match.application_protocols ?? []) as string[]),
      orEmpty(((match.direct_source_prefix_ranges ?? []) as Node[]).map(cidr)),
      [String(match.source_type ?? 'ANY')],
      orEmpty(((match.source_prefix_ranges ?? []) as Node[]).map(cidr)),
      ((match.source_ports ?? []) as number[]).length > 0 ? (match.source_ports as number[]).map(String) : ['0'],
    ];
    let overlapping = false;
    for (const leaf of product(axes)) {
      const key = JSON.stringify(leaf);
      if (leaves.has(key)) overlapping = true;
      leaves.add(key);
    }
    if (overlapping) problems.push(`${where}: multiple filter chains with overlapping matching rules are defined`);
  }
  return problems;
}

/**
 * The served HTTPS listener's own shape: each custom domain's chain matches exactly one server
 * name, no name twice, and one chain, the agent domain's, matches everything else (no
 * filter_chain_match). Stricter than Envoy, which would take several names in a chain: authz
 * makes one chain per hostname, so that adding one leaves the others' protos, and their
 * connections, alone (authz/xds/tls-listener.ts).
 */
export function servedChainProblems(listener: Node): string[] {
  const problems: string[] = [];
  const chains = (listener.filter_chains ?? []) as Node[];
  const catchAll = chains.filter((chain) => chain.filter_chain_match === undefined);
  if (catchAll.length !== 1) problems.push(`${catchAll.length} chains without filter_chain_match; exactly one, the agent domain's`);
  const names: string[] = [];
  for (const chain of chains.filter((c) => c.filter_chain_match !== undefined)) {
    const serverNames = (chain.filter_chain_match.server_names ?? []) as string[];
    if (serverNames.length !== 1) problems.push(`chain '${chain.name ?? ''}' matches ${serverNames.length} server names; one`);
    names.push(...serverNames.map((name) => name.toLowerCase()));
  }
  const twice = names.filter((name, index) => names.indexOf(name) !== index);
  if (twice.length > 0) problems.push(`server names in more than one chain: ${[...new Set(twice)].join(', ')}`);
  return problems;
}

/**
 * A chain chosen by server_names needs the SNI before the handshake, which only the TLS inspector
 * listener filter reads from the ClientHello (findFilterChainForServerName matches
 * `socket.requestedServerName()`, empty without it). Envoy does not refuse such a listener, and
 * no longer adds the inspector by itself: every TLS connection would quietly get the catch-all
 * chain, the agent domain's certificate.
 */
export function tlsInspectorProblems(listener: Node): string[] {
  const bySni = ((listener.filter_chains ?? []) as Node[]).some((chain) => (chain.filter_chain_match?.server_names ?? []).length > 0);
  const inspector = ((listener.listener_filters ?? []) as Node[]).some(
    (filter) => filter.typed_config?.['@type'] === 'type.googleapis.com/envoy.extensions.filters.listener.tls_inspector.v3.TlsInspector',
  );
  return bySni && !inspector ? [`listener '${listener.name}' matches server_names without the envoy.filters.listener.tls_inspector listener filter`] : [];
}

/** All of the above for a bootstrap and the listeners authz serves it. */
export function envoyLoadProblems(bootstrap: Node, served: readonly Node[] = []): string[] {
  return [
    ...localInfoProblems(bootstrap, served),
    ...grpcClusterProblems(bootstrap, served),
    ...[...((bootstrap.static_resources?.listeners ?? []) as Node[]), ...served].flatMap((listener) => [
      ...filterChainProblems(listener),
      ...tlsInspectorProblems(listener),
    ]),
  ];
}

function addressOf(listener: Node): string {
  const socket = listener.address?.socket_address;
  return socket ? `${socket.address}:${socket.port_value}` : String(listener.name);
}

function orEmpty(values: string[]): string[] {
  return values.length > 0 ? values : [''];
}

function product(axes: string[][]): string[][] {
  return axes.reduce<string[][]>((combinations, axis) => combinations.flatMap((combination) => axis.map((value) => [...combination, value])), [[]]);
}

/** JSON with sorted keys: equal FilterChainMatch messages give equal strings. */
function canonicalJson(value: unknown): string {
  if (Array.isArray(value)) return `[${value.map(canonicalJson).join(',')}]`;
  if (typeof value === 'object' && value !== null) {
    return `{${Object.keys(value).sort().map((key) => `${JSON.stringify(key)}:${canonicalJson((value as Node)[key])}`).join(',')}}`;
  }
  return JSON.stringify(value);
}

function someKey(nodes: unknown[], key: string): boolean {
  let found = false;
  walk(nodes, (node) => {
    if (key in node) found = true;
  });
  return found;
}

function walk(value: unknown, visit: (node: Node) => void): void {
  if (Array.isArray(value)) value.forEach((item) => walk(item, visit));
  else if (typeof value === 'object' && value !== null) {
    visit(value as Node);
    Object.values(value).forEach((item) => walk(item, visit));
  }
}
