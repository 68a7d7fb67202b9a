export type Role = 'owner' | 'admin' | 'member' | 'viewer';

export const ROLES: readonly Role[] = ['owner', 'admin', 'member', 'viewer'];

/** A viewer reads; every other role may also change the account's agents and keys. */
export const canWrite = (role: Role) => role !== 'viewer';

export const isRole = (value: string): value is Role => (ROLES as readonly string[]).includes(value);
