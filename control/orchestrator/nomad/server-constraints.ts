import type { NomadJobRead } from './api-types.js';

/**
 * Constraints the Nomad server adds to an agent's job as it stores it, so a job read back
 * carries them though the driver never wrote them:
 *
 * - `${attr.nomad.version} semver >= 1.7.0-a` for a group with a workload identity, every
 *   Consul service on servers with `consul.service_identity` (nomad/
 *   job_endpoint_hook_implicit_identities.go, `jobImplicitIdentitiesHook.Mutate`,
 *   `implicitIdentityClientVersionConstraint`). It is appended without a look for one
 *   already there, so a job registered as read would gain one more copy each time.
 * - `${attr.consul.version} semver >= 1.8.0` for a group with a Consul service
 *   (nomad/job_endpoint_hooks.go, `jobImpliedConstraints.Mutate`,
 *   `consulServiceDiscoveryConstraint`), added only when missing, and stripped alike.
 *
 * Nomad adds both again on every registration.
 */
const SERVER_CONSTRAINTS = [
  { LTarget: '${attr.nomad.version}', RTarget: '>= 1.7.0-a', Operand: 'semver' },
  { LTarget: '${attr.consul.version}', RTarget: '>= 1.8.0', Operand: 'semver' },
];

interface Constraint {
  LTarget?: string;
  RTarget?: string;
  Operand?: string;
}

const addedByServer = (constraint: Constraint) =>
  SERVER_CONSTRAINTS.some((added) => constraint.LTarget === added.LTarget && constraint.RTarget === added.RTarget && constraint.Operand === added.Operand);

/** `job` as read, without the groups' constraints the server adds: what registering it again must send. */
export function withoutServerConstraints(job: NomadJobRead): NomadJobRead {
  return {
    ...job,
    TaskGroups: job.TaskGroups.map((group) => {
      if (!Array.isArray(group.Constraints)) return group;
      const kept = (group.Constraints as Constraint[]).filter((constraint) => !addedByServer(constraint));
      return { ...group, Constraints: kept.length > 0 ? kept : null };
    }),
  };
}
