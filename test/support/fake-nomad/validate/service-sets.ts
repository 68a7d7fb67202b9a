import { requiresPort } from './check.js';
import { goQuote } from './go-format.js';
import { MultiError } from './multierror.js';
import { validateService } from './service.js';

/**
 * The services of a group and of its tasks taken together: unique, one provider, and
 * task services pointing at ports that exist (nomad/structs/structs.go,
 * `TaskGroup.validateServices`, `TaskGroup.validateScriptChecksInGroupServices`,
 * `validateServices`).
 */
type Json = Record<string, any>;

/** nomad/structs/structs.go, `TaskGroup.validateServices`. */
export function validateGroupServices(tg: Json): MultiError | null {
  const errors = new MultiError();
  const taskNames = new Set<string>();
  const seen = new Set<string>();
  const duplicates = new Map<string, string>();
  const providers = new Set<string>();
  const track = (name: string, task: string, port: string) => {
    const key = JSON.stringify([name, task, port]);
    if (seen.has(key)) duplicates.set(key, `${task}->${name}${port ? `:${port}` : ''}`);
    seen.add(key);
  };
  for (const task of tg.Tasks) {
    taskNames.add(task.Name);
    for (const service of task.Services ?? []) {
      if (service.TaskName !== '' && service.TaskName !== task.Name) {
        errors.push(`Service ${service.Name} is invalid: may only specify task the service belongs to, got ${goQuote(service.TaskName)}`);
      }
      for (const check of service.Checks ?? []) {
        if (check.TaskName !== '' && check.TaskName !== task.Name) {
          errors.push(`Check ${check.Name} is invalid: may only specify task the check belongs to, got ${goQuote(check.TaskName)}`);
        }
      }
      track(service.Name, task.Name, service.PortLabel);
      providers.add(service.Provider);
    }
  }
  for (const [i, service] of (tg.Services ?? []).entries()) {
    track(service.Name, 'group', service.PortLabel);
    providers.add(service.Provider);
    const invalid = validateService(service);
    if (invalid) {
      errors.push(`Service[${i}] ${service.Name} validation failed: ${invalid}`);
      continue;
    }
    if (service.AddressMode === 'driver') {
      errors.push(`service ${goQuote(service.Name)} cannot use address_mode="driver", only services defined in a "task" block can use this mode`);
    }
    for (const check of service.Checks ?? []) {
      if (check.TaskName === '') continue;
      if (check.AddressMode === 'driver') {
        errors.push(`Check ${goQuote(service.Name)} invalid: cannot use address_mode="driver", only checks defined in a "task" service block can use this mode`);
      }
      if (!taskNames.has(check.TaskName)) errors.push(`Check ${check.Name} invalid: refers to non-existent task ${check.TaskName}`);
    }
  }
  // Nomad lists the duplicates from a set (go-set `StringFunc`): one of them here.
  if (duplicates.size > 0) errors.push(`Services are not unique: ${[...duplicates.values()].join(', ')}`);
  if (providers.size > 1) errors.push('Multiple service providers used: task group services must use the same provider');
  return errors.orNil();
}

/** nomad/structs/structs.go, `TaskGroup.validateScriptChecksInGroupServices`. */
export function validateGroupScriptChecks(tg: Json): MultiError | null {
  const errors = new MultiError();
  for (const service of tg.Services ?? []) {
    if (service.TaskName !== '') continue;
    for (const check of service.Checks ?? []) {
      if (check.Type === 'script' && check.TaskName === '') {
        errors.push(`Service [${tg.Name}]->${service.Name} or Check ${check.Name} must specify task parameter`);
      }
    }
  }
  return errors.orNil();
}

/** nomad/structs/structs.go, `validateServices`: a task's own services, and the ports they and their checks use. */
export function validateTaskServices(task: Json, groupNetworks: Json[] | null): MultiError | null {
  const errors = new MultiError();
  const servicePorts = new Map<string, Set<string>>();
  const usePort = (label: string, service: string) => servicePorts.set(label, (servicePorts.get(label) ?? new Set()).add(service));
  const known = new Set<string>();
  for (const [i, service] of (task.Services ?? []).entries()) {
    const invalid = validateService(service);
    if (invalid) errors.push(`service[${i}] ${goQuote(service.Name, true)} validation failed: ${invalid}`);
    if (service.AddressMode === 'alloc') errors.push(`service ${goQuote(service.Name)} cannot use address_mode="alloc", only services defined in a "group" block can use this mode`);
    if (service.AddressMode === 'alloc_ipv6') errors.push(`service ${goQuote(service.Name)} cannot use address_mode="alloc_ipv6", only services defined in a "group" block can use this mode`);
    if (known.has(service.Name + service.PortLabel)) errors.push(`service ${goQuote(service.Name)} is duplicate`);
    known.add(service.Name + service.PortLabel);
    if (service.PortLabel !== '' && !(service.AddressMode === 'driver' && isGoInt(service.PortLabel))) usePort(service.PortLabel, service.Name);
    errors.append(validateTaskChecks(service, usePort));
  }
  const labels = new Set<string>();
  for (const port of portsOf(groupNetworks?.[0])) labels.add(port.Label);
  for (const network of task.Resources?.Networks ?? []) for (const port of portsOf(network)) labels.add(port.Label);
  for (const label of [...servicePorts.keys()].sort()) {
    if (!labels.has(label)) errors.push(`port label ${goQuote(label)} referenced by services ${[...servicePorts.get(label)!].sort().join(', ')} does not exist`);
  }
  return errors.orNil();
}

/** The check part of `validateServices`: unique names, no alloc address modes, and a port that is a label. */
function validateTaskChecks(service: Json, usePort: (label: string, service: string) => void): MultiError {
  const errors = new MultiError();
  const names = new Set<string>();
  for (const check of service.Checks ?? []) {
    if (names.has(check.Name)) errors.push(`check ${goQuote(check.Name)} is duplicate`);
    names.add(check.Name);
    if (check.AddressMode === 'alloc') errors.push(`check ${goQuote(service.Name)} cannot use address_mode="alloc", only checks defined in a "group" service block can use this mode`);
    if (check.AddressMode === 'alloc_ipv6') errors.push(`check ${goQuote(service.Name)} cannot use address_mode="alloc_ipv6", only checks defined in a "group" service block can use this mode`);
    if (!requiresPort(check)) continue;
    const port = check.PortLabel || service.PortLabel;
    if (port === '') {
      errors.push(`check ${goQuote(check.Name)} is missing a port`);
      continue;
    }
    if (isGoInt(port)) {
      const number = Number(port);
      if (check.AddressMode === 'driver') {
        if (number <= 0) errors.push(`check ${goQuote(check.Name)} has invalid numeric port ${number}`);
      } else errors.push(`check ${goQuote(check.Name)} cannot use a numeric port ${number} without setting address_mode="driver"`);
      continue;
    }
    usePort(port, service.Name);
  }
  return errors;
}

/** `strconv.Atoi` succeeds: an optional sign and decimal digits. */
const isGoInt = (text: string) => /^[+-]?[0-9]+$/.test(text);

const portsOf = (network: Json | undefined): Json[] => [...(network?.ReservedPorts ?? []), ...(network?.DynamicPorts ?? [])];
