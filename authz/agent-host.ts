/**
 * The slug an agent hostname names, or null when the hostname cannot be an agent's
 * (`<slug>.<agentDomain>`, one label before the domain). Envoy passes the Host header
 * as sent, port included, and in whatever case the client wrote it.
 */
export function slugFromHost(host: string, agentDomain: string): string | null {
  const hostname = stripPort(host.trim().toLowerCase());
  const suffix = `.${agentDomain}`;
  if (!hostname.endsWith(suffix)) return null;
  const slug = hostname.slice(0, -suffix.length);
  if (slug === '' || slug.includes('.')) return null;
  return slug;
}

function stripPort(host: string): string {
  // An IPv6 literal ([::1]:7080) is never an agent hostname; leave it for the suffix check to refuse.
  if (host.startsWith('[')) return host;
  const colon = host.lastIndexOf(':');
  return colon === -1 ? host : host.slice(0, colon);
}
