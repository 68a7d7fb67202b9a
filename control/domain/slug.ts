import { randomBase62 } from '../crypto/tokens.js';

/**
 * The hostname label of an agent: its name made DNS-safe plus a random suffix, so two
 * agents named alike never collide and a slug does not reveal how many agents exist.
 */
export function slugFor(name: string): string {
  const base = name
    .normalize('NFKD')
    .toLowerCase()
    .replace(/[^a-z0-9]+/g, '-')
    .replace(/^-+|-+$/g, '')
    .slice(0, 40)
    .replace(/-+$/g, '');
  const suffix = randomBase62(8).toLowerCase();
  return base ? `${base}-${suffix}` : `agent-${suffix}`;
}
