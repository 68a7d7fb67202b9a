import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import { cpSync, existsSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join, resolve } from 'node:path';
import { promisify } from 'node:util';
import ts from 'typescript';

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

/**
 * The rule on process.env, which no import graph shows (dependency-cruiser sees modules, not
 * globals): settings are read from the environment by a loader that is handed it
 * (contract/settings-reader.ts, and cli/settings.ts for agentctl), and only an entry point
 * touches process.env, to hand it whole to a call: `loadConfig(process.env)`. Nothing reads
 * a variable of it (`process.env.PORT`), copies it (`{ ...process.env }`), defaults to it
 * (`env = process.env`) or takes it apart (`const { env } = process`, `import { env } from
 * 'node:process'`). Entry points are the processes' main modules and the commands:
 * control/main.ts and admin.ts, authz/main.ts, envoy/local-edge/main.ts, cli/main.ts and
 * the scripts' top-level files. bench/ and test/ are harnesses, each benchmark its own
 * entry point with BENCH_* knobs, and are not held to it; runtime-image/ ships alone with
 * its own reader.
 */
const ENTRY_POINT = /^(control\/(main|admin|migrate)|authz\/main|envoy\/local-edge\/main|cli\/main|scripts\/[^/]+)\.ts$/;
const ENVIRONMENT_FOLDERS = SOURCE_FOLDERS.filter((folder) => folder !== 'bench');

/** Each place under `cwd`'s `folders` that breaks the rule on process.env, as path:line. */
function environmentReads(cwd: string, folders: string[]): string[] {
  const found: string[] = [];
  const sourceFiles = (folder: string): string[] =>
    readdirSync(join(cwd, folder), { withFileTypes: true }).flatMap((entry) => {
      const path = `${folder}/${entry.name}`;
      if (entry.isDirectory()) return ['node_modules', 'dist'].includes(entry.name) ? [] : sourceFiles(path);
      return /\.tsx?$/.test(entry.name) ? [path] : [];
    });
  for (const path of folders.filter((folder) => existsSync(join(cwd, folder))).flatMap(sourceFiles)) {
    const source = ts.createSourceFile(path, readFileSync(join(cwd, path), 'utf8'), ts.ScriptTarget.Latest, true, path.endsWith('x') ? ts.ScriptKind.TSX : ts.ScriptKind.TS);
    const isProcess = (node: ts.Node) => ts.isIdentifier(node) && node.text === 'process';
    const report = (node: ts.Node) => found.push(`${path}:${source.getLineAndCharacterOfPosition(node.getStart()).line + 1}`);
    const visit = (node: ts.Node): void => {
      const environment =
        (ts.isPropertyAccessExpression(node) && isProcess(node.expression) && node.name.text === 'env') ||
        (ts.isElementAccessExpression(node) && isProcess(node.expression) && ts.isStringLiteralLike(node.argumentExpression) && node.argumentExpression.text === 'env');
      if (environment) {
        const handedWhole = ts.isCallExpression(node.parent) && node.parent.arguments.includes(node as ts.Expression);
        if (!(ENTRY_POINT.test(path) && handedWhole)) report(node);
      } else if (ts.isVariableDeclaration(node) && ts.isObjectBindingPattern(node.name) && node.initializer && isProcess(node.initializer)) {
        report(node);
      } else if (ts.isImportDeclaration(node) && ts.isStringLiteral(node.moduleSpecifier) && ['process', 'node:process'].includes(node.moduleSpecifier.text)) {
        const named = node.importClause?.namedBindings;
        if (named && ts.isNamedImports(named) && named.elements.some((element) => (element.propertyName ?? element.name).text === 'env')) report(node);
      }
      ts.forEachChild(node, visit);
    };
    visit(source);
  }
  return found.sort();
}

/**
 * Every control has a driver (issue 33), so no service treats the orchestrator, or the
 * runner that hands it its work, as optional: a `?.` on either would quietly skip the
 * orchestrator's part. Read from the syntax, not the text, so a comment may name one.
 */
const SERVICE_FOLDERS = ['control/services', 'control/billing'];
const RUNNER_NAME = /(runner|orchestrator)$/i;

/** Each `?.` on a runner or an orchestrator in the services under `cwd`, as path:line. */
function optionalRunnerUses(cwd: string): string[] {
  const found: string[] = [];
  const files = SERVICE_FOLDERS.filter((folder) => existsSync(join(cwd, folder)))
    .flatMap((folder) => (readdirSync(join(cwd, folder), { recursive: true }) as string[]).map((name) => `${folder}/${name}`))
    .filter((path) => path.endsWith('.ts'));
  for (const path of files) {
    const source = ts.createSourceFile(path, readFileSync(join(cwd, path), 'utf8'), ts.ScriptTarget.Latest, true);
    const named = (node: ts.Expression) => RUNNER_NAME.test(ts.isIdentifier(node) ? node.text : ts.isPropertyAccessExpression(node) ? node.name.text : '');
    const visit = (node: ts.Node): void => {
      const optional = (ts.isPropertyAccessExpression(node) || ts.isElementAccessExpression(node) || ts.isCallExpression(node)) && node.questionDotToken !== undefined;
      if (optional && named(node.expression)) found.push(`${path}:${source.getLineAndCharacterOfPosition(node.getStart()).line + 1}`);
      ts.forEachChild(node, visit);
    };
    visit(source);
  }
  return found.sort();
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

  it('the import rules keep ManualClock in test/: neither the platform nor bench/ imports it', async () => {
    const tree = treeWith({
      'contract/clock.ts': 'export interface Clock { now(): Date }\n',
      'test/support/manual-clock.ts': "import type { Clock } from '../../contract/clock.js';\nexport class ManualClock implements Clock { now() { return new Date(0); } }\n",
      'test/usage.test.ts': "import { ManualClock } from './support/manual-clock.js';\nexport const clock = new ManualClock();\n",
      'control/services/usage-meter.ts': "import { ManualClock } from '../../test/support/manual-clock.js';\nexport const clock = new ManualClock();\n",
      'bench/wake.bench.ts': "import type { ManualClock } from '../test/support/manual-clock.js';\nexport type Clock = ManualClock;\n",
    });
    try {
      const found = (await importViolations(tree, ['contract', 'control', 'bench', 'test'])).map(describeViolation).sort();
      assert.deepEqual(found, [
        'manual-clock-in-tests-only: bench/wake.bench.ts → test/support/manual-clock.ts',
        'manual-clock-in-tests-only: control/services/usage-meter.ts → test/support/manual-clock.ts',
      ]);
    } finally {
      rmSync(tree, { recursive: true, force: true });
    }
  });

  it('reads process.env only in entry points, which hand it whole to a settings loader', () => {
    assert.deepEqual(environmentReads(ROOT, ENVIRONMENT_FOLDERS), []);
  });

  it('the process.env rule catches a variable read, a copy, a default, a destructuring and an import, and a module handing it on', () => {
    const tree = treeWith({
      'control/main.ts': "import { loadConfig } from './config.js';\nexport const config = loadConfig(process.env);\n",
      'control/config.ts': 'export const loadConfig = (env: Record<string, string | undefined> = process.env) => env;\n',
      'control/services/meter.ts': "export const interval = Number(process.env.METER_INTERVAL_MS ?? 1000);\nexport const prefix = process.env['REDIS_KEY_PREFIX'];\n",
      'authz/main.ts': 'const { env } = process;\nexport const url = env.REDIS_URL;\n',
      'cli/main.ts': "import { env } from 'node:process';\nexport const token = env.AGENTCTL_TOKEN;\n",
      'scripts/up.ts': "import { start } from './lib/start.js';\nstart({ ...process.env, EDGE_PORT: '7080' });\n",
      'scripts/lib/start.ts': 'export const start = (env: object) => spawn(env);\nexport const again = () => start(process.env);\ndeclare function spawn(env: object): void;\n',
      'bench/load.ts': 'export const rounds = Number(process.env.BENCH_ROUNDS ?? 3);\n',
    });
    try {
      assert.deepEqual(environmentReads(tree, ENVIRONMENT_FOLDERS), [
        'authz/main.ts:1',
        'cli/main.ts:1',
        'control/config.ts:1',
        'control/services/meter.ts:1',
        'control/services/meter.ts:2',
        'scripts/lib/start.ts:2',
        'scripts/up.ts:2',
      ]);
    } finally {
      rmSync(tree, { recursive: true, force: true });
    }
  });

  it('no service treats the orchestrator or its runner as optional (no `?.` on either)', () => {
    assert.deepEqual(optionalRunnerUses(ROOT), []);
  });

  it('the optional-runner rule catches a `?.` on a runner or an orchestrator, and not one in a comment', () => {
    const tree = treeWith({
      'control/services/agent-service.ts': [
        'export class AgentService {',
        '  constructor(private readonly runner?: { request(id: string): void }, private readonly orchestrator?: { status(id: string): Promise<null> }) {}',
        "  // Skipped without a runner: this.runner?.request('a')",
        "  remove(id: string) { this.runner?.request(id); }",
        '  status(id: string) { return this.orchestrator?.status(id); }',
        '  other(streams?: { end(): void }) { streams?.end(); }',
        '}',
        '',
      ].join('\n'),
      'control/billing/provider.ts': "export const charge = (parts: { runner?: { request(id: string): void } }) => parts.runner?.request('x');\n",
    });
    try {
      assert.deepEqual(optionalRunnerUses(tree), ['control/billing/provider.ts:1', 'control/services/agent-service.ts:4', 'control/services/agent-service.ts:5']);
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
