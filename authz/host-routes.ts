/**
 * Host → agent: the one place a request's Host header becomes the agent it is for (issue 34,
 * "Routing seam"). authz's Check asks it before its one Redis round trip; the local edge asks
 * authz, so Envoy and the local edge route alike. Pure: the custom hostnames come in as a
 * lookup (authz/domain-hosts.ts keeps it current).
 */

/**
 * The agent a Host names. `customHost`: the custom hostname it came through, null for the
 * platform hostname. `previewDeployment`: the canary deployment a preview hostname
 * (`<slug>--d<number>.<agent domain>`, issue 36) names, null otherwise.
 */
export interface HostRoute {
  slug: string;
  customHost: string | null;
  previewDeployment: number | null;
}

/** `<slug>--d<number>`: slugs never hold `--` (control/domain/slug.ts), so the split is unambiguous. */
const PREVIEW_LABEL = /^(.+)--d([1-9][0-9]{0,8})$/;

/** Custom hostname → slug, as far as this process knows (`edgeKeyNames.domainHosts`). */
export interface CustomHostLookup {
  slugOf(hostname: string): string | undefined;
}

/**
 * `<slug>.<agentDomain>` (or a preview's `<slug>--d<n>.<agentDomain>`) by suffix, one label
 * before the domain; else a custom hostname of
 * the lookup; else null (404 without asking Redis). Envoy passes the Host header as sent,
 * port included, and in whatever case the client wrote it.
 */
export function routeHost(host: string, agentDomain: string, customHosts: CustomHostLookup): HostRoute | null {
  const hostname = hostnameOf(host);
  const suffix = `.${agentDomain}`;
  if (hostname.endsWith(suffix)) {
    // A name under the agent domain is never a custom domain (the control API refuses to
    // claim one): a miss here is a 404, not a look in the custom copy.
    const label = hostname.slice(0, -suffix.length);
    if (label === '' || label.includes('.')) return null;
    const preview = PREVIEW_LABEL.exec(label);
    return preview ? { slug: preview[1]!, customHost: null, previewDeployment: Number(preview[2]) } : { slug: label, customHost: null, previewDeployment: null };
  }
  if (hostname === '') return null;
  const slug = customHosts.slugOf(hostname);
  return slug === undefined ? null : { slug, customHost: hostname, previewDeployment: null };
}

/** The Host header's name, lowercased and without its port. */
export function hostnameOf(host: string): string {
  const trimmed = host.trim().toLowerCase();
  // An IPv6 literal ([::1]:7080) is never an agent's hostname; leave it whole for the lookups to refuse.
  if (trimmed.startsWith('[')) return trimmed;
  const colon = trimmed.lastIndexOf(':');
  return colon === -1 ? trimmed : trimmed.slice(0, colon);
}
