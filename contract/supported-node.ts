/**
 * The Node major every process of the platform runs on: .node-version's, which
 * scripts/ensure-node.sh puts on PATH, and package.json's `engines`. Node 20 reached end of
 * life in April 2026, and the code relies on what came after it (process.loadEnvFile,
 * Promise.withResolvers, the built-in WebSocket and fetch of 22+).
 */
export const SUPPORTED_NODE_MAJOR = 24;

/** Why `version` (process.versions.node) cannot run the platform, or null when it can. Pure. */
export function unsupportedNodeProblem(version: string): string | null {
  const major = Number(version.split('.')[0]);
  if (major === SUPPORTED_NODE_MAJOR) return null;
  return `Node ${version} is not supported: the platform runs on Node ${SUPPORTED_NODE_MAJOR} LTS (.node-version). Start it through npm run (scripts/ensure-node.sh fetches that Node), or install Node ${SUPPORTED_NODE_MAJOR}.`;
}

/**
 * Exits with EX_CONFIG (78) and the reason when this process runs on another Node: what each
 * entry point calls first, so a wrong Node fails at start with one clear line, not later with an
 * obscure error.
 */
export function refuseUnsupportedNode(program: string): void {
  const problem = unsupportedNodeProblem(process.versions.node);
  if (problem === null) return;
  process.stderr.write(`${program}: ${problem}\n`);
  process.exit(78);
}
