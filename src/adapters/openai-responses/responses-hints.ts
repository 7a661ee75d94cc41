import type { ImagePart, OpaquePart, Role, TextPart } from '../../core/transcript.js';
import { readSlice } from '../provider-data.js';

export const NAMESPACE = 'openaiResponses';

/** Content part type a text part gets when nothing was remembered. */
export function defaultTextType(role: Role): 'input_text' | 'output_text' {
  return role === 'assistant' ? 'output_text' : 'input_text';
}

/** A lone text part with no remembered detail is written as a string; anything else as an array. */
export function defaultContentShape(
  parts: ReadonlyArray<TextPart | ImagePart | OpaquePart>,
): 'string' | 'array' {
  const [only] = parts;
  if (parts.length !== 1 || only?.type !== 'text') return 'array';
  const hints = readSlice(only, NAMESPACE);
  return hints.partType === undefined && hints.extra === undefined ? 'string' : 'array';
}

/** Summary texts joined into one canonical reasoning text. */
export const SUMMARY_SEPARATOR = '\n\n';

/**
 * Split a reasoning text back into the summaries it was joined from, when the remembered
 * lengths still describe it; otherwise (edited or never split) one summary, none when empty.
 */
export function splitSummary(text: string, lengths: unknown): string[] {
  if (Array.isArray(lengths) && lengths.every((length) => Number.isInteger(length) && length >= 0)) {
    const pieces: string[] = [];
    let offset = 0;
    for (const [index, length] of (lengths as number[]).entries()) {
      if (index > 0) {
        if (text.slice(offset, offset + SUMMARY_SEPARATOR.length) !== SUMMARY_SEPARATOR) break;
        offset += SUMMARY_SEPARATOR.length;
      }
      pieces.push(text.slice(offset, offset + length));
      offset += length;
    }
    if (offset === text.length && pieces.length === lengths.length) return pieces;
  }
  return text === '' ? [] : [text];
}

/** The lengths to remember, or undefined when `splitSummary` would rebuild the summary anyway. */
export function summaryLengths(summary: readonly string[]): number[] | undefined {
  const joined = summary.join(SUMMARY_SEPARATOR);
  const rebuilt = joined === '' ? [] : [joined];
  const same = rebuilt.length === summary.length && rebuilt.every((piece, index) => piece === summary[index]);
  return same ? undefined : summary.map((piece) => piece.length);
}
