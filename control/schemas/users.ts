import { Type, type Static } from '@sinclair/typebox';
import { User } from './auth.js';
import * as ex from './examples.js';

export const UserList = Type.Object({ users: Type.Array(Type.Ref(User)) }, { $id: 'UserList', examples: [{ users: [ex.user] }] });
export type UserList = Static<typeof UserList>;
