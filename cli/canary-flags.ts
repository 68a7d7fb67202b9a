import type { Argv } from 'yargs';
import { UsageError } from './errors.js';

/** The `strategy` of a deploy body that asks for a canary (issue 36); what is left out the API defaults. */
export interface CanaryStrategyInput {
  type: 'canary';
  percent: number;
  replicas?: number;
  affinity?: 'none' | 'caller';
  auto_promote_after_seconds?: number;
  max_error_ratio?: number;
  min_requests?: number;
}

export const AFFINITIES = ['none', 'caller'] as const;

/** The canary flags as yargs parsed them (camelCase). */
export interface CanaryFlags {
  canary?: string;
  canaryReplicas?: number;
  affinity?: (typeof AFFINITIES)[number];
  autoPromote?: string;
  maxErrorRatio?: number;
  minRequests?: number;
}

/** The flags that only mean something with --canary, by their name on the command line. */
const SETTINGS_OF_A_CANARY: [keyof CanaryFlags, string][] = [
  ['canaryReplicas', '--canary-replicas'],
  ['affinity', '--affinity'],
  ['autoPromote', '--auto-promote'],
  ['maxErrorRatio', '--max-error-ratio'],
  ['minRequests', '--min-requests'],
];

/** --canary and its settings, as `agents deploy` takes them. */
export const withCanaryFlags = <T>(yargs: Argv<T>) =>
  yargs
    .option('canary', { type: 'string', describe: 'deploy as a canary taking this percent (1–99) of requests beside the version serving now; deploy returns once it serves' })
    .option('canary-replicas', { type: 'number', describe: "the canary's replicas (default 1)" })
    .option('affinity', { type: 'string', choices: AFFINITIES, describe: 'caller: a caller stays on one version for the whole canary (default none)' })
    .option('auto-promote', { type: 'string', describe: 'promote after serving this long without failing: 90s, 10m, 1h or seconds (60 s to 24 h; default: promote by hand)' })
    .option('max-error-ratio', { type: 'number', describe: "abort once the canary's 5xx ratio exceeds this (0–1, default 0.05)" })
    .option('min-requests', { type: 'number', describe: 'requests the canary answers before its ratio is judged (default 50)' });

/**
 * The deploy body's `strategy` from the flags; undefined without --canary. What is cheap to
 * check here is a usage error (exit 2) before any request: a percent that is no whole
 * number from 1 to 99, a duration that does not parse, a number flag that is no number, a
 * setting without --canary. Ranges beyond that are the API's (422).
 */
export function canaryStrategy(flags: CanaryFlags): CanaryStrategyInput | undefined {
  if (flags.canary === undefined) {
    refuseSettingsWithoutCanary(flags);
    return undefined;
  }
  return {
    type: 'canary',
    percent: parsePercent(flags.canary),
    replicas: numberFlag('--canary-replicas', flags.canaryReplicas),
    affinity: flags.affinity,
    auto_promote_after_seconds: flags.autoPromote === undefined ? undefined : parseDuration('--auto-promote', flags.autoPromote),
    max_error_ratio: numberFlag('--max-error-ratio', flags.maxErrorRatio),
    min_requests: numberFlag('--min-requests', flags.minRequests),
  };
}

function refuseSettingsWithoutCanary(flags: CanaryFlags): void {
  const given = SETTINGS_OF_A_CANARY.filter(([key]) => flags[key] !== undefined).map(([, name]) => name);
  if (given.length > 0) throw new UsageError(`${given.join(', ')} ${given.length === 1 ? 'is a setting' : 'are settings'} of a canary: add --canary <percent>`);
}

/** `10` or `10%`: a whole percent from 1 to 99. */
export function parsePercent(text: string): number {
  const match = /^(\d+)%?$/.exec(text.trim());
  const percent = match ? Number(match[1]) : NaN;
  if (!(percent >= 1 && percent <= 99)) throw new UsageError(`--canary takes a whole percent from 1 to 99 (e.g. --canary 10), not ${JSON.stringify(text)}`);
  return percent;
}

/** Seconds from `90`, `90s`, `10m`, `1h` or `1h30m`; a usage error naming `flag` otherwise. */
export function parseDuration(flag: string, text: string): number {
  const trimmed = text.trim();
  if (/^\d+$/.test(trimmed)) return Number(trimmed);
  const match = /^(?:(\d+)h)?(?:(\d+)m)?(?:(\d+)s)?$/.exec(trimmed);
  if (!match || trimmed === '') throw new UsageError(`${flag} takes a duration such as 90s, 10m, 1h or a number of seconds, not ${JSON.stringify(text)}`);
  const [, hours = '0', minutes = '0', seconds = '0'] = match;
  return Number(hours) * 3600 + Number(minutes) * 60 + Number(seconds);
}

/** A number flag's value; yargs makes `abc` NaN, which is no number to send. */
function numberFlag(flag: string, value: number | undefined): number | undefined {
  if (value !== undefined && !Number.isFinite(value)) throw new UsageError(`${flag} takes a number`);
  return value;
}
