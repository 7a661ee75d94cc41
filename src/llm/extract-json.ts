/**
 * Pull the first JSON object out of a model answer: models wrap JSON in code fences, lead with
 * prose, think aloud in `<think>` blocks, or trail off with remarks.
 */

import { BadInputError } from '../core/errors.js';

const THINK_BLOCK = /<think>[\s\S]*?<\/think>/gi;
const FENCED_BLOCK = /```[ \t]*([\w-]*)[^\n]*\n([\s\S]*?)```/g;
const PREVIEW_LIMIT = 120;

/**
 * The first JSON object in `text`: inside a ```json fence first, then any fence, then anywhere.
 * A balanced `{…}` span that is not valid JSON (a placeholder in prose, a broken object) is
 * skipped whole, so a fragment of a broken object is never returned. Throws `BadInputError`
 * when there is no object.
 */
export function extractJson(text: string): Record<string, unknown> {
  const answer = text.replace(THINK_BLOCK, '');
  for (const candidate of [...fencedBlocks(answer), answer]) {
    const found = firstObject(candidate);
    if (found !== undefined) return found;
  }
  throw new BadInputError(`model answer holds no JSON object: ${preview(text)}`);
}

/** Fence bodies, those labelled `json` first. */
function fencedBlocks(text: string): string[] {
  const blocks = [...text.matchAll(FENCED_BLOCK)].map((match) => ({
    json: (match[1] ?? '').toLowerCase() === 'json',
    body: match[2] ?? '',
  }));
  return [...blocks.filter((block) => block.json), ...blocks.filter((block) => !block.json)].map(
    (block) => block.body,
  );
}

function firstObject(text: string): Record<string, unknown> | undefined {
  let start = text.indexOf('{');
  while (start !== -1) {
    const end = closingBrace(text, start);
    if (end === -1) {
      start = text.indexOf('{', start + 1);
      continue;
    }
    const value = tryParse(text.slice(start, end + 1));
    if (isObject(value)) return value;
    start = text.indexOf('{', end + 1);
  }
  return undefined;
}

/** Index of the brace that closes the one at `start`, skipping strings; -1 when unbalanced. */
function closingBrace(text: string, start: number): number {
  let depth = 0;
  let inString = false;
  let escaped = false;
  for (let index = start; index < text.length; index += 1) {
    const char = text[index];
    if (inString) {
      if (escaped) escaped = false;
      else if (char === '\\') escaped = true;
      else if (char === '"') inString = false;
    } else if (char === '"') {
      inString = true;
    } else if (char === '{' || char === '[') {
      depth += 1;
    } else if (char === '}' || char === ']') {
      depth -= 1;
      if (depth === 0) return char === '}' ? index : -1;
      if (depth < 0) return -1;
    }
  }
  return -1;
}

function tryParse(candidate: string): unknown {
  try {
    return JSON.parse(candidate);
  } catch {
    return undefined;
  }
}

function isObject(value: unknown): value is Record<string, unknown> {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}

function preview(text: string): string {
  const flat = text.replace(/\s+/g, ' ').trim();
  if (flat === '') return '(empty answer)';
  return JSON.stringify(flat.length > PREVIEW_LIMIT ? `${flat.slice(0, PREVIEW_LIMIT)}…` : flat);
}
