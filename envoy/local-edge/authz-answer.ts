import { loadAuthorizationService } from '../../proto/load.js';
import { isCanaryVersion } from '../../contract/request-figures.js';
import { TRACE_METADATA_KEYS } from '../../contract/edge-trace.js';

/** A CheckResponse as proto-loader decodes it (enums as names, defaults filled in). */
export interface CheckResponse {
  status?: { code?: number; message?: string } | null;
  denied_response?: {
    status?: { code?: string | number } | null;
    headers?: HeaderValueOption[];
    body?: string;
  } | null;
  ok_response?: {
    headers?: HeaderValueOption[];
    headers_to_remove?: string[];
  } | null;
  /** google.protobuf.Struct: protobufjs names its fields in camelCase (`stringValue`) whatever keepCase says. */
  dynamic_metadata?: { fields?: Record<string, { stringValue?: string; kind?: string }> } | null;
}

export interface HeaderValueOption {
  header?: { key?: string; value?: string } | null;
  append?: { value?: boolean } | null;
  append_action?: string | number;
}

/** What to do with the request, exactly as Envoy would after ext_authz answered. */
export type AuthzVerdict =
  | { kind: 'deny'; status: number; headers: [string, string][]; body: string }
  | {
      kind: 'allow';
      headerMutations: HeaderValueOption[];
      headersToRemove: string[];
      upstream: string | null;
      /** The agent authz allowed, from the same metadata Envoy's access log carries (authz/check-response.ts); null when absent. */
      agentId: string | null;
      /** Whether authz routed to the agent's canary: its `version` metadata, read as authz/access-log-entry.ts reads Envoy's. */
      canary: boolean;
      /** The edge's trace context from the same metadata (TRACE_METADATA_KEYS); null when authz gave none. */
      trace: { traceId: string; spanId: string; parentSpanId: string | null } | null;
    };

/** Envoy's answer when a denial names no usable status. */
const DEFAULT_DENIED_STATUS = 403;

export function verdictOf(response: CheckResponse): AuthzVerdict {
  if ((response.status?.code ?? 0) !== 0) {
    const denied = response.denied_response;
    const headers: [string, string][] = (denied?.headers ?? [])
      .filter((option) => option.header?.key)
      .map((option) => [option.header!.key!.toLowerCase(), option.header!.value ?? '']);
    return { kind: 'deny', status: httpStatusOf(denied?.status?.code), headers, body: denied?.body ?? '' };
  }
  const upstream = response.dynamic_metadata?.fields?.upstream?.stringValue;
  const agentId = response.dynamic_metadata?.fields?.agent_id?.stringValue;
  const version = response.dynamic_metadata?.fields?.version?.stringValue;
  const traceId = response.dynamic_metadata?.fields?.[TRACE_METADATA_KEYS.traceId]?.stringValue;
  const spanId = response.dynamic_metadata?.fields?.[TRACE_METADATA_KEYS.spanId]?.stringValue;
  const parentSpanId = response.dynamic_metadata?.fields?.[TRACE_METADATA_KEYS.parentSpanId]?.stringValue;
  return {
    kind: 'allow',
    headerMutations: response.ok_response?.headers ?? [],
    headersToRemove: (response.ok_response?.headers_to_remove ?? []).map((name) => name.toLowerCase()),
    upstream: upstream ? upstream : null,
    agentId: agentId ? agentId : null,
    canary: isCanaryVersion(version),
    trace: traceId && spanId ? { traceId, spanId, parentSpanId: parentSpanId || null } : null,
  };
}

type Headers = Record<string, string | string[] | undefined>;

/**
 * Applies ok_response to the request headers the way Envoy does: each header by its
 * append_action (or the deprecated `append`), then headers_to_remove. Returns a new object.
 */
export function applyAllowedMutations(headers: Headers, verdict: Extract<AuthzVerdict, { kind: 'allow' }>): Headers {
  const result: Headers = { ...headers };
  for (const option of verdict.headerMutations) {
    const key = option.header?.key?.toLowerCase();
    if (!key) continue;
    const value = option.header?.value ?? '';
    const present = result[key] !== undefined;
    switch (actionOf(option)) {
      case 'APPEND_IF_EXISTS_OR_ADD':
        result[key] = present ? [...[result[key]!].flat(), value] : value;
        break;
      case 'ADD_IF_ABSENT':
        if (!present) result[key] = value;
        break;
      case 'OVERWRITE_IF_EXISTS':
        if (present) result[key] = value;
        break;
      case 'OVERWRITE_IF_EXISTS_OR_ADD':
        result[key] = value;
        break;
    }
  }
  for (const name of verdict.headersToRemove) delete result[name];
  return result;
}

/** ext_authz honours the deprecated `append` when set (false: overwrite), else append_action. */
function actionOf(option: HeaderValueOption): string {
  if (option.append && typeof option.append.value === 'boolean') {
    return option.append.value ? 'APPEND_IF_EXISTS_OR_ADD' : 'OVERWRITE_IF_EXISTS_OR_ADD';
  }
  const action = option.append_action ?? 'APPEND_IF_EXISTS_OR_ADD';
  return typeof action === 'number' ? APPEND_ACTIONS[action] ?? 'APPEND_IF_EXISTS_OR_ADD' : action;
}

/** envoy.config.core.v3.HeaderValueOption.HeaderAppendAction, by number. */
const APPEND_ACTIONS = ['APPEND_IF_EXISTS_OR_ADD', 'ADD_IF_ABSENT', 'OVERWRITE_IF_EXISTS_OR_ADD', 'OVERWRITE_IF_EXISTS'];

let statusCodes: Map<string, number> | undefined;

/** envoy.type.v3.StatusCode arrives as its enum name ("NotFound"); Envoy sends its number. */
function httpStatusOf(code: string | number | undefined): number {
  if (typeof code === 'number') return code >= 100 ? code : DEFAULT_DENIED_STATUS;
  statusCodes ??= loadStatusCodes();
  const number = code === undefined ? undefined : statusCodes.get(code);
  return number && number >= 100 ? number : DEFAULT_DENIED_STATUS;
}

function loadStatusCodes(): Map<string, number> {
  const definition = loadAuthorizationService().packageDefinition['envoy.type.v3.StatusCode'] as {
    type?: { value?: { name: string; number: number }[] };
  };
  return new Map((definition.type?.value ?? []).map(({ name, number }) => [name, number]));
}
