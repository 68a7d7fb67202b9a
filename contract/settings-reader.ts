import { readFileSync } from 'node:fs';

export type Env = Record<string, string | undefined>;

/**
 * Every bad setting at once, each with its bounds or what was expected, so one restart
 * fixes them all. `subject` names whose settings they are ("authz", "local edge").
 */
export class ConfigError extends Error {
  constructor(readonly problems: string[], subject?: string) {
    super(`Invalid ${subject ? `${subject} ` : ''}configuration:\n  - ${problems.join('\n  - ')}`);
    this.name = 'ConfigError';
  }
}

/** Builds the error thrown for the problems found; ConfigError unless a component has its own. */
export type ProblemsError = (problems: string[]) => Error;

/**
 * Runs `read` over the environment and returns what it built, or throws one ConfigError
 * listing every problem the reads (and `read`'s own cross-field checks) reported.
 */
export function readSettings<T>(env: Env, read: (reader: SettingReader) => T, failure?: ProblemsError): T {
  const reader = new SettingReader(env);
  const value = read(reader);
  reader.throwIfProblems(failure);
  return value;
}

/**
 * One typed read as a reader call made it, kept while `recordSettingReads` runs: the raw
 * material of docs/configuration.md (scripts/lib/configuration-reference.ts), so the page
 * lists what the readers read, with the defaults and bounds they apply, and cannot drift.
 */
export interface SettingRead {
  readonly name: string;
  /** What the value is: integer, number, port, boolean, text, URL, one of, list, file, ... */
  readonly kind: string;
  /** The call's fallback as given (null or undefined: none). */
  readonly fallback: unknown;
  readonly min?: number;
  readonly max?: number;
  /** The values allowed (one of, boolean spellings, URL schemes). */
  readonly choices?: readonly string[];
  /** What a `matching` value must look like, or where bounds come from (`why`). */
  readonly expected?: string;
}

/** What the page says of a setting: its description, and a unit or default the reads cannot show. */
export interface SettingDoc {
  readonly text: string;
  /** Overrides the unit told by the name's suffix (_MS, _SECONDS, _PORT, ...). */
  readonly unit?: string;
  /** Shown instead of the call's fallback: one computed on the host (the CPU count) or not printable. */
  readonly default?: string;
}

/** Each setting a component reads, by name: a description, or a description with its unit or default. */
export type SettingDocs = Readonly<Record<string, string | SettingDoc>>;

/** What recordSettingReads saw: every read, and every problem the readers reported. */
export interface RecordedSettings {
  readonly reads: readonly SettingRead[];
  readonly problems: readonly string[];
}

let recording: { reads: SettingRead[]; readers: SettingReader[] } | null = null;

/**
 * Runs `load` (a component's config loader, over an environment made for it) and returns
 * every read its readers made and every problem they found; the ConfigError a loader
 * throws for them is expected here and swallowed. Global while it runs, because loaders
 * such as the control API's build their own reader; `load` is synchronous, so nothing else
 * reads meanwhile.
 */
export function recordSettingReads(load: () => unknown): RecordedSettings {
  if (recording) throw new Error('recordSettingReads: already recording');
  const current = { reads: [] as SettingRead[], readers: [] as SettingReader[] };
  recording = current;
  try {
    load();
  } catch (error) {
    if (!(error instanceof ConfigError)) throw error;
  } finally {
    recording = null;
  }
  return { reads: current.reads, problems: [...new Set(current.readers.flatMap((reader) => reader.problems))] };
}

/** The spellings `boolean` accepts unless a setting names its own. */
const BOOLEAN_WORDS = { true: ['1', 'true', 'yes'], false: ['0', 'false', 'no'] } as const;

/**
 * Reads settings from the environment: the one reader of the control API, authz, the
 * local edge and the scripts (the runtime image, built and shipped alone, has its own).
 * Only entry points touch process.env, handing it here (test/architecture.test.ts). A bad
 * value is reported (name, what was expected, what was found) and the default used in its
 * place, so reading goes on and the caller learns of every problem at once rather than of
 * the first. Reading is pure: it probes nothing on the host but the files a setting names.
 */
export class SettingReader {
  private readonly found: string[] = [];

  constructor(private readonly env: Env) {
    recording?.readers.push(this);
  }

  /** Kept only while recordSettingReads runs; a read that calls another public read notes itself once. */
  private note(read: SettingRead): void {
    recording?.reads.push(read);
  }

  get problems(): readonly string[] {
    return this.found;
  }

  /**
   * A problem the typed reads cannot see (a cross-field check). The podman and Nomad
   * readers share a few settings (RESTART_BUDGET, DRAIN_SECONDS, ...) with the same
   * bounds: the same problem is listed once.
   */
  report(problem: string): void {
    if (!this.found.includes(problem)) this.found.push(problem);
  }

  /** Throws one ConfigError (or `failure`'s error) listing every problem reported so far, if any. */
  throwIfProblems(failure: ProblemsError = (problems) => new ConfigError(problems)): void {
    if (this.found.length > 0) throw failure([...this.found]);
  }

  private raw(name: string): string | undefined {
    const value = this.env[name];
    return value === undefined || value === '' ? undefined : value;
  }

  string(name: string, fallback: string): string {
    this.note({ name, kind: 'text', fallback });
    return this.raw(name) ?? fallback;
  }

  /** The value, or null when the setting is unset or empty. */
  optionalString(name: string): string | null {
    this.note({ name, kind: 'text', fallback: null });
    return this.raw(name) ?? null;
  }

  /** A URL with one of `protocols`; required unless a fallback is given. */
  url(name: string, protocols: readonly string[], fallback?: string): string {
    this.note({ name, kind: 'URL', fallback, choices: protocols.map((protocol) => `${protocol}//`) });
    const value = this.raw(name) ?? fallback;
    if (value === undefined) {
      this.report(`${name}: required (a ${protocols[0]}// URL)`);
      return '';
    }
    try {
      const parsed = new URL(value);
      if (!protocols.includes(parsed.protocol)) {
        this.report(`${name}: expected a ${protocols.join(' or ')}// URL, got ${parsed.protocol}//`);
      }
    } catch {
      // The value itself is left out: a URL may carry a password.
      this.report(`${name}: not a valid URL`);
    }
    return value;
  }

  /**
   * An integer from `min` to `max`; `why`, when given, says where the bounds come from. A
   * null fallback leaves an unset value to the caller (the host's limit, say).
   */
  integer<F extends number | null = number>(name: string, fallback: F, min: number, max: number, why?: string): number | F {
    this.note({ name, kind: 'integer', fallback, min, max, ...(why ? { expected: why } : {}) });
    return this.bounded(name, fallback, min, max, 'an integer', Number.isInteger, why);
  }

  /** Like `integer`, fractions allowed (DRAIN_SECONDS=0.5). */
  number<F extends number | null = number>(name: string, fallback: F, min: number, max: number, why?: string): number | F {
    this.note({ name, kind: 'number', fallback, min, max, ...(why ? { expected: why } : {}) });
    return this.bounded(name, fallback, min, max, 'a number', Number.isFinite, why);
  }

  private bounded<F>(name: string, fallback: F, min: number, max: number, kind: string, valid: (n: number) => boolean, why?: string): number | F {
    const value = this.raw(name);
    if (value === undefined) return fallback;
    const parsed = Number(value);
    if (!valid(parsed) || parsed < min || parsed > max) {
      this.report(`${name}: expected ${kind} from ${min} to ${max}${why ? ` (${why})` : ''}, got "${value}"`);
      return fallback;
    }
    return parsed;
  }

  port(name: string, fallback: number): number {
    this.note({ name, kind: 'port', fallback, min: 0, max: 65535 });
    return this.bounded(name, fallback, 0, 65535, 'an integer', Number.isInteger);
  }

  optionalPort(name: string, fallback: number): number | null {
    this.note({ name, kind: 'port or none', fallback, min: 0, max: 65535 });
    const value = this.env[name];
    if (value === '' || value === 'none') return null;
    return this.bounded(name, fallback, 0, 65535, 'an integer', Number.isInteger);
  }

  /** true or false, spelt as `words` allows (1/0, true/false, yes/no unless a setting is stricter). */
  boolean(name: string, fallback: boolean, words: { true: readonly string[]; false: readonly string[] } = BOOLEAN_WORDS): boolean {
    this.note({ name, kind: 'boolean', fallback, choices: [...words.true, ...words.false] });
    const value = this.raw(name);
    if (value === undefined) return fallback;
    if (words.true.includes(value)) return true;
    if (words.false.includes(value)) return false;
    this.report(`${name}: expected true or false, got "${value}"`);
    return fallback;
  }

  /** One of `allowed`; the fallback may lie outside them (null: leave the choice to the tool). */
  oneOf<T extends string, F extends T | null = T>(name: string, allowed: readonly T[], fallback: F): T | F {
    this.note({ name, kind: 'one of', fallback, choices: allowed });
    const value = this.raw(name);
    if (value === undefined) return fallback;
    if (!(allowed as readonly string[]).includes(value)) {
      this.report(`${name}: expected one of ${allowed.join(', ')}, got "${value}"`);
      return fallback;
    }
    return value as T;
  }

  /** A value `pattern` must match whole; `expected` says what it is, e.g. "a lower-case DNS name". */
  matching(name: string, fallback: string, pattern: RegExp, expected: string): string {
    this.note({ name, kind: 'text', fallback, expected });
    const value = this.raw(name) ?? fallback;
    if (!pattern.test(value)) this.report(`${name}: expected ${expected}, got "${value}"`);
    return value;
  }

  /** A comma-separated list of at least one item; `example` shows one in the message. */
  list(name: string, fallback: string, example: string): string[] {
    this.note({ name, kind: 'list', fallback, expected: `comma-separated, e.g. ${example}` });
    const items = (this.raw(name) ?? fallback).split(',').map((item) => item.trim()).filter(Boolean);
    if (items.length === 0) this.report(`${name}: expected at least one item (comma-separated), e.g. ${example}`);
    return items;
  }

  /** The contents of the file the setting names, read once at start; null when unset. */
  file(name: string): string | null {
    this.note({ name, kind: 'file', fallback: null });
    const path = this.raw(name);
    if (path === undefined) return null;
    try {
      return readFileSync(path, 'utf8');
    } catch (error) {
      this.report(`${name}: cannot read ${path} (${(error as Error).message})`);
      return null;
    }
  }

  /**
   * Variables handed on as they are to a child process (not settings of ours), as `pick`
   * selects them from the environment: the rest (MASTER_KEYS, DATABASE_URL, ...) stays here.
   */
  passthrough(pick: (env: Env) => Record<string, string>): Record<string, string> {
    return pick(this.env);
  }

  /** A value `parse` turns into T, throwing an Error whose message names the setting and why. */
  parsed<T>(name: string, fallback: T, parse: (value: string) => T): T {
    this.note({ name, kind: 'text', fallback });
    const value = this.raw(name);
    if (value === undefined) return fallback;
    try {
      return parse(value);
    } catch (error) {
      this.report((error as Error).message);
      return fallback;
    }
  }
}

/** sysexits.h's EX_CONFIG: what every entry point exits with on a bad setting, so a supervisor can tell a misconfiguration from a crash. */
export const EXIT_CONFIG = 78;

/**
 * A process's settings, or, on a ConfigError, its message on stderr (every bad setting,
 * without a stack) and exit EXIT_CONFIG: restarting will not help, fixing the settings will.
 */
export function settingsOrExit<T>(load: () => T): T {
  try {
    return load();
  } catch (error) {
    if (!(error instanceof ConfigError)) throw error;
    console.error(error.message);
    process.exit(EXIT_CONFIG);
  }
}
