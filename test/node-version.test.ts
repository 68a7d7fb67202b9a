import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
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
    // Debian's own Node, where the machine has it: the one the platform must refuse.
    let version: string;
    try {
      version = execFileSync('/usr/bin/node', ['--version'], { encoding: 'utf8' }).trim();
    } catch {
      return this.skip(); // reported as pending: no other Node on this machine to try
    }
    if (majorOf(version) === majorOf(wanted)) return this.skip();
    let status: number | null = null;
    let stderr = '';
    try {
      execFileSync('/usr/bin/node', ['--import', 'tsx', 'control/main.ts'], { cwd: new URL('..', import.meta.url), encoding: 'utf8', stdio: ['ignore', 'pipe', 'pipe'], env: { PATH: process.env.PATH } });
    } catch (error) {
      status = (error as { status: number }).status;
      stderr = (error as { stderr: string }).stderr;
    }
    assert.equal(status, 78, `${version}: ${stderr}`);
    assert.match(stderr, /^control: Node .* is not supported/m);
  });
});
