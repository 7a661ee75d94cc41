import { describe, expect, it } from 'vitest';
import { BadInputError } from '../../core/errors.js';
import type { LlmClient } from '../../llm/llm-types.js';
import {
  BASELINE_NAMES,
  COMMIT_VARIANT_NAMES,
  LLM_STRATEGY_NAMES,
  STRATEGY_NAMES,
  strategyByName,
} from './registry.js';

/** A client that is never called: the registry only builds strategies. */
const idleClient: LlmClient = {
  provider: 'openai',
  model: 'idle',
  complete: () => Promise.reject(new Error('not called')),
};

describe('strategyByName', () => {
  it('knows the command-line names of the issue', () => {
    expect(STRATEGY_NAMES).toEqual([
      'none',
      'oldest-turn',
      'tool-prune',
      'tool-mask-prune',
      'hybrid',
      'clear-tool-uses',
      'last-5-observations',
      'selfgc',
      'oracle',
    ]);
    expect(BASELINE_NAMES).toEqual([
      'oldest-turn',
      'tool-prune',
      'tool-mask-prune',
      'hybrid',
      'clear-tool-uses',
      'last-5-observations',
    ]);
  });

  it('gives each name its strategy, with the oracle alone labelled an upper bound', () => {
    for (const name of STRATEGY_NAMES) {
      const strategy = strategyByName(name);
      expect(strategy.name).toBe(name);
      expect(strategy.upperBound === true, name).toBe(name === 'oracle');
    }
  });

  it('refuses an unknown name with a bad-input error that names every choice', () => {
    for (const name of ['nonsense', '']) {
      let thrown: unknown;
      try {
        strategyByName(name);
      } catch (error) {
        thrown = error;
      }
      expect(thrown).toBeInstanceOf(BadInputError);
      const message = (thrown as BadInputError).message;
      expect(message).toContain(`"${name}"`);
      for (const choice of STRATEGY_NAMES) expect(message).toContain(choice);
      expect(message).toContain('selfgc-llm needs --llm-url');
      expect((thrown as BadInputError).code).toBe('bad-input');
    }
  });

  it('knows selfgc-llm and selfgc-hints apart: not run by default, and only with an endpoint', () => {
    expect(LLM_STRATEGY_NAMES).toEqual(['selfgc-llm', 'selfgc-hints']);
    expect(STRATEGY_NAMES).not.toContain('selfgc-llm');
    expect(STRATEGY_NAMES).not.toContain('selfgc-hints');
    expect(() => strategyByName('selfgc-hints')).toThrow(/strategy "selfgc-hints" needs an LLM endpoint/);
    expect(strategyByName('selfgc-hints', { llmClient: idleClient }).name).toBe('selfgc-hints');
    let thrown: unknown;
    try {
      strategyByName('selfgc-llm');
    } catch (error) {
      thrown = error;
    }
    expect(thrown).toBeInstanceOf(BadInputError);
    expect((thrown as Error).message).toBe(
      'strategy "selfgc-llm" needs an LLM endpoint: pass --llm-url URL and --llm-model NAME (with --llm-provider anthropic for an Anthropic endpoint)',
    );
    const strategy = strategyByName('selfgc-llm', { llmClient: idleClient });
    expect(strategy.name).toBe('selfgc-llm');
    expect(strategy.upperBound).toBeUndefined();
  });

  it('knows selfgc-paper, not run by default: in cut mode it plans as selfgc does', () => {
    expect(COMMIT_VARIANT_NAMES).toEqual(['selfgc-paper']);
    expect(STRATEGY_NAMES).not.toContain('selfgc-paper');
    const strategy = strategyByName('selfgc-paper');
    expect(strategy.name).toBe('selfgc-paper');
    expect(strategy.upperBound).toBeUndefined();
    expect(() => strategyByName('nonsense')).toThrow(/selfgc-paper/);
  });

  // Regression (was a bug): the table is a plain object, so `--strategy toString` or `constructor` finds
  // Object.prototype's functions and "resolves" to a string or `{}`, failing later as an internal
  // error instead of this bad-input error. Fix: look up with `Object.hasOwn(STRATEGIES, name)`
  // (or keep the table in a Map).
  it('does not resolve names inherited from Object.prototype', () => {
    expect(() => strategyByName('toString')).toThrow(BadInputError);
    expect(() => strategyByName('constructor')).toThrow(BadInputError);
  });
});
