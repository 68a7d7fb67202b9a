import { Type, type Static } from '@sinclair/typebox';
import { User } from './auth.js';

export const UserList = Type.Object({ users: Type.Array(Type.Ref(User)) }, { $id: 'UserList' });
export type UserList = Static<typeof UserList>;
