import assert from 'node:assert/strict';
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { parseAgentFile } from '../src/agent-file.js';
import { ConfigError } from '../src/config-error.js';
import { DEFAULT_MODEL, DEFAULT_SYSTEM_PROMPT, loadConfig } from '../src/config.js';
import { providerForModel } from '../src/providers.js';
import { DEFAULT_TEMPLATE_DIR, EXAMPLE_TEMPLATE_DIR } from './helpers/runtime.js';
import { scratchDirectory } from './helpers/scratch-directory.js';

function templateDir(agentYaml: string): string {
  const dir = scratchDirectory('runtime-config');
  writeFileSync(join(dir, 'agent.yaml'), agentYaml);
  return dir;
}

const load = (env: Record<string, string>) => loadConfig(env, { defaultTemplateDir: DEFAULT_TEMPLATE_DIR });

const FULL_TEMPLATE = `
name: from-yaml
system_prompt: prompt from yaml
llm:
  provider: anthropic
  model: claude-from-yaml
  temperature: 0.3
`;

describe('configuration precedence', () => {
  it('uses the defaults when neither the platform nor agent.yaml says anything', () => {
    const { agent } = load({ PLATFORM_TEMPLATE_DIR: templateDir('') });
    assert.equal(agent.model, DEFAULT_MODEL);
    assert.equal(agent.model, 'gpt-4o');
    assert.equal(agent.provider, 'openai');
    assert.equal(agent.systemPrompt, DEFAULT_SYSTEM_PROMPT);
    assert.equal(agent.temperature, undefined);
  });

  it('takes agent.yaml over the defaults', () => {
    const { agent } = load({ PLATFORM_TEMPLATE_DIR: templateDir(FULL_TEMPLATE) });
    assert.equal(agent.name, 'from-yaml');
    assert.equal(agent.systemPrompt, 'prompt from yaml');
    assert.equal(agent.model, 'claude-from-yaml');
    assert.equal(agent.provider, 'anthropic');
    assert.equal(agent.temperature, 0.3);
  });

  it('takes the platform environment over agent.yaml', () => {
    const { agent } = load({
      PLATFORM_TEMPLATE_DIR: templateDir(FULL_TEMPLATE),
      AGENT_ID: 'agt_abc',
      AGENT_NAME: 'from-env',
      SYSTEM_PROMPT: 'prompt from env',
      LLM_MODEL: 'gemini-2.5-pro',
      LLM_PROVIDER: 'google',
      GOOGLE_API_KEY: 'AIzaKey',
    });
    assert.equal(agent.id, 'agt_abc');
    assert.equal(agent.name, 'from-env');
    assert.equal(agent.systemPrompt, 'prompt from env');
    assert.equal(agent.model, 'gemini-2.5-pro');
    assert.equal(agent.provider, 'google');
    assert.equal(agent.apiKey, 'AIzaKey');
    assert.equal(agent.temperature, 0.3, 'temperature has no platform variable, so agent.yaml keeps it');
  });

  it('treats an empty SYSTEM_PROMPT as not set, as the platform sends it when no prompt was configured', () => {
    const { agent } = load({ PLATFORM_TEMPLATE_DIR: templateDir(FULL_TEMPLATE), SYSTEM_PROMPT: '' });
    assert.equal(agent.systemPrompt, 'prompt from yaml');
  });

  it('derives the provider from LLM_MODEL when LLM_PROVIDER is absent, ignoring the provider agent.yaml gave its own model', () => {
    const { agent } = load({ PLATFORM_TEMPLATE_DIR: templateDir(FULL_TEMPLATE), LLM_MODEL: 'gpt-4.1-mini' });
    assert.equal(agent.provider, 'openai');
  });

  it('lets LLM_PROVIDER win over the model name', () => {
    const { agent } = load({ PLATFORM_TEMPLATE_DIR: templateDir(''), LLM_MODEL: 'my-finetune', LLM_PROVIDER: 'openai' });
    assert.equal(agent.provider, 'openai');
    assert.equal(agent.notConfiguredReason?.includes('OPENAI_API_KEY'), true);
  });

  it('reads the key from the variable of the provider only', () => {
    const { agent } = load({ PLATFORM_TEMPLATE_DIR: templateDir(''), ANTHROPIC_API_KEY: 'sk-ant-x' });
    assert.equal(agent.provider, 'openai');
    assert.equal(agent.apiKey, undefined);
  });

  it('uses the default template directory when PLATFORM_TEMPLATE_DIR is not set', () => {
    const { agent } = load({});
    assert.equal(agent.templateDir, DEFAULT_TEMPLATE_DIR);
    assert.equal(agent.templateName, 'default');
    assert.deepEqual(agent.tools, []);
  });

  it('names the template after its directory and lists its tools', () => {
    const { agent } = load({ PLATFORM_TEMPLATE_DIR: EXAMPLE_TEMPLATE_DIR });
    assert.equal(agent.templateName, 'example');
    assert.deepEqual(agent.tools.map((t) => t.name), ['add', 'current_time']);
    assert.deepEqual(agent.tools[0]!.parameters, { a: 'the first number', b: 'the second number' });
  });

  it('picks the base URL of the provider in use', () => {
    const { agent } = load({ PLATFORM_TEMPLATE_DIR: templateDir(''), LLM_MODEL: 'claude-x', ANTHROPIC_BASE_URL: 'http://fake:1/v1/', OPENAI_BASE_URL: 'http://other/v1' });
    assert.equal(agent.baseUrl, 'http://fake:1/v1');
  });

  it('returns a frozen configuration', () => {
    const config = load({});
    assert.ok(Object.isFrozen(config.agent));
    assert.ok(Object.isFrozen(config.settings));
  });
});

describe('provider from model name', () => {
  const cases: Array<[string, string | undefined]> = [
    ['gpt-4o', 'openai'],
    ['o1-mini', 'openai'],
    ['o3', 'openai'],
    ['o4-mini', 'openai'],
    ['chatgpt-4o-latest', 'openai'],
    ['claude-3-5-haiku-latest', 'anthropic'],
    ['gemini-2.5-flash', 'google'],
    ['llama-3', undefined],
  ];
  for (const [model, provider] of cases) {
    it(`${model} → ${provider ?? 'unknown'}`, () => assert.equal(providerForModel(model), provider));
  }
});

describe('agent.yaml validation', () => {
  const refuses = (yaml: string, key: RegExp) =>
    assert.throws(() => parseAgentFile(yaml, 'agent.yaml'), (error: Error) => {
      assert.ok(error instanceof ConfigError, `expected ConfigError, got ${error.name}`);
      assert.match(error.message, key);
      return true;
    });

  it('accepts every key docs/contract.md lists', () => {
    const file = parseAgentFile(
      'name: n\nsystem_prompt: p\nllm: {provider: google, model: gemini-2.5-flash, temperature: 1}\ntools:\n  - {name: t, description: d, handler: "m.mjs:f", parameters: {x: an x}}\n',
      'agent.yaml',
    );
    assert.deepEqual(file.tools, [{ name: 't', description: 'd', handler: 'm.mjs:f', parameters: { x: 'an x' } }]);
  });

  it('refuses a string where a mapping belongs', () => refuses('llm: gpt-4o', /key "llm" must be a mapping/));
  it('refuses an unknown key, naming it', () => refuses('systemprompt: hi', /key "systemprompt" is not a known key/));
  it('refuses a number for name', () => refuses('name: 12', /key "name" must be a string/));
  it('refuses an unknown provider', () => refuses('llm: {provider: mistral}', /key "llm.provider" must be one of openai, anthropic, google/));
  it('refuses a temperature that is not a number', () => refuses('llm: {temperature: hot}', /key "llm.temperature"/));
  it('refuses tools that are not a list', () => refuses('tools: {add: 1}', /key "tools" must be a list/));
  it('refuses a tool without a handler', () => refuses('tools: [{name: add}]', /key "tools\[0\].handler" is required/));
  it('refuses a handler not of the form module:function', () => refuses('tools: [{name: add, handler: add}]', /key "tools\[0\].handler" must have the form/));
  it('refuses two tools of one name', () =>
    refuses('tools: [{name: add, handler: "m:f"}, {name: add, handler: "m:g"}]', /key "tools\[1\].name" repeats/));
  it('refuses a parameter description that is not a string', () =>
    refuses('tools: [{name: add, handler: "m:f", parameters: {a: {type: number}}}]', /key "tools\[0\].parameters.a" must be a string/));
  it('refuses text that is not YAML', () => refuses('name: [unclosed', /not valid YAML/));

  it('refuses a template directory without agent.yaml', () => {
    assert.throws(() => load({ PLATFORM_TEMPLATE_DIR: scratchDirectory('empty') }), /agent\.yaml cannot be read/);
  });
});

describe('runtime settings', () => {
  it('has the documented defaults', () => {
    const { settings } = load({});
    assert.equal(settings.port, 8080);
    assert.equal(settings.sessionTtlMs, 3_600_000);
    assert.equal(settings.maxSessions, 10_000);
    assert.equal(settings.providerMaxRetries, 2);
    assert.equal(settings.shutdownGraceMs, 10_000);
    assert.equal(settings.sessionMaxBytes, 1_048_576);
    assert.equal(settings.agentServices, undefined);
  });

  it('refuses a bad value, naming the variable and why', () => {
    assert.throws(() => load({ RUNTIME_MAX_SESSIONS: 'lots' }), /RUNTIME_MAX_SESSIONS="lots" is invalid: it sets conversations kept/);
    assert.throws(() => load({ PORT: '70000' }), /PORT="70000"/);
    assert.throws(() => load({ RUNTIME_LOG_LEVEL: 'loud' }), /RUNTIME_LOG_LEVEL/);
    assert.throws(() => load({ OPENAI_BASE_URL: 'not a url' }), /OPENAI_BASE_URL="not a url" is not a URL/);
  });

  it('refuses a base URL carrying credentials, which fetch would refuse on every invoke, without repeating them', () => {
    assert.throws(() => load({ OPENAI_BASE_URL: 'https://me:hunter2@llm.internal/v1' }), (error: Error) => {
      assert.match(error.message, /^OPENAI_BASE_URL must not carry credentials \(user:password@llm\.internal\)/);
      assert.doesNotMatch(error.message, /hunter2|me:/);
      return true;
    });
    for (const unusable of ['ftp://me:hunter2@llm.internal/v1', 'https://me:hunter 2@llm internal/v1', 'https://me:hunter/2@llm.internal/v1', 'me:hunter2@llm.internal']) {
      assert.throws(() => load({ OPENAI_BASE_URL: unusable }), (error: Error) => {
        assert.match(error.message, /^OPENAI_BASE_URL="((ftp|https):\/\/)?…@llm/);
        assert.doesNotMatch(error.message, /hunter|me:/);
        return true;
      });
    }
  });
});

describe('agent services settings', () => {
  const tokenFile = (text: string) => {
    const path = join(scratchDirectory('agent-services'), 'token');
    writeFileSync(path, text);
    return path;
  };

  it('reads the URL, without a trailing slash, and the token file', () => {
    const path = tokenFile('t0ken\n');
    const { settings } = load({ AGENT_SERVICES_URL: 'http://host.containers.internal:7090/', AGENT_SERVICES_TOKEN_FILE: path, SESSION_MAX_BYTES: '65536' });
    assert.deepEqual(settings.agentServices, { url: 'http://host.containers.internal:7090', tokenFile: path });
    assert.equal(settings.sessionMaxBytes, 65_536);
  });

  it('refuses to start without a readable, non-empty token file, naming the variable', () => {
    const url = 'http://127.0.0.1:7090';
    assert.throws(() => load({ AGENT_SERVICES_URL: url }), (error: Error) => error instanceof ConfigError && /AGENT_SERVICES_TOKEN_FILE is not set/.test(error.message));
    assert.throws(() => load({ AGENT_SERVICES_URL: url, AGENT_SERVICES_TOKEN_FILE: '/nonexistent/token' }), /AGENT_SERVICES_TOKEN_FILE="\/nonexistent\/token" cannot be read \(ENOENT\)/);
    assert.throws(() => load({ AGENT_SERVICES_URL: url, AGENT_SERVICES_TOKEN_FILE: tokenFile(' \n') }), /AGENT_SERVICES_TOKEN_FILE=.* is empty/);
  });

  it('refuses a URL that is not http or https, and a SESSION_MAX_BYTES out of range', () => {
    assert.throws(() => load({ AGENT_SERVICES_URL: 'unix:/run/agent.sock', AGENT_SERVICES_TOKEN_FILE: tokenFile('t') }), /AGENT_SERVICES_URL="unix:\/run\/agent.sock" must be an http or https URL/);
    assert.throws(() => load({ SESSION_MAX_BYTES: '100' }), /SESSION_MAX_BYTES="100" is invalid/);
  });

  it('ignores a token file when there is no URL: conversations stay in memory', () => {
    assert.equal(load({ AGENT_SERVICES_TOKEN_FILE: '/nonexistent/token' }).settings.agentServices, undefined);
  });
});
