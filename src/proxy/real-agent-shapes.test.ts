/**
 * The shapes real agents send, governed through the proxy: Claude Code's documents, server tool
 * blocks and mid-conversation system messages, Codex's custom and local shell tools with its
 * compaction and web search items, Chat audio and file parts. Each long enough that the governor
 * must commit; what goes upstream must stay a request the provider takes, and Anthropic's
 * cache breakpoints never outnumber the client's.
 */
import { readFileSync } from 'node:fs';
import { afterEach, describe, expect, it } from 'vitest';
import { toolSearchRound } from '../adapters/anthropic/testing/tool-search-round.js';
import { countBreakpoints, MAX_CACHE_BREAKPOINTS } from '../adapters/index.js';
import {
  anthropicConversation,
  chatConversation,
  fileContent,
  responsesConversation,
} from './testing/agent-conversation.js';
import { sampleSum } from './testing/parse-prometheus.js';
import { type ProxyFixture, startProxyFixture } from './testing/proxy-fixture.js';
import { pointerKeys } from './testing/recovery-pointers.js';
import { EXPAND_TOOL } from './transparent-recovery.js';

let fixture: ProxyFixture | undefined;
afterEach(async () => {
  await fixture?.close();
  fixture = undefined;
});

type Json = Record<string, unknown>;
type Block = Json & { type: string };

function adapterFixture(path: string): Json {
  return JSON.parse(readFileSync(new URL(`../adapters/${path}`, import.meta.url), 'utf8')) as Json;
}

const cache = { type: 'ephemeral' };

/** Read-file rounds in Anthropic's shape, as `anthropicConversation` makes them, minus its task. */
function anthropicRounds(turns: number, from: number): Json[] {
  return anthropicConversation({ turns: from + turns }).slice(1 + 2 * from);
}

/**
 * A Claude Code session: the fixture's documents, server tools and mid-conversation system
 * message, then `turns` read_file rounds, the last user turn marked for the cache.
 */
function claudeCodeBody(turns: number): Json {
  const { system, messages } = adapterFixture('anthropic/fixtures/server-tools-documents.json') as {
    system: unknown;
    messages: Json[];
  };
  // The fixture's last assistant message ends its turn with a read_file call instead of text.
  const head = messages.slice(0, 5);
  const closing = messages[5] as { content: Block[] };
  const rounds = anthropicRounds(turns, 0);
  const [firstCall, ...rest] = rounds;
  const withCall = {
    role: 'assistant',
    content: [...closing.content.slice(0, -1), ...(firstCall!.content as Block[])],
  };
  const last = rest.at(-1) as { content: Block[] };
  const marked = {
    role: 'user',
    content: [...last.content, { type: 'text', text: 'Keep going.', cache_control: cache }],
  };
  return {
    model: 'claude-opus-4-8',
    max_tokens: 1024,
    system,
    messages: [...head, withCall, ...rest.slice(0, -1), marked],
  };
}

/** Every Anthropic rule a governed request must keep: results answer the calls just before them, server blocks in pairs. */
function anthropicProblems(messages: readonly Json[]): string[] {
  const problems: string[] = [];
  messages.forEach((message, index) => {
    const content = Array.isArray(message.content) ? (message.content as Block[]) : [];
    if (message.role === 'system' && index === 0) problems.push('system message first');
    if (message.role === 'system' && messages[index - 1]?.role !== 'user')
      problems.push(`system message after ${String(messages[index - 1]?.role)}`);
    if (message.role === 'assistant') {
      const isServerResult = (block: Block) =>
        block.type.endsWith('_tool_result') && block.type !== 'tool_result';
      const uses = new Set(
        content.filter((block) => /^(server|mcp)_tool_use$/.test(block.type)).map((block) => block.id),
      );
      const results = new Set(content.filter(isServerResult).map((block) => block.tool_use_id));
      for (const id of results) if (!uses.has(id)) problems.push(`server result without its use at ${index}`);
      for (const id of uses) if (!results.has(id)) problems.push(`server use without its result at ${index}`);
      const answered = new Set(
        (messages[index + 1]?.role === 'user' && Array.isArray(messages[index + 1]!.content)
          ? (messages[index + 1]!.content as Block[])
          : []
        )
          .filter((block) => block.type === 'tool_result')
          .map((block) => block.tool_use_id),
      );
      const last = index === messages.length - 1;
      for (const block of content) {
        if (block.type === 'tool_use' && !answered.has(block.id) && !last)
          problems.push(`call ${String(block.id)} unanswered at ${index}`);
      }
    }
    if (message.role === 'user') {
      const previous = messages[index - 1];
      const calls = new Set(
        (Array.isArray(previous?.content) ? (previous.content as Block[]) : [])
          .filter((block) => block.type === 'tool_use')
          .map((block) => block.id),
      );
      for (const block of content) {
        if (block.type === 'tool_result' && !calls.has(block.tool_use_id))
          problems.push(`orphan result at ${index}`);
      }
    }
  });
  return problems;
}

function breakpoints(body: Json): number {
  return countBreakpoints(body.tools) + countBreakpoints(body.system) + countBreakpoints(body.messages);
}

describe('Claude Code through the proxy', () => {
  it('a governed request keeps documents, server tool pairs and the mid-conversation system message valid', async () => {
    fixture = await startProxyFixture({ script: () => ({ text: 'Reading on.' }) });
    const body = claudeCodeBody(8);
    expect(anthropicProblems(body.messages as Json[])).toEqual([]);
    const response = await fixture.post('messages', body);
    expect(response.status).toBe(200);
    expect(response.headers.get('x-selfgc-governance')).not.toBe('passthrough');
    expect(response.headers.get('x-selfgc-commit')).toBeTruthy();
    const sent = fixture.upstream.requests[0]!.body as Json;
    const messages = sent.messages as Json[];
    expect(anthropicProblems(messages)).toEqual([]);
    // Old outputs left the view (folded or pruned, whatever the planner chose); the task with its
    // document and the system message are pinned, so they are there as they came, and whatever
    // server blocks stayed are whole pairs (checked above).
    expect(JSON.stringify(messages)).not.toContain(JSON.stringify(fileContent(0)).slice(1, -1));
    const raw = fixture.upstream.requests[0]!.rawBody;
    const task = (body.messages as Array<{ content: Block[] }>)[0]!.content;
    for (const block of task) expect(raw).toContain(JSON.stringify(block));
    expect(raw).toContain('{"role":"system","content":"Auto-approve mode is now enabled for file reads."}');
    expect(breakpoints(sent)).toBeLessThanOrEqual(breakpoints(body));
  });

  // A small window, where the governor folds every other turn, and a large one, where it keeps the
  // session's earlier messages as it first read them, marks of earlier requests included.
  it.each([
    [2000, 'folds'],
    [200_000, 'keeps'],
  ])(
    'a client that marks its last two user turns never has more breakpoints upstream than it sent (window %i: %s)',
    async (window) => {
      fixture = await startProxyFixture({ script: () => ({ text: 'Reading on.' }), window });
      let committed = 0;
      for (let turns = 4; turns <= 14; turns += 1) {
        const messages = anthropicConversation({ turns }) as Array<{ role: string; content: unknown }>;
        // Claude Code's layout: the system prompt and the last two user turns marked.
        const userTurns = messages
          .flatMap((message, index) => (message.role === 'user' ? [index] : []))
          .slice(-2);
        const marked = messages.map((message, index) => {
          if (!userTurns.includes(index) || !Array.isArray(message.content)) return message;
          const content = message.content as Block[];
          return {
            ...message,
            content: [...content.slice(0, -1), { ...content.at(-1)!, cache_control: cache }],
          };
        });
        const body = {
          model: 'claude-sonnet-4-5',
          max_tokens: 1024,
          system: [{ type: 'text', text: 'You are a careful coding agent.', cache_control: cache }],
          messages: marked,
        };
        const response = await fixture.post('messages', body);
        expect(response.status).toBe(200);
        if (response.headers.get('x-selfgc-commit')) committed += 1;
        const sent = fixture.upstream.requests.at(-1)!.body as Json;
        expect(breakpoints(body)).toBe(3);
        expect(breakpoints(sent)).toBeLessThanOrEqual(3);
        expect(breakpoints(sent)).toBeLessThanOrEqual(MAX_CACHE_BREAKPOINTS);
        expect(anthropicProblems(sent.messages as Json[])).toEqual([]);
      }
      if (window === 2000) expect(committed).toBeGreaterThan(0);
    },
  );
});

/**
 * An interactive Claude Code session: each turn's prompt is plain text, sent as a marked block
 * while it is the last message and as a string once the mark moved on to the turn's tool result.
 */
function interactiveTurns(turns: number): Json[][] {
  const bodies: Json[][] = [];
  const history: Json[] = [];
  for (let turn = 0; turn < turns; turn += 1) {
    const prompt = `Now read src/module${turn}.ts and say what it exports.`;
    bodies.push([
      ...history,
      { role: 'user', content: [{ type: 'text', text: prompt, cache_control: cache }] },
    ]);
    const id = `toolu_${turn}`;
    const call = {
      role: 'assistant',
      content: [{ type: 'tool_use', id, name: 'read_file', input: { turn } }],
    };
    const result = { type: 'tool_result', tool_use_id: id, content: fileContent(turn) };
    bodies.push([
      ...history,
      { role: 'user', content: prompt },
      call,
      { role: 'user', content: [{ ...result, cache_control: cache }] },
    ]);
    history.push({ role: 'user', content: prompt }, call, { role: 'user', content: [result] });
    history.push({ role: 'assistant', content: [{ type: 'text', text: `Module ${turn} exports values.` }] });
  }
  return bodies;
}

describe('Claude Code, interactive, through the proxy', () => {
  it('a prompt sent as a marked block, then as a string, is the same message: nothing diverges', async () => {
    fixture = await startProxyFixture({ script: () => ({ text: 'Reading on.' }), window: 3_000 });
    for (const messages of interactiveTurns(8)) {
      const body = {
        model: 'claude-sonnet-4-5',
        max_tokens: 512,
        system: 'You are a coding agent.',
        messages,
      };
      const response = await fixture.post('messages', body);
      expect(response.status).toBe(200);
      await response.text();
    }
    // The governor committed, so there was stored state a divergence would have dropped.
    expect(fixture.logs.some((entry) => entry.commit !== undefined)).toBe(true);
    expect(fixture.logs.filter((entry) => entry.divergedAt !== undefined)).toEqual([]);
    const samples = await fixture.metrics();
    expect(sampleSum(samples, 'selfgc_proxy_divergences_total', { arm: 'governed' })).toBe(0);
  });
});

describe("Claude Code's deferred tools through the proxy", () => {
  it('a tool its tool search loaded stays loaded when governance folds the search result away', async () => {
    fixture = await startProxyFixture({ script: () => ({ text: 'Reading on.' }), window: 8_000 });
    const schema = { type: 'object', properties: { taskId: { type: 'string' } } };
    const tools = [
      { name: 'read_file', input_schema: { type: 'object', properties: { path: { type: 'string' } } } },
      { name: 'ToolSearch', input_schema: { type: 'object', properties: { query: { type: 'string' } } } },
      { name: 'TaskUpdate', description: 'Update a task.', input_schema: schema, defer_loading: true },
      { name: 'TaskList', description: 'List the tasks.', input_schema: schema, defer_loading: true },
    ];
    // Early in the session, as Claude Code does: load the task tools, then work.
    const search = toolSearchRound('toolu_search', ['TaskUpdate']);
    const [task, ...rounds] = anthropicConversation({ turns: 24 });
    const body = (messages: unknown[]) => ({
      model: 'claude-sonnet-4-5',
      max_tokens: 512,
      system: 'You are a coding agent.',
      tools,
      messages: [task, ...search, ...messages],
    });
    // While the reference stands in the view, the tool stays deferred as the client listed it.
    const small = await fixture.post('messages', body(rounds.slice(0, 2)));
    expect(small.status).toBe(200);
    expect((fixture.upstream.requests[0]!.body as { tools: unknown }).tools).toEqual(tools);
    const response = await fixture.post('messages', body(rounds));
    expect(response.status).toBe(200);
    expect(response.headers.get('x-selfgc-commit')).toBeTruthy();
    const sent = fixture.upstream.requests[1]!.body as { tools: Json[]; messages: Json[] };
    expect(JSON.stringify(sent.messages)).not.toContain('tool_reference');
    // The reference is gone: the tool it loaded is sent loaded; the one it never loaded is not.
    expect(
      sent.tools.filter((tool) => tool.name !== EXPAND_TOOL && tool.name !== 'selfgc_search_context'),
    ).toEqual([
      tools[0],
      tools[1],
      { name: 'TaskUpdate', description: 'Update a task.', input_schema: schema },
      tools[3],
    ]);
  });
});

describe("Claude Code's effort directives through the proxy", () => {
  it('each stays where the client put it, the latest last, however far the work folds', async () => {
    fixture = await startProxyFixture({ script: () => ({ text: 'Reading on.' }), window: 8_000 });
    const directive = (effort: string) => ({ role: 'system', content: [], output_config: { effort } });
    const rounds = anthropicConversation({ turns: 24 });
    // After a result, before the next assistant turn: low, then high, then max.
    const messages = [
      ...rounds.slice(0, 7),
      directive('low'),
      ...rounds.slice(7, 21),
      directive('high'),
      ...rounds.slice(21, 41),
      directive('max'),
      ...rounds.slice(41),
    ];
    const response = await fixture.post('messages', {
      model: 'claude-sonnet-4-5',
      max_tokens: 512,
      system: 'You are a coding agent.',
      messages,
    });
    expect(response.status).toBe(200);
    expect(response.headers.get('x-selfgc-commit')).toBeTruthy();
    const sent = (fixture.upstream.requests[0]!.body as { messages: Json[] }).messages;
    expect(JSON.stringify(sent)).not.toContain(JSON.stringify(fileContent(1)).slice(1, -1));
    // As sent: no text put into them (a directive holds none), none dropped, in their order.
    expect(sent.filter((message) => message.role === 'system')).toEqual([
      directive('low'),
      directive('high'),
      directive('max'),
    ]);
  });
});

describe('Codex through the proxy', () => {
  it('custom and local shell calls stay answered, compaction, web search and files stay in place', async () => {
    // Earlier work of almost twice the window, and room to spare for Codex's own turn: the
    // reduction folds the earlier work and has no need to reach the turn at any window from
    // 8,000 to 16,000 tokens (a window just under the request would make what it keeps of the
    // turn hang on a few tokens of index).
    fixture = await startProxyFixture({ script: () => ({ text: 'Reading on.' }), window: 12_000 });
    const codex = (adapterFixture('openai-responses/fixtures/codex-tools.json') as { input: Json[] }).input;
    // A task with read_file rounds long enough to fold, then a turn of Codex's own items, after
    // its own first messages. Only the final answer is the latest turn; the rest of that turn may
    // be reduced like any earlier work, so the room above is what keeps it.
    const rounds = responsesConversation({ turns: 30 });
    const input = [...codex.slice(0, 1), ...rounds, ...codex.slice(1, -1)];
    const body = { model: 'gpt-5-codex', instructions: 'You are Codex.', input, store: false };
    const response = await fixture.post('responses', body);
    expect(response.status).toBe(200);
    expect(response.headers.get('x-selfgc-commit')).toBeTruthy();
    const sent = (fixture.upstream.requests[0]!.body as { input: Json[] }).input;
    const calls = new Map<string, number>();
    const outputs = new Map<string, number>();
    sent.forEach((item, index) => {
      if (['function_call', 'custom_tool_call', 'local_shell_call'].includes(String(item.type)))
        calls.set(String(item.call_id), index);
      if (['function_call_output', 'custom_tool_call_output'].includes(String(item.type)))
        outputs.set(String(item.call_id), index);
      if (item.type === 'local_shell_call_output') outputs.set(String(item.id), index);
    });
    expect(calls.size).toBeGreaterThan(0);
    for (const [id, index] of calls) expect(outputs.get(id), id).toBeGreaterThan(index);
    for (const [id, index] of outputs) expect(calls.get(id), id).toBeLessThan(index);
    const raw = fixture.upstream.requests[0]!.rawBody;
    expect(raw).not.toContain(JSON.stringify(fileContent(0)).slice(1, -1));
    // Whatever the planner folded (a rescue may fold work of the latest turn too), an item is
    // either there whole, as Codex sent it, or gone whole.
    let kept = 0;
    for (const item of codex.slice(2, -1)) {
      const marker = String(item.call_id ?? item.id ?? item.encrypted_content ?? '');
      if (marker === '' || !raw.includes(marker)) continue;
      expect(raw).toContain(JSON.stringify(item));
      kept += 1;
    }
    expect(kept).toBeGreaterThan(0);
  });

  it('its compacted history and a change of effort stay in place whatever the work around them becomes', async () => {
    fixture = await startProxyFixture({ script: () => ({ text: 'Reading on.' }), window: 8_000 });
    // After a remote compaction Codex sends the kept user messages, then the encrypted summary of
    // everything before; a change of reasoning effort is an item where it was made.
    const compaction = { type: 'compaction', encrypted_content: 'gAAAAABsummary-of-the-first-hour==' };
    const effort = { type: 'configuration_update', reasoning: { effort: 'low' } };
    const [task, ...rounds] = responsesConversation({ turns: 24 });
    const input = [task!, compaction, ...rounds.slice(0, 20), effort, ...rounds.slice(20)];
    const response = await fixture.post('responses', {
      model: 'gpt-5-codex',
      instructions: 'You are Codex.',
      input,
      store: false,
      include: ['reasoning.encrypted_content'],
    });
    expect(response.status).toBe(200);
    expect(response.headers.get('x-selfgc-commit')).toBeTruthy();
    const sent = (fixture.upstream.requests[0]!.body as { input: Json[] }).input;
    // The work folded all around them; they went up as Codex sent them, in their order.
    expect(JSON.stringify(sent)).not.toContain(JSON.stringify(fileContent(1)).slice(1, -1));
    const compactionAt = sent.findIndex((item) => item.type === 'compaction');
    const effortAt = sent.findIndex((item) => item.type === 'configuration_update');
    expect(sent[compactionAt]).toEqual(compaction);
    expect(sent[effortAt]).toEqual(effort);
    expect(compactionAt).toBeLessThan(effortAt);
  });
});

/** The prompt Codex CLI sends when it compacts its own history, as a user message after the latest outputs. */
const CODEX_COMPACTION_PROMPT =
  'You are performing a CONTEXT CHECKPOINT COMPACTION. Create a handoff summary for another LLM that will resume the task.';

describe('a client compacting its own history through the proxy', () => {
  it.each(['responses', 'messages'] as const)(
    '%s: the outputs the compaction prompt follows go upstream as the client sent them',
    async (route) => {
      // Codex and Claude Code ask for their summary right after the latest tool results, before
      // the model has answered them: the summary must be written from those results as they are.
      fixture = await startProxyFixture({ script: () => ({ text: 'Summary.' }), window: 12_000 });
      const body =
        route === 'responses'
          ? {
              model: 'gpt-5-codex',
              instructions: 'You are Codex.',
              input: [
                ...responsesConversation({ turns: 30 }),
                {
                  type: 'message',
                  role: 'user',
                  content: [{ type: 'input_text', text: CODEX_COMPACTION_PROMPT }],
                },
              ],
            }
          : {
              model: 'claude-opus-4-8',
              max_tokens: 1024,
              system: 'You are Claude Code.',
              // Claude Code puts its prompt into the message of the results, after them.
              messages: anthropicConversation({ turns: 30 }).map((message, index, all) =>
                index === all.length - 1
                  ? {
                      ...message,
                      content: [
                        ...(message.content as Block[]),
                        {
                          type: 'text',
                          text: 'Summarize this conversation for a model that will resume it.',
                        },
                      ],
                    }
                  : message,
              ),
            };
      const response = await fixture.post(route, body);
      expect(response.status).toBe(200);
      expect(response.headers.get('x-selfgc-commit')).toBeTruthy();
      const raw = fixture.upstream.requests[0]!.rawBody;
      // The earlier work was folded; the last read is there whole.
      expect(raw).not.toContain(JSON.stringify(fileContent(0)).slice(1, -1));
      expect(raw).toContain(JSON.stringify(fileContent(29)).slice(1, -1));
    },
  );
});

/**
 * Claude Code's first request after `/compact`: the summary, then the files it read last,
 * re-attached as reminders in two user messages (the first call alone, then each result with the
 * next call), and the user's question last. The attached files are outputs: when that latest turn
 * alone is over the window they fold, recoverably, and the question goes up as the user wrote it.
 */
describe('Claude Code after a compaction, through the proxy', () => {
  const reminder = (body: string) => `<system-reminder>\n${body}\n</system-reminder>\n`;
  const called = (turn: number) =>
    reminder(`Called the Read tool with the following input: {"file_path":"/p/src/module${turn}.ts"}`);
  const attached = (turn: number) => reminder(`Result of calling the Read tool:\n${fileContent(turn, 160)}`);
  const question = 'Which value does module 2 compute on line 90? Answer with its name.';

  it('folds the files it re-attached when they alone are over the window, and the model can expand them', async () => {
    let expanded = false;
    fixture = await startProxyFixture({
      window: 6_000,
      script: (request) => {
        const key = pointerKeys(request.rawBody).find((pointer) => pointer.startsWith('function:Read:'));
        if (expanded || key === undefined) return { text: 'value2_90' };
        expanded = true;
        return { toolCalls: [{ name: EXPAND_TOOL, arguments: { id: key } }] };
      },
    });
    const body = {
      model: 'claude-opus-4-8',
      max_tokens: 1024,
      system: 'You are Claude Code.',
      messages: [
        {
          role: 'user',
          content:
            'This session is being continued from a previous conversation. Summary: modules 1 to 3 read.',
        },
        { role: 'assistant', content: [{ type: 'text', text: 'Read them all.' }] },
        { role: 'user', content: called(1) },
        {
          role: 'user',
          content: [
            { type: 'text', text: attached(1) },
            { type: 'text', text: called(2) },
            { type: 'text', text: attached(2) },
            { type: 'text', text: called(3) },
            { type: 'text', text: attached(3) },
            { type: 'text', text: question },
          ],
        },
      ],
    };
    const response = await fixture.post('messages', body);
    expect(response.status).toBe(200);
    expect(await response.text()).toContain('value2_90');
    expect(fixture.logs[0]?.warnings ?? []).toContain('latest-turn-folded');
    expect(fixture.logs[0]?.warnings ?? []).not.toContain('over-window');
    const [first, second] = fixture.upstream.requests;
    const sent = JSON.parse(first!.rawBody) as { messages: Array<{ content: unknown }> };
    const latest = sent.messages.at(-1)!.content as Block[];
    expect(latest.at(-1)).toEqual({ type: 'text', text: question });
    // Files folded to fit; the model asked for one back, and got it byte for byte.
    const folded = [1, 2, 3].filter(
      (turn) => !first!.rawBody.includes(JSON.stringify(attached(turn)).slice(1, -1)),
    );
    expect(folded.length).toBeGreaterThan(0);
    // (Its first page: the recovery pages what does not fit the room.)
    const page = fileContent(folded[0]!, 160).slice(0, 2_000);
    expect(second!.rawBody).toContain(JSON.stringify(page).slice(1, -1));
  });
});

/**
 * Claude Code adds its own reminders beside a step's results, in the same user message (a nudge
 * to use its task tools, a file the user changed). They are the harness's, not the user's: the
 * task stays one request whose work folds as a whole, never a run of requests each "done".
 */
describe("Claude Code's reminders beside a step's results, through the proxy", () => {
  const reminder = (turn: number) =>
    `<system-reminder>\nThe task tools haven't been used recently (step ${turn}).\n</system-reminder>`;
  const session = (turns: number): Json[] =>
    anthropicConversation({ turns }).map((message, index) =>
      index > 0 && message.role === 'user'
        ? {
            ...message,
            content: [...(message.content as Block[]), { type: 'text', text: reminder((index - 2) / 2) }],
          }
        : message,
    );

  it('keeps them in the message of the results they came with, and folds no request made of one', async () => {
    fixture = await startProxyFixture({ window: 4_000, script: () => ({ text: 'Reading on.' }) });
    const offered = new Set<string>();
    for (let turns = 1; turns <= 24; turns += 1) {
      const body = {
        model: 'claude-opus-4-8',
        max_tokens: 1024,
        system: 'You are Claude Code.',
        messages: session(turns),
      };
      const response = await fixture.post('messages', body);
      expect(response.status).toBe(200);
      const raw = fixture.upstream.requests.at(-1)!.rawBody;
      for (const key of pointerKeys(raw)) offered.add(key);
      const sent = JSON.parse(raw) as { messages: Array<{ role: string; content: Block[] | string }> };
      sent.messages.forEach((message, index) => {
        const before = sent.messages[index - 1]?.content;
        const called = Array.isArray(before) ? before.filter((block) => block.type === 'tool_use').length : 0;
        if (called === 0) return;
        // The results first, as many as the calls, then whatever stands beside them.
        const blocks = message.content as Block[];
        expect(blocks.slice(0, called).map((block) => block.type)).toEqual(Array(called).fill('tool_result'));
        expect(blocks.slice(called).every((block) => block.type === 'text')).toBe(true);
      });
      // The latest step's reminder goes up as Claude Code wrote it, after its result.
      const latest = sent.messages.at(-1)!.content as Block[];
      expect(latest.at(-1)).toEqual({ type: 'text', text: reminder(turns - 1) });
    }
    expect(fixture.logs.some((entry) => entry.commit !== undefined)).toBe(true);
    // The work folded under the task's own keys (`conversation:user:1@N`), none of a reminder's.
    const requests = [...offered].filter((key) => key.startsWith('conversation:'));
    expect(requests.length).toBeGreaterThan(0);
    expect(requests.filter((key) => !/^conversation:user:1(?!\d)/.test(key))).toEqual([]);
  });
});

/**
 * opencode on a Chat provider that takes no image in a tool result: the result, then a user
 * message with its words for them and the images, and Cline's environment details after a step.
 * Both are outputs of the step, so the task stays one request.
 */
describe("a tool's images and a client's report after a step's results, through the proxy", () => {
  const pixel =
    'data:image/png;base64,iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mNk+M9QDwADhgGAWjR9awAAAABJRU5ErkJggg==';
  const environment = (turn: number) =>
    `<environment_details>\n# Current Time\n2026-12-07T10:${String(10 + turn)}:00Z\n</environment_details>`;
  const session = (turns: number): Json[] =>
    chatConversation({ turns }).flatMap((message, index) => {
      if (message.role !== 'tool') return [message];
      const turn = (index - 3) / 2;
      const images = {
        role: 'user',
        content: [
          { type: 'text', text: 'Attached image(s) from tool result:' },
          { type: 'image_url', image_url: { url: pixel } },
        ],
      };
      return [message, turn % 3 === 0 ? images : { role: 'user', content: environment(turn) }];
    });

  it('folds the task as one request, never a run of requests each made of images or a report', async () => {
    fixture = await startProxyFixture({ window: 4_000, script: () => ({ text: 'Reading on.' }) });
    const offered = new Set<string>();
    for (let turns = 1; turns <= 24; turns += 1) {
      const response = await fixture.post('chat', { model: 'gpt-4o', messages: session(turns) });
      expect(response.status).toBe(200);
      const raw = fixture.upstream.requests.at(-1)!.rawBody;
      for (const key of pointerKeys(raw)) offered.add(key);
      // The latest step goes up as the client sent it: its call, its result, what came after it.
      const sent = (JSON.parse(raw) as { messages: Json[] }).messages;
      expect(sent.slice(-3)).toEqual(session(turns).slice(-3));
    }
    expect(fixture.logs.some((entry) => entry.commit !== undefined)).toBe(true);
    const requests = [...offered].filter((key) => key.startsWith('conversation:'));
    expect(requests.length).toBeGreaterThan(0);
    expect(requests.filter((key) => !/^conversation:user:1(?!\d)/.test(key))).toEqual([]);
  });
});

describe('Chat audio and file parts through the proxy', () => {
  it('stay in the user turn they came in', async () => {
    fixture = await startProxyFixture({ script: () => ({ text: 'Reading on.' }) });
    const { messages } = adapterFixture('openai-chat/fixtures/audio-file-parts.json') as { messages: Json[] };
    const body = { model: 'gpt-4o-audio-preview', messages };
    const response = await fixture.post('chat', body);
    expect(response.status).toBe(200);
    expect(response.headers.get('x-selfgc-governance')).not.toBe('passthrough');
    const sent = fixture.upstream.requests[0]!.body as { messages: Json[] };
    expect(sent.messages).toEqual(messages);
  });
});
