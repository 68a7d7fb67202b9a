import type { SettingReader } from '../../contract/settings-reader.js';
import { DEFAULT_MODEL_PRICES, type ModelPrice, type PriceTable } from '../domain/model-prices.js';

/** Traces of invokes (docs/traces.md). */
export interface TraceSettings {
  /** TRACE_RETENTION_DAYS: whole UTC days kept before today; older day partitions are dropped. */
  readonly retentionDays: number;
  /** TRACE_SPANS_PER_AGENT_PER_DAY: spans one agent may store in a UTC day, across every copy of the control API. */
  readonly spansPerAgentPerDay: number;
  /** TRACE_REQUESTS_PER_SECOND: POST /v1/traces per agent per second, across every copy; counted before the body is read. */
  readonly requestsPerAgentPerSecond: number;
  /** The default price table, with MODEL_PRICES_FILE's providers in place of its own. */
  readonly prices: PriceTable;
  /** Where stored spans are forwarded to, when OTEL_EXPORTER_OTLP_ENDPOINT is set; null: nowhere. */
  readonly forwarding: TraceForwarding | null;
}

export interface TraceForwarding {
  /** OTEL_EXPORTER_OTLP_ENDPOINT: the OTLP/HTTP receiver's base URL; spans go to `<it>/v1/traces`, as the OTLP exporter spec says. */
  readonly endpoint: string;
  /** OTEL_EXPORTER_OTLP_PROTOCOL: the body's encoding, protobuf (the spec's default) or JSON. */
  readonly protocol: OtlpProtocol;
  /** OTEL_EXPORTER_OTLP_HEADERS: sent with every request (a backend's API key, say). */
  readonly headers: Readonly<Record<string, string>>;
  /** OTEL_EXPORTER_OTLP_TIMEOUT: one request's deadline. */
  readonly timeoutMs: number;
  /** TRACE_FORWARD_QUEUE_REQUESTS: requests waiting to be forwarded; past it, new ones are dropped. */
  readonly queueRequests: number;
}

/** The OTLP/HTTP encodings (OTLP exporter spec, "Specify Protocol"); `grpc` is not offered. */
export const OTLP_PROTOCOLS = ['http/protobuf', 'http/json'] as const;
export type OtlpProtocol = (typeof OTLP_PROTOCOLS)[number];

export function readTraceSettings(read: SettingReader): TraceSettings {
  return {
    retentionDays: read.integer('TRACE_RETENTION_DAYS', 7, 1, 366),
    spansPerAgentPerDay: read.integer('TRACE_SPANS_PER_AGENT_PER_DAY', 50_000, 1, 100_000_000),
    requestsPerAgentPerSecond: read.integer('TRACE_REQUESTS_PER_SECOND', 20, 1, 10_000),
    prices: Object.freeze({ ...DEFAULT_MODEL_PRICES, ...readPriceFile(read) }),
    forwarding: readForwarding(read),
  };
}

/** The OpenTelemetry exporter's own variables (OTLP exporter spec), so an operator sets them as for any OpenTelemetry SDK. */
function readForwarding(read: SettingReader): TraceForwarding | null {
  // All read, set or not, so that each is checked and documented the same way.
  const headers = Object.freeze(readHeaders(read));
  const protocol = read.oneOf('OTEL_EXPORTER_OTLP_PROTOCOL', OTLP_PROTOCOLS, 'http/protobuf');
  const timeoutMs = read.integer('OTEL_EXPORTER_OTLP_TIMEOUT', 10_000, 100, 600_000);
  const queueRequests = read.integer('TRACE_FORWARD_QUEUE_REQUESTS', 1000, 1, 1_000_000);
  if (read.optionalString('OTEL_EXPORTER_OTLP_ENDPOINT') === null) return null;
  return Object.freeze({ endpoint: read.url('OTEL_EXPORTER_OTLP_ENDPOINT', ['http:', 'https:']), protocol, headers, timeoutMs, queueRequests });
}

/** `key1=value1,key2=value2`, values percent-encoded (W3C Baggage's format, as the OTLP exporter spec says). */
function readHeaders(read: SettingReader): Record<string, string> {
  const text = read.optionalString('OTEL_EXPORTER_OTLP_HEADERS');
  if (text === null) return {};
  const headers: Record<string, string> = {};
  for (const pair of text.split(',').map((item) => item.trim()).filter(Boolean)) {
    const at = pair.indexOf('=');
    const name = pair.slice(0, at).trim();
    if (at <= 0 || !/^[!#$%&'*+.^_`|~0-9A-Za-z-]+$/.test(name)) {
      read.report('OTEL_EXPORTER_OTLP_HEADERS: expected key=value pairs separated by commas (values percent-encoded)');
      return {};
    }
    try {
      headers[name] = decodeURIComponent(pair.slice(at + 1).trim());
    } catch {
      read.report(`OTEL_EXPORTER_OTLP_HEADERS: the value of ${name} is not valid percent-encoding`);
    }
  }
  return headers;
}

const FILE = 'MODEL_PRICES_FILE';
const FORMAT = '{"<provider>": {"<model>": {"input": <USD per million tokens>, "output": <USD per million tokens>}}}';

/** The operator's price table, checked whole: every problem is reported with where it is, and nothing of a bad file is used. */
function readPriceFile(read: SettingReader): PriceTable {
  if (read.optionalString(FILE) === null) return {};
  const text = read.file(FILE);
  if (text === null) return {}; // unreadable: reported by read.file
  let parsed: unknown;
  try {
    parsed = JSON.parse(text);
  } catch (error) {
    read.report(`${FILE}: not JSON (${(error as Error).message}); expected ${FORMAT}`);
    return {};
  }
  const problems = priceTableProblems(parsed);
  for (const problem of problems) read.report(`${FILE}: ${problem}; expected ${FORMAT}`);
  return problems.length === 0 ? (parsed as PriceTable) : {};
}

const isObject = (value: unknown): value is Record<string, unknown> => typeof value === 'object' && value !== null && !Array.isArray(value);

function priceTableProblems(table: unknown): string[] {
  if (!isObject(table)) return ['the top level must be an object of providers'];
  return Object.entries(table).flatMap(([provider, models]) =>
    isObject(models)
      ? Object.entries(models).flatMap(([model, price]) => priceProblems(`${provider}.${model}`, price))
      : [`${provider}: must be an object of models`],
  );
}

function priceProblems(where: string, price: unknown): string[] {
  if (!isObject(price)) return [`${where}: must be {"input": …, "output": …}`];
  const fields: (keyof ModelPrice)[] = ['input', 'output'];
  const problems = fields
    .filter((field) => typeof price[field] !== 'number' || !Number.isFinite(price[field]) || (price[field] as number) < 0)
    .map((field) => `${where}.${field}: must be a number of USD per million tokens, 0 or more`);
  const unknown = Object.keys(price).filter((key) => !fields.includes(key as keyof ModelPrice));
  return unknown.length > 0 ? [...problems, `${where}: unknown field ${unknown.join(', ')}`] : problems;
}
