import { Type, type Static } from '@sinclair/typebox';
import { ROLES } from '../domain/roles.js';
import { StringEnum, Timestamp } from './common.js';

export const RegisterBody = Type.Object(
  {
    email: Type.String({ format: 'email', maxLength: 254 }),
    password: Type.String({ minLength: 8, maxLength: 1024 }),
    name: Type.String({ minLength: 1, maxLength: 128 }),
    invite_code: Type.Optional(Type.String({ minLength: 1, maxLength: 256 })),
  },
  { additionalProperties: false },
);
export type RegisterBody = Static<typeof RegisterBody>;

export const LoginBody = Type.Object(
  {
    email: Type.String({ minLength: 1, maxLength: 254 }),
    password: Type.String({ minLength: 1, maxLength: 1024 }),
  },
  { additionalProperties: false },
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
  { $id: 'User' },
);
export type User = Static<typeof User>;

export const SessionGrant = Type.Object(
  { token: Type.String(), expires_at: Timestamp, user: Type.Ref(User) },
  { $id: 'SessionGrant' },
);

export const RegistrationMode = Type.Object(
  { mode: StringEnum(['open', 'invite', 'closed'] as const) },
  { $id: 'RegistrationMode' },
);
