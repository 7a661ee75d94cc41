import type {
  LanguageModelV3CallOptions,
  LanguageModelV3GenerateResult,
  LanguageModelV3Prompt,
} from '@ai-sdk/provider';
import { generateText, type ModelMessage, streamText, wrapLanguageModel } from 'ai';
import { convertArrayToReadableStream, MockLanguageModelV3 } from 'ai/test';
import { describe, expect, it } from 'vitest';
import { toModelMessages } from '../adapters/index.js';
import { BadInputError } from '../core/errors.js';
import { createGovernor } from '../core/governor/create-governor.js';
import type { TriggerOptions } from '../core/governor/governor-types.js';
import { longSession } from '../core/testing/long-session.js';
import { createMemoryStore } from '../stores/index.js';
import { createTokenCounter } from '../tokenizers/create-token-counter.js';
import { createSelfGcMiddleware } from './ai-sdk-middleware.js';
import type { GovernEvent } from './govern-request.js';
import { fileReads, recoveryOf } from './testing/recovery-pointers.js';

const usage = {
  inputTokens: { total: 10, noCache: 10, cacheRead: 0, cacheWrite: 0 },
  outputTokens: { total: 2, text: 2, reasoning: 0 },
};
const answer: LanguageModelV3GenerateResult = {
  content: [{ type: 'text', text: 'Reviewed.' }],
  finishReason: { unified: 'stop', raw: 'stop' },
  usage,
  warnings: [],
};

function governorWith(window: number, triggers: TriggerOptions = {}) {
  return createGovernor({
    provider: 'openai',
    window,
    store: createMemoryStore(),
    tokenCounter: createTokenCounter(),
    triggers,
  });
}

/** A coding session as AI SDK messages: the system prompt apart, then task and ten file reads. */
function session(): { system: string; messages: ModelMessage[] } {
  const [system, ...rest] = toModelMessages(longSession({ rounds: 10, lines: 12 })).messages;
  return { system: String(system?.content), messages: rest as ModelMessage[] };
}

const promptText = (prompt: LanguageModelV3Prompt) => JSON.stringify(prompt);

describe('createSelfGcMiddleware', () => {
  it('sends the model a shorter prompt with fold pointers when the transcript outgrows the window', async () => {
    const model = new MockLanguageModelV3({ doGenerate: answer });
    const events: GovernEvent[] = [];
    const governor = governorWith(2000);
    const middleware = createSelfGcMiddleware({
      governor,
      sessionId: 'review',
      onGovern: (event) => events.push(event),
    });
    const { system, messages } = session();
    const result = await generateText({ model: wrapLanguageModel({ model, middleware }), system, messages });

    expect(result.text).toBe('Reviewed.');
    const [event] = events;
    expect(event?.status).toBe('governed');
    if (event?.status !== 'governed') return;
    expect(event.result.commit?.operations.length).toBeGreaterThan(0);
    expect(event.result.viewTokens).toBeLessThanOrEqual(2000);
    expect(event.result.transcriptTokens).toBeGreaterThan(2000);

    const [call] = model.doGenerateCalls;
    const plain = await plainPrompt(system, messages);
    // The model gets the governor's view, message for message: folds may merge the work after
    // a request into one message, never add any.
    expect(call!.prompt).toHaveLength(event.result.view.length);
    expect(call!.prompt.length).toBeLessThanOrEqual(plain.length);
    expect(promptText(call!.prompt).length).toBeLessThan(promptText(plain).length * 0.8);
    expect(call!.prompt[0]).toEqual({ role: 'system', content: 'You are a coding agent.' });
    expect(call!.prompt[1]).toMatchObject({
      role: 'user',
      content: [{ type: 'text', text: expect.stringContaining('Review every handler') }],
    });
    // The latest turn reaches the model whole.
    expect(call!.prompt.at(-1)).toEqual(plain.at(-1));
    // Fold pointers, whatever was folded (outputs or whole stretches of work): each file read the
    // prompt holds back keeps its path in view and is one expand away.
    expect(promptText(call!.prompt)).toContain('[folded ');
    const reads = fileReads(10, 12);
    const recovery = await recoveryOf(governor, 'review', call!.prompt, reads);
    expect(recovery.heldBack.length).toBeGreaterThan(0);
    expect(recovery.keys.length).toBeGreaterThan(0);
    expect(recovery).toMatchObject({ unknownKeys: [], unrecoverable: [] });
    for (const original of recovery.heldBack) {
      expect(promptText(call!.prompt)).toContain(`src/handlers/module_${reads.indexOf(original) + 1}.py`);
    }
  });

  it('leaves a prompt that fits untouched, part for part, images and files included', async () => {
    // URLs the model reads itself, so the AI SDK does not download them.
    const supportedUrls = { '*/*': [/^https:\/\/example\.com\//] };
    const governed = new MockLanguageModelV3({ doGenerate: answer, supportedUrls });
    const plain = new MockLanguageModelV3({ doGenerate: answer, supportedUrls });
    const { system, messages: reads } = session();
    const attachments: ModelMessage = {
      role: 'user',
      content: [
        { type: 'text', text: 'Also check this screenshot and log.' },
        { type: 'image', image: new Uint8Array([137, 80, 78, 71]), mediaType: 'image/png' },
        {
          type: 'file',
          data: new URL('https://example.com/build.log'),
          mediaType: 'text/plain',
          filename: 'build.log',
        },
      ],
    };
    const messages = [...reads, attachments];
    const events: GovernEvent[] = [];
    const middleware = createSelfGcMiddleware({
      governor: governorWith(200_000, { milestones: false }),
      sessionId: 'roomy',
      onGovern: (event) => events.push(event),
    });
    await generateText({ model: wrapLanguageModel({ model: governed, middleware }), system, messages });
    await generateText({ model: plain, system, messages });
    expect(events).toMatchObject([
      { status: 'governed', result: { decision: { outcome: 'below-threshold' } } },
    ]);
    expect(governed.doGenerateCalls[0]?.prompt.at(-1)).toMatchObject({
      role: 'user',
      content: [
        { type: 'text' },
        { type: 'file', mediaType: 'image/png', data: new Uint8Array([137, 80, 78, 71]) },
        {
          type: 'file',
          mediaType: 'text/plain',
          filename: 'build.log',
          data: new URL('https://example.com/build.log'),
        },
      ],
    });
    // Equal up to keys the AI SDK sets to `undefined` (`providerOptions`), which no provider reads.
    expect(governed.doGenerateCalls[0]?.prompt).toEqual(plain.doGenerateCalls[0]?.prompt);
  });

  it('governs streamed calls too, per session read from the call options', async () => {
    const model = new MockLanguageModelV3({
      doStream: {
        stream: convertArrayToReadableStream([
          { type: 'text-start', id: 't' },
          { type: 'text-delta', id: 't', delta: 'Streamed.' },
          { type: 'text-end', id: 't' },
          { type: 'finish', finishReason: { unified: 'stop', raw: 'stop' }, usage },
        ]),
      },
    });
    const sessions: string[] = [];
    const middleware = createSelfGcMiddleware({
      governor: governorWith(2000),
      sessionId: (params) => String(params.headers?.['x-session'] ?? 'none'),
      onGovern: (event) => sessions.push(event.sessionId),
    });
    const { system, messages } = session();
    const result = streamText({
      model: wrapLanguageModel({ model, middleware }),
      system,
      messages,
      headers: { 'x-session': 'stream-7' },
    });
    expect(await result.text).toBe('Streamed.');
    expect(sessions).toEqual(['stream-7']);
    expect(promptText(model.doStreamCalls[0]!.prompt)).toMatch(
      /\[folded (function:read_file:\d+|conversation:user:\d+@\d+):/,
    );
  });

  it("governs a prompt with a provider-executed tool's result in the assistant message, kept in place", async () => {
    const result = {
      type: 'tool-result',
      toolCallId: 'ws_1',
      toolName: 'web_search',
      output: { type: 'text', value: 'results' },
    };
    const params = {
      prompt: [
        { role: 'user', content: [{ type: 'text', text: 'Search the web.' }] },
        {
          role: 'assistant',
          content: [
            {
              type: 'tool-call',
              toolCallId: 'ws_1',
              toolName: 'web_search',
              input: { q: 'x' },
              providerExecuted: true,
            },
            result,
            { type: 'text', text: 'Found it.' },
          ],
        },
        { role: 'user', content: [{ type: 'text', text: 'Thanks.' }] },
      ],
    } as unknown as LanguageModelV3CallOptions;
    const events: GovernEvent[] = [];
    const middleware = createSelfGcMiddleware({
      governor: governorWith(2000),
      sessionId: 's',
      onGovern: (event) => events.push(event),
    });
    const call = { type: 'generate' as const, params, model: new MockLanguageModelV3() };
    const sent = await middleware.transformParams!(call);
    expect(events.map((event) => event.status)).not.toContain('ungoverned');
    expect(sent.prompt).toEqual(params.prompt);
  });

  it('refuses a prompt it cannot read, or with failOpen sends it as written and says so', async () => {
    const params: LanguageModelV3CallOptions = {
      prompt: [
        { role: 'user', content: [{ type: 'text', text: 'Search the web.' }] },
        // A tool result of a kind it reads, without its output: malformed, not merely unknown.
        {
          role: 'tool',
          content: [{ type: 'tool-result', toolCallId: 'ws_1', toolName: 'web_search' }],
        },
      ],
    } as unknown as LanguageModelV3CallOptions;
    const call = { type: 'generate' as const, params, model: new MockLanguageModelV3() };
    const strict = createSelfGcMiddleware({ governor: governorWith(2000), sessionId: 's' });
    await expect(strict.transformParams!(call)).rejects.toBeInstanceOf(BadInputError);

    const events: GovernEvent[] = [];
    const lenient = createSelfGcMiddleware({
      governor: governorWith(2000),
      sessionId: 's',
      failOpen: true,
      onGovern: (event) => events.push(event),
    });
    expect(await lenient.transformParams!(call)).toBe(params);
    expect(events).toMatchObject([{ status: 'ungoverned', sessionId: 's', error: { code: 'bad-input' } }]);
  });
});

/** What the model receives when nothing governs the call. */
async function plainPrompt(system: string, messages: ModelMessage[]): Promise<LanguageModelV3Prompt> {
  const plain = new MockLanguageModelV3({ doGenerate: answer });
  await generateText({ model: plain, system, messages });
  return plain.doGenerateCalls[0]!.prompt;
}
