import { Type, type Static } from '@sinclair/typebox';
import { Label, Timestamp } from './common.js';
import * as ex from './examples.js';

export const CreateKeyBody = Type.Object({ label: Label }, { additionalProperties: false, examples: [{ label: 'helpdesk widget' }] });
export type CreateKeyBody = Static<typeof CreateKeyBody>;

const keyFields = {
  id: Type.String(),
  label: Type.String(),
  key_preview: Type.String({ description: 'prefix, four characters and an ellipsis' }),
  created_at: Timestamp,
};

export const AccessKey = Type.Object(keyFields, { $id: 'AccessKey', examples: [ex.accessKey] });
export const AccessKeyCreated = Type.Object(
  { ...keyFields, key: Type.String({ description: 'the full agk_ secret; shown only here' }) },
  { $id: 'AccessKeyCreated', examples: [{ ...ex.accessKey, key: 'agk_Xa3rT8kPq2Lm6Vz9Wc4Hn1Bd7Fs5Jy0Gu3Ke8Ro2Mx6' }] },
);
export const AccessKeyList = Type.Object({ access_keys: Type.Array(Type.Ref(AccessKey)) }, { $id: 'AccessKeyList', examples: [{ access_keys: [ex.accessKey] }] });

export const ApiKey = Type.Object(keyFields, { $id: 'ApiKey', examples: [ex.apiKey] });
export const ApiKeyCreated = Type.Object(
  { ...keyFields, key: Type.String({ description: 'the full agnt_ secret; shown only here' }) },
  { $id: 'ApiKeyCreated', examples: [{ ...ex.apiKey, key: 'agnt_Pq7cW2nX8kL4vT9mR3hZ6bF1sJ5dY0gQ3uE8oK2aM6' }] },
);
export const ApiKeyList = Type.Object({ api_keys: Type.Array(Type.Ref(ApiKey)) }, { $id: 'ApiKeyList', examples: [{ api_keys: [ex.apiKey] }] });

export interface KeyView {
  id: string;
  label: string;
  key_preview: string;
  created_at: string;
}
