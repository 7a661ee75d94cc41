import { describe, expect, it } from 'vitest';
import { createMemoryStore } from '../../stores/memory-store.js';
import { BadInputError } from '../errors.js';
import { createGovernor } from './create-governor.js';
import type { GovernorOptions } from './governor-types.js';

const store = createMemoryStore();
const valid: GovernorOptions = { provider: 'openai', window: 32_000, store };

/** The message `createGovernor` refuses these options with. */
function refusal(options: unknown): string {
  try {
    createGovernor(options as GovernorOptions);
  } catch (error) {
    expect(error).toBeInstanceOf(BadInputError);
    return (error as Error).message;
  }
  throw new Error('accepted');
}

describe('createGovernor options', () => {
  it('accepts valid options, every field at its bounds included', () => {
    expect(() => createGovernor(valid)).not.toThrow();
    expect(() =>
      createGovernor({
        ...valid,
        window: 1,
        triggers: {
          softPressure: 1,
          target: 1,
          minBatch: 0,
          cooldownMessages: 0,
          breakerRuns: 1,
          periodicMessages: 1,
        },
        pins: { tools: ['todo'], paths: ['src/**'] },
        cache: { input: 1, cacheWrite: 1.25, cacheRead: 0, ttlMs: 300_000 },
      }),
    ).not.toThrow();
  });

  it('refuses a window that is not a positive integer, naming the field and the value', () => {
    expect(refusal({ ...valid, window: 0 })).toBe('createGovernor: window must be a positive integer, got 0');
    expect(refusal({ ...valid, window: -5 })).toMatch(/window must be a positive integer, got -5/);
    expect(refusal({ ...valid, window: Number.NaN })).toMatch(/window .* got NaN/);
    expect(refusal({ ...valid, window: 1.5 })).toMatch(/window/);
    expect(refusal({ ...valid, window: '32000' })).toMatch(/window .* got "32000"/);
    expect(refusal({ provider: 'openai', store })).toMatch(/window/);
  });

  it('refuses shares outside their range, negative counts and NaN', () => {
    expect(refusal({ ...valid, triggers: { softPressure: 0 } })).toMatch(
      /triggers.softPressure must be a number in \(0, 1\]/,
    );
    expect(refusal({ ...valid, triggers: { softPressure: 1.5 } })).toMatch(/softPressure/);
    expect(refusal({ ...valid, triggers: { target: Number.NaN } })).toMatch(/triggers.target .* NaN/);
    expect(refusal({ ...valid, triggers: { minBatch: -0.1 } })).toMatch(
      /triggers.minBatch must be a number in \[0, 1\]/,
    );
    expect(refusal({ ...valid, triggers: { cooldownMessages: -1 } })).toMatch(
      /cooldownMessages must be a non-negative integer/,
    );
    expect(refusal({ ...valid, triggers: { breakerRuns: 0 } })).toMatch(
      /breakerRuns must be a positive integer/,
    );
    expect(refusal({ ...valid, triggers: { periodicMessages: 2.5 } })).toMatch(/periodicMessages/);
    expect(refusal({ ...valid, cache: { input: 1, cacheWrite: -1, cacheRead: 0.1, ttlMs: 1 } })).toMatch(
      /cache.cacheWrite must be a non-negative number/,
    );
    expect(refusal({ ...valid, cache: 'warm' })).toMatch(/cache must be "aware", "blind" or a CachePricing/);
    expect(
      refusal({ ...valid, cache: { input: 1, cacheWrite: 1, cacheRead: 0.1, ttlMs: 1, output: Number.NaN } }),
    ).toMatch(/cache.output must be a non-negative number/);
  });

  it('takes the cost and the paper commit policies, and refuses any other', () => {
    expect(() => createGovernor({ ...valid, commitPolicy: 'cost' })).not.toThrow();
    expect(() => createGovernor({ ...valid, commitPolicy: 'paper' })).not.toThrow();
    expect(refusal({ ...valid, commitPolicy: 'eager' })).toMatch(
      /commitPolicy must be "cost" or "paper", got "eager"/,
    );
  });

  it('refuses a missing store, an unknown provider and odd collaborators', () => {
    expect(refusal({ provider: 'openai', window: 1000 })).toMatch(/store must be a SidecarStore/);
    expect(refusal({ ...valid, provider: 'gemini' })).toMatch(
      /provider must be "openai" or "anthropic", got "gemini"/,
    );
    expect(refusal({ ...valid, planner: {} })).toMatch(/planner/);
    expect(refusal({ ...valid, tokenCounter: () => 1 })).toMatch(/tokenCounter/);
    expect(refusal({ ...valid, pins: { tools: 'todo' } })).toMatch(/pins.tools must be an array of strings/);
    expect(refusal(undefined)).toMatch(/options must be an object/);
  });
});

describe('governor.project arguments', () => {
  const governor = createGovernor(valid);

  it('refuses provider messages passed as they are, naming the message and the remedy', async () => {
    const refused = governor.project('s', [{ role: 'user', content: 'hi' }] as never);
    await expect(refused).rejects.toThrow(BadInputError);
    await expect(refused).rejects.toThrow(
      'governor.project: message 0 is not a transcript message ({role, parts}); convert provider messages first (fromOpenAIChat',
    );
  });

  it('refuses an empty session id and messages that are not an array', async () => {
    const user = { role: 'user' as const, parts: [{ type: 'text' as const, text: 'hi' }] };
    await expect(governor.project('', [user])).rejects.toThrow(
      'governor.project: the session id must be a non-empty string, got ""',
    );
    await expect(governor.project('s', 'hi' as never)).rejects.toThrow(
      'governor.project: messages must be an array of transcript messages',
    );
    await expect(governor.project('s', [user])).resolves.toMatchObject({ viewTokens: expect.any(Number) });
  });
});
