import { posix } from 'node:path';
import { goParseUintError, goQuote } from './go-format.js';
import { MultiError } from './multierror.js';

/** nomad/structs/structs.go, `Template.Validate`, for the fields the fake's schema accepts. */
type Json = Record<string, any>;

export function validateTemplate(t: Json): MultiError | null {
  const errors = new MultiError();
  if (t.SourcePath === '' && t.EmbeddedTmpl === '') errors.append('Must specify a source path or have an embedded template');
  if (t.DestPath === '') errors.append('Must specify a destination for the template');
  if (escapesAllocation('task', t.DestPath)) errors.push('destination escapes allocation directory');
  switch (t.ChangeMode) {
    case 'noop':
    case 'restart':
      break;
    case 'signal':
      if (t.ChangeSignal === '') errors.append('Must specify signal value when change mode is signal');
      if (t.Envvars) errors.append('cannot use signals with env var templates');
      break;
    case 'script':
      // The fake's schema has no ChangeScript, so a script template never has one.
      errors.append('must specify change script configuration value when change mode is script');
      break;
    default:
      errors.append('Invalid change mode. Must be one of the following: noop, signal, script, restart');
  }
  if (t.Splay < 0) errors.append('Must specify positive splay value');
  if (t.Perms !== '') {
    const parseError = goParseUintError(t.Perms, 8, 12);
    if (parseError) errors.append(`Failed to parse ${goQuote(t.Perms)} as octal: ${parseError}`);
  }
  return errors.orNil();
}

/**
 * helper/escapingfs/escapes.go, `PathEscapesAllocViaRelative`: the path, joined under
 * /alloc-dir/alloc-id/<prefix>, must stay inside /alloc-dir/alloc-id.
 */
function escapesAllocation(prefix: string, path: string): boolean {
  const alloc = '/alloc-dir/alloc-id';
  return posix.relative(alloc, posix.join(alloc, prefix, path)).startsWith('..');
}
