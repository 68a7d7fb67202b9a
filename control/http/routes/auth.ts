import type { AuthService } from '../../services/auth-service.js';
import { CurrentUser, LoginBody, RegisterBody, RegistrationMode, SessionGrant } from '../../schemas/auth.js';
import { ErrorBody } from '../../schemas/common.js';
import { defineRoute } from '../route.js';

export const authRoutes = (auth: AuthService) => [
  defineRoute({
    method: 'get',
    path: '/auth/registration',
    operationId: 'getRegistrationMode',
    tag: 'Auth',
    summary: 'Get the registration mode',
    description: 'How new users may register: open, invite or closed',
    auth: 'none',
    responses: { 200: { description: 'The registration mode', schema: RegistrationMode } },
    handler: async () => ({ status: 200, body: { mode: auth.registrationMode() } }),
  }),
  defineRoute({
    method: 'post',
    path: '/auth/register',
    operationId: 'register',
    tag: 'Auth',
    summary: 'Register a user',
    description: 'Create a user (and its account) and sign in',
    auth: 'none',
    body: RegisterBody,
    responses: {
      201: { description: 'Signed in as the new user', schema: SessionGrant },
      403: { description: 'INVALID_INVITE or REGISTRATION_CLOSED', schema: ErrorBody },
      409: { description: 'EMAIL_ALREADY_REGISTERED', schema: ErrorBody },
      429: { description: 'RATE_LIMIT_EXCEEDED (per client address, REGISTRATION_RATE_LIMIT_PER_HOUR)', schema: ErrorBody },
    },
    handler: async ({ body, clientIp }) => ({ status: 201, body: await auth.register(body, clientIp) }),
  }),
  defineRoute({
    method: 'post',
    path: '/auth/login',
    operationId: 'login',
    tag: 'Auth',
    summary: 'Sign in',
    description: 'Sign in; the session token lives 60 minutes',
    auth: 'none',
    body: LoginBody,
    responses: {
      200: { description: 'Signed in', schema: SessionGrant },
      401: { description: 'AUTHENTICATION_FAILED', schema: ErrorBody },
      403: { description: "SSO_REQUIRED: the user's default account requires single sign-on (its owners may still sign in by password: break-glass, audited)", schema: ErrorBody },
      429: { description: 'RATE_LIMIT_EXCEEDED (per client address and email)', schema: ErrorBody },
    },
    handler: async ({ body, clientIp, requestId }) => ({ status: 200, body: await auth.login(body, clientIp, requestId) }),
  }),
  defineRoute({
    method: 'post',
    path: '/auth/logout',
    operationId: 'logout',
    tag: 'Auth',
    summary: 'Sign out',
    description: 'Sign out: the presenting session token is refused from the next request on',
    auth: 'any',
    responses: {
      204: { description: 'Signed out' },
      403: { description: 'AUTHORISATION_DENIED: a personal API key is not a session (revoke it with DELETE /api-keys/{id})', schema: ErrorBody },
    },
    handler: async ({ principal, audit }) => {
      await auth.logout(principal, audit);
      return { status: 204 };
    },
  }),
  defineRoute({
    method: 'get',
    path: '/auth/me',
    operationId: 'getCurrentUser',
    tag: 'Auth',
    summary: 'Get the signed-in user',
    description: "The signed-in user as they act in this request (X-Account-Id's account, or their default one), with every account they belong to",
    auth: 'any',
    responses: { 200: { description: 'The user', schema: CurrentUser } },
    handler: async ({ principal }) => ({ status: 200, body: await auth.me(principal) }),
  }),
];
