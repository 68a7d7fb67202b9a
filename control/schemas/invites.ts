import { Type, type Static } from '@sinclair/typebox';
import { ROLES } from '../domain/roles.js';
import { StringEnum, Timestamp } from './common.js';
import * as ex from './examples.js';

/** Teams (issue 39): invites of an email to the account, and the role changes of its members. */
const invite = {
  id: 'inv_2Wq7Hc4Mz9Kd1Vt6Lb3X',
  email: 'grace@example.com',
  role: 'member',
  created_at: ex.times.now,
  expires_at: '2025-12-09T14:06:30Z',
  created_by: ex.ids.user,
};

export const CreateInviteBody = Type.Object(
  {
    email: Type.String({ format: 'email', maxLength: 254 }),
    role: StringEnum(ROLES),
  },
  { additionalProperties: false, examples: [{ email: invite.email, role: 'member' }] },
);
export type CreateInviteBody = Static<typeof CreateInviteBody>;

export const Invite = Type.Object(
  {
    id: Type.String(),
    email: Type.String(),
    role: StringEnum(ROLES),
    created_at: Timestamp,
    expires_at: Timestamp,
    created_by: Type.Union([Type.String(), Type.Null()], { description: 'The inviting user' }),
  },
  { $id: 'Invite', examples: [invite] },
);
export type Invite = Static<typeof Invite>;

export const CreatedInvite = Type.Object(
  {
    ...Invite.properties,
    link: Type.String({ description: 'Where the invited person accepts; shown once, and mailed to them when the platform has SMTP_URL' }),
  },
  { $id: 'CreatedInvite', examples: [{ ...invite, link: 'https://api.example.com/invites#invite_Xk4Bv9Qm2Tz7Lc1Wd8Hn5Rf3Jy6Ps0Ga2Ke8Nu4Qo' }] },
);
export type CreatedInvite = Static<typeof CreatedInvite>;

export const InviteList = Type.Object({ invites: Type.Array(Type.Ref(Invite)) }, { $id: 'InviteList', examples: [{ invites: [invite] }] });

export const AcceptInviteBody = Type.Object(
  {
    name: Type.Optional(Type.String({ minLength: 1, maxLength: 128 })),
    password: Type.Optional(Type.String({ minLength: 8, maxLength: 1024 })),
  },
  {
    additionalProperties: false,
    description: 'Without a bearer token: the new user to register with the invited email. With one: nothing (the signed-in user joins).',
    examples: [{ name: 'Grace Hopper', password: 'correct horse battery staple' }, {}],
  },
);
export type AcceptInviteBody = Static<typeof AcceptInviteBody>;

export const ChangeRoleBody = Type.Object(
  { role: StringEnum(ROLES) },
  { additionalProperties: false, examples: [{ role: 'admin' }] },
);
export type ChangeRoleBody = Static<typeof ChangeRoleBody>;
