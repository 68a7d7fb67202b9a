import { Type, type Static } from '@sinclair/typebox';
import { ROLES } from '../domain/roles.js';
import { StringEnum, Timestamp } from './common.js';
import * as ex from './examples.js';

export const RegisterBody = Type.Object(
  {
    email: Type.String({ format: 'email', maxLength: 254 }),
    password: Type.String({ minLength: 8, maxLength: 1024 }),
    name: Type.String({ minLength: 1, maxLength: 128 }),
    invite_code: Type.Optional(Type.String({ minLength: 1, maxLength: 256 })),
  },
  { additionalProperties: false, examples: [{ email: ex.user.email, password: 'correct horse battery staple', name: ex.user.name }] },
);
export type RegisterBody = Static<typeof RegisterBody>;

export const LoginBody = Type.Object(
  {
    email: Type.String({ minLength: 1, maxLength: 254 }),
    password: Type.String({ minLength: 1, maxLength: 1024 }),
  },
  { additionalProperties: false, examples: [{ email: ex.user.email, password: 'correct horse battery staple' }] },
);
export type LoginBody = Static<typeof LoginBody>;

export const User = Type.Object(
  {
    id: Type.String(),
    email: Type.String(),
    name: Type.String(),
    role: StringEnum(ROLES),
    account_id: Type.String(),
    created_at: Timestamp,
  },
  { $id: 'User', examples: [ex.user] },
);
export type User = Static<typeof User>;

export const Membership = Type.Object(
  {
    account_id: Type.String(),
    role: StringEnum(ROLES),
    default: Type.Boolean({ description: 'The account requests act in without X-Account-Id' }),
  },
  { $id: 'Membership', examples: [{ account_id: ex.user.account_id, role: 'owner', default: true }] },
);
export type Membership = Static<typeof Membership>;

export const CurrentUser = Type.Object(
  {
    ...User.properties,
    memberships: Type.Array(Type.Ref(Membership), { description: 'Every account the user belongs to, the default first, then oldest first' }),
  },
  { $id: 'CurrentUser', examples: [{ ...ex.user, memberships: [{ account_id: ex.user.account_id, role: 'owner', default: true }] }] },
);
export type CurrentUser = Static<typeof CurrentUser>;

export const SessionGrant = Type.Object(
  { token: Type.String(), expires_at: Timestamp, user: Type.Ref(User) },
  { $id: 'SessionGrant', examples: [{ token: 'ses_Vb8Kq2Wn6Xt4Hm9Rc1Lz7Pf3Jd5Ys0Ga2Tk8Nw4Qe6Bx', expires_at: '2025-12-01T10:12:44Z', user: ex.user }] },
);

export const RegistrationMode = Type.Object(
  { mode: StringEnum(['open', 'invite', 'closed'] as const) },
  { $id: 'RegistrationMode', examples: [{ mode: 'open' }] },
);
