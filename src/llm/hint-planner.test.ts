import { afterEach, describe, expect, it } from 'vitest';
import { createPinRule } from '../core/governor/pins.js';
import { indexTranscript } from '../core/ledger.js';
import { hintCandidates, planEmbedded } from '../core/planners/embedded-planner.js';
import type { PlannerInput } from '../core/planners/planner.js';
import { projectView } from '../core/project-view.js';
import { latestTurnStart } from '../core/rehearse-plan.js';
import { threeRequestSession } from '../core/testing/sample-session.js';
import { approximateTokenCounter } from '../core/tokens.js';
import type { ScriptedReply, ScriptedRequest } from '../testing/scripted-reply.js';
import { type ScriptedUpstream, startScriptedUpstream } from '../testing/scripted-upstream.js';
import { createHintedPlanner } from './hint-planner.js';
import { createLlmClient } from './llm-client.js';
import type { LlmProvider } from './llm-types.js';

let upstream: ScriptedUpstream | undefined;
afterEach(async () => {
  await upstream?.close();
  upstream = undefined;
});

async function plannerFor(provider: LlmProvider, script: ScriptedReply[]) {
  upstream = await startScriptedUpstream({ script });
  const client = createLlmClient({
    provider,
    baseUrl: provider === 'openai' ? `${upstream.url}/v1` : upstream.url,
    model: provider === 'openai' ? 'gpt-test' : 'claude-test',
    maxRetries: 0,
  });
  return createHintedPlanner({ client });
}

/**
 * threeRequestSession without a budget: the rules fold idle outputs. The uncertain band is the
 * `ls -R src` listing (bash:5) and the first read of parser.py (read_file:1).
 */
function plannerInput(): PlannerInput {
  const ledger = indexTranscript(threeRequestSession(), {
    tokenCounter: approximateTokenCounter,
    pin: createPinRule(),
  });
  return {
    ledger,
    state: {},
    protectFrom: latestTurnStart(ledger),
    viewTokens: projectView(ledger, {}).tokens,
    targetTokens: Number.POSITIVE_INFINITY,
    window: 4000,
  };
}

function userText(request: ScriptedRequest | undefined): string {
  const body = request?.body as { messages: Array<{ role: string; content: string }> };
  return body.messages
    .filter((message) => message.role === 'user')
    .map((message) => message.content)
    .join('\n');
}

const operationsOf = (operations: Array<{ objectId: string; operation: string }>) =>
  operations.map((operation) => `${operation.operation} ${operation.objectId}`);

describe('the band the hint tier asks about', () => {
  it('is the outputs the rules leave uncertain, the largest first', () => {
    const input = plannerInput();
    expect(hintCandidates(input, 40).map((object) => object.id)).toEqual([
      'function:bash:5',
      'function:read_file:1',
    ]);
    expect(hintCandidates(input, 1).map((object) => object.id)).toEqual(['function:bash:5']);
  });
});

describe.each(['openai', 'anthropic'] as const)('createHintedPlanner (%s)', (provider) => {
  it('asks about the band alone, and plans with its hints: retain keeps, can_discard prunes', async () => {
    const planner = await plannerFor(provider, [
      {
        json: {
          hints: [
            { id: 'function:bash:5', hint: 'retain', reason: 'the agent will list files again' },
            { id: 'function:read_file:1', hint: 'can_discard', reason: 'superseded by the edit' },
          ],
        },
        usage: { inputTokens: 900, outputTokens: 60 },
      },
    ]);
    // Under pressure the rules alone fold the request whose work holds the listing.
    const input = { ...plannerInput(), targetTokens: Math.floor(plannerInput().viewTokens / 2) };
    const alone = operationsOf(planEmbedded(input));
    expect(alone).toContain('fold conversation:user:2');
    expect(alone).not.toContain('prune function:read_file:1');

    const result = await planner.plan(input);
    const prompt = userText(upstream!.requests[0]);
    expect(prompt).toContain('function:bash:5 |');
    expect(prompt).toContain('function:read_file:1 |');
    // The failing run the rules settled (superseded) and the latest read are not asked about.
    expect(prompt).not.toContain('function:bash:2 |');
    expect(prompt).not.toContain('function:read_file:7 |');
    expect(prompt).toMatch(/Current task: /);
    expect(result.plan.planner).toBe('hinted');
    const operations = operationsOf(result.plan.operations);
    expect(operations).not.toContain('fold conversation:user:2');
    expect(operations.filter((operation) => operation.endsWith('function:bash:5'))).toEqual([]);
    expect(operations).toContain('prune function:read_file:1');
    expect(result.cost).toMatchObject({ inputTokens: 900, outputTokens: 60 });
    expect(result.warnings).toEqual([]);
  });

  it('drops hints for ids it did not ask about, and repeats, with a warning', async () => {
    const planner = await plannerFor(provider, [
      {
        json: {
          hints: [
            { id: 'system:1', hint: 'can_discard' },
            { id: 'function:bash:5', hint: 'can_summarize' },
            { id: 'function:bash:5', hint: 'can_discard' },
          ],
        },
      },
    ]);
    const result = await planner.plan(plannerInput());
    const operations = operationsOf(result.plan.operations);
    expect(operations).not.toContain('prune system:1');
    expect(operations).not.toContain('prune function:bash:5');
    expect(result.warnings?.map((warning) => warning.code)).toEqual(['llm-hints-dropped']);
    expect(result.warnings?.[0]?.message).toContain('system:1 (not asked about)');
    expect(result.warnings?.[0]?.message).toContain('function:bash:5 (hinted twice)');
  });

  it.each([
    ['a failing endpoint', { error: { status: 500, message: 'The server had an error' } }],
    ['an answer that is not the format', { text: 'I think you should keep everything.' }],
    ['a hint that is no hint', { json: { hints: [{ id: 'function:bash:5', hint: 'delete' }] } }],
  ] as Array<[string, ScriptedReply]>)(
    'plans with the rules alone after %s, and says so',
    async (_case, reply) => {
      const planner = await plannerFor(provider, [reply]);
      const input = plannerInput();
      const result = await planner.plan(input);
      expect(result.plan.operations).toEqual(planEmbedded(input));
      expect(result.warnings?.map((warning) => warning.code)).toEqual(['llm-hints-failed']);
      expect(result.warnings?.[0]?.message).toMatch(/planned without hints$/);
    },
  );
});

describe('createHintedPlanner without a band', () => {
  it('makes no call when the rules settle every object', async () => {
    const planner = await plannerFor('openai', []);
    const input = plannerInput();
    const settled = { ...input, protectFrom: 2 };
    expect(hintCandidates(settled, 40)).toEqual([]);
    const result = await planner.plan(settled);
    expect(upstream!.requests).toHaveLength(0);
    expect(result.plan.operations).toEqual(planEmbedded(settled));
  });
});
