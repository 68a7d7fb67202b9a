import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import { cpSync, mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join, resolve } from 'node:path';
import { promisify } from 'node:util';

const run = promisify(execFile);
const ROOT = resolve(import.meta.dirname, '..');
const bin = (name: string) => join(ROOT, 'node_modules', '.bin', name);
const SOURCE_FOLDERS = ['contract', 'control', 'authz', 'envoy', 'proto', 'scripts', 'bench', 'cli', 'console'];

interface Violation {
  from: string;
  to: string;
  rule: { name: string };
}

/** dependency-cruiser's verdict on `folders` under `cwd`, with the repository's rules (.dependency-cruiser.cjs). */
async function importViolations(cwd: string, folders: string[]): Promise<Violation[]> {
  const { stdout } = await run(bin('depcruise'), ['--config', join(cwd, '.dependency-cruiser.cjs'), '--output-type', 'json', ...folders], {
    cwd,
    maxBuffer: 64 * 1024 * 1024,
  }).catch((error: { stdout?: string }) => ({ stdout: error.stdout ?? '' })); // it exits non-zero when it finds violations
  return JSON.parse(stdout).summary.violations;
}

interface Clone {
  firstFile: { name: string; start: number; end: number };
  secondFile: { name: string; start: number; end: number };
}

/** jscpd's repeated blocks under `cwd`, with the repository's settings (.jscpd.json: six lines or more). */
async function duplicatedBlocks(cwd: string, folders?: string[]): Promise<Clone[]> {
  const output = mkdtempSync(join(tmpdir(), 'jscpd-'));
  try {
    await run(bin('jscpd'), ['--config', join(cwd, '.jscpd.json'), '--reporters', 'json', '--output', output, '--silent', ...(folders ?? [])], { cwd });
    return JSON.parse(readFileSync(join(output, 'jscpd-report.json'), 'utf8')).duplicates;
  } finally {
    rmSync(output, { recursive: true, force: true });
  }
}

/** A throwaway tree holding the repository's rules and the given files. */
function treeWith(files: Record<string, string>): string {
  const tree = mkdtempSync(join(tmpdir(), 'architecture-'));
  for (const config of ['.dependency-cruiser.cjs', '.jscpd.json', 'tsconfig.json']) cpSync(join(ROOT, config), join(tree, config));
  for (const [path, text] of Object.entries(files)) {
    mkdirSync(dirname(join(tree, path)), { recursive: true });
    writeFileSync(join(tree, path), text);
  }
  return tree;
}

const describeViolation = (v: Violation) => `${v.rule.name}: ${v.from} → ${v.to}`;

describe('architecture', function () {
  this.timeout(120_000);

  it('imports only downwards, and control and authz meet only in contract/', async () => {
    const violations = await importViolations(ROOT, SOURCE_FOLDERS);
    assert.deepEqual(violations.map(describeViolation), []);
  });

  it('the import rules catch an upward import, a driver importing the other and control↔authz imports', async () => {
    const tree = treeWith({
      'contract/clock.ts': 'export const now = () => new Date();\n',
      'control/services/agent-service.ts': "export const create = () => 'agent';\n",
      'control/domain/agent.ts': "import { create } from '../services/agent-service.js';\nexport const made = create();\n",
      'control/orchestrator/podman/run-args.ts': 'export const caps = [];\n',
      'control/orchestrator/nomad/job-spec.ts': "import { caps } from '../podman/run-args.js';\nexport const job = caps;\n",
      'authz/checker.ts': "import { create } from '../control/services/agent-service.js';\nexport const check = create;\n",
      'control/http/app.ts': "import { check } from '../../authz/checker.js';\nimport { now } from '../../contract/clock.js';\nexport const app = [check, now];\n",
    });
    try {
      const found = (await importViolations(tree, ['contract', 'control', 'authz'])).map(describeViolation).sort();
      assert.deepEqual(found, [
        'authz-only-through-the-contract: authz/checker.ts → control/services/agent-service.ts',
        'control-only-through-the-contract: control/http/app.ts → authz/checker.ts',
        'drivers-apart-nomad: control/orchestrator/nomad/job-spec.ts → control/orchestrator/podman/run-args.ts',
        'no-domain-to-services: control/domain/agent.ts → control/services/agent-service.ts',
      ]);
    } finally {
      rmSync(tree, { recursive: true, force: true });
    }
  });

  it('the import rules keep agentctl an HTTP client: schema types only, no service, and nothing imports cli/', async () => {
    const tree = treeWith({
      'control/schemas/agents.ts': 'export const Agent = {};\nexport type Agent = { id: string };\n',
      'control/services/agent-service.ts': "export const create = () => 'agent';\n",
      'cli/types-only.ts': "import type { Agent } from '../control/schemas/agents.js';\nexport const id = (agent: Agent) => agent.id;\n",
      'cli/schema-value.ts': "import { Agent } from '../control/schemas/agents.js';\nexport const schema = Agent;\n",
      'cli/service.ts': "import { create } from '../control/services/agent-service.js';\nexport const made = create();\n",
      'control/http/app.ts': "import { id } from '../../cli/types-only.js';\nexport const app = id;\n",
    });
    try {
      const found = (await importViolations(tree, ['control', 'cli'])).map(describeViolation).sort();
      assert.deepEqual(found, [
        'cli-over-http-only: cli/service.ts → control/services/agent-service.ts',
        'cli-schema-types-only: cli/schema-value.ts → control/schemas/agents.ts',
        'nothing-imports-the-cli: control/http/app.ts → cli/types-only.ts',
      ]);
    } finally {
      rmSync(tree, { recursive: true, force: true });
    }
  });

  it('the import rules keep the web console a browser client: schema types only, no service, and nothing imports console/', async () => {
    const tree = treeWith({
      'control/schemas/agents.ts': 'export const Agent = {};\nexport type Agent = { id: string };\n',
      'control/services/agent-service.ts': "export const create = () => 'agent';\n",
      'console/src/types-only.tsx': "import type { Agent } from '../../control/schemas/agents.js';\nexport const id = (agent: Agent) => agent.id;\n",
      'console/src/schema-value.ts': "import { Agent } from '../../control/schemas/agents.js';\nexport const schema = Agent;\n",
      'console/src/service.ts': "import { create } from '../../control/services/agent-service.js';\nexport const made = create();\n",
      'control/http/app.ts': "import { id } from '../../console/src/types-only.js';\nexport const app = id;\n",
    });
    try {
      const found = (await importViolations(tree, ['control', 'console'])).map(describeViolation).sort();
      assert.deepEqual(found, [
        'console-over-http-only: console/src/service.ts → control/services/agent-service.ts',
        'console-schema-types-only: console/src/schema-value.ts → control/schemas/agents.ts',
        'nothing-imports-the-console: control/http/app.ts → console/src/types-only.tsx',
      ]);
    } finally {
      rmSync(tree, { recursive: true, force: true });
    }
  });

  it('repeats no block of six lines or more outside tests and migrations', async () => {
    const clones = await duplicatedBlocks(ROOT);
    const listed = clones.map((c) => `${c.firstFile.name}:${c.firstFile.start}-${c.firstFile.end} = ${c.secondFile.name}:${c.secondFile.start}-${c.secondFile.end}`);
    assert.deepEqual(listed, []);
  });

  it('the duplicate check finds a repeated six-line block', async () => {
    const block = ['const total = items', '  .filter((item) => item.active)', '  .map((item) => item.price * item.quantity)', '  .reduce((sum, value) => sum + value, 0);', 'const tax = Math.round(total * 0.2);', 'const due = total + tax - discount(total);', 'log(`due ${due}`);'].join('\n');
    const tree = treeWith({
      'control/services/a.ts': `export function a(items, discount, log) {\n${block}\n  return 'a';\n}\n`,
      'control/services/b.ts': `export function b(items, discount, log) {\n${block}\n  return 'b';\n}\n`,
    });
    try {
      const clones = await duplicatedBlocks(tree, ['control']);
      assert.equal(clones.length, 1);
      assert.deepEqual([clones[0]!.firstFile.name, clones[0]!.secondFile.name].sort(), ['control/services/a.ts', 'control/services/b.ts']);
    } finally {
      rmSync(tree, { recursive: true, force: true });
    }
  });
});
