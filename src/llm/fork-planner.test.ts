/**
 * The fork planner against a scripted upstream speaking the real wire formats: its request is the
 * agent's own request (as the proxy and the integrations write the view) up to the planner
 * instruction, byte for byte, so that a provider serves it from the prompt cache.
 */
import { afterEach, describe, expect, it } from 'vitest';
import { fromAnthropicMessages, toAnthropicMessages, toOpenAIChat } from '../adapters/index.js';
import { alternatingLikeClient } from '../adapters/openai-chat/alternating-turns.js';
import { createPinRule } from '../core/governor/pins.js';
import { indexTranscript } from '../core/ledger.js';
import type { ViewState } from '../core/operations.js';
import { createEmbeddedPlanner } from '../core/planners/embedded-planner.js';
import type { PlannerInput } from '../core/planners/planner.js';
import { projectView } from '../core/project-view.js';
import { latestTurnStart, rehearsePlan } from '../core/rehearse-plan.js';
import { PARSER_SOURCE, threeRequestSession } from '../core/testing/sample-session.js';
import { assistantCalls, toolCall, toolMessage, toolResult } from '../core/testing/transcript-builders.js';
import { approximateTokenCounter } from '../core/tokens.js';
import type { Message } from '../core/transcript.js';
import type { ScriptedReply, ScriptedRequest } from '../testing/scripted-reply.js';
import { type ScriptedUpstream, startScriptedUpstream } from '../testing/scripted-upstream.js';
import { createLlmClient } from './llm-client.js';
import { createLlmPlanner, type LlmPlannerOptions } from './llm-planner.js';
import type { LlmProvider } from './llm-types.js';

let upstream: ScriptedUpstream | undefined;
afterEach(async () => {
  await upstream?.close();
  upstream = undefined;
});

async function forkPlanner(
  provider: LlmProvider,
  script: ScriptedReply[],
  options: Partial<LlmPlannerOptions> = {},
) {
  upstream = await startScriptedUpstream({ script });
  const client = createLlmClient({
    provider,
    baseUrl: provider === 'openai' ? `${upstream.url}/v1` : upstream.url,
    model: provider === 'openai' ? 'gpt-test' : 'claude-test',
    maxRetries: 0,
  });
  return { planner: createLlmPlanner({ client, ...options }), server: upstream };
}

function plannerInput(messages: readonly Message[], state: ViewState = {}, showIds = false): PlannerInput {
  const ledger = indexTranscript(messages, { tokenCounter: approximateTokenCounter, pin: createPinRule() });
  const viewTokens = projectView(ledger, state).tokens;
  return {
    ledger,
    state,
    protectFrom: latestTurnStart(ledger),
    viewTokens,
    targetTokens: Math.floor(viewTokens / 2),
    window: 4000,
    ...(showIds ? { showIds } : {}),
  };
}

/** The messages the agent's own request carries for this view, as the proxy writes them. */
function agentRequest(provider: LlmProvider, input: PlannerInput): { system?: unknown; messages: unknown[] } {
  const view = projectView(input.ledger, input.state, { showIds: input.showIds === true }).items.map(
    (item) => item.message,
  );
  if (provider !== 'openai') return toAnthropicMessages(view);
  const sent = toOpenAIChat([...input.ledger.messages]).messages;
  return { messages: alternatingLikeClient(toOpenAIChat(view).messages, sent) };
}

const INSTRUCTION = ',{"role":"user","content":"SELF-GC CONTEXT PLANNER.';

/** The raw bytes of the request's `messages` before the planner instruction, as a JSON array. */
function messagesBeforeInstruction(request: ScriptedRequest): string {
  const start = request.rawBody.indexOf('"messages":[') + '"messages":'.length;
  const end = request.rawBody.indexOf(INSTRUCTION);
  expect(start).toBeGreaterThan(0);
  expect(end).toBeGreaterThan(start);
  return `${request.rawBody.slice(start, end)}]`;
}

/** The planner instruction: the request's last message. */
function instructionOf(request: ScriptedRequest): string {
  const { messages } = request.body as { messages: Array<{ role: string; content: unknown }> };
  expect(messages.at(-1)?.role).toBe('user');
  return messages.at(-1)!.content as string;
}

/** threeRequestSession and one more step of its latest turn (read_file again), as the agent's next request holds it. */
function grownSession(): Message[] {
  return [
    ...threeRequestSession(),
    assistantCalls([toolCall('call_9', 'read_file', { path: 'src/parser.py' })]),
    toolMessage(toolResult('call_9', 'read_file', PARSER_SOURCE)),
  ];
}

const EMPTY_PLAN: ScriptedReply = { json: { operations: [] } };
const withoutBreakpoints = (raw: string) => raw.replaceAll(',"cache_control":{"type":"ephemeral"}', '');

describe('fork planner, OpenAI-compatible', () => {
  it("sends the agent's messages byte for byte, then the instruction; no system prompt of its own", async () => {
    const { planner, server } = await forkPlanner('openai', [EMPTY_PLAN]);
    const input = plannerInput(threeRequestSession());
    const result = await planner.plan(input);

    expect(result.plan).toEqual({ planner: 'llm', operations: [] });
    expect(result.warnings).toEqual([]);
    const request = server.requests[0]!;
    expect(messagesBeforeInstruction(request)).toBe(JSON.stringify(agentRequest('openai', input).messages));
    const { messages } = request.body as { messages: unknown[] };
    expect(messages).toHaveLength(agentRequest('openai', input).messages.length + 1);
    expect(request.body).toMatchObject({ response_format: { type: 'json_object' }, temperature: 0 });
    expect(request.body).not.toHaveProperty('tools');
  });

  it("sends a span fold joined to its request, as the proxy writes the agent's alternating turns", async () => {
    const { planner, server } = await forkPlanner('openai', [EMPTY_PLAN]);
    const base = plannerInput(threeRequestSession());
    const first = base.ledger.get('conversation:user:1')!;
    const fold = {
      objectId: first.id,
      operation: 'fold' as const,
      reason: 'done',
      spanEnd: first.span.end - 1,
    };
    const folded = rehearsePlan(
      base.ledger,
      {},
      { planner: 'test', operations: [fold] },
      {
        protectFrom: base.protectFrom,
      },
    );
    expect(folded.accepted.map((entry) => entry.operation.objectId)).toEqual([first.id]);
    const input = { ...base, state: folded.stateAfter };
    await planner.plan(input);
    const sent = JSON.parse(messagesBeforeInstruction(server.requests[0]!)) as Array<{ role: string }>;
    expect(sent).toEqual(agentRequest('openai', input).messages);
    expect(sent.some((message, index) => message.role === 'user' && sent[index - 1]?.role === 'user')).toBe(
      false,
    );
    expect(JSON.stringify(sent)).toContain('[folded conversation:user:1@');
  });

  it("a second planner call starts with the first one's bytes up to its instruction (a cache hit)", async () => {
    const { planner, server } = await forkPlanner('openai', [EMPTY_PLAN, EMPTY_PLAN]);
    await planner.plan(plannerInput(threeRequestSession()));
    await planner.plan(plannerInput(grownSession()));
    const [first, second] = server.requests;
    const shared = first!.rawBody.slice(0, first!.rawBody.indexOf(INSTRUCTION));
    expect(shared.length).toBeGreaterThan(1000);
    expect(second!.rawBody.startsWith(shared)).toBe(true);
  });

  it('forks the view the agent sees with ids shown, tags and headers included', async () => {
    const { planner, server } = await forkPlanner('openai', [EMPTY_PLAN]);
    const input = plannerInput(threeRequestSession(), {}, true);
    await planner.plan(input);
    const before = messagesBeforeInstruction(server.requests[0]!);
    expect(before).toBe(JSON.stringify(agentRequest('openai', input).messages));
    expect(before).toContain('[id: conversation:user:2]');
    expect(before).toContain('\\n[id: function:bash:5]');
  });

  it('passes the tool definitions it is given, before the messages', async () => {
    const tools = [{ type: 'function', function: { name: 'read_file', parameters: { type: 'object' } } }];
    const { planner, server } = await forkPlanner('openai', [EMPTY_PLAN], { tools });
    await planner.plan(plannerInput(threeRequestSession()));
    const raw = server.requests[0]!.rawBody;
    expect((server.requests[0]!.body as { tools: unknown }).tools).toEqual(tools);
    expect(raw.indexOf('"tools":')).toBeLessThan(raw.indexOf('"messages":'));
  });
});

describe('fork planner, Anthropic', () => {
  it("keeps the agent's system and messages and marks the end of its messages as the cache breakpoint", async () => {
    const { planner, server } = await forkPlanner('anthropic', [EMPTY_PLAN]);
    const input = plannerInput(threeRequestSession());
    await planner.plan(input);
    const request = server.requests[0]!;
    const agent = agentRequest('anthropic', input);
    const body = request.body as { system: unknown; messages: Array<{ content: unknown }>; tools: unknown };

    expect(body.system).toEqual(agent.system);
    // Everything before the agent's last block is its bytes; that block gets the breakpoint.
    const expected = structuredClone(agent.messages) as Array<{ content: Array<Record<string, unknown>> }>;
    expected.at(-1)!.content.at(-1)!.cache_control = { type: 'ephemeral' };
    expect(messagesBeforeInstruction(request)).toBe(JSON.stringify(expected));
    expect(withoutBreakpoints(messagesBeforeInstruction(request))).toBe(JSON.stringify(agent.messages));
    expect(request.rawBody.match(/cache_control/g)).toHaveLength(1);
    // The API refuses tool blocks without tool definitions: those the view calls, by name.
    expect(body.tools).toEqual(
      ['bash', 'edit_file', 'read_file'].map((name) => ({
        name,
        description: 'A tool the agent called in the conversation above.',
        input_schema: { type: 'object' },
      })),
    );
    // In the order the provider caches: tools, system, messages; no JSON line added to the system.
    const raw = request.rawBody;
    expect(raw.indexOf('"tools":')).toBeLessThan(raw.indexOf('"system":'));
    expect(raw.indexOf('"system":')).toBeLessThan(raw.indexOf('"messages":'));
    expect(JSON.stringify(body.system)).not.toContain('single JSON object');
  });

  it("is byte for byte the agent's request when the agent put its breakpoint at the end itself", async () => {
    // A Claude Code-like request: the client marks its last block.
    const wire = toAnthropicMessages(threeRequestSession());
    const last = wire.messages.at(-1) as { content: Array<Record<string, unknown>> };
    last.content.at(-1)!.cache_control = { type: 'ephemeral', ttl: '1h' };
    const messages = fromAnthropicMessages({
      ...(wire.system ? { system: wire.system } : {}),
      messages: wire.messages,
    }).messages;
    const { planner, server } = await forkPlanner('anthropic', [EMPTY_PLAN]);
    const input = plannerInput(messages);
    await planner.plan(input);
    const agent = agentRequest('anthropic', input);
    expect(JSON.stringify(agent.messages)).toContain('"cache_control":{"type":"ephemeral","ttl":"1h"}');
    expect(messagesBeforeInstruction(server.requests[0]!)).toBe(JSON.stringify(agent.messages));
  });

  it('turns a last string content into the text block it stands for, to hold the breakpoint', async () => {
    const request = 'Now add a --verbose flag to cli.py.';
    const wire = toAnthropicMessages(threeRequestSession().slice(0, 11));
    const messages = fromAnthropicMessages({
      ...(wire.system ? { system: wire.system } : {}),
      messages: [...wire.messages, { role: 'user', content: request }],
    }).messages;
    const { planner, server } = await forkPlanner('anthropic', [EMPTY_PLAN]);
    const input = plannerInput(messages);
    await planner.plan(input);
    const agent = agentRequest('anthropic', input).messages;
    expect(agent.at(-1)).toEqual({ role: 'user', content: request });
    const body = server.requests[0]!.body as { messages: unknown[] };
    expect(body.messages.slice(0, -2)).toEqual(agent.slice(0, -1));
    expect(body.messages.at(-2)).toEqual({
      role: 'user',
      content: [{ type: 'text', text: request, cache_control: { type: 'ephemeral' } }],
    });
  });

  it('keeps at most four breakpoints: its own and the latest of the agent’s', async () => {
    const wire = toAnthropicMessages(threeRequestSession());
    const marked = { type: 'ephemeral' as const };
    const system = [{ type: 'text' as const, text: String(wire.system), cache_control: marked }];
    for (const index of [1, 3, 5]) {
      const message = wire.messages[index] as { content: Array<Record<string, unknown>> };
      message.content.at(-1)!.cache_control = marked;
    }
    const messages = fromAnthropicMessages({ system, messages: wire.messages }).messages;
    const { planner, server } = await forkPlanner('anthropic', [EMPTY_PLAN]);
    await planner.plan(plannerInput(messages));
    const body = server.requests[0]!.body as { system: unknown; messages: Array<{ content: unknown }> };
    const holders = body.messages.flatMap((message, index) =>
      Array.isArray(message.content)
        ? message.content.flatMap((block: { cache_control?: unknown }) =>
            block.cache_control ? [index] : [],
          )
        : [],
    );
    expect(body.system).toEqual(system);
    expect(holders).toEqual([3, 5, body.messages.length - 2]);
  });

  it("a second planner call reads the first one's prefix: the same bytes but for where the breakpoint sits", async () => {
    const { planner, server } = await forkPlanner('anthropic', [EMPTY_PLAN, EMPTY_PLAN]);
    await planner.plan(plannerInput(threeRequestSession()));
    await planner.plan(plannerInput(grownSession()));
    const [first, second] = server.requests.map((request) => withoutBreakpoints(request.rawBody));
    const shared = first!.slice(0, first!.indexOf(INSTRUCTION));
    expect(shared.length).toBeGreaterThan(1000);
    expect(second!.startsWith(shared)).toBe(true);
    const body = server.requests[1]!.body as { messages: Array<{ content: Array<Record<string, unknown>> }> };
    expect(body.messages.at(-2)!.content.at(-1)).toMatchObject({
      type: 'tool_result',
      tool_use_id: 'call_9',
      cache_control: { type: 'ephemeral' },
    });
  });
});

describe.each(['openai', 'anthropic'] as const)('fork planner instruction and answer (%s)', (provider) => {
  it('appends the contract in order and the map of the objects the view shows', async () => {
    const state: ViewState = {
      'conversation:user:2': {
        operation: 'fold',
        replacement: '[folded conversation:user:2]',
        commitId: 'c1',
      },
    };
    const { planner, server } = await forkPlanner(provider, [EMPTY_PLAN]);
    await planner.plan(plannerInput(threeRequestSession(), state));
    const instruction = instructionOf(server.requests[0]!);
    expect(instruction).toMatch(
      /^SELF-GC CONTEXT PLANNER\.[\s\S]*1\. Exclusion\.[\s\S]*2\. Dependency\.[\s\S]*3\. Granularity\.[\s\S]*4\. Semantics\./,
    );
    expect(instruction).toContain('"above_conversation_summary"');
    const lines = instruction.split('\n');
    expect(lines.find((line) => line.startsWith('function:bash:2 |'))).toMatch(
      /^function:bash:2 \| result of call call_2 \(bash command=pytest tests\/test_parser\.py\) \| \d+ \| live \| 5 steps \| error$/,
    );
    expect(lines.find((line) => line.startsWith('conversation:user:2 |'))).toMatch(
      /^conversation:user:2 \| user request 2 "Now list the modules under src and summarise them\." and the work after it \| \d+ \| fold \|/,
    );
    // Outputs folded away with their request are not in the view, so not in the map.
    expect(instruction).not.toContain('function:bash:5');
    expect(lines).toContain(
      'protected, never operate on: system:1 (system), conversation:user:1 (pinned), conversation:user:3 (latest-turn), function:read_file:7 (latest-turn)',
    );
  });

  it('reads the plan: fold summaries, and the summary of a folded request into its fold', async () => {
    const answer = {
      operations: [
        {
          id: 'conversation:user:2',
          operation: 'fold',
          reason: 'finished request',
          above_conversation_summary:
            'the user asked for a summary of src/modules; 60 modules, cli.py wires build_parser',
          summary: 'ls -R src',
        },
        {
          id: 'function:bash:2',
          operation: 'fold',
          reason: 'fixed since',
          summary: 'ValueError in parse_line',
        },
      ],
    };
    const { planner } = await forkPlanner(provider, [{ json: answer }]);
    const input = plannerInput(threeRequestSession());
    const result = await planner.plan(input);
    expect(result.plan.operations).toEqual([
      {
        objectId: 'conversation:user:2',
        operation: 'fold',
        reason: 'finished request',
        summary:
          'the user asked for a summary of src/modules; 60 modules, cli.py wires build_parser ls -R src',
      },
      {
        objectId: 'function:bash:2',
        operation: 'fold',
        reason: 'fixed since',
        summary: 'ValueError in parse_line',
      },
    ]);
    const rehearsal = rehearsePlan(input.ledger, input.state, result.plan, {
      protectFrom: input.protectFrom,
    });
    expect(rehearsal.stateAfter['conversation:user:2']?.replacement).toContain(
      'the user asked for a summary of src/modules; 60 modules, cli.py wires build_parser',
    );
  });

  it('drops unknown ids and a second action on one object, with a warning', async () => {
    const { planner } = await forkPlanner(provider, [
      {
        json: {
          operations: [
            { id: 'function:grep:99', operation: 'prune', reason: 'x' },
            { id: 'function:bash:2', operation: 'prune', reason: 'fixed since' },
            { id: 'function:bash:2', operation: 'fold', reason: 'again' },
          ],
        },
      },
    ]);
    const result = await planner.plan(plannerInput(threeRequestSession()));
    expect(result.plan.operations).toEqual([
      { objectId: 'function:bash:2', operation: 'prune', reason: 'fixed since' },
    ]);
    expect(result.warnings).toEqual([
      {
        code: 'llm-plan-dropped',
        message:
          'dropped 2 operation(s) no planner may make: function:grep:99 (unknown id), function:bash:2 (listed twice)',
      },
    ]);
  });

  it('falls back to the embedded planner on an answer that is not JSON, or on a 500', async () => {
    const { planner } = await forkPlanner(provider, [
      { text: 'Sure! I will keep going with the task.' },
      { error: { status: 500, message: 'overloaded' } },
    ]);
    const input = plannerInput(threeRequestSession());
    const embedded = (await createEmbeddedPlanner().plan(input)).plan;
    for (const why of ['model answer holds no JSON object', 'answered 500']) {
      const result = await planner.plan(input);
      expect(result.plan).toEqual(embedded);
      expect(result.warnings?.[0]).toMatchObject({
        code: 'llm-planner-fallback',
        message: expect.stringContaining(why),
      });
    }
  });
});
