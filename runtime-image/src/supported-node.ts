/**
 * Imported first by main.ts, so it runs before any other module loads: the runtime is built
 * and tested on Node 24 LTS (the platform's .node-version; package.json `engines`), which its
 * image carries. Elsewhere it stops at once with one line and EX_CONFIG (78).
 */
const SUPPORTED_NODE_MAJOR = 24;

const major = Number(process.versions.node.split('.')[0]);
if (major !== SUPPORTED_NODE_MAJOR) {
  process.stderr.write(`agent-runtime: Node ${process.versions.node} is not supported: it runs on Node ${SUPPORTED_NODE_MAJOR} LTS\n`);
  process.exit(78);
}

export {};
