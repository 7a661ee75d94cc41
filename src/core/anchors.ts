/**
 * Anchors: exact strings a later step may need verbatim — paths, identifiers, URLs, numbers,
 * hashes, error names, quoted values. The same extractor feeds the ledger (what an object
 * holds, what later turns refer to), fold summaries (what must stay visible) and the
 * deterministic judge (what a continuation uses), so "needed" and "kept" mean the same thing.
 */

/** `call` and `line` are entries of fold indexes only: the extractor (and the judge) never gives them. */
export type AnchorKind =
  | 'url'
  | 'path'
  | 'error'
  | 'hash'
  | 'identifier'
  | 'number'
  | 'quoted'
  | 'call'
  | 'line';

export interface Anchor {
  kind: AnchorKind;
  value: string;
}

const FILE_EXTENSIONS = new Set(
  (
    'py pyi ts tsx js jsx mjs cjs json jsonl md rst txt toml yaml yml ini cfg conf lock sh bash zsh c h cc cpp hpp ' +
    'rs go java kt scala rb php ex exs erl hs ml swift m sql html css scss vue svelte xml csv tsv log env ' +
    'proto graphql gql tf dockerfile makefile gradle pom lua pl r jl dart cs fs vb ps1 bat ipynb patch diff'
  ).split(' '),
);

/** Words that look like identifiers but carry no information. */
const STOP_IDENTIFIERS = new Set(['e.g', 'i.e', 'etc', 'vs', 'the', 'and', 'for', 'not', 'this', 'that']);

const URL_PATTERN = /\bhttps?:\/\/[^\s<>"'`)\]}]+/g;
// A path: segments joined by '/', optionally starting with ./ ../ / or ~/.
const PATH_PATTERN = /(?:~|\.{1,2})?\/?(?:[\w@.+-]+\/)+[\w@.+-]+\/?/g;
// A bare file name with an extension (checked against FILE_EXTENSIONS).
const FILE_PATTERN = /\b[\w-]+(?:\.[\w-]+)*\.([A-Za-z][A-Za-z0-9]{0,9})\b/g;
const ERROR_PATTERN = /\b[A-Z]?[A-Za-z]*(?:Error|Exception|Warning|Failure|Fault)\b/g;
const HASH_PATTERN = /\b(?=[0-9a-f]*[a-f])(?=[0-9a-f]*[0-9])[0-9a-f]{7,64}\b/g;
// snake_case, camelCase, PascalCase with an inner capital, dotted or :: qualified names.
const IDENTIFIER_PATTERN = /[A-Za-z_$][\w$]*(?:(?:\.|::)[A-Za-z_$][\w$]*)*/g;
const NUMBER_PATTERN = /(?<![\w.])-?\d+(?:\.\d+)*(?![\w.]*[A-Za-z_])/g;
const QUOTED_PATTERN = /`([^`\n]{2,80})`|"([^"\n]{3,60})"|'([^'\n]{3,60})'/g;

function isInterestingIdentifier(value: string): boolean {
  if (value.length < 4 || STOP_IDENTIFIERS.has(value.toLowerCase())) return false;
  if (value.includes('.') || value.includes('::')) return /[A-Za-z]{2}/.test(value);
  if (value.includes('_')) return /[A-Za-z]/.test(value.replaceAll('_', ''));
  // camelCase or PascalCase with an inner capital after a lowercase letter: fooBar, FooBar.
  return /[a-z][A-Z]/.test(value);
}

function isInterestingNumber(value: string): boolean {
  const digits = value.replace(/[^0-9]/g, '');
  return value.includes('.') ? digits.length >= 2 : digits.length >= 3;
}

function trimPunctuation(value: string): string {
  return value.replace(/[.,;:!?]+$/, '');
}

/**
 * All anchors of a text, deduplicated, in order of first appearance. Deterministic and linear in
 * the text's length.
 */
export function extractAnchors(textValue: string): Anchor[] {
  const found = new Map<string, Anchor>();
  const add = (kind: AnchorKind, raw: string) => {
    const value = trimPunctuation(raw);
    if (value.length < 2 || value.length > 200 || found.has(value)) return;
    found.set(value, { kind, value });
  };
  for (const match of textValue.matchAll(URL_PATTERN)) add('url', match[0]);
  for (const match of textValue.matchAll(PATH_PATTERN)) {
    const value = match[0];
    if (value.startsWith('//') || !/[A-Za-z]/.test(value) || /^\d+\/\d+$/.test(value)) continue;
    // Compare trimmed values: a URL is stored without its trailing punctuation, so is the path.
    if (!found.has(trimPunctuation(value)) && !isInsideUrl(found, trimPunctuation(value))) add('path', value);
  }
  for (const match of textValue.matchAll(FILE_PATTERN)) {
    if (FILE_EXTENSIONS.has((match[1] ?? '').toLowerCase())) add('path', match[0]);
  }
  for (const match of textValue.matchAll(ERROR_PATTERN)) if (match[0].length > 5) add('error', match[0]);
  for (const match of textValue.matchAll(HASH_PATTERN)) add('hash', match[0]);
  for (const match of textValue.matchAll(IDENTIFIER_PATTERN)) {
    if (isInterestingIdentifier(match[0])) add('identifier', match[0]);
  }
  for (const match of textValue.matchAll(NUMBER_PATTERN))
    if (isInterestingNumber(match[0])) add('number', match[0]);
  for (const match of textValue.matchAll(QUOTED_PATTERN)) {
    const value = match[1] ?? match[2] ?? match[3] ?? '';
    if (/[A-Za-z0-9]/.test(value) && value.trim() === value) add('quoted', value);
  }
  return [...found.values()];
}

function isInsideUrl(found: Map<string, Anchor>, value: string): boolean {
  for (const anchor of found.values()) if (anchor.kind === 'url' && anchor.value.includes(value)) return true;
  return false;
}

// A call with its arguments on one level: `name(args)`, `obj.method()`, `@attr(x)`.
const CALL_PATTERN = /[A-Za-z_@][\w.@]*\([^()\n]{0,40}\)/g;

/**
 * The call expressions of a text (`is_nil(subagent_id)`, `self.update(kwargs)`), deduplicated,
 * in order. Not anchors of the judge's: fold indexes list them after the anchors, since an agent
 * quotes the code it saw when it edits or reports on it.
 */
export function callExpressions(textValue: string): Anchor[] {
  const found = new Map<string, Anchor>();
  for (const match of textValue.matchAll(CALL_PATTERN)) {
    if (!found.has(match[0])) found.set(match[0], { kind: 'call', value: match[0] });
  }
  return [...found.values()];
}

/** Anchor values only. */
export function anchorValues(textValue: string): string[] {
  return extractAnchors(textValue).map((anchor) => anchor.value);
}

/** How much an anchor says on its own, used to pick the key anchors of an object. */
export function anchorWeight(anchor: Anchor): number {
  switch (anchor.kind) {
    case 'error':
      return 6;
    case 'path':
    case 'url':
      return 5;
    case 'hash':
      return 4;
    case 'identifier':
      return 3;
    case 'quoted':
    case 'call':
      return 2;
    case 'line':
      return 1;
    case 'number':
      return 3;
  }
}
