import { Type, type Static } from '@sinclair/typebox';
import { Label, Timestamp } from './common.js';

export const CreateKeyBody = Type.Object({ label: Label }, { additionalProperties: false });
export type CreateKeyBody = Static<typeof CreateKeyBody>;

const keyFields = {
  id: Type.String(),
  label: Type.String(),
  key_preview: Type.String({ description: 'prefix, four characters and an ellipsis' }),
  created_at: Timestamp,
};

export const AccessKey = Type.Object(keyFields, { $id: 'AccessKey' });
export const AccessKeyCreated = Type.Object(
  { ...keyFields, key: Type.String({ description: 'the full agk_ secret; shown only here' }) },
  { $id: 'AccessKeyCreated' },
);
export const AccessKeyList = Type.Object({ access_keys: Type.Array(Type.Ref(AccessKey)) }, { $id: 'AccessKeyList' });

export const ApiKey = Type.Object(keyFields, { $id: 'ApiKey' });
export const ApiKeyCreated = Type.Object(
  { ...keyFields, key: Type.String({ description: 'the full agnt_ secret; shown only here' }) },
  { $id: 'ApiKeyCreated' },
);
export const ApiKeyList = Type.Object({ api_keys: Type.Array(Type.Ref(ApiKey)) }, { $id: 'ApiKeyList' });

export interface KeyView {
  id: string;
  label: string;
  key_preview: string;
  created_at: string;
}
