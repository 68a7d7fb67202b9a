import { existsSync } from 'node:fs';
import { isAbsolute, relative, resolve } from 'node:path';
import { pathToFileURL } from 'node:url';
import { jsonSchema, tool, type ToolSet } from 'ai';
import type { ToolDeclaration } from './agent-file.js';
import { ConfigError } from './config-error.js';

export type ToolHandler = (args: Record<string, string | number>) => unknown;

// A handler reference may leave out the extension of an ES module.
const MODULE_EXTENSIONS = ['', '.mjs', '.js'];

/**
 * Imports every declared handler from the template directory and wraps it as
 * an `ai` SDK tool. Runs at start so that a wrong reference stops the process
 * instead of failing the first call.
 */
export async function loadTools(templateDir: string, declarations: readonly ToolDeclaration[]): Promise<ToolSet> {
  const tools: ToolSet = {};
  for (const [index, declaration] of declarations.entries()) {
    const handler = await importHandler(templateDir, declaration.handler, `tools[${index}].handler`);
    tools[declaration.name] = tool({
      description: declaration.description,
      inputSchema: parameterSchema(declaration.parameters),
      // A throw here reaches the model as a tool error result (the SDK's
      // tool-error part) and the loop goes on; it never fails the invoke.
      execute: async (args) => toToolOutput(await handler(args)),
    });
  }
  return tools;
}

/**
 * agent.yaml gives each parameter a description only, no type. Models send
 * numbers for numeric-looking values and strings otherwise, so each parameter
 * accepts a string or a number, and all are required: the handler decides what
 * to make of the value.
 */
export function parameterSchema(parameters: Readonly<Record<string, string>>) {
  const properties = Object.fromEntries(
    Object.entries(parameters).map(([name, description]) => [name, { type: ['string', 'number'], description }]),
  );
  return jsonSchema<Record<string, string | number>>({
    type: 'object',
    properties,
    required: Object.keys(parameters),
    additionalProperties: false,
  } as Parameters<typeof jsonSchema>[0]);
}

async function importHandler(templateDir: string, reference: string, key: string): Promise<ToolHandler> {
  const separator = reference.lastIndexOf(':');
  const modulePath = reference.slice(0, separator);
  const functionName = reference.slice(separator + 1);
  const file = resolveModule(templateDir, modulePath, key);
  let module: Record<string, unknown>;
  try {
    module = (await import(pathToFileURL(file).href)) as Record<string, unknown>;
  } catch (error) {
    throw new ConfigError(`${key} "${reference}": module ${file} failed to load: ${(error as Error).message}`);
  }
  const handler = module[functionName];
  if (typeof handler !== 'function') {
    throw new ConfigError(`${key} "${reference}": ${file} exports no function named "${functionName}"`);
  }
  return handler as ToolHandler;
}

function resolveModule(templateDir: string, modulePath: string, key: string): string {
  const base = resolve(templateDir, modulePath);
  const inside = relative(templateDir, base);
  if (inside.startsWith('..') || isAbsolute(inside)) {
    throw new ConfigError(`${key}: module "${modulePath}" must be inside the template directory ${templateDir}`);
  }
  const found = MODULE_EXTENSIONS.map((extension) => base + extension).find((candidate) => existsSync(candidate));
  if (found === undefined) {
    throw new ConfigError(`${key}: module "${modulePath}" not found in ${templateDir} (tried ${MODULE_EXTENSIONS.map((e) => modulePath + e).join(', ')})`);
  }
  return found;
}

// Providers take tool results as text or JSON; undefined would be dropped, so it becomes null.
function toToolOutput(value: unknown): unknown {
  return value === undefined ? null : value;
}
