/**
 * What a fold index may list from a message: its anchors, the short lines of code it holds (or,
 * for the agent, the lines it ran or wrote) and its call expressions. Shared by fold rendering,
 * the planners' size estimates and the valuator.
 */
import { type Anchor, callExpressions, extractAnchors } from './anchors.js';
import { messageReferenceText, rankAnchors, textToolUses } from './ledger.js';
import { messageMemo } from './message-memo.js';
import type { Message } from './transcript.js';

/**
 * What a fold index may list, kept per message and per output: rehearsal renders the same spans
 * again and again as a plan deepens, and a session's messages do not change.
 */
export interface IndexEntries {
  /** Anchors, ranked by weight. */
  anchors: readonly Anchor[];
  /** Short lines of code, in order. */
  lines: readonly Anchor[];
  calls: readonly Anchor[];
}
const entriesByMessage = messageMemo<IndexEntries>();

export function messageEntries(message: Message): IndexEntries {
  let entries = entriesByMessage.get(message);
  if (!entries) {
    const textValue = messageReferenceText(message);
    entries = {
      anchors: rankAnchors(extractAnchors(textValue)),
      lines: message.role === 'assistant' ? agentLines(message, textValue) : codeLines(textValue),
      calls: callExpressions(textValue),
    };
    entriesByMessage.set(message, entries);
  }
  return entries;
}

/**
 * The characters the index entries of a message take (with their separators): about what an
 * index over it would hold if its budget had room for all of them.
 */
export function indexEntryChars(message: Message): number {
  const entries = messageEntries(message);
  let chars = 0;
  for (const list of [entries.anchors, entries.lines, entries.calls])
    for (const entry of list) chars += entry.value.length + 2;
  return chars;
}

// A line number that a listing puts before each line (`cat -n`, `grep -n`, Claude Code's Read).
const LINE_NUMBER = /^\s*\d+(?:→|\t|:|-)\s?/;

/**
 * What marks a line as code: an assignment, a call or a colon, and also the brackets, braces,
 * tags and sigils of languages that need none of those (`if existing_count > 0 do`,
 * `@sha ~r/\A[0-9a-f]{40}\z/`, `<span>`). Not `|`: a table row is not code.
 */
const CODE_MARK = /[=(:{}[\]<>@~]/;

/**
 * The short lines of a text that look like code: 10 to 80 characters once trimmed (and rid of a
 * listing's line number), with a letter and a mark of code. Each once, in order.
 */
export function codeLines(textValue: string): Anchor[] {
  return shortLines(textValue, (line) => CODE_MARK.test(line));
}

const FENCED_CODE = /```[^\n]*\n([\s\S]*?)```/g;

/**
 * The short lines of what the agent ran or wrote: its tool-call arguments, the fenced code in its
 * text (an agent that acts through a shell block, as mini-swe-agent's do, writes its command
 * there) and the parameters of the tool uses it wrote as XML (Cline's and Roo Code's), any line
 * with a letter, since agents quote their own commands again (`ls -R sympy | grep
 * diophantine`). Its prose is not code.
 */
function agentLines(message: Message, textValue: string): Anchor[] {
  const calls = messageReferenceText({
    ...message,
    parts: message.parts.filter((part) => part.type !== 'text'),
  });
  const fenced = [...textValue.matchAll(FENCED_CODE)].map((match) => match[1]!);
  const written = textToolUses(textValue).flatMap((use) => Object.values(use.parameters));
  return shortLines([calls, ...fenced, ...written].join('\n'), () => true);
}

/**
 * Lines of 10 to 80 characters once trimmed (and rid of a listing's line number), with a letter,
 * that pass `test`; each once, in order.
 */
function shortLines(textValue: string, test: (line: string) => boolean): Anchor[] {
  const lines = new Map<string, Anchor>();
  for (const raw of textValue.split('\n')) {
    const line = raw.replace(LINE_NUMBER, '').trim();
    if (line.length < 10 || line.length > 80 || lines.has(line)) continue;
    if (/[A-Za-z_]/.test(line) && test(line)) lines.set(line, { kind: 'line', value: line });
  }
  return [...lines.values()];
}

/** Every entry a fold index could list from a message, each value once. */
export function entriesOf(message: Message): Anchor[] {
  const entries = messageEntries(message);
  const seen = new Set<string>();
  const all: Anchor[] = [];
  for (const list of [entries.anchors, entries.lines, entries.calls])
    for (const entry of list) {
      if (seen.has(entry.value)) continue;
      seen.add(entry.value);
      all.push(entry);
    }
  return all;
}
