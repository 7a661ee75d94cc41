/**
 * A fast-check arbitrary of valid canonical transcripts, shared by the adapter contract and by
 * property tests of the core: an optional system message, then user turns, each followed by
 * assistant steps of 1..3 tool calls (each call answered by one tool message, in order), and
 * usually a final assistant reply without calls. Tool-call ids are unique, every result answers
 * an earlier call, arguments are JSON objects (compact or Python-style spaced text). On request,
 * opaque parts: the adapter's own (made by its reader) and another provider's.
 */
import fc from 'fast-check';
import type { ImagePart, Message, OpaquePart, Part, ReasoningPart, TextPart } from '../core/transcript.js';

/** `plain`: text only (OpenAI Chat); `signed`: Anthropic thinking; `encrypted`: text plus an OpenAI
 * encrypted payload; `redacted`: Anthropic redacted thinking (no text). */
export type ReasoningStyle = 'plain' | 'signed' | 'encrypted' | 'redacted';

export interface TranscriptArbitraryOptions {
  /** Most user turns (at least one is always made). Default 4. */
  maxTurns?: number;
  /** Most tool-calling assistant steps per turn. Default 3. */
  maxSteps?: number;
  /** Most tool calls per step (parallel calls). Default 3. */
  maxToolCalls?: number;
  /** Whether the transcript starts with a system message. Default `sometimes`. */
  system?: 'always' | 'never' | 'sometimes';
  /** Reasoning parts that may open an assistant message; `[]` for none. Default all styles. */
  reasoning?: readonly ReasoningStyle[];
  /** Images in user messages. Default true. */
  userImages?: boolean;
  /** Images inside tool results (OpenAI Chat cannot carry them). Default false. */
  toolResultImages?: boolean;
  /** `isError: true` on some tool results. Default true. */
  toolErrors?: boolean;
  /** Let the last turn end right after its tool calls, with no results (as real runs do). Default false. */
  endMidCall?: boolean;
  /**
   * Opaque parts of the adapter under test, as its own reader makes them from its blocks, by
   * where they may go. An assistant entry is a run kept together (a server tool use and its
   * result). Default none.
   */
  opaque?: {
    user?: fc.Arbitrary<OpaquePart>;
    assistant?: fc.Arbitrary<OpaquePart[]>;
    toolResult?: fc.Arbitrary<OpaquePart>;
  };
  /** Opaque parts of a provider no adapter knows, in user and assistant messages and tool results. Default false. */
  foreignOpaque?: boolean;
}

const words = fc.lorem({ maxCount: 12 });
const anyText = fc.oneof(
  words,
  fc.string({ unit: 'grapheme', minLength: 1, maxLength: 40 }),
  fc.constant('line one\nline two'),
);
const textPart = anyText.map((value): TextPart => ({ type: 'text', text: value }));
const toolName = fc.constantFrom('bash', 'read_file', 'search_code', 'edit_file', 'get_weather', 'Task');
const argumentValue = fc.dictionary(
  fc.stringMatching(/^[a-z][a-z0-9_]{0,10}$/),
  fc.jsonValue({ maxDepth: 2 }),
  {
    maxKeys: 4,
  },
);

/** `json.dumps` spacing, as recorded Python agents write arguments. */
export function spacedJson(value: unknown): string {
  if (Array.isArray(value)) return `[${value.map(spacedJson).join(', ')}]`;
  if (value !== null && typeof value === 'object') {
    return `{${Object.entries(value)
      .map(([key, inner]) => `${JSON.stringify(key)}: ${spacedJson(inner)}`)
      .join(', ')}}`;
  }
  return JSON.stringify(value);
}

const argumentsText = fc
  .tuple(argumentValue, fc.boolean())
  .map(([value, spaced]) => (spaced ? spacedJson(value) : JSON.stringify(value)));

const imagePart: fc.Arbitrary<ImagePart> = fc.oneof(
  fc
    .stringMatching(/^[a-z0-9]{1,12}$/)
    .map((name): ImagePart => ({ type: 'image', ref: `https://example.com/${name}.png`, source: 'url' })),
  fc.base64String({ minLength: 4, maxLength: 48 }).map(
    (data): ImagePart => ({
      type: 'image',
      ref: `data:image/png;base64,${data}`,
      source: 'data',
      mediaType: 'image/png',
    }),
  ),
);

/** An opaque part no adapter wrote: every adapter must say out loud what it does with it. */
const foreignOpaquePart: fc.Arbitrary<OpaquePart> = fc
  .tuple(fc.constantFrom('widget', 'hologram'), fc.oneof(fc.constant(''), words))
  .map(([kind, value]) => ({
    type: 'opaque',
    provider: 'elsewhere',
    kind,
    text: value,
    data: { type: kind, caption: value },
  }));

/** Opaque parts for one position: the adapter's own, another provider's, or none. */
function opaqueChoices<T>(
  own: fc.Arbitrary<T> | undefined,
  foreign: fc.Arbitrary<T> | undefined,
): fc.Arbitrary<T[]> {
  const sources = [own, foreign].filter((source): source is fc.Arbitrary<T> => source !== undefined);
  if (sources.length === 0) return fc.constant([]);
  return fc.array(fc.oneof(...sources), { maxLength: 1 });
}

function reasoningPart(styles: readonly ReasoningStyle[]): fc.Arbitrary<ReasoningPart> {
  const token = fc.base64String({ minLength: 8, maxLength: 40 });
  return fc.tuple(fc.constantFrom(...styles), anyText, token).map(([style, value, opaque]): ReasoningPart => {
    if (style === 'signed') return { type: 'reasoning', text: value, signature: opaque };
    if (style === 'encrypted') return { type: 'reasoning', text: value, redactedData: opaque };
    if (style === 'redacted') return { type: 'reasoning', text: '', redactedData: opaque };
    return { type: 'reasoning', text: value };
  });
}

export function transcriptArbitrary(options: TranscriptArbitraryOptions = {}): fc.Arbitrary<Message[]> {
  const reasoningStyles = options.reasoning ?? ['plain', 'signed', 'encrypted', 'redacted'];
  const reasoning =
    reasoningStyles.length > 0
      ? fc.option(reasoningPart(reasoningStyles), { nil: undefined })
      : fc.constant(undefined);
  const foreign = options.foreignOpaque === true;
  const resultOpaque = [options.opaque?.toolResult, foreign ? foreignOpaquePart : undefined].filter(
    (source): source is fc.Arbitrary<OpaquePart> => source !== undefined,
  );
  const resultInner: fc.Arbitrary<TextPart | ImagePart | OpaquePart> = fc.oneof(
    textPart,
    ...(options.toolResultImages ? [imagePart] : []),
    ...resultOpaque,
  );
  const userOpaque = opaqueChoices(options.opaque?.user, foreign ? foreignOpaquePart : undefined);
  const assistantOpaque = opaqueChoices(
    options.opaque?.assistant,
    foreign ? foreignOpaquePart.map((part) => [part]) : undefined,
  ).map((runs) => runs.flat());
  const result = fc.record({
    content: fc.oneof(
      fc.string({ maxLength: 60 }),
      anyText,
      fc.array(resultInner, { minLength: 1, maxLength: 3 }),
    ),
    isError: options.toolErrors === false ? fc.constant(false) : fc.boolean(),
  });
  const call = fc.record({ name: toolName, arguments: argumentsText, result });
  const step = fc.record({
    reasoning,
    text: fc.option(anyText, { nil: undefined }),
    opaque: assistantOpaque,
    calls: fc.array(call, { minLength: 1, maxLength: options.maxToolCalls ?? 3 }),
  });
  const user = fc
    .tuple(
      fc.array(textPart, { minLength: 1, maxLength: 2 }),
      options.userImages === false ? fc.constant([]) : fc.array(imagePart, { maxLength: 1 }),
      userOpaque,
    )
    .map(([texts, images, opaque]): Message => ({ role: 'user', parts: [...texts, ...images, ...opaque] }));
  const turn = fc
    .record({
      user,
      steps: fc.array(step, { maxLength: options.maxSteps ?? 3 }),
      final: fc.option(fc.record({ reasoning, text: anyText }), { nil: undefined }),
    })
    .filter((value) => value.steps.length > 0 || value.final !== undefined);
  const system = { always: fc.constant(true), never: fc.constant(false), sometimes: fc.boolean() }[
    options.system ?? 'sometimes'
  ];
  return fc
    .record({
      system: fc.tuple(system, anyText),
      turns: fc.array(turn, { minLength: 1, maxLength: options.maxTurns ?? 4 }),
      idPrefix: fc.constantFrom('call_', 'toolu_01', 'fc_'),
      cut: fc.boolean(),
    })
    .map(({ system: [withSystem, systemText], turns, idPrefix, cut }) => {
      const messages: Message[] = withSystem
        ? [{ role: 'system', parts: [{ type: 'text', text: systemText }] }]
        : [];
      let counter = 0;
      turns.forEach((entry, turnIndex) => {
        messages.push(entry.user);
        const lastTurn = turnIndex === turns.length - 1;
        entry.steps.forEach((stepValue, stepIndex) => {
          const ids = stepValue.calls.map(() => `${idPrefix}${++counter}`);
          const parts: Part[] = [
            ...(stepValue.reasoning ? [stepValue.reasoning] : []),
            ...(stepValue.text !== undefined ? [{ type: 'text' as const, text: stepValue.text }] : []),
            ...stepValue.opaque,
            ...stepValue.calls.map(
              (value, index): Part => ({
                type: 'tool-call',
                id: ids[index] ?? '',
                name: value.name,
                arguments: value.arguments,
              }),
            ),
          ];
          messages.push({ role: 'assistant', parts });
          const endsHere =
            options.endMidCall && cut && lastTurn && stepIndex === entry.steps.length - 1 && !entry.final;
          if (endsHere) return;
          stepValue.calls.forEach((value, index) => {
            const error = value.result.isError ? { isError: true } : {};
            const resultPart: Part = {
              type: 'tool-result',
              callId: ids[index] ?? '',
              name: value.name,
              content: value.result.content,
              ...error,
            };
            messages.push({ role: 'tool', parts: [resultPart] });
          });
        });
        if (entry.final) {
          const parts: Part[] = [
            ...(entry.final.reasoning ? [entry.final.reasoning] : []),
            { type: 'text', text: entry.final.text },
          ];
          messages.push({ role: 'assistant', parts });
        }
      });
      return messages;
    });
}
