import { Version } from '../../schemas/meta.js';
import { API_VERSION, RELEASE_VERSION, sourceCommit } from '../release.js';
import { defineRoute } from '../route.js';

export const versionRoute = () =>
  defineRoute({
    method: 'get',
    path: '/version',
    operationId: 'getVersion',
    tag: 'Meta',
    summary: 'Get the API version',
    description: "The platform's release, the API's major version and the commit it runs from; public, for clients to show and compare.",
    auth: 'none',
    responses: { 200: { description: 'The versions', schema: Version } },
    handler: async () => ({ status: 200, body: { version: RELEASE_VERSION, api_version: API_VERSION, commit: sourceCommit() } }),
  });
