/**
 * The constraints Nomad's job mutators add to a job before storing it, so that a job read
 * back from GET /v1/job/:id carries them (nomad/job_endpoint.go, `NewJobEndpoints`, the
 * mutators after the canonicalizer), for the groups agents have:
 *
 * - `jobImpliedConstraints` (nomad/job_endpoint_hooks.go, `Mutate`): a group with a Consul
 *   service gets `consulServiceDiscoveryConstraint`, `${attr.consul.version} semver >= 1.8.0`,
 *   unless a constraint on that attribute is there already (`mutateConstraint` with
 *   `constraintMatcherLeft`).
 * - `jobImplicitIdentitiesHook` (nomad/job_endpoint_hook_implicit_identities.go, `Mutate`): a
 *   group with a workload identity gets `implicitIdentityClientVersionConstraint`,
 *   `${attr.nomad.version} semver >= 1.7.0-a`, appended without looking for it first, so each
 *   registration of the job as read adds one more. A task's named identity is one; every Consul service has an identity on
 *   servers configured with `consul { service_identity { … } }` (`handleConsulService`), as
 *   docs/nomad.md sets them up; the fake plays such a server (the identity itself, which
 *   Nomad writes into the service, is left out: nothing of ours reads it).
 */
type Json = Record<string, any>;

export const CONSUL_DISCOVERY_CONSTRAINT = { LTarget: '${attr.consul.version}', RTarget: '>= 1.8.0', Operand: 'semver' };
export const IMPLICIT_IDENTITY_CONSTRAINT = { LTarget: '${attr.nomad.version}', RTarget: '>= 1.7.0-a', Operand: 'semver' };

/** `job` as Nomad stores it (changed in place, and returned). */
export function addServerConstraints(job: Json): Json {
  for (const group of (job.TaskGroups ?? []) as Json[]) {
    const constraints: Json[] = group.Constraints ?? [];
    const consul = ((group.Services ?? []) as Json[]).some(isConsul);
    if (consul && !constraints.some((c) => c.LTarget === CONSUL_DISCOVERY_CONSTRAINT.LTarget)) constraints.push({ ...CONSUL_DISCOVERY_CONSTRAINT });
    const taskServices = ((group.Tasks ?? []) as Json[]).flatMap((task) => (task.Services ?? []) as Json[]);
    // A named identity counts as one (`len(t.Identities) > 0`, after `Task.Canonicalize` took the default out).
    const named = ((group.Tasks ?? []) as Json[]).some((task) => ((task.Identities ?? []) as Json[]).some((identity) => identity && (identity.Name ?? '') !== '' && identity.Name !== 'default'));
    if (consul || taskServices.some(isConsul) || named) constraints.push({ ...IMPLICIT_IDENTITY_CONSTRAINT });
    if (constraints.length > 0) group.Constraints = constraints;
  }
  return job;
}

/** structs.Service.IsConsul after canonicalization: no provider means Consul. */
const isConsul = (service: Json) => (service.Provider ?? '') === '' || service.Provider === 'consul';
