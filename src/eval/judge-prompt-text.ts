/**
 * Transcript text for the LLM judge's prompts (the scorecard, the next-step generation and the
 * A/B comparison): messages as labelled plain text, long ones cut in the middle, sections fitted
 * to a character budget, every cut said in a visible marker.
 */
import type { Message, Part } from '../core/transcript.js';

function partText(part: Part): string {
  switch (part.type) {
    case 'text':
      return part.text;
    case 'image':
      return '[image]';
    case 'tool-call':
      return `[call ${part.name}(${part.arguments})]`;
    case 'tool-result': {
      const content =
        typeof part.content === 'string'
          ? part.content
          : part.content.map((inner) => (inner.type === 'image' ? '[image]' : inner.text)).join('\n');
      return `[result of ${part.name}${part.isError ? ', error' : ''}]\n${content}`;
    }
    case 'reasoning':
      return part.text === '' ? '' : `[thinking] ${part.text}`;
    case 'opaque':
      return `[${part.kind}] ${part.text}`;
  }
}

/** Cut the middle out of a long text, at line ends when there are any near, saying how much is not shown. */
export function cutMiddle(value: string, max: number): string {
  if (value.length <= max) return value;
  const keep = Math.max(0, max - 80);
  let head = value.slice(0, Math.ceil(keep * 0.6));
  let tail = value.slice(value.length - (keep - head.length));
  const headEnd = head.lastIndexOf('\n');
  if (headEnd > head.length / 2) head = head.slice(0, headEnd);
  const tailStart = tail.indexOf('\n');
  if (tailStart !== -1 && tailStart < tail.length / 2) tail = tail.slice(tailStart + 1);
  return `${head}\n[… ${value.length - head.length - tail.length} characters not shown to you …]\n${tail}`;
}

/** One message as `<label> <role>:` and its text, cut to `maxChars`. */
export function renderMessage(message: Message, label: string, maxChars: number): string {
  const body = message.parts
    .map(partText)
    .filter((value) => value !== '')
    .join('\n');
  return `${label} ${message.role}:\n${cutMiddle(body, maxChars)}`;
}

/**
 * Keep `keepFirst` entries, then as many of the last entries as fit in `budget` characters,
 * with a marker for what was left out.
 */
export function fitToBudget(
  entries: readonly string[],
  budget: number,
  keepFirst: number,
  marker: (count: number) => string,
): string[] {
  const first = entries.slice(0, keepFirst);
  let used = first.reduce((sum, entry) => sum + entry.length, 0);
  const last: string[] = [];
  for (let index = entries.length - 1; index >= keepFirst; index -= 1) {
    const entry = entries[index]!;
    if (used + entry.length > budget) {
      return [...first, marker(index - keepFirst + 1), ...last.reverse()];
    }
    used += entry.length;
    last.push(entry);
  }
  return [...first, ...last.reverse()];
}

/** Messages as labelled text within a budget: the first two and the newest that fit. */
export function renderTranscript(
  messages: readonly Message[],
  label: string,
  options: { maxMessageChars: number; maxChars: number },
): string[] {
  return fitToBudget(
    messages.map((message, index) => renderMessage(message, `[${label} ${index}]`, options.maxMessageChars)),
    options.maxChars,
    2,
    (count) => `[… ${count} older messages not shown to you …]`,
  );
}
