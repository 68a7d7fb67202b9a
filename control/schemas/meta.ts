import { Type } from '@sinclair/typebox';

/** GET /openapi.json's body, described only as far as a client relies on it: the whole is the OpenAPI 3.1 specification's. */
export const OpenApiDocument = Type.Object(
  { openapi: Type.String({ pattern: '^3\\.1\\.' }), info: Type.Object({ title: Type.String(), version: Type.String() }), paths: Type.Object({}) },
  {
    description: 'An OpenAPI 3.1 document (https://spec.openapis.org/oas/v3.1.0)',
    examples: [{ openapi: '3.1.0', info: { title: 'Agent hosting platform control API', version: '0.1.0' }, paths: {} }],
  },
);

/** GET /version's body: what agentctl shows beside its own version. */
export const Version = Type.Object(
  {
    version: Type.String({ description: "The platform's release (semantic version)" }),
    api_version: Type.String({ description: 'The major version of this API: the /v1 of every path' }),
    commit: Type.Union([Type.String({ pattern: '^[0-9a-f]{40,64}$' }), Type.Null()], { description: 'The git commit the control API runs from; null when unknown' }),
  },
  {
    $id: 'Version',
    additionalProperties: false,
    examples: [{ version: '0.1.0', api_version: '1', commit: '883cb68e2f0c4a1d9b7e5f3a6c8d0e2b4f6a8c1d' }],
  },
);
