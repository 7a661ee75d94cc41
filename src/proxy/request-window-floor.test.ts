/**
 * The window when what stands beside the conversation (tools, `max_tokens`) leaves the view less
 * than the least room the governor gives it (`GOVERNOR.minViewTokens`): the proxy's own tools
 * must not make a request that fits as the client sent it go over, and a request that goes over
 * anyway says so.
 */
import { afterEach, describe, expect, it } from 'vitest';
import { countMessageTokens } from '../core/ledger.js';
import { approximateTokenCounter, type TokenCounter } from '../core/tokens.js';
import { providerTokenCounters } from '../tokenizers/create-token-counter.js';
import { anthropicMessagesDialect } from './anthropic-messages-dialect.js';
import { RECOVERY_WITHHELD } from './govern-request.js';
import { OVER_WINDOW } from './stateless-lane.js';
import { conversationBody } from './testing/agent-conversation.js';
import { type ProxyFixture, startProxyFixture } from './testing/proxy-fixture.js';
import type { JsonObject } from './wire-dialect.js';

let fixture: ProxyFixture | undefined;
afterEach(async () => {
  await fixture?.close();
  fixture = undefined;
});

/**
 * What a Messages request takes of the window, counted as the governor counts (the approximate
 * counter): its messages, what stands beside them (tool definitions), and its `max_tokens`.
 */
function requestTokens(body: JsonObject, counter: TokenCounter = approximateTokenCounter): number {
  const dialect = anthropicMessagesDialect;
  const messages = dialect.readTranscript(body).reduce((sum, m) => sum + countMessageTokens(counter, m), 0);
  const beside = dialect.promptBesideTranscript(body).reduce((sum, text) => sum + counter.count(text), 0);
  return messages + beside + (dialect.outputLimit(body) ?? 0);
}

const READ_FILE = {
  name: 'read_file',
  description: 'Read a file.',
  input_schema: { type: 'object', properties: { path: { type: 'string' } }, required: ['path'] },
};

describe('the window when tools and max_tokens leave the view less than its least room', () => {
  it('messages: a request that fits the window as the client sent it goes upstream inside it too', async () => {
    fixture = await startProxyFixture({ window: 2_000, script: () => ({ text: 'Reading on.' }) });
    const body = (turns: number) => ({
      ...conversationBody('messages', { turns, lines: 16 }),
      max_tokens: 1_200,
      tools: [READ_FILE],
    });
    let warnings: string[] = [];
    for (let turns = 1; turns <= 3; turns += 1) {
      const response = await fixture.post('messages', body(turns));
      expect(response.status).toBe(200);
      await response.text();
      warnings = (response.headers.get('x-selfgc-warnings') ?? '').split(',');
    }
    const sent = fixture.upstream.requests.at(-1)!.body as JsonObject;
    // The client's request fits the 2000-token window (max_tokens included)…
    expect(requestTokens(body(3))).toBeLessThanOrEqual(2_000);
    // …and so does the proxy's, which leaves its own tools out for want of room, and says so.
    expect(requestTokens(sent)).toBeLessThanOrEqual(2_000);
    expect(JSON.stringify(sent.tools)).not.toContain('selfgc_');
    expect(warnings).toContain(RECOVERY_WITHHELD);
    expect(fixture.logs.at(-1)?.warnings).toContain(RECOVERY_WITHHELD);
  });

  it('messages: a request over the window goes upstream inside it, or the answer says it could not', async () => {
    fixture = await startProxyFixture({ window: 2_000, script: () => ({ text: 'Reading on.' }) });
    const body = (turns: number) => ({
      ...conversationBody('messages', { turns, lines: 12 }),
      max_tokens: 1_200,
      tools: [READ_FILE],
    });
    let response: Response | undefined;
    for (let turns = 1; turns <= 5; turns += 1) {
      response = await fixture.post('messages', body(turns));
      expect(response.status).toBe(200);
      await response.text();
    }
    const sent = fixture.upstream.requests.at(-1)!.body as JsonObject;
    const fits = requestTokens(sent) <= 2_000;
    const warnings = response!.headers.get('x-selfgc-warnings') ?? '';
    expect(fits || warnings.split(',').includes(OVER_WINDOW)).toBe(true);
  });

  it('messages, the agent-driven mode: its tools and ledger message stay out where they would not fit', async () => {
    fixture = await startProxyFixture({
      window: 4_000,
      proxy: { agentTools: true },
      script: () => ({ text: 'Reading on.' }),
    });
    const body = (turns: number) => ({
      ...conversationBody('messages', { turns, lines: 10 }),
      max_tokens: 2_300,
      tools: [READ_FILE],
    });
    const over: string[] = [];
    for (let turns = 1; turns <= 14; turns += 1) {
      const response = await fixture.post('messages', body(turns));
      expect(response.status).toBe(200);
      await response.text();
      const sent = requestTokens(fixture.upstream.requests.at(-1)!.body as JsonObject);
      if (requestTokens(body(turns)) <= 4_000 && sent > 4_000) over.push(`${turns} turns: ${sent} tokens`);
    }
    expect(over).toEqual([]);
  });

  it('messages: a request over the window says so when its new messages were only bounded, not counted', async () => {
    fixture = await startProxyFixture({
      window: 2_000,
      tokenizer: 'per-provider',
      script: () => ({ text: 'Reading on.' }),
    });
    const counter = providerTokenCounters()('anthropic');
    const missed: string[] = [];
    for (let turns = 1; turns <= 6; turns += 1) {
      const body = {
        ...conversationBody('messages', { turns, lines: 3 }),
        max_tokens: 1_900,
        tools: [READ_FILE],
      };
      const response = await fixture.post('messages', body);
      expect(response.status).toBe(200);
      await response.text();
      const sent = requestTokens(fixture.upstream.requests.at(-1)!.body as JsonObject, counter);
      const warnings = (response.headers.get('x-selfgc-warnings') ?? '').split(',');
      if (sent > 2_000 && !warnings.includes(OVER_WINDOW)) missed.push(`${turns} turns: ${sent} tokens`);
    }
    expect(missed).toEqual([]);
  });
});
