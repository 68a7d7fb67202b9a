import assert from 'node:assert/strict';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { execFileSync } from 'node:child_process';

const ROOT = new URL('..', import.meta.url);
const wanted = readFileSync(new URL('.node-version', ROOT), 'utf8').trim();
const majorOf = (version: string) => Number(version.replace(/^v/, '').split('.')[0]);

/** Issue 35: everything runs on the Node LTS of .node-version, never Debian's end-of-life Node 20. */
describe("the project's Node", () => {
  it('runs this test suite, and every process it spawns with process.execPath', () => {
    assert.equal(majorOf(process.version), majorOf(wanted), `npm test runs on ${process.version}; .node-version says ${wanted}`);
    const child = execFileSync(process.execPath, ['--version'], { encoding: 'utf8' }).trim();
    assert.equal(majorOf(child), majorOf(wanted));
  });

  it('is the one `node` on PATH for the scripts npm test starts (scripts/ensure-node.sh)', () => {
    const onPath = execFileSync('bash', ['-c', 'node --version'], { encoding: 'utf8' }).trim();
    assert.equal(majorOf(onPath), majorOf(wanted), `node on PATH is ${onPath}`);
  });

  it('is what both package.json files require (engines), and the same major', () => {
    for (const file of ['package.json', 'runtime-image/package.json']) {
      const engines = JSON.parse(readFileSync(new URL(file, ROOT), 'utf8')).engines.node as string;
      const minimum = /^>=(\d+)\.(\d+)$/.exec(engines);
      assert.ok(minimum, `${file} engines.node is a >= range: ${engines}`);
      assert.equal(Number(minimum[1]), majorOf(wanted), `${file} requires Node ${engines}`);
    }
  });
});

describe('refusing another Node at start', () => {
  it('names the version and what to do, and accepts the supported major', async () => {
    const { unsupportedNodeProblem, SUPPORTED_NODE_MAJOR } = await import('../contract/supported-node.js');
    assert.equal(SUPPORTED_NODE_MAJOR, majorOf(wanted), '.node-version and the start check agree');
    assert.equal(unsupportedNodeProblem(`${SUPPORTED_NODE_MAJOR}.0.0`), null);
    assert.match(unsupportedNodeProblem('20.20.2') ?? '', /Node 20\.20\.2 is not supported: the platform runs on Node 24 LTS/);
  });

  it('stops an entry point on Node 20 with exit 78 before anything else', function () {
    // Node 20 as the entry point sees it: a preload, imported before the program, reports 20.20.2 in
    // process.versions. No other Node binary is needed, so the check runs on every machine.
    const work = mkdtempSync(join(tmpdir(), 'node-20-'));
    const preload = join(work, 'as-node-20.mjs');
    writeFileSync(preload, "Object.defineProperty(process, 'versions', { value: { ...process.versions, node: '20.20.2' } });\n");
    let status: number | null = null;
    let stderr = '';
    try {
      execFileSync(process.execPath, ['--import', preload, '--import', 'tsx', 'control/main.ts'], { cwd: new URL('..', import.meta.url), encoding: 'utf8', stdio: ['ignore', 'pipe', 'pipe'], env: { PATH: process.env.PATH } });
    } catch (error) {
      status = (error as { status: number }).status;
      stderr = (error as { stderr: string }).stderr;
    } finally {
      rmSync(work, { recursive: true, force: true });
    }
    assert.equal(status, 78, stderr);
    assert.match(stderr, /^control: Node 20\.20\.2 is not supported/m);
  });
});
