/**
 * `--model FILE|default`: a valuator model for the governor, as `selfgc train` writes it.
 */
import { readFileSync } from 'node:fs';
import { BadInputError } from '../core/errors.js';
import { defaultEntryModel, type EntryModel, parseEntryModel } from '../core/valuator/entry-model.js';

export const MODEL_FLAG_HELP = `  --model FILE|default   a valuator model for what fold indexes keep, as \`selfgc train\` writes
                         it; default: the one fitted on the project's recorded sessions
                         (without --model: fold indexes list entries by kind)`;

/** The model a `--model` value names; undefined without one. */
export function readModelFlag(value: unknown): EntryModel | undefined {
  if (value === undefined) return undefined;
  if (typeof value !== 'string' || value.length === 0)
    throw new BadInputError('--model needs a FILE or default');
  if (value === 'default') return defaultEntryModel();
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
