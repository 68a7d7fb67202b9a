import { createHash, randomBytes } from 'node:crypto';

const BASE62 = '0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz';

/** Base62 of `bytes` random bytes; rejection sampling keeps every character equally likely. */
export function randomBase62(length: number): string {
  let out = '';
  while (out.length < length) {
    for (const byte of randomBytes(length * 2)) {
      if (byte < 248) out += BASE62[byte % 62];
      if (out.length === length) break;
    }
  }
  return out;
}

/** 43 base62 characters carry 256 bits, as 32 random bytes would. */
const SECRET_LENGTH = 43;
const ID_LENGTH = 20;

export const newId = (prefix: string) => `${prefix}${randomBase62(ID_LENGTH)}`;

export const newSecret = (prefix: string) => `${prefix}${randomBase62(SECRET_LENGTH)}`;

export const sha256Hex = (value: string) => createHash('sha256').update(value).digest('hex');

/** What a listing shows of a secret: its prefix, four characters and an ellipsis. */
export function previewOf(secret: string, prefix: string): string {
  return `${prefix}${secret.slice(prefix.length, prefix.length + 4)}…`;
}

export const ID_PREFIX = {
  account: 'acc_',
  user: 'usr_',
  agent: 'agt_',
  accessKey: 'akey_',
  apiKey: 'pkey_',
  invite: 'inv_',
  deployment: 'dep_',
  auditEvent: 'aud_',
  webhook: 'whk_',
  webhookEvent: 'evt_',
  domain: 'dom_',
} as const;

export const SECRET_PREFIX = {
  accessKey: 'agk_',
  apiKey: 'agnt_',
  session: 'ses_',
  invite: 'invite_',
} as const;
