import protobuf from 'protobufjs';

/**
 * A strict checker of an Envoy config object (as parsed from YAML) against Envoy's v3
 * protos. protobufjs's fromObject silently drops unknown fields, and Envoy does not: it
 * rejects unknown fields, unresolvable `@type`s, deprecated fields (by default) and
 * protoc-gen-validate violations at start. This walker reproduces those checks so that
 * a typo fails a test here instead of a deploy.
 *
 * Accepted shapes follow proto3's JSON mapping, which Envoy uses for YAML: field names
 * in snake_case or their lowerCamelCase JSON name, enums by name (or number), 64-bit
 * integers as numbers or decimal strings, Duration as "1.5s", wrappers as bare values,
 * Struct/Value as any JSON, Any as an object with "@type" plus the named type's fields.
 */

export interface SchemaIssue {
  path: string;
  message: string;
}

type Json = unknown;
type Rules = Record<string, any>;

const TYPE_URL_PREFIX = 'type.googleapis.com/';
const DURATION = /^(-)?(\d+)(?:\.(\d{1,9}))?s$/;
const INTEGER = /^-?\d+$/;

const INT32_RANGE: Record<string, [number, number]> = {
  int32: [-(2 ** 31), 2 ** 31 - 1],
  sint32: [-(2 ** 31), 2 ** 31 - 1],
  sfixed32: [-(2 ** 31), 2 ** 31 - 1],
  uint32: [0, 2 ** 32 - 1],
  fixed32: [0, 2 ** 32 - 1],
};
const INT64_TYPES = new Set(['int64', 'sint64', 'sfixed64', 'uint64', 'fixed64']);
const UNSIGNED_64 = new Set(['uint64', 'fixed64']);

/** google.protobuf wrappers: the scalar type their bare JSON value stands for. */
const WRAPPERS: Record<string, string> = {
  '.google.protobuf.DoubleValue': 'double',
  '.google.protobuf.FloatValue': 'float',
  '.google.protobuf.Int64Value': 'int64',
  '.google.protobuf.UInt64Value': 'uint64',
  '.google.protobuf.Int32Value': 'int32',
  '.google.protobuf.UInt32Value': 'uint32',
  '.google.protobuf.BoolValue': 'bool',
  '.google.protobuf.StringValue': 'string',
  '.google.protobuf.BytesValue': 'bytes',
};

export class EnvoySchema {
  constructor(private readonly root: protobuf.Root) {}

  /** Every problem found in `value` read as the message `typeName`; empty when valid. */
  check(typeName: string, value: Json): SchemaIssue[] {
    const issues: SchemaIssue[] = [];
    this.message(this.root.lookupType(typeName), value, '', issues);
    return issues;
  }

  /** Every `@type` met in `value` (read as `typeName`), so a test can list what it resolved. */
  typeUrls(value: Json): string[] {
    const found: string[] = [];
    const walk = (node: Json): void => {
      if (Array.isArray(node)) node.forEach(walk);
      else if (isObject(node)) {
        if (typeof node['@type'] === 'string') found.push(node['@type']);
        Object.values(node).forEach(walk);
      }
    };
    walk(value);
    return found;
  }

  private message(type: protobuf.Type, value: Json, path: string, issues: SchemaIssue[]): void {
    const fullName = type.fullName;
    if (fullName in WRAPPERS) return this.scalar(WRAPPERS[fullName]!, value, path, issues, undefined);
    switch (fullName) {
      case '.google.protobuf.Any':
        return this.any(value, path, issues);
      case '.google.protobuf.Duration':
        if (typeof value !== 'string' || !DURATION.test(value)) {
          issues.push({ path, message: `a Duration is a string such as "0.25s", not ${show(value)}` });
        }
        return;
      case '.google.protobuf.Timestamp':
        if (typeof value !== 'string' || Number.isNaN(Date.parse(value))) {
          issues.push({ path, message: `a Timestamp is an RFC 3339 string, not ${show(value)}` });
        }
        return;
      case '.google.protobuf.FieldMask':
        if (typeof value !== 'string') issues.push({ path, message: 'a FieldMask is a string' });
        return;
      case '.google.protobuf.Struct':
        if (!isObject(value)) issues.push({ path, message: `a Struct is a mapping, not ${show(value)}` });
        return;
      case '.google.protobuf.ListValue':
        if (!Array.isArray(value)) issues.push({ path, message: `a ListValue is a list, not ${show(value)}` });
        return;
      case '.google.protobuf.Value':
        return; // any JSON value
    }
    if (!isObject(value)) {
      issues.push({ path, message: `${trim(fullName)} must be a mapping, not ${show(value)}` });
      return;
    }
    this.fields(type, value, path, issues);
  }

  private fields(type: protobuf.Type, value: Record<string, Json>, path: string, issues: SchemaIssue[]): void {
    const byName = new Map<string, protobuf.Field>();
    for (const field of type.fieldsArray) {
      byName.set(field.name, field);
      byName.set(jsonName(field), field);
    }
    const seen = new Map<protobuf.Field, string>();
    for (const [key, fieldValue] of Object.entries(value)) {
      const at = join(path, key);
      const field = byName.get(key);
      if (!field) {
        issues.push({ path: at, message: `unknown field "${key}" in ${trim(type.fullName)}${suggest(key, type)}` });
        continue;
      }
      const earlier = seen.get(field);
      if (earlier !== undefined) {
        issues.push({ path: at, message: `"${key}" sets ${field.name} again (already set as "${earlier}")` });
        continue;
      }
      seen.set(field, key);
      if (field.options?.deprecated === true) {
        issues.push({ path: at, message: `${field.name} is deprecated in ${trim(type.fullName)}` });
      }
      this.field(field, fieldValue, at, issues);
    }
    for (const oneof of type.oneofsArray) {
      const set = oneof.fieldsArray.filter((member) => seen.has(member)).map((member) => member.name);
      if (set.length > 1) {
        issues.push({ path, message: `oneof ${oneof.name} of ${trim(type.fullName)} has ${set.join(' and ')} set; at most one may be` });
      }
      if (set.length === 0 && oneof.options?.['(validate.required)'] === true) {
        issues.push({ path, message: `oneof ${oneof.name} of ${trim(type.fullName)} requires one of ${oneof.oneof.join(', ')}` });
      }
    }
    for (const field of type.fieldsArray) {
      if (!seen.has(field)) this.absent(field, join(path, field.name), issues);
    }
  }

  private field(field: protobuf.Field, value: Json, path: string, issues: SchemaIssue[]): void {
    const rules = validateRules(field);
    if (field instanceof protobuf.MapField) {
      if (!isObject(value)) {
        issues.push({ path, message: `${field.name} is a map, so a mapping, not ${show(value)}` });
        return;
      }
      for (const [key, entry] of Object.entries(value)) {
        if (field.keyType !== 'string' && field.keyType !== 'bool' && !INTEGER.test(key)) {
          issues.push({ path: join(path, key), message: `map key must be an integer (${field.keyType})` });
        }
        this.single(field, entry, join(path, key), issues, rules?.map?.values);
      }
      return;
    }
    if (field.repeated) {
      if (!Array.isArray(value)) {
        issues.push({ path, message: `${field.name} is repeated, so a list, not ${show(value)}` });
        return;
      }
      const repeated = rules?.repeated;
      if (repeated?.min_items !== undefined && value.length < Number(repeated.min_items)) {
        issues.push({ path, message: `${field.name} needs at least ${repeated.min_items} item(s)` });
      }
      value.forEach((item, index) => this.single(field, item, `${path}[${index}]`, issues, repeated?.items));
      return;
    }
    this.single(field, value, path, issues, rules);
  }

  private single(field: protobuf.Field, value: Json, path: string, issues: SchemaIssue[], rules: Rules | undefined): void {
    if (value === null) {
      issues.push({ path, message: 'null is not a value; leave the field out instead' });
      return;
    }
    const resolved = field.resolvedType;
    if (resolved instanceof protobuf.Enum) return this.enumValue(resolved, value, path, issues, rules?.enum);
    if (resolved instanceof protobuf.Type) {
      this.message(resolved, value, path, issues);
      const wrapped = WRAPPERS[resolved.fullName];
      if (wrapped) this.range(wrapped, value, path, issues, rules?.[wrapped]);
      if (resolved.fullName === '.google.protobuf.Duration') this.durationRange(value, path, issues, rules?.duration);
      return;
    }
    this.scalar(field.type, value, path, issues, rules);
  }

  private scalar(kind: string, value: Json, path: string, issues: SchemaIssue[], rules: Rules | undefined): void {
    switch (kind) {
      case 'string':
      case 'bytes':
        if (typeof value !== 'string') {
          issues.push({ path, message: `expected a ${kind} (string), not ${show(value)}` });
          return;
        }
        if (kind === 'string') this.stringRules(value, path, issues, rules?.string);
        return;
      case 'bool':
        if (typeof value !== 'boolean') issues.push({ path, message: `expected true or false, not ${show(value)}` });
        return;
      case 'double':
      case 'float':
        if (typeof value !== 'number' && !['NaN', 'Infinity', '-Infinity'].includes(value as string)) {
          issues.push({ path, message: `expected a number, not ${show(value)}` });
        }
        this.range(kind, value, path, issues, rules?.[kind]);
        return;
    }
    const int32 = INT32_RANGE[kind];
    if (int32) {
      const n = typeof value === 'string' && INTEGER.test(value) ? Number(value) : value;
      if (typeof n !== 'number' || !Number.isInteger(n) || n < int32[0] || n > int32[1]) {
        issues.push({ path, message: `expected a ${kind}, not ${show(value)}` });
      }
    } else if (INT64_TYPES.has(kind)) {
      const ok = (typeof value === 'number' && Number.isInteger(value)) || (typeof value === 'string' && INTEGER.test(value));
      if (!ok || (UNSIGNED_64.has(kind) && String(value).startsWith('-'))) {
        issues.push({ path, message: `expected a ${kind}, not ${show(value)}` });
      }
    } else {
      issues.push({ path, message: `unsupported scalar type ${kind}` });
      return;
    }
    this.range(kind, value, path, issues, rules?.[kind]);
  }

  private enumValue(type: protobuf.Enum, value: Json, path: string, issues: SchemaIssue[], rules: Rules | undefined): void {
    const name = typeof value === 'number' ? type.valuesById[value] : typeof value === 'string' ? value : undefined;
    if (name === undefined || !(name in type.values)) {
      issues.push({ path, message: `${show(value)} is not a value of ${trim(type.fullName)} (${Object.keys(type.values).join(', ')})` });
      return;
    }
    if (type.valuesOptions?.[name]?.deprecated === true) {
      issues.push({ path, message: `${name} is a deprecated value of ${trim(type.fullName)}` });
    }
    if (rules?.in && !asList(rules.in).map(Number).includes(type.values[name]!)) {
      issues.push({ path, message: `${name} is not allowed here` });
    }
  }

  private any(value: Json, path: string, issues: SchemaIssue[]): void {
    if (!isObject(value) || typeof value['@type'] !== 'string') {
      issues.push({ path, message: 'a typed_config (google.protobuf.Any) needs an "@type"' });
      return;
    }
    const typeUrl = value['@type'];
    if (!typeUrl.startsWith(TYPE_URL_PREFIX)) {
      issues.push({ path: join(path, '@type'), message: `"${typeUrl}" does not start with ${TYPE_URL_PREFIX}` });
      return;
    }
    const typeName = typeUrl.slice(TYPE_URL_PREFIX.length);
    const type = this.root.lookup(typeName);
    if (!(type instanceof protobuf.Type)) {
      issues.push({ path: join(path, '@type'), message: `cannot resolve @type ${typeName} in Envoy's protos` });
      return;
    }
    const { ['@type']: _typeUrl, ...rest } = value;
    const special = type.fullName in WRAPPERS || type.fullName.startsWith('.google.protobuf.');
    // Well-known types with a special JSON form carry it under "value" inside an Any.
    if (special) this.message(type, rest.value, join(path, 'value'), issues);
    else this.message(type, rest, path, issues);
  }

  /** protoc-gen-validate rules that an absent field can break. */
  private absent(field: protobuf.Field, path: string, issues: SchemaIssue[]): void {
    const rules = validateRules(field);
    // A oneof member's rules (proto3 `optional` included) apply only when it is the one set.
    if (!rules || field.partOf) return;
    const required =
      rules.message?.required === true ||
      rules.duration?.required === true ||
      rules.any?.required === true ||
      rules.timestamp?.required === true;
    const minLength = rules.string && !rules.string.ignore_empty ? Number(rules.string.min_len ?? rules.string.min_bytes ?? 0) : 0;
    const minItems = field.repeated && rules.repeated && !rules.repeated.ignore_empty ? Number(rules.repeated.min_items ?? 0) : 0;
    const minPairs = field instanceof protobuf.MapField ? Number(rules.map?.min_pairs ?? 0) : 0;
    if (required || minLength > 0 || minItems > 0 || minPairs > 0) {
      issues.push({ path, message: `${field.name} is required` });
    }
  }

  private stringRules(value: string, path: string, issues: SchemaIssue[], rules: Rules | undefined): void {
    if (!rules || (rules.ignore_empty && value === '')) return;
    if (rules.min_len !== undefined && value.length < Number(rules.min_len)) {
      issues.push({ path, message: `must be at least ${rules.min_len} character(s)` });
    }
    if (rules.max_len !== undefined && value.length > Number(rules.max_len)) {
      issues.push({ path, message: `must be at most ${rules.max_len} character(s)` });
    }
    if (rules.in && !asList(rules.in).includes(value)) {
      issues.push({ path, message: `"${value}" is not one of ${asList(rules.in).join(', ')}` });
    }
    if (rules.not_in && asList(rules.not_in).includes(value)) {
      issues.push({ path, message: `"${value}" is not allowed` });
    }
  }

  private range(kind: string, value: Json, path: string, issues: SchemaIssue[], rules: Rules | undefined): void {
    const n = Number(value);
    if (!rules || Number.isNaN(n)) return;
    const bound = (name: string): number | undefined => (rules[name] === undefined ? undefined : Number(rules[name]));
    const [gt, gte, lt, lte] = [bound('gt'), bound('gte'), bound('lt'), bound('lte')];
    if ((gt !== undefined && !(n > gt)) || (gte !== undefined && !(n >= gte)) || (lt !== undefined && !(n < lt)) || (lte !== undefined && !(n <= lte))) {
      issues.push({ path, message: `${n} is out of range for this ${kind} (${JSON.stringify(rules)})` });
    }
    if (rules.in && !asList(rules.in).map(Number).includes(n)) {
      issues.push({ path, message: `${n} is not one of ${asList(rules.in).join(', ')}` });
    }
  }

  private durationRange(value: Json, path: string, issues: SchemaIssue[], rules: Rules | undefined): void {
    const match = typeof value === 'string' ? DURATION.exec(value) : null;
    if (!rules || !match) return;
    const seconds = (match[1] ? -1 : 1) * Number(`${match[2]}.${match[3] ?? '0'}`);
    const bound = (name: string): number | undefined => {
      const limit = rules[name];
      return limit === undefined ? undefined : Number(limit.seconds ?? 0) + Number(limit.nanos ?? 0) / 1e9;
    };
    const [gt, gte, lt, lte] = [bound('gt'), bound('gte'), bound('lt'), bound('lte')];
    if ((gt !== undefined && !(seconds > gt)) || (gte !== undefined && !(seconds >= gte)) || (lt !== undefined && !(seconds < lt)) || (lte !== undefined && !(seconds <= lte))) {
      issues.push({ path, message: `${value} is out of range (${JSON.stringify(rules)})` });
    }
  }
}

/** The (validate.rules) option of a field, as protobufjs parsed it. */
function validateRules(field: protobuf.Field): Rules | undefined {
  const parsed = (field as { parsedOptions?: Array<Record<string, unknown>> }).parsedOptions ?? [];
  const merged: Rules = {};
  for (const option of parsed) {
    const rules = option['(validate.rules)'];
    if (isObject(rules)) Object.assign(merged, rules);
  }
  return Object.keys(merged).length > 0 ? merged : undefined;
}

/** protoc's default JSON name: drop each underscore and capitalise what follows. */
function jsonName(field: protobuf.Field): string {
  const explicit = field.options?.json_name;
  if (typeof explicit === 'string') return explicit;
  return field.name.replace(/_+([a-zA-Z0-9])/g, (_match, next: string) => next.toUpperCase());
}

function suggest(key: string, type: protobuf.Type): string {
  const close = type.fieldsArray.map((field) => field.name).filter((name) => editDistance(name, key) <= 2);
  return close.length > 0 ? ` (did you mean ${close.join(' or ')}?)` : '';
}

function editDistance(a: string, b: string): number {
  let previous = Array.from({ length: b.length + 1 }, (_, i) => i);
  for (let i = 1; i <= a.length; i++) {
    const current = [i];
    for (let j = 1; j <= b.length; j++) {
      current[j] = Math.min(previous[j]! + 1, current[j - 1]! + 1, previous[j - 1]! + (a[i - 1] === b[j - 1] ? 0 : 1));
    }
    previous = current;
  }
  return previous[b.length]!;
}

function isObject(value: unknown): value is Record<string, unknown> {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}

function asList(value: unknown): unknown[] {
  return Array.isArray(value) ? value : [value];
}

function join(path: string, key: string): string {
  return path ? `${path}.${key}` : key;
}

function trim(fullName: string): string {
  return fullName.replace(/^\./, '');
}

function show(value: unknown): string {
  return value === undefined ? 'nothing' : JSON.stringify(value);
}
