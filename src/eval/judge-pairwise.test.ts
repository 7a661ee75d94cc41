import { afterEach, describe, expect, it } from 'vitest';
import { UpstreamError } from '../core/errors.js';
import { indexTranscript } from '../core/ledger.js';
import { projectView } from '../core/project-view.js';
import { rehearsePlan } from '../core/rehearse-plan.js';
import { sampleSession } from '../core/testing/sample-session.js';
import { assistantCalls, toolCall } from '../core/testing/transcript-builders.js';
import { approximateTokenCounter } from '../core/tokens.js';
import { createLlmClient } from '../llm/llm-client.js';
import type { LlmProvider } from '../llm/llm-types.js';
import type { ScriptedReply, ScriptedRequest } from '../testing/scripted-reply.js';
import { type ScriptedUpstream, startScriptedUpstream } from '../testing/scripted-upstream.js';
import { comparePairwise, type PairwiseInput, pairFlipped, readBack } from './judge-pairwise.js';
import {
  isGovernedStepRequest,
  isNextStepRequest,
  isPairRequest,
  userText,
} from './testing/scripted-judge.js';

let upstream: ScriptedUpstream | undefined;
afterEach(async () => {
  await upstream?.close();
  upstream = undefined;
});

async function client(provider: LlmProvider, script: (request: ScriptedRequest) => ScriptedReply) {
  upstream = await startScriptedUpstream({ script });
  return createLlmClient({
    provider,
    baseUrl: provider === 'openai' ? `${upstream.url}/v1` : upstream.url,
    model: 'judge',
    maxRetries: 0,
  });
}

/** sampleSession with the parser source folded; the agent really edited the parser next. */
function foldedCase(): PairwiseInput {
  const prefix = sampleSession();
  const ledger = indexTranscript(prefix, { tokenCounter: approximateTokenCounter });
  const { stateAfter } = rehearsePlan(
    ledger,
    {},
    {
      planner: 'test',
      operations: [{ objectId: 'function:read_file:1', operation: 'fold', reason: 'test' }],
    },
  );
  return {
    prefix,
    view: projectView(ledger, stateAfter).items.map((item) => item.message),
    continuation: [assistantCalls([toolCall('call_9', 'edit_file', { path: 'src/parser.py', old: 'a-z' })])],
  };
}

const FULL_STEP = 'edit_file(path="src/parser.py", old="[a-z]+", new="[A-Za-z]+")';
const GOVERNED_STEP = 'read_file(path="src/parser.py")';

/** Next steps by context; a judge that prefers the candidate which edits, or always slot A. */
function script(judge: 'content' | 'slot-a') {
  return (request: ScriptedRequest): ScriptedReply => {
    if (isNextStepRequest(request))
      return { text: isGovernedStepRequest(request) ? GOVERNED_STEP : FULL_STEP };
    if (!isPairRequest(request)) return { error: { status: 400, message: 'unexpected request' } };
    if (judge === 'slot-a') return { json: { better: 'A', reason: 'first one' } };
    const candidateA = userText(request).split('=== CANDIDATE A ===')[1]!.split('=== CANDIDATE B ===')[0]!;
    return { json: { better: candidateA.includes('edit_file') ? 'a' : 'B', reason: 'it edits' } };
  };
}

describe.each(['openai', 'anthropic'] as const)('comparePairwise (%s)', (provider) => {
  it('writes the next step from the prefix and from the view, and asks the judge in both orders', async () => {
    const result = await comparePairwise(await client(provider, script('content')), foldedCase());
    expect(result.steps).toEqual({ full: FULL_STEP, governed: GOVERNED_STEP });
    expect(result.slots).toEqual(['A', 'B']);
    expect(result.choices).toEqual(['full', 'full']);
    expect(pairFlipped(result.choices)).toBe(false);
    const requests = upstream!.requests;
    expect(requests.map((request) => (isNextStepRequest(request) ? 'step' : 'pair'))).toEqual([
      'step',
      'step',
      'pair',
      'pair',
    ]);
    // The first step reads the whole prefix, the second the view with its fold.
    expect(userText(requests[0]!)).toContain('def parse_file(path):');
    expect(userText(requests[1]!)).toContain('[folded function:read_file:1:');
    expect(userText(requests[1]!)).not.toContain('def parse_file(path):');
    // The judge sees the real continuation as the reference, and the candidates swapped.
    const first = userText(requests[2]!);
    const second = userText(requests[3]!);
    expect(first).toContain(
      '=== REFERENCE (what the agent really did next) ===\n\n[next 1] assistant:\n[call edit_file(',
    );
    expect(first).toContain(`=== CANDIDATE A ===\n\n${FULL_STEP}\n\n=== CANDIDATE B ===\n\n${GOVERNED_STEP}`);
    expect(second).toContain(
      `=== CANDIDATE A ===\n\n${GOVERNED_STEP}\n\n=== CANDIDATE B ===\n\n${FULL_STEP}`,
    );
    expect(result.cost.inputTokens).toBeGreaterThan(0);
  });

  it('reuses a full-prefix step already written: three calls', async () => {
    const full = { text: 'grep(pattern="TOKEN_PATTERN")', cost: { inputTokens: 1, outputTokens: 1 } };
    const result = await comparePairwise(await client(provider, script('content')), foldedCase(), {}, full);
    expect(result.steps).toEqual({ full: full.text, governed: GOVERNED_STEP });
    expect(upstream!.requests.map((request) => (isNextStepRequest(request) ? 'step' : 'pair'))).toEqual([
      'step',
      'pair',
      'pair',
    ]);
    expect(userText(upstream!.requests[0]!)).toContain('[folded function:read_file:1:');
    // Neither candidate edits, so the content judge prefers B both times: a flip.
    expect(result.choices).toEqual(['governed', 'full']);
  });

  it('shows a judge that always picks slot A as a flip', async () => {
    const result = await comparePairwise(await client(provider, script('slot-a')), foldedCase());
    expect(result.slots).toEqual(['A', 'A']);
    expect(result.choices).toEqual(['full', 'governed']);
    expect(pairFlipped(result.choices)).toBe(true);
  });

  it('throws an UpstreamError for an empty next step and for an answer off the format', async () => {
    const empty = await comparePairwise(await client(provider, () => ({ text: '  ' })), foldedCase()).catch(
      (error: unknown) => error,
    );
    expect(empty).toBeInstanceOf(UpstreamError);
    expect((empty as Error).message).toMatch(/wrote an empty next step/);
    await upstream?.close();
    const offFormat = await comparePairwise(
      await client(provider, (request) =>
        isNextStepRequest(request) ? { text: FULL_STEP } : { json: { better: 'both' } },
      ),
      foldedCase(),
    ).catch((error: unknown) => error);
    expect(offFormat).toBeInstanceOf(UpstreamError);
    expect((offFormat as Error).message).toMatch(/answered off-format: better: Invalid option/);
  });
});

describe('readBack and pairFlipped', () => {
  it('maps slots to the continuation they held in each order', () => {
    expect([readBack('A', 0), readBack('B', 0), readBack('tie', 0)]).toEqual(['full', 'governed', 'tie']);
    expect([readBack('A', 1), readBack('B', 1), readBack('tie', 1)]).toEqual(['governed', 'full', 'tie']);
  });

  it('counts any change of the read-back verdict as a flip, ties included', () => {
    expect(pairFlipped(['full', 'full'])).toBe(false);
    expect(pairFlipped(['tie', 'tie'])).toBe(false);
    expect(pairFlipped(['full', 'governed'])).toBe(true);
    expect(pairFlipped(['tie', 'governed'])).toBe(true);
  });
});
