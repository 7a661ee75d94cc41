/**
 * `--model FILE|default|none`: the valuator model for the governor, as `selfgc train` writes it.
 */
import { readFileSync } from 'node:fs';
import { BadInputError } from '../core/errors.js';
import { defaultEntryModel, type EntryModel, parseEntryModel } from '../core/valuator/entry-model.js';

export const MODEL_FLAG_HELP = `  --model FILE|default|none
                         the valuator model that orders what fold indexes keep, as
                         \`selfgc train\` writes it; default: the one shipped, fitted on the
                         project's recorded sessions; none: entries by kind`;

/** The model a `--model` value names, or `none`; undefined without one (the shipped model). */
export function readModelFlag(value: unknown): EntryModel | 'none' | undefined {
  if (value === undefined) return undefined;
  if (typeof value !== 'string' || value.length === 0)
    throw new BadInputError('--model needs a FILE, default or none');
  if (value === 'default') return defaultEntryModel();
  if (value === 'none') return 'none';
  let text: string;
  try {
    text = readFileSync(value, 'utf8');
  } catch (error) {
    const code = (error as NodeJS.ErrnoException).code;
    throw new BadInputError(
      `--model ${value}: ${code === 'ENOENT' ? 'no such file' : `cannot read (${code ?? String(error)})`}`,
    );
  }
  let parsed: unknown;
  try {
    parsed = JSON.parse(text);
  } catch {
    throw new BadInputError(`--model ${value}: not JSON`);
  }
  return parseEntryModel(parsed, `--model ${value}`);
}
