/**
 * The anchor judge's own extractor: the exact strings a continuation may reuse verbatim (URLs,
 * paths and file names, error names, hashes, structured identifiers, numbers, quoted values).
 *
 * Written apart from the core's anchor index on purpose. The governor keeps what its index
 * names; a judge that read the same index would count as needed only what the governor already
 * knows how to keep, and a change to the index would move the judge with it. This module imports
 * nothing, and `judge-imports.test.ts` keeps it so.
 */

/** What an anchor is; the judge counts every kind alike. */
export type JudgeAnchorKind = 'url' | 'path' | 'error' | 'hash' | 'identifier' | 'number' | 'quoted';

export interface JudgeAnchor {
  kind: JudgeAnchorKind;
  value: string;
}

/** Anchors shorter or longer than these are noise (a letter, a pasted blob). */
const SHORTEST_ANCHOR = 2;
const LONGEST_ANCHOR = 200;

/** Extensions that make a bare `name.ext` a file name rather than a sentence end or a field access. */
const KNOWN_EXTENSIONS: ReadonlySet<string> = new Set([
  ...['py', 'pyi', 'ipynb', 'ts', 'tsx', 'js', 'jsx', 'mjs', 'cjs', 'vue', 'svelte'],
  ...['json', 'jsonl', 'yaml', 'yml', 'toml', 'ini', 'cfg', 'conf', 'env', 'lock', 'xml', 'csv', 'tsv'],
  ...['md', 'rst', 'txt', 'log', 'html', 'css', 'scss', 'sql', 'proto', 'graphql', 'gql', 'tf'],
  ...['sh', 'bash', 'zsh', 'ps1', 'bat', 'dockerfile', 'makefile', 'gradle', 'pom'],
  ...['c', 'h', 'cc', 'cpp', 'hpp', 'rs', 'go', 'java', 'kt', 'scala', 'rb', 'php', 'ex', 'exs', 'erl'],
  ...['hs', 'ml', 'swift', 'm', 'lua', 'pl', 'r', 'jl', 'dart', 'cs', 'fs', 'vb', 'patch', 'diff'],
]);

/** Word-shaped strings that pass the identifier test's length but say nothing. */
const UNINFORMATIVE_WORDS: ReadonlySet<string> = new Set([
  'e.g',
  'i.e',
  'etc',
  'vs',
  'the',
  'and',
  'for',
  'not',
  'this',
  'that',
]);

/** `http://` or `https://` up to whitespace, a quote or a closing bracket. */
const URLS = /\bhttps?:\/\/[^\s<>"'`)\]}]+/g;
/** Two or more `/`-joined segments, optionally led by `~`, `.` or `..` and a slash. */
const SLASHED_PATHS = /(?:~|\.{1,2})?\/?(?:[\w@.+-]+\/)+[\w@.+-]+\/?/g;
/** `name.ext` or `name.part.ext`; the extension is checked against `KNOWN_EXTENSIONS`. */
const FILE_NAMES = /\b[\w-]+(?:\.[\w-]+)*\.([A-Za-z][A-Za-z0-9]{0,9})\b/g;
const ERROR_NAMES = /\b[A-Z]?[A-Za-z]*(?:Error|Exception|Warning|Failure|Fault)\b/g;
/** 7 to 64 lowercase hex digits holding at least one letter and one digit. */
const HEX_HASHES = /\b(?=[0-9a-f]*[a-f])(?=[0-9a-f]*[0-9])[0-9a-f]{7,64}\b/g;
/** A name, optionally qualified by `.` or `::`; `isStructuredName` decides whether it counts. */
const NAMES = /[A-Za-z_$][\w$]*(?:(?:\.|::)[A-Za-z_$][\w$]*)*/g;
/** A number or dotted version standing alone: not inside a word, not the head of `12px` or `1.2rc`. */
const NUMBERS = /(?<![\w.])-?\d+(?:\.\d+)*(?![\w.]*[A-Za-z_])/g;
/** A short quoted value: in backticks (2–80 characters), double or single quotes (3–60). */
const QUOTED = /`([^`\n]{2,80})`|"([^"\n]{3,60})"|'([^'\n]{3,60})'/g;

/** Sentence punctuation that follows an anchor in prose but is not part of it. */
function withoutTrailingPunctuation(value: string): string {
  return value.replace(/[.,;:!?]+$/, '');
}

/**
 * A name says something on its own when it is qualified (`os.path`, `Foo::bar`), snake_case,
 * or camelCase / PascalCase with an inner capital; a plain word does not.
 */
function isStructuredName(value: string): boolean {
  if (value.length < 4 || UNINFORMATIVE_WORDS.has(value.toLowerCase())) return false;
  if (value.includes('.') || value.includes('::')) return /[A-Za-z]{2}/.test(value);
  if (value.includes('_')) return /[A-Za-z]/.test(value.replaceAll('_', ''));
  return /[a-z][A-Z]/.test(value);
}

/** Three digits or more, or two with a decimal point: `42` is too common to tell anything. */
function isTellingNumber(value: string): boolean {
  const digits = value.replace(/\D/g, '').length;
  return value.includes('.') ? digits >= 2 : digits >= 3;
}

/** Not `//host`, holds a letter, is no fraction or date such as `3/4`. */
function isPathLike(value: string): boolean {
  return !value.startsWith('//') && /[A-Za-z]/.test(value) && !/^\d+\/\d+$/.test(value);
}

/** A quoted value counts when it holds a letter or digit and no padding. */
function isTellingQuote(value: string): boolean {
  return /[A-Za-z0-9]/.test(value) && value.trim() === value;
}

/** Collects anchors once each, first kind wins, in order of the rules that found them. */
class AnchorSet {
  readonly byValue = new Map<string, JudgeAnchor>();

  add(kind: JudgeAnchorKind, raw: string): void {
    const value = withoutTrailingPunctuation(raw);
    if (value.length < SHORTEST_ANCHOR || value.length > LONGEST_ANCHOR || this.byValue.has(value)) return;
    this.byValue.set(value, { kind, value });
  }

  has(raw: string): boolean {
    return this.byValue.has(withoutTrailingPunctuation(raw));
  }

  /** Whether `raw` is part of a URL already collected (a URL's path is not a path of its own). */
  withinUrl(raw: string): boolean {
    const value = withoutTrailingPunctuation(raw);
    for (const anchor of this.byValue.values())
      if (anchor.kind === 'url' && anchor.value.includes(value)) return true;
    return false;
  }
}

/**
 * The judge's anchors of a text, each value once. Deterministic and linear in the text's length.
 * URLs are read first so that the path inside a URL is not counted again.
 */
export function extractJudgeAnchors(textValue: string): JudgeAnchor[] {
  const anchors = new AnchorSet();
  for (const [url] of textValue.matchAll(URLS)) anchors.add('url', url);
  for (const [path] of textValue.matchAll(SLASHED_PATHS))
    if (isPathLike(path) && !anchors.has(path) && !anchors.withinUrl(path)) anchors.add('path', path);
  for (const [name, extension] of textValue.matchAll(FILE_NAMES))
    if (KNOWN_EXTENSIONS.has((extension ?? '').toLowerCase())) anchors.add('path', name);
  for (const [name] of textValue.matchAll(ERROR_NAMES)) if (name.length > 5) anchors.add('error', name);
  for (const [hash] of textValue.matchAll(HEX_HASHES)) anchors.add('hash', hash);
  for (const [name] of textValue.matchAll(NAMES)) if (isStructuredName(name)) anchors.add('identifier', name);
  for (const [number] of textValue.matchAll(NUMBERS))
    if (isTellingNumber(number)) anchors.add('number', number);
  for (const match of textValue.matchAll(QUOTED)) {
    const value = match[1] ?? match[2] ?? match[3] ?? '';
    if (isTellingQuote(value)) anchors.add('quoted', value);
  }
  return [...anchors.byValue.values()];
}

/** The anchor values of a text. */
export function judgeAnchorValues(textValue: string): string[] {
  return extractJudgeAnchors(textValue).map((anchor) => anchor.value);
}

/**
 * The values of a tool call's JSON arguments, one per line: an argument's key (`command`,
 * `file_path`) is the tool's shape, not something the agent chose. Arguments that are not JSON
 * are read as they are.
 */
export function argumentValues(argumentsText: string): string {
  let parsed: unknown;
  try {
    parsed = JSON.parse(argumentsText);
  } catch {
    return argumentsText;
  }
  const values: string[] = [];
  const collect = (value: unknown): void => {
    if (typeof value === 'string') values.push(value);
    else if (typeof value === 'number' || typeof value === 'boolean') values.push(String(value));
    else if (Array.isArray(value)) for (const item of value) collect(item);
    else if (value !== null && typeof value === 'object')
      for (const item of Object.values(value)) collect(item);
  };
  collect(parsed);
  return values.join('\n');
}
