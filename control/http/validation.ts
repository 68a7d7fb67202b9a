import type { TSchema } from '@sinclair/typebox';
import { Ajv, type ErrorObject, type ValidateFunction } from 'ajv';
import addFormatsModule from 'ajv-formats';
import { validationError, type ValidationIssue } from '../errors.js';

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
  };
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
