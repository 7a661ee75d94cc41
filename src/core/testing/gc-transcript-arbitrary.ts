/**
 * Random canonical transcripts shaped for GC, complementing the provider-shaped
 * `src/adapters/transcript-arbitrary.ts`: anchor-rich text, long listings fit for masking,
 * repeated calls on the same targets, errors, images inside results, several results in one tool
 * message or one message each, reasoning with and without signatures, opaque provider blocks
 * (an attached document, a server tool use and its result, a document inside a result), what
 * clients send inside the work (reminders, environment details, a tool's images after its results,
 * an answer to the model's words), and optionally a last call that never got its result.
 */
import fc from 'fast-check';
import type { ImagePart, Message, OpaquePart, Part, TextPart, ToolResultPart } from '../transcript.js';

const WORDS = [
  'src/app.ts',
  'lib/util.py',
  'tests/test_app.py',
  'docs/readme.md',
  'parse_config',
  'buildParser',
  'os.path.join',
  'KeyError',
  'ValueError',
  'a1b2c3d4e5',
  '8080',
  '3.14',
  'https://example.com/api/v1',
  '"quoted value"',
  'the',
  'result',
  'ok',
  'done',
  'line',
  'must',
  'Traceback (most recent call last):',
  'error:',
];

const TOOL_NAMES = ['read_file', 'bash', 'grep', 'edit_file', 'mcp__fs:read file', 'todo_write'];

const line = fc.oneof(
  {
    weight: 6,
    arbitrary: fc
      .array(fc.constantFrom(...WORDS), { minLength: 1, maxLength: 8 })
      .map((words) => words.join(' ')),
  },
  { weight: 1, arbitrary: fc.string({ unit: 'binary', maxLength: 40 }) },
);

/** Text of 1..60 lines: short answers, and now and then a long listing fit for masking. */
const body = fc.oneof(
  { weight: 4, arbitrary: fc.array(line, { minLength: 1, maxLength: 4 }).map((lines) => lines.join('\n')) },
  {
    weight: 2,
    arbitrary: fc
      .tuple(fc.constantFrom('src/mod', 'row', 'entry'), fc.integer({ min: 24, max: 60 }))
      .map(([label, count]) =>
        Array.from({ length: count }, (_, index) => `${label}_${index}.py size ${index * 31}`).join('\n'),
      ),
  },
  { weight: 1, arbitrary: fc.constant('') },
);

/** An opaque block as an adapter keeps it: the core sees only its kind and text. */
function opaque(kind: string, textValue: string): OpaquePart {
  return { type: 'opaque', provider: 'test', kind, text: textValue, data: { type: kind, text: textValue } };
}

interface CallShape {
  name: string;
  argument: string;
  output: string | Array<TextPart | ImagePart | OpaquePart>;
  isError: boolean;
}

const REMINDER: Message = {
  role: 'user',
  parts: [
    { type: 'text', text: '<system-reminder>\nThe task tools have not been used.\n</system-reminder>' },
  ],
};
const ENVIRONMENT: Message = {
  role: 'user',
  parts: [{ type: 'text', text: '<environment_details>\n# Current Mode\nACT MODE\n</environment_details>' }],
};
const MEDIA: Message = {
  role: 'user',
  parts: [
    { type: 'text', text: 'Attached image(s) from tool result:' },
    { type: 'image', ref: 'file-img', source: 'file-id' },
  ],
};

/**
 * What a client sends after a step's results (`clientReport`), as user messages of their own:
 * one report, a tool's images and what follows them, a report after instructions sent between.
 */
const reportShape: fc.Arbitrary<Message[]> = fc.constantFrom<Message[]>(
  [REMINDER],
  [ENVIRONMENT],
  [
    {
      role: 'user',
      parts: [{ type: 'text', text: '<turn_aborted>\nThe user interrupted the turn.\n</turn_aborted>' }],
    },
  ],
  [{ role: 'user', parts: [{ type: 'image', ref: 'file-img', source: 'file-id' }] }],
  [MEDIA],
  [MEDIA, ENVIRONMENT],
  [{ role: 'system', parts: [{ type: 'text', text: 'The date is now 2026-12-07.' }] }, REMINDER],
);

/** What a client answers the model's words with (`clientReply`). */
const replyShape: fc.Arbitrary<Message> = fc.constantFrom<Message>(
  {
    role: 'user',
    parts: [
      {
        type: 'text',
        text: '[ERROR] You did not use a tool in your previous response! Please retry with a tool use.',
      },
      ...ENVIRONMENT.parts,
    ],
  },
  { role: 'user', parts: [{ type: 'text', text: 'Stop hook feedback:\nsrc/app.ts: 2 tests fail' }] },
);

interface RoundShape {
  reasoning: { text: string; signature?: string | undefined } | undefined;
  text: string | undefined;
  /** A server-side search and its result, two opaque parts of the assistant message. */
  serverSearch: string | undefined;
  calls: CallShape[];
  /** Results in one tool message (Anthropic style) or one message each (OpenAI style). */
  splitResults: boolean;
  /** What the client sends after the results. */
  report: Message[] | undefined;
}

interface TurnShape {
  request: string;
  /** An attached document beside the request. */
  attachment: string | undefined;
  rounds: RoundShape[];
  answer: string | undefined;
  /** The client's answer to the model's last words, and the model's words after it. */
  reply: Message | undefined;
}

const callShape: fc.Arbitrary<CallShape> = fc.record({
  name: fc.constantFrom(...TOOL_NAMES),
  argument: fc.constantFrom(
    'src/app.ts',
    'lib/util.py',
    'ls -R src',
    'pytest -x',
    'parse_config',
    'AGENTS.md',
  ),
  output: fc.oneof(
    { weight: 6, arbitrary: body },
    {
      weight: 1,
      arbitrary: fc
        .tuple(body, fc.boolean(), fc.option(line, { nil: undefined }))
        .map(
          ([textValue, withImage, document]): Array<TextPart | ImagePart | OpaquePart> => [
            { type: 'text', text: textValue },
            ...(withImage ? [{ type: 'image' as const, ref: 'file-abc', source: 'file-id' as const }] : []),
            ...(document === undefined ? [] : [opaque('document', document)]),
          ],
        ),
    },
  ),
  isError: fc.boolean(),
});

const roundShape: fc.Arbitrary<RoundShape> = fc.record({
  reasoning: fc.option(
    fc.record(
      { text: line, signature: fc.option(fc.string({ minLength: 8, maxLength: 16 }), { nil: undefined }) },
      { requiredKeys: ['text'] },
    ),
    {
      nil: undefined,
    },
  ),
  text: fc.option(line, { nil: undefined }),
  serverSearch: fc.option(line, { nil: undefined, freq: 4 }),
  calls: fc.array(callShape, { minLength: 0, maxLength: 3 }),
  splitResults: fc.boolean(),
  report: fc.oneof({ weight: 3, arbitrary: fc.constant(undefined) }, { weight: 1, arbitrary: reportShape }),
});

const turnShape: fc.Arbitrary<TurnShape> = fc.record({
  request: line,
  attachment: fc.option(line, { nil: undefined, freq: 4 }),
  rounds: fc.array(roundShape, { minLength: 0, maxLength: 4 }),
  answer: fc.option(line, { nil: undefined }),
  reply: fc.oneof({ weight: 4, arbitrary: fc.constant(undefined) }, { weight: 1, arbitrary: replyShape }),
});

export interface GcTranscriptArbitraryOptions {
  /** Most user turns (default 5). */
  maxTurns?: number;
  /** Allow the last assistant message to end with calls that have no result (default false). */
  unansweredLastCall?: boolean;
}

function buildTranscript(system: string | undefined, turns: TurnShape[], unanswered: CallShape[]): Message[] {
  const messages: Message[] = [];
  let callCount = 0;
  if (system !== undefined) messages.push({ role: 'system', parts: [{ type: 'text', text: system }] });
  const callParts = (calls: CallShape[]) =>
    calls.map((call) => {
      callCount += 1;
      return {
        type: 'tool-call' as const,
        id: `call_${callCount}`,
        name: call.name,
        arguments: JSON.stringify({ target: call.argument }),
      };
    });
  for (const turn of turns) {
    const attachment = turn.attachment === undefined ? [] : [opaque('document', turn.attachment)];
    messages.push({ role: 'user', parts: [{ type: 'text', text: turn.request }, ...attachment] });
    for (const round of turn.rounds) {
      const parts: Part[] = [];
      if (round.reasoning) {
        parts.push({
          type: 'reasoning',
          text: round.reasoning.text,
          ...(round.reasoning.signature ? { signature: round.reasoning.signature } : {}),
        });
      }
      if (round.text !== undefined || round.calls.length === 0)
        parts.push({ type: 'text', text: round.text ?? 'thinking out loud' });
      if (round.serverSearch !== undefined)
        parts.push(
          opaque('server_tool_use', round.serverSearch),
          opaque('web_search_tool_result', 'results'),
        );
      const calls = callParts(round.calls);
      messages.push({ role: 'assistant', parts: [...parts, ...calls] });
      const results: ToolResultPart[] = round.calls.map((call, index) => ({
        type: 'tool-result',
        callId: calls[index]!.id,
        name: call.name,
        content: call.output,
        ...(call.isError ? { isError: true } : {}),
      }));
      if (results.length === 0) continue;
      if (round.splitResults) for (const result of results) messages.push({ role: 'tool', parts: [result] });
      else messages.push({ role: 'tool', parts: results });
      if (round.report !== undefined) messages.push(...structuredClone(round.report));
    }
    if (turn.answer !== undefined) {
      messages.push({ role: 'assistant', parts: [{ type: 'text', text: turn.answer }] });
      if (turn.reply !== undefined)
        messages.push(structuredClone(turn.reply), {
          role: 'assistant',
          parts: [{ type: 'text', text: 'ok' }],
        });
    }
  }
  if (unanswered.length > 0) messages.push({ role: 'assistant', parts: callParts(unanswered) });
  return messages;
}

/** A random canonical transcript shaped for GC. */
export function gcTranscriptArbitrary(options: GcTranscriptArbitraryOptions = {}): fc.Arbitrary<Message[]> {
  return fc
    .tuple(
      fc.option(line, { nil: undefined }),
      fc.array(turnShape, { minLength: 1, maxLength: options.maxTurns ?? 5 }),
      options.unansweredLastCall
        ? fc.array(callShape, { minLength: 0, maxLength: 2 })
        : fc.constant<CallShape[]>([]),
    )
    .map(([system, turns, unanswered]) => buildTranscript(system, turns, unanswered));
}
