import { goQuote } from './go-format.js';
import { MultiError } from './multierror.js';

/**
 * nomad/structs/structs.go, `Constraint.Validate`, with nomad/structs/constraint.go,
 * `validateConstraintAttribute`. A constraint is how a job would pin agents to nodes by
 * class or attribute (the node pool being the other way).
 */
type Json = Record<string, any>;

export function validateConstraint(c: Json): MultiError | null {
  const errors = new MultiError();
  if (c.Operand === '') errors.push('Missing constraint operand');
  let requireLTarget = true;
  switch (c.Operand) {
    case 'distinct_hosts':
      requireLTarget = false;
      break;
    case 'set_contains_all':
    case 'set_contains_any':
    case 'set_contains':
      if (c.RTarget === '') errors.push('Set contains constraint requires an RTarget');
      break;
    case 'regexp':
      errors.push(regexpError(c.RTarget));
      break;
    case 'version':
      errors.push(versionConstraintError(c.RTarget, false));
      break;
    case 'semver':
      errors.push(versionConstraintError(c.RTarget, true));
      break;
    case 'distinct_property':
      if (c.RTarget !== '') errors.push(distinctPropertyError(c.RTarget));
      break;
    case 'is_set':
    case 'is_not_set':
      if (c.RTarget !== '') errors.push(`Operator ${goQuote(c.Operand)} does not support an RTarget`);
      break;
    case '=': case '==': case 'is': case '!=': case 'not': case '<': case '<=': case '>': case '>=':
      if (c.RTarget === '') errors.push(`Operator ${goQuote(c.Operand)} requires an RTarget`);
      break;
    default:
      errors.push(`Unknown constraint type ${goQuote(c.Operand)}`);
  }
  if (requireLTarget) {
    if (c.LTarget === '') errors.push('no attribute provided but is required by operator');
    else errors.push(attributeError(c.LTarget));
  }
  return errors.orNil();
}

const EXACT_TARGETS = ['${node.unique.id}', '${node.datacenter}', '${node.unique.name}', '${node.class}', '${node.pool}'];
const PREFIX_TARGETS = ['${attr.', '${device.', '${meta.'];

/** nomad/structs/constraint.go, `validateConstraintAttribute`: a literal, or an interpolation the scheduler resolves. */
function attributeError(target: string): string | null {
  if (!target.startsWith('$')) return null;
  if (!target.startsWith('${')) return `attribute ${goQuote(target)} is missing an opening brace`;
  if (!target.endsWith('}')) return `attribute ${goQuote(target)} is missing a closing brace`;
  if (EXACT_TARGETS.includes(target) || PREFIX_TARGETS.some((prefix) => target.startsWith(prefix))) return null;
  return `unsupported attribute ${goQuote(target)}`;
}

/**
 * `regexp.Compile` is Go's RE2; JavaScript's engine stands in for it here, so a pattern
 * only one of them accepts is judged by JavaScript's rules and the error text after the
 * prefix is not Go's.
 */
function regexpError(pattern: string): string | null {
  try {
    new RegExp(pattern);
    return null;
  } catch (error) {
    return `Regular expression failed to compile: ${(error as Error).message}`;
  }
}

/** Go's `\s` (RE2): only these five. */
const S = '[\\t\\n\\f\\r ]*';
/** hashicorp/go-version v1.9.0, version.go, `VersionRegexpRaw` and `SemverRegexpRaw`. */
const VERSION_RAW = 'v?([0-9]+(\\.[0-9]+)*?)(-([0-9]+[0-9A-Za-z\\-~]*(\\.[0-9A-Za-z\\-~]+)*)|(-?([A-Za-z\\-~]+[0-9A-Za-z\\-~]*(\\.[0-9A-Za-z\\-~]+)*)))?(\\+([0-9A-Za-z\\-~]+(\\.[0-9A-Za-z\\-~]+)*))??';
const SEMVER_RAW = 'v?([0-9]+(\\.[0-9]+)*?)(-([0-9]+[0-9A-Za-z\\-~]*(\\.[0-9A-Za-z\\-~]+)*)|(-([A-Za-z\\-~]+[0-9A-Za-z\\-~]*(\\.[0-9A-Za-z\\-~]+)*)))?(\\+([0-9A-Za-z\\-~]+(\\.[0-9A-Za-z\\-~]+)*))??';
/** go-version constraint.go, `getConstraintRegexp`; Nomad's helper/constraints/semver, `constraintRegexp` (no `~>`). */
const VERSION_CONSTRAINT = new RegExp(`^${S}(<=|>=|!=|~>|<|>|=|)${S}(${VERSION_RAW})${S}$`);
const SEMVER_CONSTRAINT = new RegExp(`^${S}(<=|>=|!=|<|>|=|)${S}(${SEMVER_RAW})${S}$`);
const INT64_MAX = 2n ** 63n - 1n;

/**
 * go-version constraint.go, `NewConstraint`, or Nomad's helper/constraints/semver,
 * `NewConstraint`: comma-separated single constraints, each an operator and a version
 * whose numeric segments fit an int64 (`newVersion`).
 */
function versionConstraintError(text: string, semver: boolean): string | null {
  for (const single of text.split(',')) {
    const match = (semver ? SEMVER_CONSTRAINT : VERSION_CONSTRAINT).exec(single);
    const label = semver ? 'Semver constraint is invalid' : 'Version constraint is invalid';
    if (!match) return `${label}: ${semver ? 'Malformed' : 'malformed'} constraint: ${single}`;
    const segments = /^v?([0-9]+(\.[0-9]+)*?)(?=[^0-9.]|$)/.exec(match[2]!)![1]!.split('.');
    const tooLarge = segments.find((segment) => BigInt(segment) > INT64_MAX);
    if (tooLarge) return `${label}: error parsing version: strconv.ParseInt: parsing ${goQuote(tooLarge)}: value out of range`;
  }
  return null;
}

/** `strconv.ParseUint(RTarget, 10, 64)`, then at least 1. */
function distinctPropertyError(text: string): string | null {
  if (!/^[0-9]+$/.test(text)) return `Failed to convert RTarget ${goQuote(text)} to uint64: strconv.ParseUint: parsing ${goQuote(text)}: invalid syntax`;
  const count = BigInt(text);
  if (count >= 2n ** 64n) return `Failed to convert RTarget ${goQuote(text)} to uint64: strconv.ParseUint: parsing ${goQuote(text)}: value out of range`;
  if (count < 1n) return `Distinct Property must have an allowed count of 1 or greater: ${count} < 1`;
  return null;
}
