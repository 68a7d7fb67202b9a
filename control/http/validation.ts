import type { TSchema } from '@sinclair/typebox';
import { Ajv, type ErrorObject, type ValidateFunction } from 'ajv';
import addFormatsModule from 'ajv-formats';
import { validationError, type ValidationIssue } from '../domain/errors.js';

// ajv-formats ships CommonJS; under NodeNext its default export is the module object.
const addFormats = addFormatsModule as unknown as (ajv: Ajv) => Ajv;

const bodies = addFormats(new Ajv({ allErrors: true, strict: true }));
// Query strings arrive as text: coerce "2" to 2 before the same kind of schema checks it.
const queries = addFormats(new Ajv({ allErrors: true, strict: true, coerceTypes: true }));

export type Validator = (value: unknown) => void;

/** A validator that throws VALIDATION_ERROR with one issue per broken rule, located under `where`. */
export function compileValidator(schema: TSchema, where: 'body' | 'query'): Validator {
  const validate: ValidateFunction = (where === 'body' ? bodies : queries).compile(schema);
  return (value) => {
    if (!validate(value)) throw validationError((validate.errors ?? []).map((error) => toIssue(error, where)));
    if (where === 'query') assertFinite(value as Record<string, unknown>);
  };
}

/**
 * ajv coerces the query text "1e400" to Infinity (lib/compile/validate/dataType.ts,
 * coerceData: `data == +data && !(data % 1)` holds for it) and then skips minimum and
 * maximum, which test finite numbers only: `?interval=1e400` would pass as Infinity.
 */
function assertFinite(query: Record<string, unknown>): void {
  const issues: ValidationIssue[] = Object.entries(query)
    .filter(([, value]) => typeof value === 'number' && !Number.isFinite(value))
    .map(([name]) => ({ loc: ['query', name], msg: 'must be a finite number', type: 'type_error' }));
  if (issues.length > 0) throw validationError(issues);
}

function toIssue(error: ErrorObject, where: 'body' | 'query'): ValidationIssue {
  const path: (string | number)[] = error.instancePath
    .split('/')
    .slice(1)
    .map((part) => part.replace(/~1/g, '/').replace(/~0/g, '~'))
    .map((part) => (/^\d+$/.test(part) ? Number(part) : part));
  const loc = [where, ...path];
  switch (error.keyword) {
    case 'required':
      return { loc: [...loc, error.params.missingProperty as string], msg: 'field required', type: 'missing' };
    case 'additionalProperties':
      return { loc: [...loc, error.params.additionalProperty as string], msg: 'unknown field', type: 'extra_forbidden' };
    case 'type':
      return { loc, msg: error.message ?? 'wrong type', type: 'type_error' };
    default:
      return { loc, msg: error.message ?? 'not valid', type: `value_error.${error.keyword}` };
  }
}
