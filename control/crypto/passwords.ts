import argon2 from 'argon2';

/** argon2id with the library's defaults (m=64 MiB, t=3, p=4), salted per password. */
export const hashPassword = (password: string) => argon2.hash(password, { type: argon2.argon2id });

export const verifyPassword = (hash: string, password: string) => argon2.verify(hash, password);

/**
 * A real hash to verify against when the email is unknown, so a login for an unknown
 * email costs the same time as a wrong password and does not reveal which it was.
 */
let decoyHash: Promise<string> | undefined;
export async function verifyAgainstDecoy(password: string): Promise<false> {
  decoyHash ??= hashPassword('decoy password that matches no account');
  await argon2.verify(await decoyHash, password);
  return false;
}
