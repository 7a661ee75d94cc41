/**
 * The prepare step through the transcript cache governs exactly as it does parsing every body
 * whole: the same bytes upstream (as JSON), the same `x-selfgc-*` headers, on conversations
 * that grow, fold, get edited, cut short or swapped under one session id. The cache's parsed
 * values are frozen here, so a step that changed one in place would throw.
 */
import { describe, expect, it } from 'vitest';
import { createMemoryStore } from '../stores/memory-store.js';
import { anthropicMessagesDialect } from './anthropic-messages-dialect.js';
import { chatDialect } from './chat-dialect.js';
import { createGovernorPool } from './governor-pool.js';
import { type PrepareInput, prepareUpstream } from './prepare-upstream.js';
import type { ProxyLogEntry } from './proxy-log.js';
import { createMetricsRecorder } from './proxy-metrics.js';
import { responsesDialect } from './responses-dialect.js';
import { conversationBody, type WireRoute } from './testing/agent-conversation.js';
import { createTranscriptCache, type TranscriptCache } from './transcript-cache.js';
import type { JsonObject, WireDialect } from './wire-dialect.js';

const DIALECTS: Record<WireRoute, WireDialect> = {
  chat: chatDialect,
  responses: responsesDialect,
  messages: anthropicMessagesDialect,
};

function deepFreeze(value: unknown): void {
  if (typeof value !== 'object' || value === null || Object.isFrozen(value)) return;
  Object.freeze(value);
  for (const inner of Object.values(value)) deepFreeze(inner);
}

/** A cache whose readings hand out frozen values. */
function freezingCache(): TranscriptCache {
  const cache = createTranscriptCache();
  return {
    size: () => cache.size(),
    read(input) {
      const reading = cache.read(input);
      deepFreeze(reading?.body);
      return reading;
    },
  };
}

function createArm(transcripts?: TranscriptCache) {
  const governorFor = createGovernorPool({ store: createMemoryStore(), cache: 'blind' });
  return async (route: WireRoute, body: unknown, session: string) => {
    const headers = new Headers();
    const entry = {} as ProxyLogEntry;
    const input: PrepareInput = {
      settings: {
        failOpen: false,
        recovery: true,
        metrics: createMetricsRecorder(),
        now: () => 0,
        governorFor,
        windowFor: () => 2_000,
        tokenCounterFor: () => ({ name: 'chars/4', count: (text) => Math.ceil(text.length / 4) }),
        reserveOutput: 256,
      },
      dialect: DIALECTS[route],
      bytes: new TextEncoder().encode(JSON.stringify(body)),
      requestHeaders: new Headers({ 'x-selfgc-session': session }),
      keyHash: 'key',
      trace: { arm: 'governed', entry },
      headers,
      signal: new AbortController().signal,
      ...(transcripts === undefined ? {} : { transcripts }),
    };
    const prepared = await prepareUpstream(input);
    const selfgc = [...headers].filter(([name]) => name.startsWith('x-selfgc-'));
    const sent = JSON.parse(new TextDecoder().decode(prepared.body)) as JsonObject;
    return { body: sent, selfgc, entry, recovery: prepared.recovery };
  };
}

function edited(body: Record<string, unknown>, route: WireRoute, at: number): Record<string, unknown> {
  const field = DIALECTS[route].conversationField;
  const conversation = [...(body[field] as unknown[])];
  const target = Math.min(at, conversation.length - 1);
  conversation[target] = JSON.parse(
    JSON.stringify(conversation[target]).replaceAll('computeValue', 'computeRedacted'),
  ) as unknown;
  return { ...body, [field]: conversation };
}

function cut(body: Record<string, unknown>, route: WireRoute): Record<string, unknown> {
  const field = DIALECTS[route].conversationField;
  const conversation = body[field] as unknown[];
  return { ...body, [field]: [...conversation.slice(0, 3), ...conversation.slice(7)] };
}

describe('prepare step through the transcript cache', () => {
  it.each(['chat', 'responses', 'messages'] as const)(
    '%s: the same upstream body and headers as parsing whole, through growth, folds, edits, cuts and swaps',
    async (route) => {
      const whole = createArm();
      const cached = createArm(freezingCache());
      const steps: Array<Record<string, unknown>> = [];
      for (let turns = 1; turns <= 9; turns += 1) steps.push(conversationBody(route, { turns }));
      steps.push(edited(conversationBody(route, { turns: 9 }), route, 5));
      steps.push(edited(conversationBody(route, { turns: 10 }), route, 5));
      steps.push(cut(conversationBody(route, { turns: 11 }), route));
      for (let turns = 2; turns <= 6; turns += 1)
        steps.push(conversationBody(route, { turns, marker: 'other' }));
      let commits = 0;
      for (const body of steps) {
        const expected = await whole(route, body, 'one');
        const actual = await cached(route, body, 'one');
        expect(actual.body).toEqual(expected.body);
        expect(actual.selfgc).toEqual(expected.selfgc);
        expect(actual.entry.divergedAt).toBe(expected.entry.divergedAt);
        if (expected.entry.commit !== undefined) commits += 1;
      }
      expect(commits).toBeGreaterThan(0);
    },
  );

  it('hands recovery only what an answer echoes of the request that recovery changes: the tool choice', async () => {
    const prepare = createArm(freezingCache());
    const tools = [{ type: 'function', name: 'read_file', parameters: { type: 'object' } }];
    let recovery: Awaited<ReturnType<typeof prepare>>['recovery'];
    for (let turns = 1; turns <= 9 && recovery === undefined; turns += 1) {
      const body = {
        ...conversationBody('responses', { turns }),
        tools,
        tool_choice: 'required',
        instructions: 'a long system prompt',
      };
      recovery = (await prepare('responses', body, 'one')).recovery;
    }
    expect(recovery?.client).toEqual({ tool_choice: 'required' });
  });
});
