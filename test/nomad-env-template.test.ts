import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { parse as parseHcl } from '@cdktf/hcl2json';
import { ENV_FILE_MAX_LINE_BYTES, envFileLineBytes } from '../control/domain/secret-env-limits.js';
import { nomadJobFor, variablePath } from '../control/orchestrator/nomad/job-spec.js';
import { startControl, type TestControl } from './support/control-harness.js';
import { defaultNomadSettings, sampleSpec } from './support/nomad-samples.js';
import { renderTemplate, type VariableLookup } from './support/upstream/consul-template-render.js';
import { parseEnvFile } from './support/upstream/go-envparse.js';

/**
 * Secrets reach a Nomad task through a template with `env = true`: consul-template renders
 * the Variable's items into a file, and Nomad reads that file back with go-envparse. Both
 * are ported from their source (test/support/upstream/), so what the container would get
 * is checked here byte for byte: each value reads back exactly, or the control API refuses
 * it up front.
 */

/** Values a secret may hold: one of each kind of character that quoting could lose or break. */
const VALUES: Readonly<Record<string, string>> = {
  AMPERSAND: 'a&b&&c', // json.Marshal writes \u0026
  ANGLES: '<script>x</script>',
  BACKSLASH: 'C:\\dir\\file\\',
  DOUBLE_QUOTE: 'say "hi"',
  SINGLE_QUOTE: "it's",
  DOLLAR: '$HOME ${PATH} $$',
  EQUALS: 'a=b==c=',
  HASH: '#not a comment # still not',
  NEWLINE: '-----BEGIN KEY-----\nabc\n-----END KEY-----\n',
  CARRIAGE_RETURN: 'a\r\nb\r',
  TAB: '\tindented\t',
  ACCENTED: 'café é',
  CJK: '日本',
  EMOJI: '🔑😀',
  LINE_SEPARATORS: 'a\u2028b\u2029c',
  EMPTY: '',
  SURROUNDING_SPACE: '  padded  ',
  CONTROL_01: 'a\x01b',
  DELETE_7F: 'a\x7fb',
  EVERYTHING: `& < > \\ " ' $ = # \n \r \t é 日本 😀 \u2028 \x01 \x7f`,
};

const reads = (text: string, lookup: VariableLookup) => {
  const rendered = renderTemplate(text, lookup);
  assert.deepEqual(rendered.missing, [], 'every Variable the template reads exists');
  return { file: rendered.output, env: Object.fromEntries(parseEnvFile(rendered.output)) };
};

describe('secrets through Nomad env templates (consul-template + go-envparse, ported)', () => {
  describe('the agent job (nomadJobFor)', () => {
    const spec = sampleSpec({ secretEnv: { ...VALUES } });
    const [template, ...others] = nomadJobFor(spec, defaultNomadSettings()).TaskGroups[0]!.Tasks[0]!.Templates ?? [];
    const lookup: VariableLookup = (path) => (path === variablePath(spec.agentId) ? spec.secretEnv : undefined);

    it('has one env template on the agent Variable', () => {
      assert.equal(others.length, 0);
      assert.equal(template?.Envvars, true);
    });

    it('gives the container every value exactly as stored, the empty one included', () => {
      const { env } = reads(template!.EmbeddedTmpl, lookup);
      assert.deepEqual(env, VALUES);
    });

    it("reads json.Marshal's \\u0026 back as & (go-envparse v0.1.0 decodes \\uXXXX; the audit's claim does not hold)", () => {
      const { file, env } = reads(template!.EmbeddedTmpl, (path) => (path === variablePath(spec.agentId) ? { AMPERSAND: 'a&b' } : undefined));
      assert.equal(file.toString('utf8'), 'AMPERSAND="a\\u0026b"\n');
      assert.deepEqual(env, { AMPERSAND: 'a&b' });
    });

    it('counts each line as the control API does, so its limit is the scanner limit to the byte', () => {
      for (const [key, value] of Object.entries(VALUES)) {
        const { file } = reads(template!.EmbeddedTmpl, (path) => (path === variablePath(spec.agentId) ? { [key]: value } : undefined));
        assert.equal(envFileLineBytes(key, value), file.length - 1, key);
      }
      const lineOf = (length: number) => 'K=' + JSON.stringify('x'.repeat(length - 'K=""'.length));
      assert.doesNotThrow(() => parseEnvFile(Buffer.from(lineOf(ENV_FILE_MAX_LINE_BYTES) + '\n')));
      assert.throws(() => parseEnvFile(Buffer.from(lineOf(ENV_FILE_MAX_LINE_BYTES + 1) + '\n')), /token too long/);
    });

    it('cannot carry a 70 KiB value: the scanner refuses the line and the task would never start', () => {
      const big = 'x'.repeat(70 * 1024);
      const rendered = renderTemplate(template!.EmbeddedTmpl, (path) => (path === variablePath(spec.agentId) ? { BIG: big } : undefined));
      assert.throws(() => parseEnvFile(rendered.output), /bufio\.Scanner: token too long/);
      assert.ok(envFileLineBytes('BIG', big) > ENV_FILE_MAX_LINE_BYTES, 'the control API counts it as too long');
    });
  });

  describe('the platform jobs (nomad-jobs/*.nomad.hcl)', () => {
    for (const file of ['control.nomad.hcl', 'envoy.nomad.hcl']) {
      it(`${file}: every env template gives back every value exactly, whatever item it lands in`, async () => {
        const templates = envTemplatesOf(await parseHcl(file, readFileSync(new URL(`../nomad-jobs/${file}`, import.meta.url), 'utf8')));
        assert.ok(templates.length > 0, 'the job reads its secrets through an env template');
        const values = Object.values(VALUES);
        for (const data of templates) {
          const [path, ...more] = renderTemplate(data, () => undefined).missing;
          assert.ok(path && more.length === 0, 'one Variable per template');
          const keys = [...data.matchAll(/^([A-Z_]+)=/gm)].map((match) => match[1]!);
          assert.ok(keys.length > 0);
          // Round r puts value (r + k) into the k-th item, so every item carries every value once.
          for (let round = 0; round < values.length; round++) {
            const items = Object.fromEntries(keys.map((key, k) => [key, values[(round + k) % values.length]!]));
            assert.deepEqual(reads(data, (asked) => (asked === path ? items : undefined)).env, items, `round ${round}`);
          }
        }
      });
    }
  });

  describe('the control API', function () {
    this.timeout(60_000);
    let control: TestControl;
    before(async () => {
      control = await startControl();
    });
    after(async () => control?.close());

    const create = async (env: { key: string; value: string; secret: boolean }[]) => {
      const { token } = await control.signUp();
      return control.request('POST', '/agents', { token, body: { name: 'secrets', deploy: { env } } });
    };

    it('refuses a secret whose env-file line would pass the scanner limit, naming the entry', async () => {
      // 12,000 `<` are 72,000 bytes once escaped: well within the 32,768-character schema limit.
      const response = await create([{ key: 'HTML', value: '<'.repeat(12_000), secret: true }]);
      assert.equal(response.status, 422);
      assert.deepEqual(response.body.details.errors[0].loc, ['body', 'deploy', 'env', 0, 'value']);
      assert.match(response.body.details.errors[0].msg, /one line of Nomad's env file, at most 65535 bytes; HTML needs 72007/);
      assert.equal(JSON.stringify(response.body).includes('<<<'), false, 'the secret is not echoed');
      const plain = await create([{ key: 'HTML', value: '<'.repeat(12_000), secret: false }]);
      assert.equal(plain.status, 201, 'plain env goes into the job, not the env file');
    });

    it('refuses secrets that together would not fit one Nomad Variable beside the model key', async () => {
      const entries = ['A', 'B', 'C'].map((key) => ({ key, value: 'x'.repeat(15_000), secret: true }));
      const response = await create(entries);
      assert.equal(response.status, 422);
      assert.deepEqual(response.body.details.errors[0].loc, ['body', 'deploy', 'env']);
      assert.match(response.body.details.errors[0].msg, /at most 40960 bytes .* these hold 45003/);
    });

    it('refuses the 70 KiB value, and accepts the largest single value it allows', async () => {
      assert.equal((await create([{ key: 'BIG', value: 'x'.repeat(70 * 1024), secret: true }])).status, 422);
      assert.equal((await create([{ key: 'BIG', value: 'x'.repeat(32_768), secret: true }])).status, 201);
    });
  });
});

type Body = Record<string, any>;

/** The `data` of every `template` with `env = true` in a job file, as hcl2json reads it (heredoc indentation stripped). */
function envTemplatesOf(file: Body): string[] {
  const found: string[] = [];
  for (const job of Object.values(file.job ?? {}) as Body[][]) {
    for (const group of Object.values(job[0]!.group ?? {}) as Body[][]) {
      for (const task of Object.values(group[0]!.task ?? {}) as Body[][]) {
        for (const template of (task[0]!.template ?? []) as Body[]) if (template.env === true) found.push(template.data);
      }
    }
  }
  return found;
}
