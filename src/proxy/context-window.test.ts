import { describe, expect, it } from 'vitest';
import { contextWindowOf, DEFAULT_CONTEXT_WINDOW, LONG_CONTEXT_HEADER } from './context-window.js';

const longContext = new Headers({
  [LONG_CONTEXT_HEADER]: 'claude-code-20250219,context-1m-2025-08-07,interleaved-thinking-2025-05-14',
});

describe('contextWindowOf', () => {
  it.each([
    ['claude-opus-4-7', 1_000_000],
    ['claude-opus-4-6', 1_000_000],
    ['claude-sonnet-4-6', 1_000_000],
    ['claude-opus-4-5-20251101', 200_000],
    ['claude-opus-4-1-20250805', 200_000],
    ['claude-opus-4-20250514', 200_000],
    ['claude-sonnet-4-5-20250929', 200_000],
    ['claude-sonnet-4-20250514', 200_000],
    ['claude-haiku-4-5-20251001', 200_000],
    ['claude-3-7-sonnet-20250219', 200_000],
    ['gpt-5', 272_000],
    ['gpt-5-codex', 272_000],
    ['gpt-5.1-codex-max', 272_000],
    ['gpt-5.2-codex', 272_000],
    ['gpt-5.4', 272_000],
    ['gpt-5-chat-latest', 128_000],
    ['gpt-4.1-2025-04-14', 1_047_576],
    ['gpt-4o-mini', 128_000],
    ['gpt-4', 8_192],
    ['o3', 200_000],
    ['o3-mini', 200_000],
    ['o4-mini', 200_000],
    ['o1-mini', 128_000],
    ['codex-mini-latest', 200_000],
    ['some-local-model', DEFAULT_CONTEXT_WINDOW],
  ])('%s: %i', (model, tokens) => {
    expect(contextWindowOf(model)).toBe(tokens);
  });

  // The models Claude Code 2.1.337 knows past Opus 4.7: 1M each; Claude Code asks them for up to
  // 128k of output, which a 200k window would leave little room beside.
  it.each([
    'claude-opus-4-8',
    'claude-opus-5',
    'claude-opus-5-5',
    'claude-sonnet-5',
    'claude-sonnet-5-5',
    'claude-haiku-5-5',
    'claude-fable-5',
    'claude-fable-5-1',
    'claude-fable-5-2',
    'claude-mythos-5',
    'claude-mythos-5-2',
    'us.anthropic.claude-opus-5-5-v1:0',
    'anthropic/claude-sonnet-5.5',
  ])('%s: 1M', (model) => {
    expect(contextWindowOf(model)).toBe(1_000_000);
  });

  it('opens 1M for Sonnet 4 and 4.5 with the context-1m beta, and only for models that have it', () => {
    expect(contextWindowOf('claude-sonnet-4-5-20250929', longContext)).toBe(1_000_000);
    expect(contextWindowOf('claude-sonnet-4-20250514', longContext)).toBe(1_000_000);
    expect(contextWindowOf('claude-haiku-4-5-20251001', longContext)).toBe(200_000);
    expect(contextWindowOf('claude-opus-4-5-20251101', longContext)).toBe(200_000);
    const otherBetas = new Headers({ [LONG_CONTEXT_HEADER]: 'interleaved-thinking-2025-05-14' });
    expect(contextWindowOf('claude-sonnet-4-5-20250929', otherBetas)).toBe(200_000);
  });

  it('reads model names with a provider prefix (Bedrock, Vertex, OpenRouter)', () => {
    expect(contextWindowOf('us.anthropic.claude-sonnet-4-5-20250929-v1:0')).toBe(200_000);
    expect(contextWindowOf('anthropic.claude-opus-4-6-v1')).toBe(1_000_000);
    expect(contextWindowOf('anthropic/claude-sonnet-4.5')).toBe(200_000);
    expect(contextWindowOf('openai/gpt-5-codex')).toBe(272_000);
    expect(contextWindowOf('Claude-Opus-4-7')).toBe(1_000_000);
  });

  it("reads OpenRouter's dotted Claude versions as Anthropic's (Cline sends them so)", () => {
    expect(contextWindowOf('anthropic/claude-opus-4.6')).toBe(1_000_000);
    expect(contextWindowOf('anthropic/claude-sonnet-4.6')).toBe(1_000_000);
    expect(contextWindowOf('anthropic/claude-opus-4.7')).toBe(1_000_000);
    expect(contextWindowOf('anthropic/claude-opus-4.1')).toBe(200_000);
    expect(contextWindowOf('openai/gpt-5.1-chat-latest')).toBe(128_000);
    expect(contextWindowOf('gpt-4.1-mini')).toBe(1_047_576);
  });
});
