import type { SecretBox } from '../crypto/secret-box.js';
import type { ValidationIssue } from './errors.js';

/**
 * Credentials for the registry that serves deploy.image (docs/deployments.md, "Images
 * from private registries"): a user name and password, or an identity token (an OAuth2
 * refresh token, as `docker login` stores it for registries that hand one out).
 * Write-only: sealed as they arrive, opened only to hand them to the orchestrator.
 */
export interface RegistryAuthInput {
  username?: string;
  password?: string;
  identity_token?: string;
}

/** What the orchestrator gets: exactly one kind of credential, for one registry host. */
export type RegistryCredential =
  | { registry: string; username: string; password: string }
  | { registry: string; identityToken: string };

/**
 * As stored in the deploy object: the registry the credentials were given for (they are
 * only ever sent there) and the credentials sealed as one value.
 */
export interface StoredRegistryAuth {
  registry: string;
  sealed: string;
}

/**
 * The registry host of a fully qualified image reference (`host[:port]/path...`), or null
 * when the first component is not a host: then a short name would be resolved by the
 * container engine's search list, and credentials could go to whichever registry answers.
 * The rule is the distribution reference's (distribution/reference normalize.go,
 * `splitDockerDomain`): a host holds a `.` or a `:`, or is `localhost`.
 */
export function registryOf(image: string): string | null {
  const slash = image.indexOf('/');
  if (slash < 0) return null;
  const first = image.slice(0, slash);
  return first.includes('.') || first.includes(':') || first === 'localhost' ? first.toLowerCase() : null;
}

/** The issues of a registry_auth as given; `at` locates them under the deploy object. */
export function registryAuthIssues(input: RegistryAuthInput, image: string | null, at: (...path: (string | number)[]) => (string | number)[]): ValidationIssue[] {
  const issues: ValidationIssue[] = [];
  const hasToken = input.identity_token !== undefined;
  const hasPassword = input.username !== undefined || input.password !== undefined;
  if (hasToken && hasPassword) {
    issues.push({ loc: at('registry_auth'), msg: 'give either username and password, or identity_token, not both', type: 'value_error' });
  } else if (!hasToken) {
    if (input.username === undefined) issues.push({ loc: at('registry_auth', 'username'), msg: 'field required (with password; or give identity_token alone)', type: 'missing' });
    if (input.password === undefined) issues.push({ loc: at('registry_auth', 'password'), msg: 'field required (with username; or give identity_token alone)', type: 'missing' });
  }
  if (image === null) {
    issues.push({
      loc: at('registry_auth'),
      msg: "registry_auth needs deploy.image: the platform's runtime image is pulled with the operator's credentials",
      type: 'value_error',
    });
  } else if (registryOf(image) === null) {
    issues.push({
      loc: at('image'),
      msg: 'with registry_auth, deploy.image must name its registry (e.g. registry.example.com/team/agent:1.0), so the credentials go to that registry only',
      type: 'value_error',
    });
  }
  return issues;
}

/** Seals the credentials for `image`'s registry (registryAuthIssues found nothing). */
export function sealRegistryAuth(input: RegistryAuthInput, image: string, box: SecretBox): StoredRegistryAuth {
  const credential = input.identity_token !== undefined ? { identity_token: input.identity_token } : { username: input.username, password: input.password };
  return { registry: registryOf(image)!, sealed: box.seal(JSON.stringify(credential)) };
}

/** Opens stored credentials for the orchestrator; throws (as any sealed value does) when no master key opens them. */
export function openRegistryAuth(stored: StoredRegistryAuth, box: SecretBox): RegistryCredential {
  const opened = JSON.parse(box.open(stored.sealed)) as RegistryAuthInput;
  if (typeof opened.identity_token === 'string') return { registry: stored.registry, identityToken: opened.identity_token };
  return { registry: stored.registry, username: String(opened.username), password: String(opened.password) };
}

/** The secret part of a credential, for redacting it out of anything shown (a registry's error, a log line). */
export const credentialSecrets = (credential: RegistryCredential): string[] =>
  'identityToken' in credential ? [credential.identityToken] : [credential.password];

/** `text` with every secret of the credential replaced; a registry's error is shown to the agent's owner. */
export function redactCredential(text: string, credential: RegistryCredential | null): string {
  if (!credential) return text;
  return credentialSecrets(credential)
    .filter((secret) => secret.length > 0)
    .reduce((redacted, secret) => redacted.split(secret).join('[redacted]'), text);
}
