import { goQuote } from './go-format.js';
import type { Refusal } from './register.js';

/**
 * `PUT /v1/var/:path` as Nomad answers it: the HTTP agent refuses a body without items
 * (command/agent/variable_endpoint.go, `variableUpsert`) and takes the path from the URL;
 * the server checks the rest (nomad/structs/variables.go, `VariableDecrypted.Validate`,
 * `ValidatePath`). The server wraps its error as a coded 400 twice
 * (nomad/variables_endpoint.go, `canonicalizeAndValidate`, then `Apply`), and the HTTP
 * agent unwraps only one (nomad/structs/errors.go, `CodeFromRPCCodedErr`), so the body
 * Nomad answers starts with "RPC Error:: 400,".
 */
type Json = Record<string, any>;

/** `maxVariableSize`: 64 KiB of keys and values, counted in bytes. */
const MAX_VARIABLE_SIZE = 65536;
/** `validVariablePath`: URL-safe characters that do not clash with template syntax, 1 to 128 of them. */
const VALID_PATH = /^[a-zA-Z0-9_~/-]{1,128}$/;

export function admitVariable(body: Json, path: string, query: URLSearchParams): Refusal | null {
  const items: Record<string, string> = body.Items ?? {};
  if (Object.keys(items).length === 0) return { status: 400, message: 'variable missing required Items object' };
  const namespace = body.Namespace || query.get('namespace') || 'default';
  const invalid = validateVariable(namespace, items, path);
  return invalid ? { status: 400, message: `RPC Error:: 400,${invalid}` } : null;
}

/** nomad/structs/variables.go, `VariableDecrypted.Validate` (a variable without a lock). */
function validateVariable(namespace: string, items: Record<string, string>, path: string): string | null {
  if (namespace === '*') return 'can not target wildcard ("*")namespace';
  const size = Object.entries(items).reduce((sum, [key, value]) => sum + Buffer.byteLength(key) + Buffer.byteLength(value), 0);
  if (size > MAX_VARIABLE_SIZE) return 'variables are limited to 64KiB in total size';
  return validatePath(path);
}

/** nomad/structs/variables.go, `ValidatePath`: under "nomad/", only jobs, sentinel and one level of job-templates. */
export function validatePath(path: string): string | null {
  if (path.length === 0) return 'variable requires path';
  if (!VALID_PATH.test(path)) return `invalid path ${goQuote(path)}`;
  const parts = path.split('/');
  if (parts[0] !== 'nomad') return null;
  if (parts.length === 1) return '"nomad" is a reserved top-level directory path, but you may write variables to "nomad/jobs", "nomad/job-templates", "nomad/sentinel", or below';
  if (parts[1] === 'jobs' || parts[1] === 'sentinel') return null;
  if (parts[1] === 'job-templates' && parts.length === 3) return null;
  if (parts[1] === 'job-templates') return '"nomad/job-templates" is a reserved directory path, but you may write variables at the level below it, for example, "nomad/job-templates/template-name"';
  return 'only paths at "nomad/jobs" or "nomad/job-templates" and below are valid paths under the top-level "nomad" directory';
}
