import { Type, type Static } from '@sinclair/typebox';
import { PAGE_FIELDS, PAGE_QUERY, StringEnum, Timestamp } from './common.js';
import { onePage } from './examples.js';
import * as ex from './invocation-examples.js';

/** Invocations (issue 38): what an agent's owner sees of the traces its replicas send, on the control API. */

export const INVOCATION_STATUSES = ['ok', 'error'] as const;
/** A span's OTLP status code by name: 0 unset, 1 ok, 2 error. */
export const SPAN_STATUSES = ['unset', 'ok', 'error'] as const;

const NullableNumber = (description: string) => Type.Unsafe<number | null>({ type: ['number', 'null'], description });
const NullableString = (description?: string) => Type.Unsafe<string | null>({ type: ['string', 'null'], ...(description ? { description } : {}) });

export const InvocationSummary = Type.Object(
  {
    invocation_id: Type.String({ description: "the trace id (32 hex): the invoke's root span and every span under it" }),
    started_at: Timestamp,
    duration_ms: Type.Number({ description: 'from the first span start to the last span end' }),
    status: StringEnum(INVOCATION_STATUSES, { description: 'error when any span ended in error' }),
    session_id: NullableString('gen_ai.conversation.id of the invoke'),
    models: Type.Array(Type.String(), { description: 'the models its model calls used (gen_ai.response.model, else gen_ai.request.model)' }),
    input_tokens: Type.Integer(),
    output_tokens: Type.Integer(),
    cost_usd: NullableNumber("estimated, from the platform's price table; null when a model call's model has no price there"),
    tool_calls: Type.Integer(),
  },
  { $id: 'Invocation', examples: [ex.invocation] },
);
export type InvocationSummary = Static<typeof InvocationSummary>;

export const InvocationSpan = Type.Object(
  {
    span_id: Type.String(),
    parent_span_id: NullableString(),
    name: Type.String(),
    kind: Type.Integer({ description: 'OTLP SpanKind: 0 unspecified, 1 internal, 2 server, 3 client, 4 producer, 5 consumer' }),
    start_time: Timestamp,
    end_time: Timestamp,
    duration_ms: Type.Number(),
    status: StringEnum(SPAN_STATUSES),
    status_message: NullableString(),
    cost_usd: NullableNumber('a model call\'s estimated cost; null for other spans and for models without a price'),
    attributes: Type.Record(Type.String(), Type.Unknown(), { description: 'the span\'s attributes as one object (OpenTelemetry GenAI semantic conventions)' }),
  },
  { $id: 'InvocationSpan', examples: [ex.modelCallSpan] },
);
export type InvocationSpan = Static<typeof InvocationSpan>;

export const InvocationList = Type.Object(
  { invocations: Type.Array(Type.Ref(InvocationSummary)), ...PAGE_FIELDS },
  { $id: 'InvocationList', examples: [{ invocations: [ex.invocation], ...onePage }] },
);

export const InvocationDetail = Type.Object(
  { invocation: Type.Ref(InvocationSummary), spans: Type.Array(Type.Ref(InvocationSpan), { description: 'in the order they started' }) },
  { $id: 'InvocationDetail', examples: [{ invocation: ex.invocation, spans: [ex.modelCallSpan] }] },
);
export type InvocationDetail = Static<typeof InvocationDetail>;

export const ListInvocationsQuery = Type.Object({
  ...PAGE_QUERY,
  status: Type.Optional(StringEnum(INVOCATION_STATUSES)),
  session_id: Type.Optional(Type.String({ minLength: 1, maxLength: 128 })),
  model: Type.Optional(Type.String({ minLength: 1, maxLength: 256, description: 'invocations that called this model' })),
  from: Type.Optional(Type.String({ format: 'date-time', description: 'started at or after' })),
  to: Type.Optional(Type.String({ format: 'date-time', description: 'started before' })),
});
export type ListInvocationsQuery = Static<typeof ListInvocationsQuery>;
