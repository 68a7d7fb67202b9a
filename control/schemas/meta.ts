import { Type } from '@sinclair/typebox';

/** GET /openapi.json's body, described only as far as a client relies on it: the whole is the OpenAPI 3.1 specification's. */
export const OpenApiDocument = Type.Object(
  { openapi: Type.String({ pattern: '^3\\.1\\.' }), info: Type.Object({ title: Type.String(), version: Type.String() }), paths: Type.Object({}) },
  { description: 'An OpenAPI 3.1 document (https://spec.openapis.org/oas/v3.1.0)' },
);
