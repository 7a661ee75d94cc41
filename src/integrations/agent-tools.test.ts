import type { LanguageModelV3CallOptions, LanguageModelV3Prompt } from '@ai-sdk/provider';
import Anthropic from '@anthropic-ai/sdk';
import OpenAI from 'openai';
import type { ChatCompletionMessageParam } from 'openai/resources/chat/completions';
import type { ResponseInputItem } from 'openai/resources/responses/responses';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { toAnthropicMessages, toModelMessages, toOpenAIChat, toOpenAIResponses } from '../adapters/index.js';
import { createGovernor } from '../core/governor/create-governor.js';
import { longSession } from '../core/testing/long-session.js';
import { createMemoryStore } from '../stores/index.js';
import { type ScriptedUpstream, startScriptedUpstream } from '../testing/index.js';
import { createTokenCounter } from '../tokenizers/create-token-counter.js';
import { createAgentTools } from './agent-tools.js';
import { createSelfGcMiddleware } from './ai-sdk-middleware.js';
import { governAnthropic } from './anthropic-client.js';
import { governOpenAI } from './openai-client.js';

let upstream: ScriptedUpstream;

beforeEach(async () => {
  upstream = await startScriptedUpstream({ script: [] });
});

afterEach(async () => {
  await upstream.close();
});

function setup(provider: 'openai' | 'anthropic' = 'openai') {
  const governor = createGovernor({
    provider,
    window: 8_000,
    store: createMemoryStore(),
    tokenCounter: createTokenCounter(),
  });
  return { governor, agentTools: createAgentTools({ governor }) };
}

const session = longSession({ rounds: 6, lines: 12 });
const raw = (index: number) => upstream.requests[index]?.rawBody ?? '';
const LEDGER = /\[context ledger\] budget_used_pct=\d+/;

/** Every tool name a request body declares, whatever the provider's shape. */
function toolNames(body: unknown): string[] {
  const tools = (body as { tools?: Array<Record<string, unknown>> }).tools ?? [];
  return tools.map((tool) => String(tool.name ?? (tool.function as { name?: string } | undefined)?.name));
}

describe('agentTools on the integrations', () => {
  it('OpenAI chat: the GC tools beside the app’s own, the ledger last, and a fold the handler commits shows next time', async () => {
    const { governor, agentTools } = setup();
    const client = governOpenAI(
      new OpenAI({ apiKey: 'sk-test', baseURL: `${upstream.url}/v1`, maxRetries: 0 }),
      {
        governor,
        sessionId: 'chat',
        agentTools,
      },
    );
    const messages = toOpenAIChat(session).messages as unknown as ChatCompletionMessageParam[];
    const appTool = {
      type: 'function' as const,
      function: { name: 'read_file', parameters: { type: 'object' } },
    };
    upstream.enqueue({ text: 'ok' }, { text: 'ok' });
    await client.chat.completions.create({ model: 'gpt-test', messages, tools: [appTool] });
    const first = upstream.requests[0]!.body as { messages: Array<{ role: string; content: unknown }> };
    expect(toolNames(first)).toEqual(['read_file', 'fold', 'prune', 'expand', 'search_context']);
    const last = first.messages.at(-1)!;
    expect(last.role).toBe('user');
    expect(String(last.content)).toMatch(LEDGER);
    expect(String(last.content)).toContain('function:read_file:2');

    // The model folded a file read: the app routes the call to the handler.
    expect(agentTools.handler.handles('fold')).toBe(true);
    const result = await agentTools.handler.handle('chat', {
      name: 'fold',
      arguments: JSON.stringify({ id: 'function:read_file:2' }),
    });
    expect(result).toMatch(
      /^folded function:read_file:2 \(.* tokens, commit .*\); expand\("function:read_file:2"\) recovers it\.$/,
    );
    await client.chat.completions.create({ model: 'gpt-test', messages, tools: [appTool] });
    expect(raw(1)).toContain('[folded function:read_file:2');
    expect(raw(0)).not.toContain('[folded function:read_file:2');
    // The fold keeps the bytes: expand through the same handler gives the file back.
    const expanded = await agentTools.handler.handle('chat', {
      name: 'expand',
      arguments: JSON.stringify({ id: 'function:read_file:2' }),
    });
    expect(raw(0)).toContain(JSON.stringify(expanded).slice(1, 200));
  });

  it('OpenAI responses and Anthropic: tools in their own shapes, the ledger at the end', async () => {
    const openai = setup();
    const responsesClient = governOpenAI(
      new OpenAI({ apiKey: 'sk-test', baseURL: `${upstream.url}/v1`, maxRetries: 0 }),
      { governor: openai.governor, sessionId: 'responses', agentTools: openai.agentTools },
    );
    upstream.enqueue({ text: 'ok' }, { text: 'ok' });
    await responsesClient.responses.create({
      model: 'gpt-test',
      input: toOpenAIResponses(session).messages as unknown as ResponseInputItem[],
    });
    const responses = upstream.requests[0]!.body as { input: Array<Record<string, unknown>> };
    expect(toolNames(responses)).toEqual(['fold', 'prune', 'expand', 'search_context']);
    expect(JSON.stringify(responses.input.at(-1))).toMatch(LEDGER);

    const anthropic = setup('anthropic');
    const anthropicClient = governAnthropic(
      new Anthropic({ apiKey: 'sk-ant-test', baseURL: upstream.url, maxRetries: 0 }),
      { governor: anthropic.governor, sessionId: 'messages', agentTools: anthropic.agentTools },
    );
    const { system, messages } = toAnthropicMessages(session);
    await anthropicClient.messages.create({
      model: 'claude-test',
      max_tokens: 100,
      ...(typeof system === 'string' ? { system } : {}),
      messages: messages as unknown as Anthropic.MessageParam[],
    });
    const body = upstream.requests[1]!.body as {
      messages: Array<{ role: string; content: Array<{ type: string; text?: string }> }>;
      tools: Array<{ input_schema?: unknown }>;
    };
    expect(toolNames(body)).toEqual(['fold', 'prune', 'expand', 'search_context']);
    expect(body.tools.every((tool) => tool.input_schema !== undefined)).toBe(true);
    // Roles still alternate: the session ends with the agent's answer, and the ledger follows.
    const last = body.messages.at(-1)!;
    expect(last.role).toBe('user');
    expect(last.content.at(-1)?.text).toMatch(LEDGER);
    expect(body.messages.at(-2)?.role).toBe('assistant');
    // After tool results, the ledger joins their user message.
    upstream.enqueue({ text: 'ok' });
    await anthropicClient.messages.create({
      model: 'claude-test',
      max_tokens: 100,
      messages: messages.slice(0, -1) as unknown as Anthropic.MessageParam[],
    });
    const afterResults = (upstream.requests[2]!.body as typeof body).messages;
    const joined = afterResults.at(-1)!;
    expect(joined.content[0]?.type).toBe('tool_result');
    expect(joined.content.at(-1)?.text).toMatch(LEDGER);
    expect(afterResults.at(-2)?.role).toBe('assistant');
  });

  it('AI SDK middleware: the GC tools join the call’s tools and the ledger ends the prompt', async () => {
    const { governor, agentTools } = setup();
    const middleware = createSelfGcMiddleware({ governor, sessionId: 'ai-sdk', agentTools });
    const prompt = toModelMessages(session).messages as unknown as LanguageModelV3Prompt;
    const params = { prompt } as LanguageModelV3CallOptions;
    const transformed = await middleware.transformParams!({ params, type: 'generate', model: {} as never });
    expect((transformed.tools ?? []).map((tool) => tool.name)).toEqual([
      'fold',
      'prune',
      'expand',
      'search_context',
    ]);
    expect(JSON.stringify(transformed.prompt.at(-1))).toMatch(LEDGER);
  });

  it('says what to do when the model calls a GC tool before any request of the session was governed', async () => {
    const { agentTools } = setup();
    const result = await agentTools.handler.handle('never-sent', {
      name: 'prune',
      arguments: JSON.stringify({ id: 'function:read_file:1' }),
    });
    expect(result).toMatch(/^error: prune failed: no request of session never-sent was governed yet/);
  });

  it('leaves requests as they were without the option', async () => {
    const { governor } = setup();
    const client = governOpenAI(
      new OpenAI({ apiKey: 'sk-test', baseURL: `${upstream.url}/v1`, maxRetries: 0 }),
      {
        governor,
        sessionId: 'plain',
      },
    );
    upstream.enqueue({ text: 'ok' });
    await client.chat.completions.create({
      model: 'gpt-test',
      messages: toOpenAIChat(session).messages as unknown as ChatCompletionMessageParam[],
    });
    expect(raw(0)).not.toMatch(LEDGER);
    expect(toolNames(upstream.requests[0]!.body)).toEqual([]);
  });
});
