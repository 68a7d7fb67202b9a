import { Type, type Static } from '@sinclair/typebox';

/** Calls in one batch at most: fifty conversations' reads and writes at once, twice over. */
export const BATCH_MAX_CALLS = 100;

/** One Sessions API call of a batch (docs/contract.md, "Several calls in one request"). */
export const BatchCall = Type.Object(
  {
    method: Type.String({ minLength: 1, maxLength: 16, description: 'GET, POST, PUT or DELETE' }),
    path: Type.String({ minLength: 1, maxLength: 1024, description: 'a Sessions API path under /v1, without it: /sessions/{session_id} or /sessions/{session_id}/messages' }),
    headers: Type.Optional(Type.Object({ 'if-none-match': Type.Optional(Type.String({ maxLength: 1024 })) }, { additionalProperties: false })),
    body: Type.Optional(Type.Unknown({ description: "the call's JSON body" })),
  },
  { additionalProperties: false },
);
export type BatchCall = Static<typeof BatchCall>;

export const BatchBody = Type.Object({ calls: Type.Array(BatchCall, { minItems: 1, maxItems: BATCH_MAX_CALLS }) }, { additionalProperties: false });
export type BatchBody = Static<typeof BatchBody>;
