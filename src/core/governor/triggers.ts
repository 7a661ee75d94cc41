/**
 * When governance runs: on overflow always; otherwise on pressure, milestones or a period —
 * never twice within a cooldown, and not at all while the circuit breaker is open; under soft
 * pressure and a warm cache, not before the view has grown enough for a plan to pay.
 */
import { carriesOutput, type Ledger } from '../ledger.js';
import type { SessionState } from '../session-state.js';
import { TRIGGERS } from '../tuning.js';
import type { GovernanceDecision, TriggerOptions } from './governor-types.js';

export interface TriggerInput {
  ledger: Ledger;
  state: SessionState;
  viewTokens: number;
  window: number;
  softPressure: number;
  options: TriggerOptions;
  force: boolean;
  /** The provider's cache still holds the last call's prompt (a commit would break it). */
  cacheWarm: boolean;
}

export interface TriggerChoice {
  trigger: GovernanceDecision['trigger'];
  /** Set when governance should not run although a trigger fired. */
  skip?: 'cooldown' | 'breaker-open' | 'below-break-even';
}

const TODO_TOOL = /todo|plan|task/i;
const DONE = /"(completed|done)"|\[x\]|status"?\s*:\s*"?(completed|done)/i;

/** A new user request, or a todo/plan tool call marking an item done, since `from`. */
export function hasMilestone(ledger: Ledger, from: number): boolean {
  for (let index = Math.max(from, 1); index < ledger.messages.length; index += 1) {
    const message = ledger.messages[index]!;
    if (message.role === 'user' && !carriesOutput(ledger, index)) return true;
    if (message.role !== 'assistant') continue;
    for (const part of message.parts) {
      if (part.type === 'tool-call' && TODO_TOOL.test(part.name) && DONE.test(part.arguments)) return true;
    }
  }
  return false;
}

export function chooseTrigger(input: TriggerInput): TriggerChoice {
  const { ledger, state, options } = input;
  if (input.viewTokens > input.window) return { trigger: 'overflow' };
  if (input.force) return { trigger: 'request' };
  const since = ledger.messages.length - state.triggers.lastRunAt;
  let trigger: TriggerChoice['trigger'] = 'none';
  if (input.viewTokens >= input.softPressure * input.window) trigger = 'pressure';
  else if (options.milestones !== false && hasMilestone(ledger, state.triggers.lastRunAt))
    trigger = 'milestone';
  else if (options.periodicMessages && since >= options.periodicMessages) trigger = 'periodic';
  if (trigger === 'none') return { trigger };
  const cooldown = options.cooldownMessages ?? TRIGGERS.cooldownMessages;
  if (state.triggers.lastRunAt > 0 && since < cooldown) return { trigger, skip: 'cooldown' };
  if (state.triggers.fruitlessRuns >= (options.breakerRuns ?? TRIGGERS.breakerRuns) && since < cooldown * 4)
    return { trigger, skip: 'breaker-open' };
  // The last run's plan could not pay for breaking the cache: under soft pressure, no plan can
  // until the view has grown by what it lacked (a cold cache costs nothing to break). A plan held
  // pending is weighed again at the next run without its planner's cost, and a milestone is a new
  // moment to plan for: both run.
  const deferral = state.triggers.deferral;
  if (
    trigger === 'pressure' &&
    input.cacheWarm &&
    deferral !== undefined &&
    input.viewTokens - deferral.reach < deferral.shortfall &&
    state.pending === undefined &&
    !(options.milestones !== false && hasMilestone(ledger, state.triggers.lastRunAt))
  )
    return { trigger, skip: 'below-break-even' };
  return { trigger };
}
