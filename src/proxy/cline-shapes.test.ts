/**
 * Cline's request shapes through the proxy. Shapes from cline/cline (tree before the
 * move to apps/, commit 791d238996^): src/core/api/providers/deepseek.ts, openai.ts,
 * src/core/api/transform/openai-format.ts, r1-format.ts, src/core/prompts/responses.ts,
 * src/core/context/context-management/ContextManager.ts, src/core/task/tools/handlers/SummarizeTaskHandler.ts.
 */
import { afterEach, describe, expect, it } from 'vitest';
import { fileContent } from './testing/agent-conversation.js';
import { type ProxyFixture, startProxyFixture } from './testing/proxy-fixture.js';

let fixture: ProxyFixture | undefined;
afterEach(async () => {
  await fixture?.close();
  fixture = undefined;
});

type Json = Record<string, unknown>;
const SYSTEM = 'You are Cline, a highly skilled software engineer.';
const env = (turn: number) =>
  `<environment_details>\n# Current Time\n1/2/2026, 10:${String(turn).padStart(2, '0')}:00 AM (UTC)\n\n# Current Mode\nACT MODE\n</environment_details>`;
const successive = (messages: Json[]) =>
  messages.flatMap((message, index) =>
    index > 0 && messages[index - 1]!.role === message.role ? [`${String(message.role)} at ${index}`] : [],
  );

/** Cline's DeepSeek provider, native tools: convertToOpenAiMessages (tool results, then the environment as a user message). */
function deepseekNative(turns: number): Json[] {
  const messages: Json[] = [
    { role: 'system', content: SYSTEM },
    {
      role: 'user',
      content: [
        { type: 'text', text: '<task>\nFind why computeValue returns NaN.\n</task>' },
        { type: 'text', text: env(0) },
      ],
    },
  ];
  for (let turn = 0; turn < turns; turn += 1) {
    const id = `call_0_${turn}`;
    const args = JSON.stringify({ path: `src/module${turn}.ts` });
    messages.push({
      role: 'assistant',
      content: `Reading module ${turn}.`,
      tool_calls: [{ id, type: 'function', function: { name: 'read_file', arguments: args } }],
    });
    messages.push({
      role: 'tool',
      tool_call_id: id,
      content: `[read_file for 'src/module${turn}.ts'] Result:\n${fileContent(turn)}`,
    });
    messages.push({ role: 'user', content: [{ type: 'text', text: env(turn + 1) }] });
  }
  return messages;
}

/** Cline's OpenAI-compatible provider with deepseek-reasoner / "R1 format": convertToR1Format, XML tools. */
function r1Xml(turns: number): Json[] {
  const messages: Json[] = [
    { role: 'user', content: `${SYSTEM}\n<task>\nFind why computeValue returns NaN.\n</task>\n${env(0)}` },
  ];
  for (let turn = 0; turn < turns; turn += 1) {
    const asks = turn % 3 === 2;
    messages.push({
      role: 'assistant',
      content: asks
        ? `<ask_followup_question>\n<question>Which module after ${turn}?</question>\n</ask_followup_question>`
        : `<read_file>\n<path>src/module${turn}.ts</path>\n</read_file>`,
    });
    messages.push({
      role: 'user',
      content: asks
        ? `[ask_followup_question for 'Which module after ${turn}?'] Result:\n<answer>\nmodule ${turn + 1}\n</answer>\n${env(turn + 1)}`
        : `[read_file for 'src/module${turn}.ts'] Result:\n${fileContent(turn)}\n${env(turn + 1)}`,
    });
  }
  return messages;
}

describe('Cline → deepseek-reasoner: roles must not repeat (DeepSeek 400s on successive user messages)', () => {
  it.each([
    ['DeepSeek provider, native tools', (turn: number) => deepseekNative(turn)],
    ['OpenAI-compatible, R1 format, XML tools', (turn: number) => r1Xml(turn).slice(0, 1 + 2 * turn)],
  ])('%s', async (_name, bodyAt) => {
    fixture = await startProxyFixture({ script: () => ({ text: 'ok' }), window: 8_000 });
    const failures: string[] = [];
    for (let turn = 1; turn <= 16; turn += 1) {
      const messages = bodyAt(turn);
      expect(successive(messages)).toEqual([]); // the client alternates, as DeepSeek requires
      const response = await fixture.post('chat', {
        model: 'deepseek-reasoner',
        messages,
        stream: false,
        stream_options: { include_usage: true },
      });
      expect(response.status).toBe(200);
      await response.text();
      const sent = (fixture.upstream.requests.at(-1)!.body as { messages: Json[] }).messages;
      for (const problem of successive(sent)) failures.push(`turn ${turn}: successive ${problem}`);
    }
    expect(failures.slice(0, 4)).toEqual([]);
    // The view folded the work into user turns of its own, joined to their neighbours.
    const last = fixture.upstream.requests.at(-1)!.rawBody;
    expect(last).toContain('[folded conversation:user:1@');
  });
});

describe('Cline with XML tools, on a server that takes no tools', () => {
  // vLLM started without a tool parser refuses any request with tools; Ollama says a model
  // `does not support tools`; llama.cpp without `--jinja` answers 500 (a `server_error`: the
  // std::runtime_error its parser throws). Cline's XML mode sends none, so straight to the server
  // it never sees this.
  it.each([
    [
      400,
      'BadRequestError',
      '"auto" tool choice requires --enable-auto-tool-choice and --tool-call-parser to be set',
    ],
    [400, 'api_error', 'registry.ollama.ai/library/deepseek-r1:14b does not support tools'],
    [500, 'server_error', 'tools param requires --jinja flag'],
  ] as const)(
    "goes on without the proxy's tools when the server refuses them: %i %s %s",
    async (status, type, message) => {
      fixture = await startProxyFixture({
        script: (request) =>
          Array.isArray((request.body as Json).tools) ? { error: { status, type, message } } : { text: 'ok' },
        window: 8_000,
      });
      for (let turn = 1; turn <= 16; turn += 1) {
        const response = await fixture.post('chat', {
          model: 'deepseek-r1',
          messages: r1Xml(turn).slice(0, 1 + 2 * turn),
          stream: turn % 2 === 0,
        });
        const text = await response.text();
        expect([turn, response.status, text.includes('ok')]).toEqual([turn, 200, true]);
        if (turn === 16)
          expect(response.headers.get('x-selfgc-warnings')).toContain('sent-again-after-refusal');
      }
      // The view had folds, so recovery offered its tools: the server refused them, and the request went again.
      const last = fixture.upstream.requests.at(-1)!.rawBody;
      expect(last).toContain('[folded conversation:user:1@');
      expect(fixture.upstream.requests.some((request) => Array.isArray((request.body as Json).tools))).toBe(
        true,
      );
    },
  );
});

describe('a Chat client that declares legacy `functions`', () => {
  // OpenAI: "Invalid request: 'functions' and 'tools' cannot both be provided."
  it('gets no tools of the proxy beside them, which the API refuses', async () => {
    fixture = await startProxyFixture({
      script: (request) => {
        const body = request.body as Json;
        return 'functions' in body && 'tools' in body
          ? {
              error: {
                status: 400,
                message: "Invalid request: 'functions' and 'tools' cannot both be provided.",
              },
            }
          : { text: 'ok' };
      },
      window: 8_000,
    });
    const functions = [{ name: 'report', parameters: { type: 'object', properties: {} } }];
    for (let turn = 1; turn <= 16; turn += 1) {
      const response = await fixture.post('chat', {
        model: 'gpt-4o',
        messages: r1Xml(turn).slice(0, 1 + 2 * turn),
        functions,
        stream: turn % 2 === 0,
      });
      const text = await response.text();
      expect([turn, response.status, text.includes('ok')]).toEqual([turn, 200, true]);
    }
    expect(fixture.upstream.requests.at(-1)!.rawBody).toContain('[folded conversation:user:1@');
  });
});

describe('Cline after its own auto-compaction (summarize_task)', () => {
  const SUMMARY = [
    '1. Primary Request and Intent:',
    '   Find why computeValue returns NaN for module 3 and fix it without touching the public API.',
    '8. Next Step:',
    '   Patch the guard in src/lib/compute.ts, then run npm test.',
  ].join('\n');
  const NOTICE =
    '[NOTE] Some previous conversation history with the user has been removed to maintain optimal context window length. The initial user task has been retained for continuity, while intermediate conversation history has been removed.';

  const RESULT = `This session is being continued from a previous conversation that ran out of context. The conversation is summarized below:\n${SUMMARY}.\n\nPlease continue the conversation from where we left it off without asking the user any further questions.\n`;
  const first: Json = {
    role: 'user',
    content: [
      { type: 'text', text: '[Continue assisting the user!]' },
      { type: 'text', text: env(0) },
    ],
  };

  /** XML tools: the result and each read's output are user messages of text. */
  function xmlTask(): Json[] {
    const messages: Json[] = [
      // applyFirstUserMessageReplacement + applyStandardContextTruncationNoticeChange, deleted range [2, end+2]
      first,
      { role: 'assistant', content: [{ type: 'text', text: NOTICE }] },
      {
        role: 'user',
        content: [
          { type: 'text', text: `[summarize_task] Result:\n\n${RESULT}` },
          { type: 'text', text: env(1) },
        ],
      },
    ];
    for (let turn = 1; turn <= 12; turn += 1) {
      messages.push(
        {
          role: 'assistant',
          content: [{ type: 'text', text: `<read_file>\n<path>src/module${turn}.ts</path>\n</read_file>` }],
        },
        {
          role: 'user',
          content: [
            { type: 'text', text: `[read_file for 'src/module${turn}.ts'] Result:\n${fileContent(turn)}` },
            { type: 'text', text: env(turn + 1) },
          ],
        },
      );
    }
    return messages;
  }

  /** Native tools: the call of `summarize_task` stays in the kept assistant message, its result after it. */
  function nativeTask(): Json[] {
    const call = (id: string, name: string, input: Json): Json => ({ type: 'tool_use', id, name, input });
    const result = (id: string, text: string, turn: number): Json => ({
      role: 'user',
      content: [
        { type: 'tool_result', tool_use_id: id, content: [{ type: 'text', text }] },
        { type: 'text', text: env(turn) },
      ],
    });
    const messages: Json[] = [
      first,
      {
        role: 'assistant',
        content: [{ type: 'text', text: NOTICE }, call('toolu_sum', 'summarize_task', { context: SUMMARY })],
      },
      result('toolu_sum', RESULT, 1),
    ];
    for (let turn = 1; turn <= 12; turn += 1) {
      messages.push(
        {
          role: 'assistant',
          content: [call(`toolu_${turn}`, 'read_file', { path: `src/module${turn}.ts` })],
        },
        result(`toolu_${turn}`, fileContent(turn), turn + 1),
      );
    }
    return messages;
  }

  it.each([
    ['XML tools', xmlTask],
    ['native tools', nativeTask],
  ])(
    '%s: the summary, now the only statement of the task, stays whole as the work after it folds',
    async (_name, task) => {
      fixture = await startProxyFixture({ script: () => ({ text: 'Reading on.' }), window: 10_000 });
      const messages = task();
      const lostAt: number[] = [];
      for (let end = 5; end <= messages.length; end += 2) {
        const response = await fixture.post('messages', {
          model: 'claude-sonnet-4-5-20250929',
          max_tokens: 1024,
          system: [{ type: 'text', text: SYSTEM, cache_control: { type: 'ephemeral' } }],
          messages: messages.slice(0, end),
        });
        expect(response.status).toBe(200);
        await response.text();
        const raw = fixture.upstream.requests.at(-1)!.rawBody;
        expect(raw).toContain('[Continue assisting the user!]');
        if (!raw.includes(JSON.stringify(SUMMARY).slice(1, -1))) lostAt.push(end);
      }
      expect(lostAt).toEqual([]);
      expect(fixture.upstream.requests.at(-1)!.rawBody).toMatch(/\[folded /);
    },
  );
});
