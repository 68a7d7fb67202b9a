import protobuf from 'protobufjs';

/**
 * Envoy config as written in YAML (proto3's JSON mapping, snake_case names) encoded to
 * wire bytes with protobufjs. protobufjs's `fromObject` already takes enums by name and an
 * Any as `{"@type": …, …fields}` (its google.protobuf.Any wrapper looks the type up in the
 * same root), but not the JSON forms of the other well-known types: a Duration `"10s"` or a
 * wrapper's bare value would be dropped without a word. This walk rewrites those before
 * `fromObject`, and refuses what it does not know (Timestamp, FieldMask, unknown fields) rather than encode less than it was given. Strict checking against Envoy's rules
 * is test/support/envoy-schema.ts's job; this only must never lose a field.
 */

type Json = unknown;

const DURATION = /^(-)?(\d+)(?:\.(\d{1,9}))?s$/;
const WRAPPERS = new Set(['DoubleValue', 'FloatValue', 'Int64Value', 'UInt64Value', 'Int32Value', 'UInt32Value', 'BoolValue', 'StringValue', 'BytesValue'].map((name) => `.google.protobuf.${name}`));
const TYPE_URL_PREFIX = 'type.googleapis.com/';

export class ProtoJsonError extends Error {}

/** `value` (proto3 JSON, as parsed from Envoy's YAML) as the message `typeName`, encoded. */
export function encodeProtoJson(root: protobuf.Root, typeName: string, value: Json): Uint8Array {
  const type = root.lookupType(typeName);
  return type.encode(type.fromObject(toProtobufObject(root, type, value, typeName) as Record<string, unknown>)).finish();
}

/** An Any carrying `value` as `typeName`, as proto-loader's serializers take one: `{type_url, value}`. */
export function packAny(root: protobuf.Root, typeName: string, value: Json): { type_url: string; value: Buffer } {
  return { type_url: `${TYPE_URL_PREFIX}${typeName}`, value: Buffer.from(encodeProtoJson(root, typeName, value)) };
}

function toProtobufObject(root: protobuf.Root, type: protobuf.Type, value: Json, path: string): Json {
  const fullName = type.fullName;
  if (fullName === '.google.protobuf.Duration') return duration(value, path);
  if (WRAPPERS.has(fullName)) return { value };
  if (fullName === '.google.protobuf.Any') return any(root, value, path);
  if (fullName === '.google.protobuf.Struct') return struct(value, path);
  if (fullName === '.google.protobuf.Value') return structValue(value, path);
  if (fullName.startsWith('.google.protobuf.') && fullName !== '.google.protobuf.Empty') {
    throw new ProtoJsonError(`${path}: ${fullName.slice(1)} is not supported here`);
  }
  if (!isObject(value)) throw new ProtoJsonError(`${path}: ${fullName.slice(1)} must be an object`);
  const converted: Record<string, Json> = {};
  for (const [name, fieldValue] of Object.entries(value)) {
    const field = type.fields[name];
    if (!field) throw new ProtoJsonError(`${path}.${name}: no such field of ${fullName.slice(1)}`);
    field.resolve();
    converted[name] = convertField(root, field, fieldValue, `${path}.${name}`);
  }
  return converted;
}

function convertField(root: protobuf.Root, field: protobuf.Field, value: Json, path: string): Json {
  if (!(field.resolvedType instanceof protobuf.Type)) return value; // scalars and enums: fromObject takes their JSON forms
  const messageType = field.resolvedType;
  if (field.map) {
    if (!isObject(value)) throw new ProtoJsonError(`${path}: a map must be an object`);
    return Object.fromEntries(Object.entries(value).map(([key, entry]) => [key, toProtobufObject(root, messageType, entry, `${path}.${key}`)]));
  }
  if (field.repeated) {
    if (!Array.isArray(value)) throw new ProtoJsonError(`${path}: must be a list`);
    return value.map((item, index) => toProtobufObject(root, messageType, item, `${path}[${index}]`));
  }
  return toProtobufObject(root, messageType, value, path);
}

function any(root: protobuf.Root, value: Json, path: string): Json {
  if (!isObject(value) || typeof value['@type'] !== 'string') throw new ProtoJsonError(`${path}: an Any needs "@type"`);
  const typeUrl = value['@type'];
  const inner = root.lookupType(typeUrl.slice(typeUrl.lastIndexOf('/') + 1));
  const { '@type': _typeUrl, ...fields } = value;
  // Back in the shape protobufjs's Any wrapper encodes: "@type" beside the inner message's fields.
  return { '@type': typeUrl, ...(toProtobufObject(root, inner, fields, `${path}<${inner.fullName.slice(1)}>`) as Record<string, Json>) };
}

/** A Struct's JSON is any object; protobufjs wants its `fields` of Values spelled out. */
function struct(value: Json, path: string): Json {
  if (!isObject(value)) throw new ProtoJsonError(`${path}: a Struct must be an object`);
  return { fields: Object.fromEntries(Object.entries(value).map(([key, entry]) => [key, structValue(entry, `${path}.${key}`)])) };
}

function structValue(value: Json, path: string): Json {
  if (value === null) return { null_value: 'NULL_VALUE' };
  if (typeof value === 'number') return { number_value: value };
  if (typeof value === 'string') return { string_value: value };
  if (typeof value === 'boolean') return { bool_value: value };
  if (Array.isArray(value)) return { list_value: { values: value.map((item, index) => structValue(item, `${path}[${index}]`)) } };
  return { struct_value: struct(value, path) };
}

function duration(value: Json, path: string): Json {
  const match = typeof value === 'string' ? DURATION.exec(value) : null;
  if (!match) throw new ProtoJsonError(`${path}: a Duration is written like "1.5s"`);
  const sign = match[1] ? -1 : 1;
  return { seconds: sign * Number(match[2]), nanos: sign * Number((match[3] ?? '').padEnd(9, '0')) };
}

const isObject = (value: Json): value is Record<string, Json> => typeof value === 'object' && value !== null && !Array.isArray(value);
