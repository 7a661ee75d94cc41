/**
 * Reading a command line: options parsed strictly, numbers and durations checked with one
 * message shape (`--flag: expected …, got "…"`), and output paths checked before any work.
 */
import { accessSync, constants, realpathSync, type Stats, statSync } from 'node:fs';
import { basename, dirname, resolve } from 'node:path';
import { type ParseArgsConfig, parseArgs } from 'node:util';
import { BadInputError } from '../core/errors.js';

export type OptionSpecs = NonNullable<ParseArgsConfig['options']>;

/**
 * `--window -5` is ambiguous to `parseArgs` (is `-5` a value or a flag?): a value that reads as
 * a negative number is joined to its option (`--window=-5`) so the option's own check names it.
 */
function joinNegativeValues(args: readonly string[], options: OptionSpecs): string[] {
  const joined: string[] = [];
  for (let index = 0; index < args.length; index += 1) {
    const arg = args[index]!;
    const next = args[index + 1];
    const name = arg.startsWith('--') ? arg.slice(2) : undefined;
    if (name !== undefined && options[name]?.type === 'string' && next !== undefined && /^-\d/.test(next)) {
      joined.push(`${arg}=${next}`);
      index += 1;
    } else {
      joined.push(arg);
    }
  }
  return joined;
}

/** Parse a command's arguments (`--help`/`-h` always allowed); unknown options are bad input. */
export function parseCommandArgs(args: readonly string[], options: OptionSpecs) {
  try {
    const parsed = parseArgs({
      args: joinNegativeValues(args, options),
      options: { ...options, help: { type: 'boolean', short: 'h' } },
      allowPositionals: true,
      strict: true,
    });
    return {
      values: parsed.values as Record<string, string | boolean | undefined>,
      positionals: parsed.positionals,
    };
  } catch (error) {
    throw new BadInputError(error instanceof Error ? error.message : String(error));
  }
}

/** A positive integer option, or `fallback` when absent. */
export function positiveInteger(value: string | undefined, flag: string, fallback: number): number {
  if (value === undefined) return fallback;
  const number = Number(value);
  if (value.trim() === '' || !Number.isSafeInteger(number) || number <= 0) {
    throw new BadInputError(`${flag}: expected a positive integer, got "${value}"`);
  }
  return number;
}

const DURATION_UNITS = { ms: 1, s: 1000, m: 60_000, h: 3_600_000, d: 86_400_000 } as const;
export type DurationUnit = keyof typeof DURATION_UNITS;
const BARE_UNIT_NAMES: Record<DurationUnit, string> = {
  ms: 'milliseconds',
  s: 'seconds',
  m: 'minutes',
  h: 'hours',
  d: 'days',
};

/**
 * A duration in milliseconds: a number with a unit (`1500ms`, `90s`, `30m`, `12h`, `7d`), or a
 * bare number in `bareUnit` when the option has one.
 */
export function parseDuration(value: string, flag: string, bareUnit?: DurationUnit): number {
  const match = /^(\d+(?:\.\d+)?)(ms|s|m|h|d)?$/.exec(value.trim());
  const unit = (match?.[2] as DurationUnit | undefined) ?? bareUnit;
  const milliseconds =
    match === null || unit === undefined ? Number.NaN : Number(match[1]) * DURATION_UNITS[unit];
  if (!Number.isFinite(milliseconds) || milliseconds < 1 || milliseconds > Number.MAX_SAFE_INTEGER) {
    const examples =
      bareUnit === undefined ? '30m, 12h or 7d' : `600 (${BARE_UNIT_NAMES[bareUnit]}), 1500ms, 90s or 10m`;
    throw new BadInputError(`${flag}: expected a duration such as ${examples}, got "${value}"`);
  }
  return Math.round(milliseconds);
}

/**
 * Refuse an output path that cannot be written, before any work: an existing file must be
 * writable (and not a directory); a new one needs a writable directory to be created in.
 */
export function checkOutputPath(path: string, flag: string): void {
  const existing = statOrUndefined(path);
  if (existing !== undefined) {
    if (existing.isDirectory()) throw new BadInputError(`${flag}: ${path} is a directory, not a file`);
    if (!writable(path)) throw new BadInputError(`${flag}: ${path} is not writable`);
    return;
  }
  const directory = dirname(resolve(path));
  let isDirectory: boolean;
  try {
    isDirectory = statSync(directory).isDirectory();
  } catch {
    throw new BadInputError(`${flag}: directory ${directory} does not exist`);
  }
  if (!isDirectory) throw new BadInputError(`${flag}: ${directory} is not a directory`);
  if (!writable(directory)) throw new BadInputError(`${flag}: directory ${directory} is not writable`);
}

/**
 * Check every output path of a command, then refuse one that names an input (it would be
 * overwritten with results) or the same file as another output (one would replace the other).
 */
export function checkOutputPaths(
  outputs: ReadonlyArray<readonly [flag: string, path: string]>,
  inputs: readonly string[],
): void {
  for (const [flag, path] of outputs) checkOutputPath(path, flag);
  outputs.forEach(([flag, path], index) => {
    // A device or a pipe (/dev/null, /dev/stdout) is a stream, not a file to overwrite.
    if (statOrUndefined(path)?.isFile() === false) return;
    const input = inputs.find((candidate) => sameFile(candidate, path));
    if (input !== undefined)
      throw new BadInputError(`${flag}: ${path} is also an input (${input}); writing it would overwrite it`);
    const earlier = outputs.slice(0, index).find(([, other]) => sameFile(other, path));
    if (earlier !== undefined)
      throw new BadInputError(`${earlier[0]} and ${flag} name the same file ${path}; give each its own`);
  });
}

/** Whether two paths name one file: the same inode when both exist, else the same resolved path. */
function sameFile(first: string, second: string): boolean {
  const [a, b] = [statOrUndefined(first), statOrUndefined(second)];
  if (a !== undefined && b !== undefined) return a.dev === b.dev && a.ino === b.ino;
  if (a !== undefined || b !== undefined) return false;
  return canonical(first) === canonical(second);
}

/** The file's status, or undefined when it does not exist (or cannot be read). */
export function statOrUndefined(path: string): Stats | undefined {
  try {
    return statSync(path);
  } catch {
    return undefined;
  }
}

/** A path that does not exist yet, by its directory's real path. */
function canonical(path: string): string {
  const absolute = resolve(path);
  try {
    return resolve(realpathSync(dirname(absolute)), basename(absolute));
  } catch {
    return absolute;
  }
}

function writable(path: string): boolean {
  try {
    accessSync(path, constants.W_OK);
    return true;
  } catch {
    return false;
  }
}
