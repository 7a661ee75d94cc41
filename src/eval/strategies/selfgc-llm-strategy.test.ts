import { afterEach, describe, expect, it } from 'vitest';
import { indexTranscript, type Ledger } from '../../core/ledger.js';
import { approximateTokenCounter } from '../../core/tokens.js';
import type { Message } from '../../core/transcript.js';
import { createLlmClient } from '../../llm/llm-client.js';
import type { LlmPlannerMode } from '../../llm/llm-planner.js';
import type { Script } from '../../testing/scripted-reply.js';
import { type ScriptedUpstream, startScriptedUpstream } from '../../testing/scripted-upstream.js';
import { autoCuts, replayCuts } from '../replay-cut.js';
import { quotingSession, recountViewTokens, viewProblems } from '../testing/eval-fixtures.js';
import {
  createSelfGcHintsStrategy,
  createSelfGcLlmStrategy,
  plannerFallbackOf,
} from './selfgc-llm-strategy.js';
import { createSelfGcStrategy } from './selfgc-strategies.js';

let upstream: ScriptedUpstream | undefined;
afterEach(async () => {
  await upstream?.close();
  upstream = undefined;
});

/** An OpenAI-compatible client of a scripted upstream (kept for `afterEach` to close). */
async function clientAgainst(script: Script) {
  upstream = await startScriptedUpstream({ script });
  const client = createLlmClient({
    provider: 'openai',
    baseUrl: `${upstream.url}/v1`,
    model: 'scripted-model',
    maxRetries: 0,
  });
  return { client, server: upstream };
}

async function strategyAgainst(script: Script, mode: LlmPlannerMode = 'fork') {
  const { client, server } = await clientAgainst(script);
  return { strategy: createSelfGcLlmStrategy({ client, mode }), server };
}

const ledgerOf = (messages: readonly Message[]) =>
  indexTranscript(messages, { tokenCounter: approximateTokenCounter });

/** The oldest tool output: never protected in a long prefix. */
const oldestOutput = (ledger: Ledger) => ledger.objects.find((object) => object.kind === 'function')!.id;

const userText = (server: ScriptedUpstream, index: number) =>
  (server.requests[index]!.body as { messages: Array<{ role: string; content: string }> }).messages
    .filter((message) => message.role === 'user')
    .map((message) => message.content)
    .join('\n');

describe('selfgc-llm', () => {
  it.each([
    ['fork', 'SELF-GC CONTEXT PLANNER.'],
    ['ledger', 'LEDGER VIEW'],
  ] as const)(
    "asks the model for a plan and applies it through the harness, the latest turn out of the model's reach (%s mode)",
    async (mode, marker) => {
      const ledger = ledgerOf(quotingSession(16).slice(0, -1));
      const target = oldestOutput(ledger);
      const { strategy, server } = await strategyAgainst(
        [
          {
            json: {
              operations: [
                { id: target, operation: 'fold', reason: 'read long ago', summary: 'module 1: handler_1_*' },
                { id: 'function:read_file:999', operation: 'prune', reason: 'no such object' },
              ],
            },
          },
        ],
        mode,
      );
      const output = await strategy.run({ ledger, keep: 0.5 });
      expect(output.state?.[target]?.operation).toBe('fold');
      expect(Object.keys(output.state ?? {})).toEqual([target]);
      expect(output.tokens).toBeLessThan(ledger.totalTokens);
      expect(output.tokens).toBe(recountViewTokens(ledger, output.items));
      expect(viewProblems(ledger, output.items)).toEqual([]);
      expect(plannerFallbackOf(output.warnings)).toBeUndefined();
      expect(output.warnings?.map((warning) => warning.code)).toEqual(['llm-plan-dropped']);
      // One planner call with the prefix (forked or as a ledger view) and the keep share as pressure.
      expect(server.requests).toHaveLength(1);
      expect(userText(server, 0)).toContain(marker);
      expect(userText(server, 0)).toContain(`target_tokens=${Math.floor(ledger.totalTokens * 0.5)}`);
    },
  );

  it('falls back to the embedded planner when the endpoint fails, and says so', async () => {
    const ledger = ledgerOf(quotingSession(16).slice(0, -1));
    const { strategy } = await strategyAgainst(() => ({ error: { status: 500, message: 'model down' } }));
    for (const keep of ['auto', 0.4] as const) {
      const output = await strategy.run({ ledger, keep });
      const embedded = createSelfGcStrategy().run({ ledger, keep });
      expect({ items: output.items, tokens: output.tokens, state: output.state }).toEqual({
        items: embedded.items,
        tokens: embedded.tokens,
        state: embedded.state,
      });
      expect(plannerFallbackOf(output.warnings)?.message).toMatch(
        /^llm planner \(openai scripted-model\) failed: openai upstream answered 500: .*model down.*; used the embedded planner$/,
      );
    }
  });

  it('sends the same prompt and gives the same view when the session is cut short at the cut', async () => {
    const messages = quotingSession(16);
    const target = oldestOutput(ledgerOf(messages));
    const { strategy, server } = await strategyAgainst(() => ({
      json: { operations: [{ id: target, operation: 'prune', reason: 'stale' }] },
    }));
    const cut = autoCuts(messages, 2).at(-1)!;
    const replay = (session: readonly Message[]) =>
      replayCuts({
        sessionId: 'quoting',
        messages: session,
        cuts: [cut],
        strategies: [strategy],
        keeps: [0.5],
        tokenCounter: approximateTokenCounter,
      });
    const [full] = await replay(messages);
    const [short] = await replay(messages.slice(0, cut + 1));
    expect(server.requests).toHaveLength(2);
    expect(server.requests[1]?.rawBody).toBe(server.requests[0]?.rawBody);
    expect(short?.output).toEqual(full?.output);
    expect(full?.output.state?.[target]?.operation).toBe('prune');
  });
});

describe('selfgc-hints', () => {
  async function hintsAgainst(script: Script) {
    const { client, server } = await clientAgainst(script);
    return { strategy: createSelfGcHintsStrategy(client), server };
  }

  it('is selfgc in cut mode with the hints the model gave for the uncertain band', async () => {
    const ledger = ledgerOf(quotingSession(16).slice(0, -1));
    const { strategy, server } = await hintsAgainst((request) => {
      // Discard every output the model is asked about.
      const ids = [...request.rawBody.matchAll(/(function:[\w-]+:\d+) \|/g)].map((match) => match[1]!);
      return { json: { hints: ids.map((id) => ({ id, hint: 'can_discard' })) } };
    });
    const asked = await strategy.run({ ledger, keep: 'auto' });
    const alone = createSelfGcStrategy().run({ ledger, keep: 'auto' });
    expect(server.requests).toHaveLength(1);
    const band = [...server.requests[0]!.rawBody.matchAll(/(function:[\w-]+:\d+) \|/g)].map(
      (match) => match[1]!,
    );
    expect(band.length).toBeGreaterThan(0);
    // Each output in the band is pruned through the harness; the rules alone keep them.
    for (const id of band) {
      expect(asked.state?.[id]?.operation).toBe('prune');
      expect(alone.state?.[id]?.operation).not.toBe('prune');
    }
    expect(asked.tokens).toBeLessThan(alone.tokens);
    expect(viewProblems(ledger, asked.items)).toEqual([]);
    expect(asked.warnings).toEqual([]);
  });

  it('is selfgc itself when the model fails, and says so as a fallback', async () => {
    const ledger = ledgerOf(quotingSession(16).slice(0, -1));
    const { strategy } = await hintsAgainst([{ error: { status: 500, message: 'down' } }]);
    const output = await strategy.run({ ledger, keep: 'auto' });
    expect(output.items).toEqual(createSelfGcStrategy().run({ ledger, keep: 'auto' }).items);
    expect(plannerFallbackOf(output.warnings)?.code).toBe('llm-hints-failed');
  });
});
