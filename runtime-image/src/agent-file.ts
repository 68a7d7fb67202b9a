import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { parse as parseYaml } from 'yaml';
import { ConfigError } from './config-error.js';
import { isProvider, PROVIDERS, type Provider } from './providers.js';

/** A tool declared in agent.yaml. */
export interface ToolDeclaration {
  name: string;
  description: string;
  /** `<module>:<function>`, the module being a file in the template directory. */
  handler: string;
  /** Parameter name → description. */
  parameters: Readonly<Record<string, string>>;
}

/** agent.yaml as docs/contract.md shapes it ("Configuration of the default runtime"); every key is optional. */
export interface AgentFile {
  name?: string;
  systemPrompt?: string;
  llm: { provider?: Provider; model?: string; temperature?: number };
  tools: readonly ToolDeclaration[];
}

export const AGENT_FILE_NAME = 'agent.yaml';

// Providers accept tool names of this shape (OpenAI's rule is the strictest).
const TOOL_NAME = /^[A-Za-z0-9_-]{1,64}$/;
const HANDLER_REFERENCE = /^[^:]+:[A-Za-z_$][A-Za-z0-9_$]*$/;

export function readAgentFile(templateDir: string): AgentFile {
  const path = join(templateDir, AGENT_FILE_NAME);
  let text: string;
  try {
    text = readFileSync(path, 'utf8');
  } catch (error) {
    throw new ConfigError(`${path} cannot be read (${(error as NodeJS.ErrnoException).code ?? 'error'}): PLATFORM_TEMPLATE_DIR must name a directory holding ${AGENT_FILE_NAME}`);
  }
  return parseAgentFile(text, path);
}

export function parseAgentFile(text: string, source: string): AgentFile {
  let document: unknown;
  try {
    document = parseYaml(text);
  } catch (error) {
    throw new ConfigError(`${source} is not valid YAML: ${(error as Error).message}`);
  }
  const fail = (key: string, problem: string): never => {
    throw new ConfigError(`${source}: key "${key}" ${problem}`);
  };
  if (document === null || document === undefined) return { llm: {}, tools: [] };
  const root = asObject(document, 'the document', fail);
  rejectUnknownKeys(root, ['name', 'system_prompt', 'llm', 'tools'], '', fail);
  return {
    name: optionalString(root, 'name', 'name', fail),
    systemPrompt: optionalString(root, 'system_prompt', 'system_prompt', fail),
    llm: readLlm(root['llm'], fail),
    tools: readTools(root['tools'], fail),
  };
}

type Fail = (key: string, problem: string) => never;

function readLlm(value: unknown, fail: Fail): AgentFile['llm'] {
  if (value === undefined || value === null) return {};
  const llm = asObject(value, 'llm', fail);
  rejectUnknownKeys(llm, ['provider', 'model', 'temperature'], 'llm.', fail);
  const provider = optionalString(llm, 'provider', 'llm.provider', fail);
  if (provider !== undefined && !isProvider(provider)) {
    fail('llm.provider', `must be one of ${PROVIDERS.join(', ')} (got "${provider}")`);
  }
  const temperature = llm['temperature'];
  if (temperature !== undefined && (typeof temperature !== 'number' || !(temperature >= 0 && temperature <= 2))) {
    fail('llm.temperature', 'must be a number from 0 to 2');
  }
  return {
    provider: provider as Provider | undefined,
    model: optionalString(llm, 'model', 'llm.model', fail),
    temperature: temperature as number | undefined,
  };
}

function readTools(value: unknown, fail: Fail): ToolDeclaration[] {
  if (value === undefined || value === null) return [];
  if (!Array.isArray(value)) return fail('tools', 'must be a list of tools');
  const seen = new Set<string>();
  return value.map((entry, index) => {
    const at = `tools[${index}]`;
    const tool = asObject(entry, at, fail);
    rejectUnknownKeys(tool, ['name', 'description', 'handler', 'parameters'], `${at}.`, fail);
    const name = requiredString(tool, 'name', `${at}.name`, fail);
    if (!TOOL_NAME.test(name)) fail(`${at}.name`, 'must be 1-64 letters, digits, "_" or "-"');
    if (seen.has(name)) fail(`${at}.name`, `repeats the tool name "${name}"`);
    seen.add(name);
    const handler = requiredString(tool, 'handler', `${at}.handler`, fail);
    if (!HANDLER_REFERENCE.test(handler)) fail(`${at}.handler`, 'must have the form <module>:<function>, e.g. tools.mjs:add');
    return {
      name,
      description: optionalString(tool, 'description', `${at}.description`, fail) ?? '',
      handler,
      parameters: readParameters(tool['parameters'], `${at}.parameters`, fail),
    };
  });
}

function readParameters(value: unknown, at: string, fail: Fail): Record<string, string> {
  if (value === undefined || value === null) return {};
  const parameters = asObject(value, at, fail);
  for (const [name, description] of Object.entries(parameters)) {
    if (!TOOL_NAME.test(name)) fail(`${at}.${name}`, 'is not a usable parameter name (letters, digits, "_" or "-")');
    if (typeof description !== 'string') fail(`${at}.${name}`, 'must be a string describing the parameter');
  }
  return parameters as Record<string, string>;
}

function asObject(value: unknown, key: string, fail: Fail): Record<string, unknown> {
  if (typeof value !== 'object' || value === null || Array.isArray(value)) return fail(key, 'must be a mapping');
  return value as Record<string, unknown>;
}

function rejectUnknownKeys(object: Record<string, unknown>, known: string[], prefix: string, fail: Fail): void {
  for (const key of Object.keys(object)) {
    if (!known.includes(key)) fail(`${prefix}${key}`, `is not a known key (known: ${known.join(', ')})`);
  }
}

function optionalString(object: Record<string, unknown>, key: string, path: string, fail: Fail): string | undefined {
  const value = object[key];
  if (value === undefined || value === null) return undefined;
  if (typeof value !== 'string') return fail(path, 'must be a string');
  return value;
}

function requiredString(object: Record<string, unknown>, key: string, path: string, fail: Fail): string {
  const value = optionalString(object, key, path, fail);
  if (value === undefined || value.trim() === '') return fail(path, 'is required');
  return value;
}
