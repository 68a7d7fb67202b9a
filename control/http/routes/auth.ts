import type { AuthService } from '../../services/auth-service.js';
import { LoginBody, RegisterBody, RegistrationMode, SessionGrant, User } from '../../schemas/auth.js';
import { ErrorBody } from '../../schemas/common.js';
import { defineRoute } from '../route.js';

export const authRoutes = (auth: AuthService) => [
  defineRoute({
    method: 'get',
    path: '/auth/registration',
    summary: 'How new users may register: open, invite or closed',
    tag: 'Sign-in',
    auth: 'none',
    responses: { 200: { description: 'The registration mode', schema: RegistrationMode } },
    handler: async () => ({ status: 200, body: { mode: auth.registrationMode() } }),
  }),
  defineRoute({
    method: 'post',
    path: '/auth/register',
    summary: 'Create a user (and its account) and sign in',
    tag: 'Sign-in',
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
    summary: 'Sign in; the session token lives 60 minutes',
    tag: 'Sign-in',
    auth: 'none',
    body: LoginBody,
    responses: {
      200: { description: 'Signed in', schema: SessionGrant },
      401: { description: 'AUTHENTICATION_FAILED', schema: ErrorBody },
      429: { description: 'RATE_LIMIT_EXCEEDED (per client address and email)', schema: ErrorBody },
    },
    handler: async ({ body, clientIp, requestId }) => ({ status: 200, body: await auth.login(body, clientIp, requestId) }),
  }),
  defineRoute({
    method: 'post',
    path: '/auth/logout',
    summary: 'Sign out: the presenting session token is refused from the next request on',
    tag: 'Sign-in',
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
    summary: 'The signed-in user',
    tag: 'Sign-in',
    auth: 'any',
    responses: { 200: { description: 'The user', schema: User } },
    handler: async ({ principal }) => ({ status: 200, body: await auth.me(principal) }),
  }),
];
