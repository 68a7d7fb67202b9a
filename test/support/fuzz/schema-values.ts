import fc from 'fast-check';

/**
 * Values for the JSON Schemas of the OpenAPI document: valid ones (so that a request
 * gets past validation and its odd-but-allowed text reaches Postgres), and the paths of
 * every field, so that each one can be broken on purpose. Covers the keywords the control
 * API's TypeBox schemas use; anything else falls back to any JSON value.
 */
export type Schema = Record<string, any>;
export type Resolve = (schema: Schema) => Schema;
export type FieldPath = (string | number)[];

/** A string of at most `max` code points (JSON Schema's and ajv's unit for maxLength). */
const codePoints = (text: string) => [...text].length;

export function validValue(schema: Schema, resolve: Resolve): fc.Arbitrary<unknown> {
  const s = resolve(schema);
  if (Array.isArray(s.enum)) return fc.constantFrom(...s.enum);
  if (Array.isArray(s.anyOf)) return fc.oneof(...s.anyOf.map((option: Schema) => validValue(option, resolve)));
  if (Array.isArray(s.type)) return fc.oneof(...s.type.map((type: string) => validValue({ ...s, type }, resolve)));
  switch (s.type) {
    case 'string':
      return validString(s);
    case 'integer':
      return fc.integer({ min: s.minimum ?? -1_000_000, max: s.maximum ?? 1_000_000 });
    case 'number':
      return fc.double({ min: s.minimum ?? -1e6, max: s.maximum ?? 1e6, noNaN: true, noDefaultInfinity: true });
    case 'boolean':
      return fc.boolean();
    case 'null':
      return fc.constant(null);
    case 'array': {
      const constraints = { minLength: s.minItems ?? 0, maxLength: Math.min(s.maxItems ?? 4, 4) };
      const items = validValue(s.items ?? {}, resolve);
      return s.uniqueItems ? fc.uniqueArray(items, { ...constraints, selector: (v) => JSON.stringify(v) }) : fc.array(items, constraints);
    }
    case 'object':
      return validObject(s, resolve);
    default:
      return fc.jsonValue({ maxDepth: 2 });
  }
}

function validString(s: Schema): fc.Arbitrary<string> {
  const min = s.minLength ?? 0;
  const max = Math.min(s.maxLength ?? 64, 200);
  let text: fc.Arbitrary<string>;
  if (s.format === 'email') text = fc.emailAddress();
  else if (s.format === 'date-time') text = fc.date({ noInvalidDate: true }).map((d) => d.toISOString());
  else if (s.pattern) text = fc.stringMatching(new RegExp(s.pattern));
  // Any Unicode the schema allows: emoji, combining marks, right-to-left text, astral planes.
  else text = fc.oneof(fc.string({ unit: 'grapheme', minLength: min, maxLength: max }), fc.string({ unit: 'binary', minLength: min, maxLength: max }));
  // NUL is valid for the schema but refused before it (test it as hostile input, not here).
  return text.filter((value) => !value.includes('\u0000') && codePoints(value) >= min && codePoints(value) <= (s.maxLength ?? Infinity));
}

function validObject(s: Schema, resolve: Resolve): fc.Arbitrary<Record<string, unknown>> {
  const properties: Record<string, Schema> = s.properties ?? {};
  const patterned = Object.values<Schema>(s.patternProperties ?? {})[0];
  if (patterned && Object.keys(properties).length === 0) {
    const names = s.propertyNames ?? {};
    const key = fc.string({ unit: 'grapheme', minLength: names.minLength ?? 0, maxLength: Math.min(names.maxLength ?? 16, 16) })
      .filter((k) => codePoints(k) >= (names.minLength ?? 0) && codePoints(k) <= (names.maxLength ?? Infinity));
    return fc.dictionary(key, validValue(patterned, resolve), { maxKeys: Math.min(s.maxProperties ?? 3, 3) });
  }
  const record = Object.fromEntries(Object.entries(properties).map(([name, property]) => [name, validValue(property, resolve)]));
  return fc.record(record, { requiredKeys: (s.required ?? []) as string[] }) as fc.Arbitrary<Record<string, unknown>>;
}

/** A valid value with every optional field present, as the base that one broken field is put into. */
export function fullValue(schema: Schema, resolve: Resolve): fc.Arbitrary<unknown> {
  const s = resolve(schema);
  if (s.type !== 'object' || !s.properties) return validValue(s, resolve);
  const record = Object.fromEntries(Object.entries<Schema>(s.properties).map(([name, property]) => [name, fullValue(property, resolve)]));
  return fc.record(record);
}

/** Every field a body can have, nested ones and array items (as index 0) and map entries included. */
export function fieldPaths(schema: Schema, resolve: Resolve, prefix: FieldPath = []): FieldPath[] {
  const s = resolve(schema);
  const paths: FieldPath[] = [];
  for (const [name, property] of Object.entries<Schema>(s.properties ?? {})) {
    paths.push([...prefix, name]);
    paths.push(...fieldPaths(property, resolve, [...prefix, name]));
  }
  const patterned = Object.values<Schema>(s.patternProperties ?? {})[0];
  if (patterned) paths.push([...prefix, 'key']);
  if (s.type === 'array' && s.items) {
    paths.push([...prefix, 0]);
    paths.push(...fieldPaths(s.items, resolve, [...prefix, 0]));
  }
  return paths;
}

/** A copy of `base` with `value` at `path`, creating the objects and arrays on the way. */
export function withValueAt(base: unknown, path: FieldPath, value: unknown): unknown {
  if (path.length === 0) return value;
  const [head, ...rest] = path as [string | number, ...FieldPath];
  const container: any = typeof head === 'number'
    ? (Array.isArray(base) ? [...base] : [])
    : (base !== null && typeof base === 'object' && !Array.isArray(base) ? { ...base } : {});
  container[head] = withValueAt(container[head], rest, value);
  return container;
}
