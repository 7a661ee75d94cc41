/**
 * The sessions the ledger benchmark runs on: the longest recorded sessions of a traces folder
 * (read in place, never copied), and generated sessions of about 250k tokens.
 */
import { existsSync, readdirSync } from 'node:fs';
import { join } from 'node:path';
import { fromOpenAIChat } from '../src/adapters/openai-chat/convert-from-openai-chat.js';
import { countMessageTokens } from '../src/core/ledger.js';
import type { TokenCounter } from '../src/core/tokens.js';
import { type Message, messageText } from '../src/core/transcript.js';
import { loadSessions } from '../src/eval/load-sessions.js';
import { generateSession } from './generate-session.js';

export interface BenchSession {
  name: string;
  origin: 'trace' | 'generated';
  messages: Message[];
  /** Tokens of the whole transcript under the benchmark's counter, framing included. */
  tokens: number;
  /** Tokens of its largest message: a call that appends it costs at least that much. */
  largestMessageTokens: number;
}

function measured(name: string, origin: BenchSession['origin'], messages: Message[], counter: TokenCounter) {
  const sizes = messages.map((message) => countMessageTokens(counter, message));
  return {
    name,
    origin,
    messages,
    tokens: sizes.reduce((sum, size) => sum + size, 0),
    largestMessageTokens: Math.max(0, ...sizes),
  };
}

/** `owner/repo:path/to/session.jsonl#2` → a short name that still tells sessions apart. */
function shortName(id: string): string {
  const tail = id.split(/[:/]/).filter(Boolean).at(-1) ?? id;
  return tail.length > 28 ? `${tail.slice(0, 27)}…` : tail;
}

/**
 * The `count` longest sessions of the `*.jsonl` files in `folder` by token count, or undefined
 * when the folder does not exist. Candidates are first ranked by text length, so only a few
 * sessions are tokenized.
 */
export function longestTraceSessions(
  folder: string,
  counter: TokenCounter,
  count: number,
): BenchSession[] | undefined {
  if (!existsSync(folder)) return undefined;
  const files = readdirSync(folder)
    .filter((name) => name.endsWith('.jsonl'))
    .sort()
    .map((name) => join(folder, name));
  const candidates = loadSessions(files)
    .map((session) => ({
      session,
      length: session.messages.reduce((sum, message) => sum + messageText(message).length, 0),
    }))
    .sort((a, b) => b.length - a.length)
    .slice(0, count * 3);
  return candidates
    .map(({ session }) => measured(shortName(session.id), 'trace', session.messages, counter))
    .sort((a, b) => b.tokens - a.tokens)
    .slice(0, count);
}

export interface GeneratedSpec {
  name: string;
  seed: number;
  targetTokens: number;
  outputScale: number;
}

/** Many moderate steps, and fewer steps with large outputs: two shapes of a 250k session. */
export const GENERATED_SPECS: readonly GeneratedSpec[] = [
  { name: 'generated-steps', seed: 1, targetTokens: 250_000, outputScale: 1 },
  { name: 'generated-large', seed: 2, targetTokens: 250_000, outputScale: 3 },
];

export function generatedSession(spec: GeneratedSpec, counter: TokenCounter): BenchSession {
  const wire = generateSession({
    seed: spec.seed,
    targetTokens: spec.targetTokens,
    outputScale: spec.outputScale,
    countTokens: (text) => counter.count(text),
  });
  const { messages } = fromOpenAIChat(wire);
  return measured(spec.name, 'generated', messages, counter);
}
