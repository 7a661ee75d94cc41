import { describe, expect, it } from 'vitest';
import { approximateTokenCounter } from '../core/tokens.js';
import { createTokenCounter } from '../tokenizers/create-token-counter.js';
import { anthropicMessagesDialect } from './anthropic-messages-dialect.js';
import { chatDialect } from './chat-dialect.js';
import {
  MAX_RECOVERY_ROOM,
  NOTE_TOKENS,
  RECOVERY_ROOM_SHARE,
  ROUND_RESERVE_TOKENS,
} from './recovery-budget.js';
import { DEFAULT_OUTPUT_RESERVE, defaultOutputReserve, reserveOf } from './request-reserve.js';
import { responsesDialect } from './responses-dialect.js';
import { claudeCodeRequest, codexRequest, opencodeRequest } from './testing/client-requests.js';
import { RECOVERY_TOOLS } from './transparent-recovery.js';

const counter = createTokenCounter('o200k_base');
const count = (value: unknown) => counter.count(typeof value === 'string' ? value : JSON.stringify(value));

describe('reserveOf', () => {
  it("counts a Claude Code request's tools and takes its max_tokens as the output reserve", () => {
    const { body } = claudeCodeRequest({ kind: 'header', sessionId: 'a-session' });
    const reserve = reserveOf({
      dialect: anthropicMessagesDialect,
      body,
      window: 200_000,
      tokenCounter: counter,
      proxyTools: [],
    });
    expect(reserve.promptTokens).toBe(count(body.tools));
    expect(reserve.promptTokens).toBeGreaterThan(1_000);
    expect(reserve.outputTokens).toBe(32_000);
    expect(reserve.total).toBe(reserve.promptTokens + 32_000);
  });

  it("counts Codex's instructions and tools; with no max_output_tokens it keeps the default free", () => {
    const { body } = codexRequest({ thread: 't-1' });
    const reserve = reserveOf({
      dialect: responsesDialect,
      body,
      window: 272_000,
      tokenCounter: counter,
      proxyTools: [],
    });
    expect(reserve.promptTokens).toBe(count(body.instructions) + count(body.tools));
    expect(reserve.outputTokens).toBe(DEFAULT_OUTPUT_RESERVE);
    const limited = reserveOf({
      dialect: responsesDialect,
      body: {
        ...body,
        max_output_tokens: 4_000,
        text: { format: { type: 'json_schema', schema: { a: 1 } } },
      },
      window: 272_000,
      tokenCounter: counter,
      proxyTools: [],
    });
    expect(limited.outputTokens).toBe(4_000);
    expect(limited.promptTokens).toBe(
      reserve.promptTokens + count({ type: 'json_schema', schema: { a: 1 } }),
    );
  });

  it('prefers max_completion_tokens to max_tokens on Chat, and ignores limits that are not positive integers', () => {
    const { body } = opencodeRequest('ses_1');
    const reserveFor = (fields: Record<string, unknown>) =>
      reserveOf({
        dialect: chatDialect,
        body: { ...body, ...fields },
        window: 100_000,
        tokenCounter: approximateTokenCounter,
        proxyTools: [],
      }).outputTokens;
    expect(reserveFor({})).toBe(32_000);
    expect(reserveFor({ max_completion_tokens: 8_000 })).toBe(8_000);
    expect(reserveFor({ max_tokens: -1 })).toBe(defaultOutputReserve(100_000));
    expect(reserveFor({ max_tokens: '500' })).toBe(defaultOutputReserve(100_000));
  });

  it('keeps room for the recovery tools in the shape of the route', () => {
    const base = { model: 'gpt-4o', messages: [] };
    const reserve = reserveOf({
      dialect: chatDialect,
      body: base,
      window: 100_000,
      tokenCounter: counter,
      proxyTools: RECOVERY_TOOLS,
    });
    expect(reserve.proxyToolTokens).toBe(count(chatDialect.withTools({}, RECOVERY_TOOLS).tools));
    expect(reserve.proxyToolTokens).toBeGreaterThan(50);
    // And room for the pages recovery appends: a share of what the conversation has, capped.
    const conversation = 100_000 - reserve.proxyToolTokens - reserve.outputTokens;
    expect(reserve.recoveryTokens).toBe(
      Math.min(MAX_RECOVERY_ROOM, Math.floor(conversation * RECOVERY_ROOM_SHARE)) +
        NOTE_TOKENS +
        ROUND_RESERVE_TOKENS,
    );
    expect(reserve.total).toBe(reserve.proxyToolTokens + reserve.outputTokens + reserve.recoveryTokens);
  });

  it('keeps no room for recovered pages without the recovery tools, and none out of a window already full', () => {
    const base = { model: 'gpt-4o', messages: [] };
    const reserveFor = (window: number, proxyTools: typeof RECOVERY_TOOLS, body: object = base) =>
      reserveOf({
        dialect: chatDialect,
        body: { ...base, ...body },
        window,
        tokenCounter: counter,
        proxyTools,
      });
    expect(reserveFor(100_000, []).recoveryTokens).toBe(0);
    const small = reserveFor(10_000, RECOVERY_TOOLS);
    expect(small.recoveryTokens).toBe(
      Math.floor((10_000 - small.proxyToolTokens - small.outputTokens) * RECOVERY_ROOM_SHARE) +
        NOTE_TOKENS +
        ROUND_RESERVE_TOKENS,
    );
    const full = reserveFor(2_000, RECOVERY_TOOLS, { max_tokens: 4_000 });
    expect(full).toMatchObject({ outputTokens: 4_000, recoveryTokens: 0 });
  });

  it('defaults the output reserve to 16,384, a quarter of a small window, or the configured number', () => {
    expect(defaultOutputReserve(200_000)).toBe(16_384);
    expect(defaultOutputReserve(20_000)).toBe(5_000);
    expect(defaultOutputReserve(20_000, 30_000)).toBe(30_000);
  });
});
