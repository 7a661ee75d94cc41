import { describe, expect, it } from 'vitest';
import { indexTranscript, type Ledger } from '../ledger.js';
import { emptySessionState, type SessionState } from '../session-state.js';
import { assistantMessage, toolRound, userMessage } from '../testing/transcript-builders.js';
import { approximateTokenCounter } from '../tokens.js';
import type { Message } from '../transcript.js';
import type { TriggerOptions } from './governor-types.js';
import { chooseTrigger, hasMilestone, type TriggerInput } from './triggers.js';

function ledgerOf(messages: Message[]): Ledger {
  return indexTranscript(messages, { tokenCounter: approximateTokenCounter });
}

/** A session of `rounds` tool rounds after one request: no milestone after index 0. */
function work(rounds: number): Message[] {
  const messages: Message[] = [userMessage('do the task')];
  for (let index = 0; index < rounds; index += 1)
    messages.push(...toolRound(`c${index}`, 'bash', { command: `step ${index}` }, 'ok'));
  return messages;
}

function input(
  ledger: Ledger,
  overrides: Partial<TriggerInput> & {
    triggers?: Partial<SessionState['triggers']>;
    options?: TriggerOptions;
  } = {},
): TriggerInput {
  const state = emptySessionState();
  return {
    ledger,
    state: { ...state, triggers: { ...state.triggers, ...overrides.triggers } },
    viewTokens: overrides.viewTokens ?? 100,
    window: overrides.window ?? 1_000,
    softPressure: overrides.softPressure ?? 0.7,
    options: overrides.options ?? {},
    force: overrides.force ?? false,
    cacheWarm: overrides.cacheWarm ?? true,
  };
}

describe('hasMilestone', () => {
  it('sees a new user request after `from`', () => {
    const ledger = ledgerOf([...work(2), userMessage('next'), assistantMessage('ok')]);
    expect(hasMilestone(ledger, 0)).toBe(true);
    expect(hasMilestone(ledger, 5)).toBe(true);
    expect(hasMilestone(ledger, 6)).toBe(false);
  });

  it('never counts the very first message', () => {
    expect(hasMilestone(ledgerOf(work(3)), 0)).toBe(false);
  });

  it('sees a todo or plan item marked done', () => {
    const done = ledgerOf([
      ...work(1),
      ...toolRound('t', 'todo_write', { todos: [{ id: 1, status: 'completed' }] }, 'ok'),
    ]);
    expect(hasMilestone(done, 1)).toBe(true);
    const pending = ledgerOf([
      ...work(1),
      ...toolRound('t', 'todo_write', { todos: [{ id: 1, status: 'pending' }] }, 'ok'),
    ]);
    expect(hasMilestone(pending, 1)).toBe(false);
    const other = ledgerOf([
      ...work(1),
      ...toolRound('t', 'bash', { command: 'echo completed', status: 'completed' }, 'ok'),
    ]);
    expect(hasMilestone(other, 1)).toBe(false);
  });
});

describe('chooseTrigger', () => {
  const ledger = ledgerOf(work(10));

  it('fires nothing below the threshold without milestones', () => {
    expect(chooseTrigger(input(ledger))).toEqual({ trigger: 'none' });
  });

  it('fires on pressure at the soft threshold', () => {
    expect(chooseTrigger(input(ledger, { viewTokens: 699 }))).toEqual({ trigger: 'none' });
    expect(chooseTrigger(input(ledger, { viewTokens: 700 }))).toEqual({ trigger: 'pressure' });
  });

  it('always fires on overflow, even in a cooldown or with the breaker open', () => {
    expect(
      chooseTrigger(
        input(ledger, {
          viewTokens: 1_001,
          triggers: { lastRunAt: ledger.messages.length, fruitlessRuns: 9 },
        }),
      ),
    ).toEqual({
      trigger: 'overflow',
    });
  });

  it('fires on request when forced, even in a cooldown', () => {
    expect(
      chooseTrigger(input(ledger, { force: true, triggers: { lastRunAt: ledger.messages.length } })),
    ).toEqual({ trigger: 'request' });
  });

  it('fires on a milestone unless milestones are off', () => {
    const withRequest = ledgerOf([...work(2), userMessage('next task')]);
    expect(chooseTrigger(input(withRequest))).toEqual({ trigger: 'milestone' });
    expect(chooseTrigger(input(withRequest, { options: { milestones: false } }))).toEqual({
      trigger: 'none',
    });
  });

  it('fires periodically when asked', () => {
    expect(
      chooseTrigger(input(ledger, { options: { periodicMessages: 10 }, triggers: { lastRunAt: 10 } })),
    ).toEqual({ trigger: 'periodic' });
    expect(
      chooseTrigger(input(ledger, { options: { periodicMessages: 12 }, triggers: { lastRunAt: 10 } })),
    ).toEqual({ trigger: 'none' });
  });

  it('under a warm cache, waits for the growth a deferred plan lacked before pressure runs again', () => {
    const length = ledger.messages.length;
    // The last run's plan could touch 600 tokens of the view and lacked 150 to pay.
    const deferral = { reach: 600, shortfall: 150 };
    const at = (viewTokens: number, cacheWarm = true) =>
      chooseTrigger(input(ledger, { viewTokens, cacheWarm, triggers: { lastRunAt: length - 4, deferral } }));
    expect(at(749)).toEqual({ trigger: 'pressure', skip: 'below-break-even' });
    expect(at(750)).toEqual({ trigger: 'pressure' });
    // A cold cache costs nothing to break; the window forces a commit whatever it costs.
    expect(at(700, false)).toEqual({ trigger: 'pressure' });
    expect(at(1_001)).toEqual({ trigger: 'overflow' });
    // A milestone still runs, below pressure and under it.
    const withRequest = ledgerOf([...work(2), userMessage('next task')]);
    expect(chooseTrigger(input(withRequest, { triggers: { deferral } }))).toEqual({ trigger: 'milestone' });
    expect(
      chooseTrigger(input(withRequest, { viewTokens: 700, triggers: { lastRunAt: 1, deferral } })),
    ).toEqual({ trigger: 'pressure' });
    // So does a plan held pending: it is weighed again without its planner's cost.
    const held = input(ledger, { viewTokens: 700, triggers: { lastRunAt: length - 4, deferral } });
    const pending = { plan: { planner: 'llm', operations: [] }, binding: { end: 3, link: 'x' } };
    expect(chooseTrigger({ ...held, state: { ...held.state, pending } })).toEqual({ trigger: 'pressure' });
  });

  it('skips within the cooldown after a run', () => {
    const length = ledger.messages.length;
    expect(chooseTrigger(input(ledger, { viewTokens: 800, triggers: { lastRunAt: length - 3 } }))).toEqual({
      trigger: 'pressure',
      skip: 'cooldown',
    });
    expect(chooseTrigger(input(ledger, { viewTokens: 800, triggers: { lastRunAt: length - 4 } }))).toEqual({
      trigger: 'pressure',
    });
    expect(
      chooseTrigger(
        input(ledger, {
          viewTokens: 800,
          options: { cooldownMessages: 10 },
          triggers: { lastRunAt: length - 4 },
        }),
      ),
    ).toEqual({ trigger: 'pressure', skip: 'cooldown' });
  });

  it('opens the breaker after fruitless runs until the transcript grows by four cooldowns', () => {
    const length = ledger.messages.length;
    const fruitless = (since: number, fruitlessRuns: number, options: TriggerOptions = {}) =>
      chooseTrigger(
        input(ledger, { viewTokens: 800, options, triggers: { lastRunAt: length - since, fruitlessRuns } }),
      );
    expect(fruitless(5, 2)).toEqual({ trigger: 'pressure' });
    expect(fruitless(5, 3)).toEqual({ trigger: 'pressure', skip: 'breaker-open' });
    expect(fruitless(15, 3)).toEqual({ trigger: 'pressure', skip: 'breaker-open' });
    expect(fruitless(16, 3)).toEqual({ trigger: 'pressure' });
    expect(fruitless(5, 3, { breakerRuns: 5 })).toEqual({ trigger: 'pressure' });
  });
});
