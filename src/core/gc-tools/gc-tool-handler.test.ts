import { describe, expect, it } from 'vitest';
import { createMemoryStore } from '../../stores/memory-store.js';
import { createGovernor } from '../governor/create-governor.js';
import type { AgentPlanResult } from '../governor/governor-types.js';
import type { Plan } from '../operations.js';
import { moduleListing, threeRequestSession } from '../testing/sample-session.js';
import { assistantCalls, toolCall } from '../testing/transcript-builders.js';
import { type Message, messageText } from '../transcript.js';
import { createGcToolHandler, type GcToolDependencies } from './gc-tool-handler.js';

/**
 * threeRequestSession ids: function:read_file:1, bash:2, edit_file:3, bash:4, bash:5 (`ls -R src`,
 * message 13), read_file:6, read_file:7 (message 19); conversation:user:1 (pinned), :2, :3.
 * The agent's fold call is appended as message 20, so the latest turn is that call alone.
 */
function agentSession(): Message[] {
  return [...threeRequestSession(), assistantCalls([toolCall('call_9', 'fold', { id: 'function:bash:5' })])];
}

function governedHandler(messages: Message[]) {
  const store = createMemoryStore();
  // No milestone runs: `project` here only shows what the agent's own commits did.
  const governor = createGovernor({
    provider: 'openai',
    window: 100_000,
    store,
    now: () => 1_000,
    triggers: { milestones: false },
  });
  const handler = createGcToolHandler({
    commitAgentPlan: (sessionId, plan) => governor.applyAgentPlan(sessionId, messages, plan),
    expand: (sessionId, id) => governor.expand(sessionId, id),
    searchContext: (sessionId, query, limit) => governor.searchContext(sessionId, query, limit),
  });
  return { handler, governor, store };
}

const call = (name: string, args: unknown) => ({
  name,
  arguments: typeof args === 'string' ? args : JSON.stringify(args),
});

describe('createGcToolHandler with a governor', () => {
  it('folds an object through the harness, and expand recovers it byte for byte', async () => {
    const messages = agentSession();
    const { handler, governor, store } = governedHandler(messages);
    const folded = await handler.handle(
      's1',
      call('fold', { id: 'function:bash:5', summary: '60 modules under src/modules' }),
    );
    expect(folded).toMatch(
      /^folded function:bash:5 \(\d+ → \d+ tokens, commit c1-\w+\); expand\("function:bash:5"\) recovers it\.$/,
    );

    const [commit] = await store.listCommits('s1');
    expect(commit).toMatchObject({
      planner: 'agent',
      trigger: 'request',
      operations: [{ objectId: 'function:bash:5', operation: 'fold' }],
    });
    const view = (await governor.project('s1', messages)).view;
    const listing = view.map(messageText).find((textValue) => textValue.includes('[folded function:bash:5'));
    expect(listing).toContain('60 modules under src/modules');
    expect(view.map(messageText).join('\n')).not.toContain('src/modules/m42.py');

    expect(await handler.handle('s1', call('expand', { id: 'function:bash:5' }))).toBe(moduleListing(60));
    const found = await handler.handle('s1', call('search_context', { query: 'm42.py', limit: 3 }));
    expect(found.split('\n')[0]).toBe('1 match for "m42.py" (expand(id) recovers one):');
    expect(found.split('\n')[1]).toMatch(/^function:bash:5: src\/modules\/m0\.py 1000 bytes/);
  });

  it('prunes with a tombstone and says the content is gone', async () => {
    const messages = agentSession();
    const { handler, governor } = governedHandler(messages);
    const pruned = await handler.handle(
      's1',
      call('prune', { id: 'function:bash:2', reason: 'the failure is fixed' }),
    );
    expect(pruned).toMatch(/^pruned function:bash:2 \(.*\); its content is no longer in your context\.$/);
    const view = (await governor.project('s1', messages)).view.map(messageText).join('\n');
    expect(view).toContain('[pruned function:bash:2: bash command=pytest tests/test_parser.py, failed');
  });

  it('refuses pinned objects, system prompts, the latest turn and unknown ids, committing nothing', async () => {
    const messages = agentSession();
    const { handler, store } = governedHandler(messages);
    expect(await handler.handle('s1', call('prune', { id: 'system:1' }))).toBe(
      'error: prune of system:1 refused (pinned): system:1 is pinned (system prompt)',
    );
    expect(await handler.handle('s1', call('fold', { id: 'conversation:user:1' }))).toBe(
      'error: fold of conversation:user:1 refused (pinned): conversation:user:1 is pinned (first user request (task goal))',
    );
    expect(await handler.handle('s1', call('fold', { id: 'conversation:user:3' }))).toBe(
      'error: fold of conversation:user:3 refused (latest-turn): conversation:user:3 belongs to the latest turn',
    );
    expect(await handler.handle('s1', call('fold', { id: 'function:bash:99' }))).toBe(
      'error: fold of function:bash:99 refused (unknown-object): no object function:bash:99 in this session',
    );
    expect(await store.listCommits('s1')).toEqual([]);
  });

  it('keeps tool results of the latest turn out of reach', async () => {
    // The transcript ends on read_file:7's result: that round is the latest turn.
    const { handler } = governedHandler(threeRequestSession());
    expect(await handler.handle('s1', call('prune', { id: 'function:read_file:7' }))).toBe(
      'error: prune of function:read_file:7 refused (latest-turn): function:read_file:7 belongs to the latest turn',
    );
  });

  it('answers expand of a live object and a search without matches with plain text', async () => {
    const { handler } = governedHandler(agentSession());
    expect(await handler.handle('s1', call('expand', { id: 'function:read_file:1' }))).toBe(
      'error: nothing stored for function:read_file:1: it is still in your context whole, or no such object exists.',
    );
    expect(await handler.handle('s1', call('search_context', { query: 'parse_line' }))).toBe(
      'no removed content matches "parse_line".',
    );
  });
});

describe('createGcToolHandler arguments and failures', () => {
  const plans: Plan[] = [];
  const committed: AgentPlanResult = {
    accepted: [
      {
        objectId: 'function:bash:5',
        operation: 'fold',
        tokensBefore: 1200,
        tokensAfter: 80,
        key: 'function:bash:5',
      },
    ],
    rejected: [],
    commit: {
      schemaVersion: 1,
      sessionId: 's1',
      commitId: 'c1-abc',
      sequence: 1,
      createdAt: 0,
      planner: 'agent',
      trigger: 'request',
      operations: [],
      tokensBefore: 5000,
      tokensAfter: 3880,
    },
    warnings: [],
  };
  const recording: GcToolDependencies = {
    commitAgentPlan: async (_sessionId, plan) => {
      plans.push(plan);
      return committed;
    },
    expand: async () => 'payload',
    searchContext: async () => [],
  };

  it('builds one agent plan per fold or prune, with the summary only on fold', async () => {
    plans.length = 0;
    const handler = createGcToolHandler(recording);
    expect(
      await handler.handle('s1', call('fold', { id: 'function:bash:5', summary: 'listing', extra: 1 })),
    ).toBe(
      'folded function:bash:5 (1.2k → 80 tokens, commit c1-abc); expand("function:bash:5") recovers it.',
    );
    await handler.handle('s1', call('prune', { id: 'function:bash:5', summary: 'ignored' }));
    expect(plans).toEqual([
      {
        planner: 'agent',
        operations: [
          {
            objectId: 'function:bash:5',
            operation: 'fold',
            reason: 'asked by the agent',
            summary: 'listing',
          },
        ],
      },
      {
        planner: 'agent',
        operations: [{ objectId: 'function:bash:5', operation: 'prune', reason: 'asked by the agent' }],
      },
    ]);
  });

  it('turns bad arguments into error results without calling the harness', async () => {
    plans.length = 0;
    const handler = createGcToolHandler(recording);
    expect(await handler.handle('s1', call('fold', '{"id": '))).toMatch(
      /^error: arguments of fold are not valid JSON \(/,
    );
    expect(await handler.handle('s1', call('fold', { id: 7 }))).toBe(
      'error: bad arguments for fold: id: Invalid input: expected string, received number',
    );
    expect(await handler.handle('s1', call('prune', ''))).toBe(
      'error: bad arguments for prune: id: Invalid input: expected string, received undefined',
    );
    expect(await handler.handle('s1', call('search_context', { query: 'x', limit: 0 }))).toBe(
      'error: bad arguments for search_context: limit: Too small: expected number to be >=1',
    );
    expect(await handler.handle('s1', call('expand', '[1]'))).toBe(
      'error: bad arguments for expand: arguments: Invalid input: expected object, received array',
    );
    expect(plans).toEqual([]);
  });

  it('routes only GC tools and reports other names as errors', async () => {
    const handler = createGcToolHandler(recording);
    expect(['fold', 'prune', 'expand', 'search_context', 'bash', 'toString'].map(handler.handles)).toEqual([
      true,
      true,
      true,
      true,
      false,
      false,
    ]);
    expect(await handler.handle('s1', call('bash', { command: 'ls' }))).toBe(
      'error: bash is not a GC tool (fold, prune, expand, search_context).',
    );
  });

  it('turns a failing harness or store into an error result, never a rejection', async () => {
    const handler = createGcToolHandler({
      commitAgentPlan: async () => ({
        accepted: [],
        rejected: [],
        warnings: [{ code: 'commit-conflict', message: 'another writer committed first; try again' }],
      }),
      expand: async () => {
        throw new Error('sqlite: database is locked');
      },
      searchContext: async () => {
        throw new Error('search index missing');
      },
    });
    expect(await handler.handle('s1', call('fold', { id: 'function:bash:5' }))).toBe(
      'error: fold of function:bash:5 was not committed: another writer committed first; try again',
    );
    expect(await handler.handle('s1', call('expand', { id: 'function:bash:5' }))).toBe(
      'error: expand failed: sqlite: database is locked',
    );
    expect(await handler.handle('s1', call('search_context', { query: 'x' }))).toBe(
      'error: search_context failed: search index missing',
    );
  });
});
