/**
 * A bounded, seeded, model-based fuzz of the governed proxy over real HTTP, on all three routes,
 * with clients that behave like real agents: they append the answers they get and the outputs
 * of the tools those answers call (large, each carrying unique markers), stream or not, retry
 * (re-send the same history), clear old tool outputs in place (Claude Code's microcompaction),
 * rewind to an earlier prompt or cut back to an earlier turn and go on differently, swap in
 * another conversation under the same session id and headers, and run two conversations
 * interleaved or at once. The scripted model sometimes calls `selfgc_expand` with a key it was
 * shown, a stale key from another request, or a made-up one, and `selfgc_search_context` for
 * markers of any conversation.
 *
 * Checked on every step:
 *  1. no upstream request (recovery rounds included) carries a marker the client's current
 *     request does not (or that the model itself wrote earlier in the same request's rounds);
 *  2. the client's answer never shows the proxy's tools or their call ids, and is valid to send
 *     back (pairing, no empty content, thinking first and never last, streams per the grammar);
 *     every upstream request is one the provider would take (the same pairing and thinking rules);
 *  3. every request is answered in time, with a 2xx or a provider-shaped error, never a stack,
 *     and never the refusal of thinking bound to another prefix (a model of Claude 5.1 on, whose
 *     thinking the proxy's folds and the client's own edits move from the prefix it came after);
 *  4. every upstream request fits the window, unless the client's own request does not fit it
 *     either and the answer carries the `over-window` warning (see `request-window-floor.test.ts`).
 * Besides: a key the view shows is never answered "No object … is kept", and what the view of a
 * request sent alone left out is in an expansion of a key it shows, or (pruned: "kept for audit,
 * not promised") in the session's sidecar.
 *
 * `FUZZ_SEED`, `FUZZ_RUNS` pick the runs; `FUZZ_SHRINK=1` shrinks a failure; `FUZZ_CASE=<json>`
 * replays one run (`FUZZ_DUMP=1` prints what a failing check saw).
 */
import fc from 'fast-check';
import { afterAll, afterEach, describe, expect, it } from 'vitest';
import { countMessageTokens } from '../core/ledger.js';
import { approximateTokenCounter } from '../core/tokens.js';
import { parseSse } from '../testing/read-sse.js';
import type { ScriptedReply, ScriptedRequest } from '../testing/scripted-reply.js';
import { anthropicMessagesDialect } from './anthropic-messages-dialect.js';
import { chatDialect } from './chat-dialect.js';
import { responsesDialect } from './responses-dialect.js';
import { type ServedProxy, serveProxy } from './serve-proxy.js';
import { hashApiKey } from './session-identity.js';
import { authHeaders, ROUTE_PATHS, type WireRoute } from './testing/agent-conversation.js';
import { type ProxyFixture, startProxyFixture } from './testing/proxy-fixture.js';
import { expandKeys, pointerKeys } from './testing/recovery-pointers.js';
import { streamGrammarProblems } from './testing/stream-grammar.js';
import { EXPAND_TOOL, RECOVERY_TOOLS, SEARCH_TOOL } from './transparent-recovery.js';
import type { JsonObject, WireDialect } from './wire-dialect.js';

// biome-ignore lint/suspicious/noExplicitAny: wire JSON
type Json = Record<string, any>;

const RESERVE_OUTPUT = 256;
const CLEARED = '[Old tool result content cleared]';
const SYSTEM = 'You are a careful coding agent. Read files before editing them.';
const SHARED_TASK = 'Find why computeValue returns NaN and fix it.';
const MARKER = /M[KM]\d+X/g;
const PROXY_ID = /(?:toolu|call)_px\d+/g;
/** The proxy's tools by name (its own errors' stable codes, `selfgc_upstream_failure`, may show). */
const PROXY_TOOL = new RegExp(RECOVERY_TOOLS.map((tool) => tool.name).join('|'));
const DIALECTS: Record<WireRoute, WireDialect> = {
  chat: chatDialect,
  responses: responsesDialect,
  messages: anthropicMessagesDialect,
};
const READ_FILE_SCHEMA = { type: 'object', properties: { path: { type: 'string' } }, required: ['path'] };
const CLIENT_TOOL: Record<WireRoute, Json> = {
  chat: { type: 'function', function: { name: 'read_file', parameters: READ_FILE_SCHEMA } },
  responses: { type: 'function', name: 'read_file', parameters: READ_FILE_SCHEMA, strict: false },
  messages: { name: 'read_file', description: 'Read a file.', input_schema: READ_FILE_SCHEMA },
};

// ---------------------------------------------------------------------------------------------
// What a run does: its settings and its steps.

type KeyKind = 'seen' | 'stale' | 'madeup';
interface ReplyPlan {
  kind: 'text' | 'tool' | 'tool2' | 'expand' | 'expandTool' | 'search' | 'error' | 'cut' | 'nextPage';
  key: KeyKind;
  pick: number;
  offset: number | null;
  thinking: boolean;
  speaks: boolean;
}
type Step =
  | { t: 'send'; slot: number; stream: boolean; plan: ReplyPlan[] }
  | { t: 'replay'; slot: number; stream: boolean; plan: ReplyPlan[] }
  | { t: 'parallel'; stream: [boolean, boolean]; plans: [ReplyPlan[], ReplyPlan[]] }
  | { t: 'dup'; slot: number; stream: [boolean, boolean]; plans: [ReplyPlan[], ReplyPlan[]] }
  | { t: 'clear'; slot: number; keep: number }
  | { t: 'rewrite'; slot: number; at: number }
  | { t: 'rewind'; slot: number; at: number }
  | { t: 'cut'; slot: number; at: number }
  | { t: 'swap'; slot: number; sameTask: boolean; prefill: number }
  | { t: 'fork'; slot: number; at: number }
  | { t: 'dropMiddle'; slot: number; from: number; count: number };
interface RunSpec {
  /** Call ids unique to the run, or numbered by turn as some models and servers do (`call_0`). */
  ids: 'unique' | 'sequential' | 'perAnswer';
  /** Governed in a worker thread over SQLite. */
  workers: boolean;
  /** Whether the two slots send the same API key. */
  keys: 'same' | 'different';
  /** Native tool calls, or a text protocol (Cline on Messages, mini-swe-agent on Chat). */
  protocol: 'native' | 'text';
  route: WireRoute;
  window: number;
  /** Lines of a file read, at least. */
  lines: number;
  /** Tool results as content blocks (parts), and Claude Code's moving cache breakpoint. */
  blocks: boolean;
  headers: 'explicit' | 'client' | 'none';
  sameTask: boolean;
  thinking: boolean;
  /** A model that binds thinking to its prefix (Claude 5.1 on), on Messages with thinking. */
  binding: boolean;
  store: boolean;
  prefill: [number, number];
  steps: Step[];
}

const replyArb: fc.Arbitrary<ReplyPlan> = fc.record({
  kind: fc.oneof(
    { arbitrary: fc.constant('text' as const), weight: 3 },
    { arbitrary: fc.constant('tool' as const), weight: 4 },
    { arbitrary: fc.constant('tool2' as const), weight: 1 },
    { arbitrary: fc.constant('expand' as const), weight: 4 },
    { arbitrary: fc.constant('expandTool' as const), weight: 2 },
    { arbitrary: fc.constant('search' as const), weight: 1 },
    { arbitrary: fc.constant('error' as const), weight: 1 },
    { arbitrary: fc.constant('cut' as const), weight: 1 },
    { arbitrary: fc.constant('nextPage' as const), weight: 2 },
  ),
  key: fc.constantFrom<KeyKind>('seen', 'seen', 'stale', 'madeup'),
  pick: fc.nat(20),
  offset: fc.option(fc.integer({ min: 1, max: 2_500 }), { freq: 4 }),
  thinking: fc.boolean(),
  speaks: fc.boolean(),
});
const planArb = fc.array(replyArb, { minLength: 1, maxLength: 4, size: 'max' });
const slotArb = fc.integer({ min: 0, max: 1 });

const stepArb: fc.Arbitrary<Step> = fc.oneof(
  {
    arbitrary: fc.record({
      t: fc.constant('send' as const),
      slot: slotArb,
      stream: fc.boolean(),
      plan: planArb,
    }),
    weight: 10,
  },
  {
    arbitrary: fc.record({
      t: fc.constant('replay' as const),
      slot: slotArb,
      stream: fc.boolean(),
      plan: planArb,
    }),
    weight: 2,
  },
  {
    arbitrary: fc.record({
      t: fc.constant('parallel' as const),
      stream: fc.tuple(fc.boolean(), fc.boolean()),
      plans: fc.tuple(planArb, planArb),
    }),
    weight: 2,
  },
  {
    arbitrary: fc.record({
      t: fc.constant('dup' as const),
      slot: slotArb,
      stream: fc.tuple(fc.boolean(), fc.boolean()),
      plans: fc.tuple(planArb, planArb),
    }),
    weight: 1,
  },
  {
    arbitrary: fc.record({
      t: fc.constant('clear' as const),
      slot: slotArb,
      keep: fc.integer({ min: 1, max: 3 }),
    }),
    weight: 2,
  },
  { arbitrary: fc.record({ t: fc.constant('rewrite' as const), slot: slotArb, at: fc.nat(10) }), weight: 1 },
  { arbitrary: fc.record({ t: fc.constant('rewind' as const), slot: slotArb, at: fc.nat(10) }), weight: 1 },
  { arbitrary: fc.record({ t: fc.constant('cut' as const), slot: slotArb, at: fc.nat(10) }), weight: 1 },
  {
    arbitrary: fc.record({
      t: fc.constant('swap' as const),
      slot: slotArb,
      sameTask: fc.boolean(),
      prefill: fc.nat(8),
    }),
    weight: 1,
  },
  { arbitrary: fc.record({ t: fc.constant('fork' as const), slot: slotArb, at: fc.nat(10) }), weight: 1 },
  {
    arbitrary: fc.record({
      t: fc.constant('dropMiddle' as const),
      slot: slotArb,
      from: fc.nat(4),
      count: fc.integer({ min: 1, max: 4 }),
    }),
    weight: 1,
  },
);

const runArb: fc.Arbitrary<RunSpec> = fc.record({
  ids: fc.constantFrom('unique' as const, 'sequential' as const, 'perAnswer' as const),
  workers: fc.oneof(
    { arbitrary: fc.constant(false), weight: 4 },
    { arbitrary: fc.constant(true), weight: 1 },
  ),
  keys: fc.constantFrom('same' as const, 'different' as const),
  protocol: fc.oneof(
    { arbitrary: fc.constant('native' as const), weight: 3 },
    { arbitrary: fc.constant('text' as const), weight: 1 },
  ),
  route: fc.constantFrom<WireRoute>('messages', 'chat', 'responses'),
  window: fc.constantFrom(2_000, 3_000, 5_000, 8_000),
  blocks: fc.boolean(),
  lines: fc.integer({ min: 6, max: 30 }),
  headers: fc.constantFrom('explicit' as const, 'client' as const, 'none' as const),
  sameTask: fc.boolean(),
  thinking: fc.boolean(),
  binding: fc.boolean(),
  store: fc.boolean(),
  prefill: fc.tuple(fc.nat(9), fc.nat(9)),
  steps: fc.array(stepArb, { minLength: 8, maxLength: 25, size: 'max' }),
});

// ---------------------------------------------------------------------------------------------
// The client: conversations in the route's wire format.

interface Conversation {
  /** The history the client sends next (without Chat's system message). */
  history: Json[];
  /** The history it sent last, for a retry. */
  sent: Json[] | undefined;
}

interface World {
  route: WireRoute;
  spec: RunSpec;
  serial: number;
  /** Every pointer key any upstream request showed, in order. */
  keys: string[];
  /** Every marker written so far. */
  markers: string[];
  /** (thinking, signature) pairs the upstream produced. */
  thoughts: Set<string>;
  slots: Conversation[];
}

function mint(world: World, prefix: 'MK' | 'MM'): string {
  world.serial += 1;
  const marker = `${prefix}${world.serial}X`;
  world.markers.push(marker);
  return marker;
}

/** A file read's output: ~60 characters a line, the marker on every line. */
function fileOutput(world: World, path: string): string {
  const marker = mint(world, 'MK');
  const lines = world.spec.lines + (world.serial % 13);
  const rows = [`// ${path} (${marker})`];
  for (let line = 1; line < lines; line += 1)
    rows.push(
      line % 7 === 3
        ? `// 注释 ${line}: überprüfe 🚀 ${marker} — ok`
        : `export const k${line} = compute('${marker}', ${line}); // step ${line} of ${path}`,
    );
  return rows.join('\n');
}

function userPrompt(route: WireRoute, text: string): Json {
  if (route === 'messages') return { role: 'user', content: [{ type: 'text', text }] };
  if (route === 'chat') return { role: 'user', content: text };
  return { type: 'message', role: 'user', content: [{ type: 'input_text', text }] };
}

interface Call {
  id: string;
  name: string;
  args: Json;
}

/** The run's protocol, for the history helpers (runs are played one at a time). */
let textProtocol = false;

function isTextProtocol(world: World): boolean {
  return world.spec.protocol === 'text' && world.route !== 'responses';
}

/** A text-protocol call as the model writes it. */
function textCall(route: WireRoute, path: string): string {
  return route === 'messages'
    ? `<read_file>\n<path>${path}</path>\n</read_file>`
    : `THOUGHT: read it.\n\n\`\`\`bash\ncat ${path}\n\`\`\``;
}

/** The paths a text-protocol answer asks for. */
function textCalls(route: WireRoute, text: string): string[] {
  const pattern = route === 'messages' ? /<path>([^<]+)<\/path>/g : /```bash\ncat (\S+)\n```/g;
  return [...text.matchAll(pattern)].map((match) => match[1]!);
}

/** An assistant turn the client writes itself (prefilled history). */
function assistantTurn(world: World, text: string | undefined, calls: Call[]): Json[] {
  const { route } = world;
  if (isTextProtocol(world)) {
    const said = [text ?? '', ...calls.map((call) => textCall(route, String(call.args.path)))]
      .join('\n')
      .trim();
    return [
      route === 'messages'
        ? { role: 'assistant', content: [{ type: 'text', text: said }] }
        : { role: 'assistant', content: said },
    ];
  }
  if (route === 'messages') {
    const content: Json[] = [];
    if (world.spec.thinking) {
      const thinking = `I will read the next file (${mint(world, 'MM')}).`;
      const signature = Buffer.from(`client-signature:${world.serial}`).toString('base64');
      world.thoughts.add(`${thinking}\0${signature}`);
      content.push({ type: 'thinking', thinking, signature });
    }
    if (text !== undefined) content.push({ type: 'text', text });
    for (const call of calls)
      content.push({ type: 'tool_use', id: call.id, name: call.name, input: call.args });
    return [{ role: 'assistant', content }];
  }
  if (route === 'chat') {
    return [
      {
        role: 'assistant',
        content: text ?? null,
        ...(calls.length === 0
          ? {}
          : {
              tool_calls: calls.map((call) => ({
                id: call.id,
                type: 'function',
                function: { name: call.name, arguments: JSON.stringify(call.args) },
              })),
            }),
      },
    ];
  }
  return [
    ...(text === undefined
      ? []
      : [{ type: 'message', role: 'assistant', content: [{ type: 'output_text', text, annotations: [] }] }]),
    ...calls.map((call) => ({
      type: 'function_call',
      call_id: call.id,
      name: call.name,
      arguments: JSON.stringify(call.args),
    })),
  ];
}

/** The client runs its tool calls: one result each, in order. */
function toolResults(world: World, calls: Call[]): Json[] {
  const outputs = calls.map((call) => ({ call, output: fileOutput(world, String(call.args.path ?? 'x')) }));
  if (isTextProtocol(world)) {
    // Cline: a result header, the output, the environment details; mini-swe-agent: the output tagged.
    return outputs.map(({ call, output }) =>
      world.route === 'messages'
        ? {
            role: 'user',
            content: [
              { type: 'text', text: `[read_file for '${call.args.path}'] Result:` },
              { type: 'text', text: output },
              { type: 'text', text: '<environment_details>\n# VSCode Open Tabs\n</environment_details>' },
            ],
          }
        : { role: 'user', content: `<returncode>0</returncode>\n<output>\n${output}\n</output>` },
    );
  }
  if (world.route === 'messages') {
    return [
      {
        role: 'user',
        content: [
          ...outputs.map(({ call, output }) => ({
            type: 'tool_result',
            tool_use_id: call.id,
            content: world.spec.blocks ? [{ type: 'text', text: output }] : output,
          })),
          ...(world.spec.blocks
            ? [{ type: 'text', text: '<system-reminder>Keep going.</system-reminder>' }]
            : []),
        ],
      },
    ];
  }
  if (world.route === 'chat')
    return outputs.map(({ call, output }) => ({
      role: 'tool',
      tool_call_id: call.id,
      content: world.spec.blocks ? [{ type: 'text', text: output }] : output,
    }));
  return outputs.map(({ call, output }) => ({ type: 'function_call_output', call_id: call.id, output }));
}

function newConversation(world: World, sameTask: boolean, prefill: number): Conversation {
  const task = sameTask ? SHARED_TASK : `Task ${mint(world, 'MK')}: ${SHARED_TASK}`;
  const history: Json[] = [userPrompt(world.route, task)];
  for (let turn = 0; turn < prefill; turn += 1) {
    world.serial += 1;
    const prefix = world.route === 'messages' ? 'toolu_' : 'call_';
    const id =
      world.spec.ids === 'sequential'
        ? `${prefix}${turn}_0`
        : world.spec.ids === 'perAnswer' && world.route !== 'messages'
          ? `${prefix}0`
          : `${prefix}h${world.serial}`;
    const call = { id, name: 'read_file', args: { path: `src/h${world.serial}.ts` } };
    history.push(...assistantTurn(world, turn % 3 === 1 ? 'Reading on.' : undefined, [call]));
    history.push(...toolResults(world, [call]));
  }
  return { history, sent: undefined };
}

function requestBody(world: World, history: Json[], stream: boolean): Json {
  const { route, spec } = world;
  const tools = isTextProtocol(world) ? {} : { tools: [CLIENT_TOOL[route]] };
  if (route === 'messages') {
    return {
      model: spec.thinking && spec.binding ? 'claude-opus-5-5' : 'claude-sonnet-4-5',
      max_tokens: spec.thinking ? 1_200 : 300,
      system: SYSTEM,
      ...tools,
      messages: spec.blocks ? withBreakpoint(history) : history,
      ...(spec.thinking ? { thinking: { type: 'enabled', budget_tokens: 1_024 } } : {}),
      ...(stream ? { stream: true } : {}),
    };
  }
  if (route === 'chat') {
    return {
      model: 'gpt-4o',
      messages: [{ role: 'system', content: SYSTEM }, ...history],
      ...tools,
      ...(stream ? { stream: true, stream_options: { include_usage: true } } : {}),
    };
  }
  return {
    model: 'gpt-5-codex',
    instructions: SYSTEM,
    input: history,
    tools,
    tool_choice: 'auto',
    parallel_tool_calls: true,
    store: spec.store,
    ...(stream ? { stream: true } : {}),
  };
}

/** Claude Code marks the last block of the last message for caching, on every request. */
function withBreakpoint(history: Json[]): Json[] {
  const last = history.at(-1);
  if (last === undefined || !Array.isArray(last.content) || last.content.length === 0) return history;
  const content = [...last.content];
  content[content.length - 1] = { ...content.at(-1), cache_control: { type: 'ephemeral' } };
  return [...history.slice(0, -1), { ...last, content }];
}

function sessionHeaders(spec: RunSpec): Record<string, string> {
  if (spec.headers === 'explicit') return { 'x-selfgc-session': 'fuzz-session-1' };
  if (spec.headers === 'none') return {};
  const id = '2f6d1c7a-8e0b-4b9a-a1d3-5c4e3b2a1f00';
  if (spec.route === 'messages') return { 'x-claude-code-session-id': id };
  if (spec.route === 'responses') return { 'thread-id': id };
  return { 'x-session-affinity': id };
}

/** Where each tool result sits in a history, and how to clear it. */
function isToolResult(route: WireRoute, item: Json): boolean {
  if (textProtocol && route === 'messages')
    return (
      item.role === 'user' &&
      Array.isArray(item.content) &&
      String(item.content[0]?.text).startsWith('[read_file for')
    );
  if (textProtocol && route === 'chat')
    return item.role === 'user' && String(item.content).startsWith('<returncode>');
  if (route === 'messages')
    return (
      item.role === 'user' &&
      Array.isArray(item.content) &&
      item.content.some((b: Json) => b.type === 'tool_result')
    );
  if (route === 'chat') return item.role === 'tool';
  return item.type === 'function_call_output';
}

function isPrompt(route: WireRoute, item: Json): boolean {
  return item.role === 'user' && !isToolResult(route, item);
}

/** A tool result with its output replaced by `text`. */
function replaceOutput(route: WireRoute, item: Json, text: string): Json {
  if (textProtocol && route === 'messages')
    return {
      ...item,
      content: item.content.map((b: Json, position: number) => (position === 1 ? { ...b, text } : b)),
    };
  if (textProtocol && route === 'chat')
    return { ...item, content: `<returncode>0</returncode>\n<output>\n${text}\n</output>` };
  if (route === 'messages')
    return {
      ...item,
      content: item.content.map((b: Json) => (b.type === 'tool_result' ? { ...b, content: text } : b)),
    };
  return route === 'chat' ? { ...item, content: text } : { ...item, output: text };
}

/** Cline's note for a file read it removed to save room. */
const CLINE_REMOVED =
  '[[NOTE] This file read has been removed to save space in the context window. Refer to the latest file read for the most up to date version of this file.]';

function clearOutputs(route: WireRoute, history: Json[], keep: number): Json[] {
  if (textProtocol) {
    const results = history.flatMap((item, index) => (isToolResult(route, item) ? [index] : []));
    const clear = new Set(results.slice(0, Math.max(0, results.length - keep)));
    return history.map((item, index) =>
      clear.has(index) ? replaceOutput(route, item, CLINE_REMOVED) : item,
    );
  }
  const results: Array<[number, number]> = [];
  history.forEach((item, index) => {
    if (route === 'messages' && isToolResult(route, item))
      item.content.forEach((b: Json, position: number) => {
        if (b.type === 'tool_result') results.push([index, position]);
      });
    else if (isToolResult(route, item)) results.push([index, -1]);
  });
  const clear = new Set(results.slice(0, Math.max(0, results.length - keep)).map(([i, p]) => `${i}:${p}`));
  return history.map((item, index) => {
    if (!isToolResult(route, item)) return item;
    if (route === 'messages')
      return {
        ...item,
        content: item.content.map((b: Json, position: number) =>
          clear.has(`${index}:${position}`) ? { ...b, content: CLEARED } : b,
        ),
      };
    if (!clear.has(`${index}:-1`)) return item;
    return route === 'chat' ? { ...item, content: CLEARED } : { ...item, output: CLEARED };
  });
}

// ---------------------------------------------------------------------------------------------
// The scripted model.

interface Pending {
  id: string;
  plan: ReplyPlan[];
  /** The client's request body as sent (raw). */
  clientRaw: string;
  upstream: ScriptedRequest[];
  /** Markers the model wrote in each round's reply. */
  minted: string[][];
  /** Thinking blocks the model produced in each round. */
  thought: boolean[];
  /** Ids of the proxy calls the model made. */
  proxyIds: string[];
  /** The proxy's x-selfgc-* headers of the answer. */
  headers?: string;
  /** Each expand the model made: its call id, key, and whether the view it was given showed the key. */
  expands: Array<{ id: string; key: string; shown: boolean; round: number }>;
}

function toolChoiceNone(body: Json): boolean {
  const choice = body.tool_choice;
  return choice === 'none' || (typeof choice === 'object' && choice?.type === 'none');
}

function offersRecovery(body: Json): boolean {
  return JSON.stringify(body.tools ?? []).includes(EXPAND_TOOL);
}

function chooseKey(world: World, request: ScriptedRequest, plan: ReplyPlan): string {
  const shown = pointerKeys(request.rawBody);
  if (plan.key === 'seen' && shown.length > 0) return shown[plan.pick % shown.length]!;
  const stale = world.keys.filter((key) => !shown.includes(key));
  if (plan.key !== 'madeup' && stale.length > 0) return stale[plan.pick % stale.length]!;
  const madeUp = ['function:read_file:97', 'conversation:user:1@40', 'function:read_file:3', 'nonsense-key'];
  return madeUp[plan.pick % madeUp.length]!;
}

/** Assistant turns in an upstream body: the scripted model numbers its calls by them. */
function assistantTurns(route: WireRoute, body: Json): number {
  const items: Json[] = route === 'responses' ? body.input : body.messages;
  return items.filter((item) => item.role === 'assistant' || item.type === 'function_call').length;
}

function modelReply(world: World, pending: Pending, request: ScriptedRequest): ScriptedReply {
  const body = request.body as Json;
  const round = pending.upstream.length - 1;
  let plan = pending.plan[round] ?? {
    kind: 'text',
    key: 'seen',
    pick: 0,
    offset: null,
    thinking: false,
    speaks: true,
  };
  const recovery = offersRecovery(body) && !toolChoiceNone(body);
  const tools = !toolChoiceNone(body);
  // A real model calls only tools it is offered, and none when told not to.
  if (!recovery && ['expand', 'expandTool', 'search', 'nextPage'].includes(plan.kind))
    plan = { ...plan, kind: tools ? 'tool' : 'text' };
  if (!tools && ['tool', 'tool2'].includes(plan.kind)) plan = { ...plan, kind: 'text' };
  const minted: string[] = [];
  const word = () => {
    const marker = mint(world, 'MM');
    minted.push(marker);
    return marker;
  };
  pending.minted.push(minted);
  if (plan.kind === 'error' || (plan.kind === 'cut' && body.stream !== true)) {
    pending.thought.push(false);
    return { error: { status: plan.pick % 2 === 0 ? 529 : 500, message: 'Overloaded' } };
  }
  if (plan.kind === 'cut') {
    // A stream that breaks off part-way, with the provider's error event or without one.
    pending.thought.push(false);
    const error = plan.speaks ? { error: { status: 529, message: 'Overloaded' } } : {};
    return {
      text: `Partial ${word()} answer that breaks.`,
      cutStream: { afterEvents: 2 + (plan.pick % 4), ...error },
    };
  }
  const prefix = world.route === 'messages' ? 'toolu_' : 'call_';
  // Numbered by the client's own turns (the view may hold fewer), and the round: unique, as real ids are.
  const turns = `${assistantTurns(world.route, JSON.parse(pending.clientRaw))}r${round}`;
  let position = 0;
  const clientCall = () => {
    world.serial += 1;
    // Local servers number each answer's calls from 0 (`call_0`): ids repeat across turns.
    const numbered = `${prefix}${turns}_${position++}`;
    const id =
      world.spec.ids === 'sequential'
        ? pending.clientRaw.includes(`"${numbered}"`)
          ? `${numbered}_${world.serial}`
          : numbered
        : world.spec.ids === 'perAnswer' && world.route !== 'messages'
          ? `${prefix}${position++}`
          : `${prefix}cl${world.serial}`;
    return { id, name: 'read_file', arguments: { path: `src/f${world.serial}.ts` } };
  };
  const proxyCall = (name: string, args: Json) => {
    world.serial += 1;
    const id =
      world.spec.ids === 'perAnswer' && world.route !== 'messages'
        ? `${prefix}${position++}`
        : `${prefix}px${world.serial}`;
    pending.proxyIds.push(id);
    if (name === EXPAND_TOOL)
      pending.expands.push({
        id,
        key: String(args.id),
        shown: pointerKeys(request.rawBody).includes(String(args.id)),
        round,
      });
    return { id, name, arguments: args };
  };
  const expandArgs = () => ({
    id: chooseKey(world, request, plan),
    ...(plan.offset === null ? {} : { offset: plan.offset }),
  });
  // With thinking on, a real model opens its turn with thinking; later rounds may think again.
  const thinks = world.route === 'messages' && world.spec.thinking && (round === 0 || plan.thinking);
  pending.thought.push(thinks);
  const thinking = thinks ? { thinking: `Considering ${word()} next.` } : {};
  const text = plan.speaks || plan.kind === 'text' ? { text: `Noted ${word()} — ça marche 👍. ` } : {};
  if (
    isTextProtocol(world) &&
    (plan.kind === 'tool' || plan.kind === 'tool2' || plan.kind === 'expandTool')
  ) {
    world.serial += 1;
    const said = `${text.text ?? ''}${textCall(world.route, `src/f${world.serial}.ts`)}`;
    return plan.kind === 'expandTool'
      ? { ...thinking, text: said, toolCalls: [proxyCall(EXPAND_TOOL, expandArgs())] }
      : { ...thinking, text: said };
  }
  switch (plan.kind) {
    case 'text':
      return { ...thinking, ...text };
    case 'tool':
      return { ...thinking, ...text, toolCalls: [clientCall()] };
    case 'tool2':
      return { ...thinking, ...text, toolCalls: [clientCall(), clientCall()] };
    case 'expand':
      return { ...thinking, ...text, toolCalls: [proxyCall(EXPAND_TOOL, expandArgs())] };
    case 'nextPage': {
      // Follow the last page note the model was shown, or expand a key it sees.
      const notes = [
        ...request.rawBody.matchAll(
          /Call selfgc_expand with \{\\"id\\": \\"([^"\\]+)\\", \\"offset\\": (\d+)\}/g,
        ),
      ];
      const last = notes.at(-1);
      const args = last === undefined ? expandArgs() : { id: last[1]!, offset: Number(last[2]) };
      if (last !== undefined) stats.pages += 1;
      return { ...thinking, ...text, toolCalls: [proxyCall(EXPAND_TOOL, args)] };
    }
    case 'expandTool':
      return { ...thinking, ...text, toolCalls: [proxyCall(EXPAND_TOOL, expandArgs()), clientCall()] };
    case 'search': {
      const query = world.markers.length === 0 ? 'compute' : world.markers[plan.pick % world.markers.length]!;
      return { ...thinking, ...text, toolCalls: [proxyCall(SEARCH_TOOL, { query })] };
    }
  }
}

// ---------------------------------------------------------------------------------------------
// Reading answers as the client does.

interface ClientAnswer {
  ok: boolean;
  /** The assistant items to append and the client calls to run. */
  items: Json[];
  calls: Call[];
}

function fail(message: string): never {
  throw new Error(message);
}

function providerShapedError(route: WireRoute, text: string, status: number): void {
  if (/\n\s+at\s/.test(text))
    fail(`status ${status}: a stack trace reached the client: ${text.slice(0, 400)}`);
  let body: Json;
  try {
    body = JSON.parse(text);
  } catch {
    fail(`status ${status}: error body is not JSON: ${text.slice(0, 300)}`);
  }
  if (route === 'messages') {
    if (body.type !== 'error' || typeof body.error?.message !== 'string')
      fail(`status ${status}: not an Anthropic error: ${text.slice(0, 300)}`);
  } else if (typeof body.error?.message !== 'string')
    fail(`status ${status}: not an OpenAI error: ${text.slice(0, 300)}`);
}

/** The answer of a non-streamed request, or of a stream accumulated as the SDKs do. */
function accumulateStream(route: WireRoute, raw: string): { answer?: Json; error?: string } {
  const events = parseSse(raw).filter((event) => event.data !== '[DONE]');
  const payloads = events.map((event) => JSON.parse(event.data) as Json);
  const error = payloads.find(
    (p) => p.type === 'error' || p.type === 'response.failed' || (route === 'chat' && p.error !== undefined),
  );
  if (error !== undefined) return { error: JSON.stringify(error).slice(0, 300) };
  if (route === 'responses') {
    const done = payloads.find((p) => p.type === 'response.completed');
    return done === undefined ? { error: 'no response.completed' } : { answer: done.response };
  }
  if (route === 'messages') {
    const start = payloads.find((p) => p.type === 'message_start');
    if (start === undefined) return { error: 'no message_start' };
    const message: Json = { ...start.message, content: [] };
    const json = new Map<number, string>();
    for (const p of payloads) {
      if (p.type === 'content_block_start') {
        message.content[p.index] = { ...p.content_block };
        if (p.content_block.type === 'tool_use') json.set(p.index, '');
      } else if (p.type === 'content_block_delta') {
        const block = message.content[p.index];
        const d = p.delta;
        if (d.type === 'text_delta') block.text += d.text;
        else if (d.type === 'thinking_delta') block.thinking += d.thinking;
        else if (d.type === 'signature_delta') block.signature = (block.signature ?? '') + d.signature;
        else if (d.type === 'input_json_delta') json.set(p.index, json.get(p.index)! + d.partial_json);
      } else if (p.type === 'message_delta') {
        Object.assign(message, p.delta);
      }
    }
    for (const [index, text] of json) message.content[index].input = text === '' ? {} : JSON.parse(text);
    return { answer: message };
  }
  const message: Json = { role: 'assistant', content: null };
  const calls: Json[] = [];
  let finish: string | null = null;
  for (const p of payloads) {
    for (const choice of p.choices ?? []) {
      const d = choice.delta ?? {};
      if (typeof d.content === 'string') message.content = (message.content ?? '') + d.content;
      for (const call of d.tool_calls ?? []) {
        calls[call.index] ??= { id: call.id, type: 'function', function: { name: '', arguments: '' } };
        const target = calls[call.index]!;
        if (call.id !== undefined) target.id = call.id;
        if (call.function?.name) target.function.name += call.function.name;
        if (call.function?.arguments) target.function.arguments += call.function.arguments;
      }
      if (choice.finish_reason) finish = choice.finish_reason;
    }
  }
  if (calls.length > 0) message.tool_calls = calls;
  return { answer: { choices: [{ index: 0, message, finish_reason: finish }] } };
}

/** Check the answer is valid for the client to send back, and read it into history items. */
function readAnswer(world: World, pending: Pending, answer: Json, raw: string): ClientAnswer {
  const { route } = world;
  const where = `answer to ${pending.id}`;
  if (PROXY_TOOL.test(raw)) fail(`${where}: shows the proxy's tools: ${raw.slice(0, 600)}`);
  for (const id of raw.match(PROXY_ID) ?? []) fail(`${where}: shows the proxy call id ${id}`);
  const calls: Call[] = [];
  if (route === 'messages') {
    const content: Json[] = answer.content ?? [];
    if (content.length === 0) fail(`${where}: empty content`);
    const blocks = content.map((block) => {
      if (block.type === 'text') {
        if (typeof block.text !== 'string' || block.text === '') fail(`${where}: empty text block`);
        return { type: 'text', text: block.text };
      }
      if (block.type === 'thinking') {
        if (!world.thoughts.has(`${block.thinking}\0${block.signature}`))
          fail(
            `${where}: a thinking block the upstream never produced: ${JSON.stringify(block).slice(0, 300)}`,
          );
        return { type: 'thinking', thinking: block.thinking, signature: block.signature };
      }
      if (block.type === 'tool_use') {
        if (block.name !== 'read_file') fail(`${where}: a call of ${block.name}`);
        calls.push({ id: block.id, name: block.name, args: block.input });
        return { type: 'tool_use', id: block.id, name: block.name, input: block.input };
      }
      return fail(`${where}: block of type ${block.type}`);
    });
    if (blocks.at(-1)?.type === 'thinking') fail(`${where}: ends in thinking`);
    if (isTextProtocol(world)) {
      const said = blocks
        .filter((b) => b.type === 'text')
        .map((b) => b.text)
        .join('');
      for (const path of textCalls(route, said).slice(0, 1))
        calls.push({ id: '', name: 'read_file', args: { path } });
      if (calls.length > 0 && answer.stop_reason === 'tool_use')
        fail(`${where}: stop_reason tool_use with no native call`);
      return { ok: true, items: [{ role: 'assistant', content: blocks }], calls };
    }
    if ((answer.stop_reason === 'tool_use') !== calls.length > 0)
      fail(`${where}: stop_reason ${answer.stop_reason} with ${calls.length} calls`);
    // With thinking on, an assistant turn the client sends back with tool results opens with thinking.
    if (world.spec.thinking && calls.length > 0 && blocks[0]?.type !== 'thinking')
      fail(
        `${where}: a tool-calling turn that does not open with thinking: ${JSON.stringify(blocks).slice(0, 400)}`,
      );
    return { ok: true, items: [{ role: 'assistant', content: blocks }], calls };
  }
  if (route === 'chat') {
    if (!Array.isArray(answer.choices) || answer.choices.length !== 1)
      fail(`${where}: ${answer.choices?.length} choices`);
    const { message, finish_reason: finish } = answer.choices[0];
    const toolCalls: Json[] = message.tool_calls ?? [];
    const spoke = typeof message.content === 'string' && message.content !== '';
    if (!spoke && toolCalls.length === 0)
      fail(`${where}: an assistant message with neither content nor calls`);
    for (const call of toolCalls) {
      if (call.function?.name !== 'read_file') fail(`${where}: a call of ${call.function?.name}`);
      if (typeof call.id !== 'string' || call.id === '') fail(`${where}: a call without id`);
      calls.push({ id: call.id, name: 'read_file', args: JSON.parse(call.function.arguments) });
    }
    if ((finish === 'tool_calls') !== calls.length > 0)
      fail(`${where}: finish_reason ${finish} with ${calls.length} calls`);
    if (isTextProtocol(world)) {
      for (const path of textCalls(route, String(message.content ?? '')).slice(0, 1))
        calls.push({ id: '', name: 'read_file', args: { path } });
      return { ok: true, items: [{ role: 'assistant', content: message.content }], calls };
    }
    const turn: Json = { role: 'assistant', content: message.content ?? null };
    if (toolCalls.length > 0)
      turn.tool_calls = toolCalls.map((c) => ({
        id: c.id,
        type: 'function',
        function: { name: c.function.name, arguments: c.function.arguments },
      }));
    return { ok: true, items: [turn], calls };
  }
  if (answer.status !== 'completed') fail(`${where}: status ${answer.status}`);
  const output: Json[] = answer.output ?? [];
  const items: Json[] = [];
  for (const item of output) {
    if (item.type === 'function_call') {
      if (item.name !== 'read_file') fail(`${where}: a call of ${item.name}`);
      calls.push({ id: item.call_id, name: item.name, args: JSON.parse(item.arguments) });
    } else if (item.type === 'message') {
      if (!Array.isArray(item.content) || item.content.length === 0) fail(`${where}: an empty message item`);
    } else if (item.type !== 'reasoning') fail(`${where}: an item of type ${item.type}`);
    // Codex passes output items back as input; without `store`, without their ids.
    const { status: _status, ...rest } = item;
    if (!world.spec.store) delete rest.id;
    items.push(rest);
  }
  return { ok: true, items, calls };
}

/** The pairing a provider checks on what the client sends. */
function checkClientHistory(route: WireRoute, history: Json[]): void {
  if (route === 'messages') {
    history.forEach((message, index) => {
      if (!Array.isArray(message.content) || message.content.length === 0)
        fail(`history ${index}: empty content`);
      if (index > 0 && history[index - 1]!.role === message.role)
        fail(`history ${index}: two ${message.role} messages in a row`);
      const uses =
        message.role === 'assistant'
          ? message.content.filter((b: Json) => b.type === 'tool_use').map((b: Json) => b.id)
          : [];
      const next = history[index + 1];
      const results =
        next?.content?.filter?.((b: Json) => b.type === 'tool_result').map((b: Json) => b.tool_use_id) ?? [];
      if (
        uses.length > 0 &&
        next !== undefined &&
        JSON.stringify(uses.sort()) !== JSON.stringify([...results].sort())
      )
        fail(`history ${index}: tool_use ${uses} answered by ${results}`);
    });
    return;
  }
  if (route === 'chat') {
    const open = new Set<string>();
    for (const message of history) {
      if (message.role === 'tool') {
        if (!open.delete(message.tool_call_id)) fail(`tool result ${message.tool_call_id} answers no call`);
      } else {
        if (open.size > 0) fail(`calls ${[...open]} unanswered`);
        for (const call of message.tool_calls ?? []) open.add(call.id);
      }
    }
    return;
  }
  const calls = history.filter((item) => item.type === 'function_call').map((item) => item.call_id);
  const outputs = new Set(
    history.filter((item) => item.type === 'function_call_output').map((item) => item.call_id),
  );
  for (const call of calls) if (!outputs.has(call)) fail(`function_call ${call} without output`);
}

/** What a provider would refuse in a request body: pairing, empty content, thinking order. */
function providerProblems(route: WireRoute, body: Json): string[] {
  const problems: string[] = [];
  if (route === 'messages') {
    const messages: Json[] = body.messages;
    const ids = new Set<string>();
    messages.forEach((message, index) => {
      const content = message.content;
      if (typeof content === 'string' ? content === '' : !Array.isArray(content) || content.length === 0)
        problems.push(`message ${index} (${message.role}) has empty content`);
      const blocks: Json[] = Array.isArray(content) ? content : [];
      for (const block of blocks)
        if (block.type === 'text' && block.text === '') problems.push(`message ${index}: empty text block`);
      const results = blocks.filter((b) => b.type === 'tool_result').map((b) => String(b.tool_use_id));
      const previous = messages[index - 1];
      const uses = new Set(
        previous?.role === 'assistant' && Array.isArray(previous.content)
          ? previous.content.filter((b: Json) => b.type === 'tool_use').map((b: Json) => String(b.id))
          : [],
      );
      for (const id of results)
        if (message.role !== 'user' || !uses.has(id))
          problems.push(`message ${index}: tool_result ${id} answers no tool_use of the message before`);
      if (message.role === 'assistant') {
        const own = blocks.filter((b) => b.type === 'tool_use').map((b) => String(b.id));
        for (const id of own) {
          if (ids.has(id)) problems.push(`message ${index}: tool_use id ${id} used twice`);
          ids.add(id);
        }
        const next = messages[index + 1];
        const answered = new Set(
          Array.isArray(next?.content)
            ? next.content
                .filter((b: Json) => b.type === 'tool_result')
                .map((b: Json) => String(b.tool_use_id))
            : [],
        );
        if (next !== undefined)
          for (const id of own)
            if (!answered.has(id)) problems.push(`message ${index}: tool_use ${id} without tool_result`);
      }
    });
    // With thinking on, the assistant turn a request continues (the request ends in tool results)
    // opens with thinking: its first message after the last prompt that holds no tool result
    // (the errors the API gives name that message; later messages of the turn may hold none).
    const last = messages.at(-1);
    const promptAt = messages.findLastIndex(
      (m) =>
        m.role === 'user' &&
        !(Array.isArray(m.content) && m.content.some((b: Json) => b.type === 'tool_result')),
    );
    const turn = messages[promptAt + 1];
    if (
      body.thinking?.type === 'enabled' &&
      last?.role === 'user' &&
      Array.isArray(last.content) &&
      last.content.some((b: Json) => b.type === 'tool_result') &&
      turn?.role === 'assistant' &&
      !['thinking', 'redacted_thinking'].includes(turn.content?.[0]?.type)
    )
      problems.push(`the continued assistant turn opens with ${turn.content?.[0]?.type}, not thinking`);
    return problems;
  }
  if (route === 'chat') {
    const open = new Set<string>();
    (body.messages as Json[]).forEach((message, index) => {
      if (message.role === 'tool') {
        if (!open.delete(message.tool_call_id))
          problems.push(`message ${index}: tool result ${message.tool_call_id} answers no call`);
        return;
      }
      if (open.size > 0) problems.push(`message ${index}: calls ${[...open]} unanswered before it`);
      open.clear();
      if (message.role === 'assistant') {
        const calls: Json[] = message.tool_calls ?? [];
        if (
          calls.length === 0 &&
          (message.content === null || message.content === undefined || message.content === '')
        )
          problems.push(`message ${index}: assistant message with neither content nor calls`);
        for (const call of calls) open.add(call.id);
      }
    });
    return problems;
  }
  const items: Json[] = Array.isArray(body.input) ? body.input : [];
  const calls = new Set<string>();
  const answered = new Set<string>();
  items.forEach((item, index) => {
    if (item.type === 'function_call') calls.add(item.call_id);
    if (item.type === 'function_call_output') {
      if (!calls.has(item.call_id))
        problems.push(`item ${index}: output ${item.call_id} before or without its call`);
      answered.add(item.call_id);
    }
  });
  for (const call of calls) if (!answered.has(call)) problems.push(`function_call ${call} without output`);
  return problems;
}

// ---------------------------------------------------------------------------------------------
// The driver.

interface Harness {
  fixture: ProxyFixture;
  served: ServedProxy;
  world: World;
  pending: Map<string, Pending>;
  requests: number;
  log: string[];
}

let harness: Harness | undefined;
/** What the runs exercised, printed at the end: a fuzz that never commits or recovers proves little. */
const stats = {
  runs: 0,
  requests: 0,
  upstream: 0,
  commits: 0,
  recoveryRounds: 0,
  streams: 0,
  errors: 0,
  pointers: 0,
  expands: 0,
  maxShare: 0,
  over: 0,
  dropped: 0,
  pages: 0,
  drops: 0,
  diverged: 0,
  expandHits: 0,
  expandMisses: 0,
  textFolds: 0,
  shownHits: 0,
  heldBack: 0,
  pruned: 0,
};
afterEach(async () => {
  await harness?.served.close();
  await harness?.fixture.close();
  harness = undefined;
});

function transcriptTokens(route: WireRoute, body: Json): number {
  const dialect = DIALECTS[route];
  const counter = approximateTokenCounter;
  const messages = dialect
    .readTranscript(body as JsonObject)
    .reduce((sum, m) => sum + countMessageTokens(counter, m), 0);
  const beside = dialect
    .promptBesideTranscript(body as JsonObject)
    .reduce((sum, t) => sum + counter.count(t), 0);
  return messages + beside + (dialect.outputLimit(body as JsonObject) ?? RESERVE_OUTPUT);
}

/**
 * What the first upstream request left out of the client's request (its file reads and prompts,
 * by marker) is one expand away: some key the view shows recovers it, from the session's state
 * as this request left it (the request ran alone).
 */
async function checkRecoverable(
  h: Harness,
  pending: Pending,
  response: Response,
  apiKey: string,
): Promise<void> {
  const first = pending.upstream[0]!;
  if (response.headers.get('x-selfgc-arm') !== 'governed') return;
  const missing = [...new Set(pending.clientRaw.match(/MK\d+X/g) ?? [])].filter(
    (marker) => !first.rawBody.includes(marker),
  );
  if (missing.length === 0) return;
  const keyHash = hashApiKey(new Headers({ authorization: `Bearer ${apiKey}` }));
  const session = `${keyHash}:${response.headers.get('x-selfgc-session')}`;
  // Keys the view shows: its `expand("…")` pointers, and the ids its tombstones name (`[pruned …]`).
  const tombstones = [...first.rawBody.matchAll(/\[pruned ([^\]"]+?)(?::\s|\])/g)].flatMap((m) =>
    m[1]!.split(', '),
  );
  const keys = [...new Set([...pointerKeys(first.rawBody), ...tombstones])];
  const expanded = [...(await expandKeys(h.fixture.store, session, keys)).values()].join('\n');
  // Pruning is not promised recoverable (README: "kept for audit, not promised"): what the view
  // pruned must at least be in the session's sidecar.
  const kept = (await h.fixture.store.listPayloads(session)).map((record) => record.payload).join('\n');
  const lost = missing.filter((marker) => !expanded.includes(marker) && !kept.includes(marker));
  stats.pruned += missing.filter((marker) => !expanded.includes(marker) && kept.includes(marker)).length;
  stats.heldBack += missing.length;
  if (lost.length > 0 && process.env.FUZZ_DUMP) {
    console.log(
      'CLIENT',
      JSON.stringify(
        JSON.parse(pending.clientRaw).messages ?? JSON.parse(pending.clientRaw).input,
        null,
        1,
      ).replace(/(\\n[^"]{60})[^"]*/g, '$1…'),
    );
    console.log(
      'UPSTREAM',
      JSON.stringify((first.body as Json).messages ?? (first.body as Json).input, null, 1),
    );
    console.log('EXPANDED', [
      ...(await expandKeys(h.fixture.store, session, pointerKeys(first.rawBody))).entries(),
    ]);
    const named = [
      ...new Set([...first.rawBody.matchAll(/\[pruned ([^:\s]+:[^:\s]+:[^:\s\]]+)/g)].map((m) => m[1]!)),
    ];
    console.log('PRUNED-BY-ID', [...(await expandKeys(h.fixture.store, session, named)).entries()]);
    console.log(
      'PAYLOADS',
      (await h.fixture.store.listPayloads(session)).map((r) => r.objectId),
    );
  }
  if (lost.length > 0)
    fail(
      `${pending.id}: the view left out ${lost.join(', ')} and no key it shows recovers them (keys: ${keys.join(', ')}; ${pending.headers})`,
    );
}

/** Invariants 1 and 4 on every upstream request of one client request. */
function checkUpstream(h: Harness, pending: Pending): void {
  const clientMarkers = new Set(pending.clientRaw.match(MARKER) ?? []);
  pending.upstream.forEach((request, round) => {
    const allowed = new Set([...clientMarkers, ...pending.minted.slice(0, round).flat()]);
    // The model's own search queries, and the proxy's word that nothing matches them.
    const seen = request.rawBody
      .replace(/query\\?":\\?"M[KM]\d+X/g, 'query')
      .replace(/matches \\"M[KM]\d+X\\"/g, 'matches');
    const foreign = [...new Set(seen.match(MARKER) ?? [])].filter((marker) => !allowed.has(marker));
    if (foreign.length > 0) {
      const at = request.rawBody.indexOf(foreign[0]!);
      fail(
        `${pending.id} round ${round}: upstream carries markers not in the client's request: ${foreign.join(', ')}\n` +
          `  context: …${request.rawBody.slice(Math.max(0, at - 300), at + 100)}…`,
      );
    }
    const refused = providerProblems(h.world.route, request.body as Json);
    if (refused.length > 0)
      fail(
        `${pending.id} round ${round}: the provider would refuse the upstream request: ${refused.join('; ')}`,
      );
    // A key the view showed is one expand away: the model never hears that nothing is kept for it.
    if (round > 0) {
      const results = DIALECTS[h.world.route]
        .readTranscript(request.body as JsonObject)
        .flatMap((message) => message.parts)
        .flatMap((part) => (part.type === 'tool-result' ? [part] : []));
      for (const call of pending.expands.filter((e) => e.round === round - 1 && e.shown)) {
        const result = results.findLast((part) => part.callId === call.id);
        const text =
          result === undefined
            ? undefined
            : typeof result.content === 'string'
              ? result.content
              : JSON.stringify(result.content);
        if (text !== undefined && /^No object .* is kept/.test(text))
          fail(`${pending.id} round ${round}: expand of ${call.key}, shown in the view, answered: ${text}`);
        if (text !== undefined && !text.startsWith('No object')) stats.shownHits += 1;
      }
    }
    const tokens = transcriptTokens(h.world.route, request.body as Json);
    const { window } = h.world.spec;
    stats.maxShare = Math.max(stats.maxShare, tokens / window);
    // Over the window only where the client's own request is over too, and the answer says so.
    const clientTokens = transcriptTokens(h.world.route, JSON.parse(pending.clientRaw) as Json);
    if (tokens > window) {
      stats.over += 1;
      if (clientTokens <= window || !/warnings=\S*over-window/.test(pending.headers ?? '')) {
        if (process.env.FUZZ_DUMP) console.log('OVER', JSON.stringify(request.body, null, 1));
        fail(
          `${pending.id} round ${round}: upstream request of ${tokens} tokens over the ${window} window, the client's ${clientTokens} (${pending.headers})`,
        );
      }
    }
  });
}

async function exchange(
  h: Harness,
  slot: number,
  history: Json[],
  stream: boolean,
  plan: ReplyPlan[],
  exclusive = false,
): Promise<ClientAnswer> {
  const { world } = h;
  const { route } = world;
  checkClientHistory(route, history);
  h.requests += 1;
  const id = `r${h.requests}`;
  const body = requestBody(world, history, stream);
  const clientRaw = JSON.stringify(body);
  const invalid = providerProblems(route, body);
  if (invalid.length > 0) fail(`${id}: test bug: the client's own request is invalid: ${invalid.join('; ')}`);
  const apiKey = world.spec.keys === 'different' && slot === 1 ? 'sk-fuzz-other' : 'sk-fuzz';
  const pending: Pending = {
    id,
    plan,
    clientRaw,
    upstream: [],
    minted: [],
    thought: [],
    proxyIds: [],
    expands: [],
  };
  h.pending.set(id, pending);
  const response = await fetch(`${h.served.url}${ROUTE_PATHS[route]}`, {
    method: 'POST',
    headers: {
      ...authHeaders(route, apiKey),
      ...sessionHeaders(world.spec),
      'x-fuzz-request': id,
    },
    body: clientRaw,
    signal: AbortSignal.timeout(20_000),
  }).catch((error: unknown) => fail(`${id}: no answer: ${String(error)}`));
  const upstreamBroke = () =>
    pending.plan.slice(0, pending.upstream.length).some((p) => p.kind === 'error' || p.kind === 'cut');
  const raw = await response
    .text()
    .catch((error: unknown) => (upstreamBroke() ? '' : fail(`${id}: answer broke off: ${String(error)}`)));
  h.log.push(
    `${id} ${stream ? 'stream' : 'json'} status ${response.status} rounds ${pending.upstream.length} ` +
      `session ${response.headers.get('x-selfgc-session')} commit ${response.headers.get('x-selfgc-commit') ?? '-'} ` +
      `gov ${response.headers.get('x-selfgc-governance')} warn ${response.headers.get('x-selfgc-warnings') ?? '-'}`,
  );
  pending.headers = [...response.headers]
    .filter(([name]) => name.startsWith('x-selfgc-'))
    .map(([n, v]) => `${n.slice(9)}=${v}`)
    .join(' ');
  checkUpstream(h, pending);
  if (exclusive && pending.upstream.length > 0) await checkRecoverable(h, pending, response, apiKey);
  stats.requests += 1;
  stats.upstream += pending.upstream.length;
  stats.recoveryRounds += Math.max(0, pending.upstream.length - 1);
  if (response.headers.get('x-selfgc-commit') !== null) stats.commits += 1;
  if (stream) stats.streams += 1;
  if (response.status >= 300) stats.errors += 1;
  if (pending.upstream.some((request) => pointerKeys(request.rawBody).length > 0)) stats.pointers += 1;
  stats.expands += pending.proxyIds.length;
  if ((response.headers.get('x-selfgc-warnings') ?? '').includes('transcript-diverged')) stats.diverged += 1;
  // Recovery rounds whose proxy results brought content back (a marker), or said nothing is kept.
  for (const request of pending.upstream.slice(1)) {
    if (/No object \S+ is kept/.test(request.rawBody)) stats.expandMisses += 1;
    const last = request.rawBody.slice(request.rawBody.lastIndexOf(pending.proxyIds.at(-1) ?? '\u0000'));
    if (/MK\d+X/.test(last)) stats.expandHits += 1;
  }
  if (
    world.spec.protocol === 'text' &&
    route !== 'responses' &&
    pending.upstream.some((r) => r.rawBody.includes('expand(\\"'))
  )
    stats.textFolds += 1;
  if (PROXY_TOOL.test(raw)) fail(`${id}: the answer shows the proxy's tools: ${raw.slice(0, 500)}`);
  if (response.status < 200 || response.status >= 300) {
    providerShapedError(route, raw, response.status);
    // The proxy changes the prefix of the model's thinking: it answers for the refusal that brings.
    if (/bound to a different conversation/.test(raw))
      fail(`${id}: the client got the refusal of thinking bound to another prefix: ${raw.slice(0, 300)}`);
    return { ok: false, items: [], calls: [] };
  }
  if (/\n\s+at\s/.test(raw)) fail(`${id}: a stack trace in the answer`);
  let answer: Json;
  if (stream) {
    const { answer: accumulated, error } = accumulateStream(route, raw);
    if (error !== undefined) {
      // A stream that ends in the provider's error event: the client sees a failed turn.
      if (!upstreamBroke()) fail(`${id}: the stream failed though the upstream never did: ${error}`);
      return { ok: false, items: [], calls: [] };
    }
    const problems = streamGrammarProblems(route, raw);
    // A stream the upstream dropped, passed through as it came, ends early for the client too.
    if (problems.length > 0 && upstreamBroke()) {
      stats.dropped += 1;
      return { ok: false, items: [], calls: [] };
    }
    if (problems.length > 0) fail(`${id}: stream grammar: ${problems.join('; ')}`);
    answer = accumulated!;
  } else {
    answer = JSON.parse(raw);
  }
  return readAnswer(world, pending, answer, raw);
}

/** Send a conversation's history (or, for a retry, what it sent last) and take the answer. */
async function turn(
  h: Harness,
  slot: number,
  stream: boolean,
  plan: ReplyPlan[],
  replay: boolean,
  exclusive = false,
): Promise<void> {
  const conversation = h.world.slots[slot]!;
  const history = replay && conversation.sent !== undefined ? conversation.sent : conversation.history;
  conversation.sent = history;
  const answer = await exchange(h, slot, history, stream, plan, exclusive);
  if (!answer.ok) {
    conversation.history = history;
    return;
  }
  const next = [...history, ...answer.items];
  if (answer.calls.length > 0) next.push(...toolResults(h.world, answer.calls));
  else next.push(userPrompt(h.world.route, `Now go on with ${mint(h.world, 'MK')}.`));
  conversation.history = next;
}

function edit(h: Harness, step: Step): void {
  const { world } = h;
  const { route } = world;
  if (step.t === 'clear') {
    const conversation = world.slots[step.slot]!;
    conversation.history = clearOutputs(route, conversation.history, step.keep);
  } else if (step.t === 'rewind') {
    const conversation = world.slots[step.slot]!;
    const prompts = conversation.history.flatMap((item, index) => (isPrompt(route, item) ? [index] : []));
    const at = prompts[step.at % prompts.length]!;
    const text =
      at === 0 ? `Task ${mint(world, 'MK')}: ${SHARED_TASK}` : `Instead, look at ${mint(world, 'MK')}.`;
    conversation.history = [...conversation.history.slice(0, at), userPrompt(route, text)];
  } else if (step.t === 'cut') {
    const conversation = world.slots[step.slot]!;
    const ends = conversation.history.flatMap((item, index) =>
      isToolResult(route, item) && !isToolResult(route, conversation.history[index + 1] ?? {})
        ? [index + 1]
        : [],
    );
    if (ends.length > 0) conversation.history = conversation.history.slice(0, ends[step.at % ends.length]);
  } else if (step.t === 'rewrite') {
    // The client rewrites one earlier output in place (a file that changed, a truncation).
    const conversation = world.slots[step.slot]!;
    const results = conversation.history.flatMap((item, index) => (isToolResult(route, item) ? [index] : []));
    if (results.length === 0) return;
    const at = results[step.at % results.length]!;
    const text = `[output truncated by the client: ${mint(world, 'MK')}]`;
    const item = conversation.history[at]!;
    const rewritten = replaceOutput(route, item, text);
    conversation.history = conversation.history.map((entry, index) => (index === at ? rewritten : entry));
  } else if (step.t === 'dropMiddle') {
    // Cline's context truncation: whole turns taken out of the middle, the task kept.
    const conversation = world.slots[step.slot]!;
    const history = conversation.history;
    const starts = history.flatMap((item, index) =>
      index > 0 &&
      !isToolResult(route, item) &&
      (item.role === 'assistant' ||
        item.type === 'function_call' ||
        (item.type === 'message' && item.role === 'assistant')) &&
      !(
        history[index - 1]?.role === 'assistant' ||
        history[index - 1]?.type === 'function_call' ||
        (history[index - 1]?.type === 'message' && history[index - 1]?.role === 'assistant')
      )
        ? [index]
        : [],
    );
    // Turn boundaries: an assistant turn start; drop [starts[from], starts[from + count]).
    if (starts.length < 2) return;
    const from = step.from % (starts.length - 1);
    const to = Math.min(starts.length - 1, from + step.count);
    if (to <= from) return;
    const removed = history.slice(starts[from], starts[to]);
    // Only turns that end in their results (never a prompt the task depends on) are taken out.
    if (removed.some((item) => isPrompt(route, item))) return;
    conversation.history = [...history.slice(0, starts[from]), ...history.slice(starts[to])];
    stats.drops += 1;
  } else if (step.t === 'fork') {
    // The other slot becomes a copy of this conversation up to a turn (a resumed or forked session).
    const source = world.slots[step.slot]!;
    const ends = source.history.flatMap((item, index) =>
      isToolResult(route, item) && !isToolResult(route, source.history[index + 1] ?? {}) ? [index + 1] : [],
    );
    const end = ends.length === 0 ? source.history.length : ends[step.at % ends.length]!;
    world.slots[1 - step.slot] = { history: structuredClone(source.history.slice(0, end)), sent: undefined };
  } else if (step.t === 'swap') {
    world.slots[step.slot] = newConversation(world, step.sameTask, step.prefill);
  }
}

async function play(spec: RunSpec): Promise<void> {
  stats.runs += 1;
  const { route } = spec;
  textProtocol = spec.protocol === 'text' && route !== 'responses';
  const world: World = {
    route: spec.route,
    spec,
    serial: 0,
    keys: [],
    markers: [],
    thoughts: new Set(),
    slots: [],
  };
  const pending = new Map<string, Pending>();
  const fixture = await startProxyFixture({
    window: spec.window,
    reserveOutput: RESERVE_OUTPUT,
    streamChunkChars: 7,
    fragmentEvents: true,
    ...(spec.workers ? { workers: 1 } : {}),
    script: (request) => {
      const id = request.headers['x-fuzz-request'] ?? '';
      const owner = pending.get(id);
      if (owner === undefined) return { error: { status: 400, message: `unknown request ${id}` } };
      owner.upstream.push(request);
      const reply = modelReply(world, owner, request);
      for (const key of pointerKeys(request.rawBody)) if (!world.keys.includes(key)) world.keys.push(key);
      if (reply.thinking !== undefined) {
        // The scripted upstream signs each request's thinking with its index.
        const index = String(request.index).padStart(4, '0');
        world.thoughts.add(
          `${reply.thinking}\0${Buffer.from(`scripted-signature:scripted${index}`).toString('base64')}`,
        );
      }
      return reply;
    },
  });
  const served = await serveProxy(fixture.proxy, { port: 0 });
  const h: Harness = { fixture, served, world, pending, requests: 0, log: [] };
  harness = h;
  world.slots = [
    newConversation(world, spec.sameTask, spec.prefill[0]),
    newConversation(world, spec.sameTask, spec.prefill[1]),
  ];
  try {
    for (const [index, step] of spec.steps.entries()) {
      h.log.push(`step ${index}: ${step.t}`);
      if (step.t === 'send' || step.t === 'replay')
        await turn(h, step.slot, step.stream, step.plan, step.t === 'replay', true);
      else if (step.t === 'dup') {
        // One conversation sent twice at once (a client's parallel requests on one history).
        const conversation = world.slots[step.slot]!;
        const history = conversation.history;
        const answers = await Promise.all(
          [0, 1].map((copy) => exchange(h, step.slot, history, step.stream[copy]!, step.plans[copy]!)),
        );
        const taken = answers.find((answer) => answer.ok);
        conversation.sent = history;
        if (taken !== undefined) {
          const next = [...history, ...taken.items];
          if (taken.calls.length > 0) next.push(...toolResults(world, taken.calls));
          else next.push(userPrompt(route, `Now go on with ${mint(world, 'MK')}.`));
          conversation.history = next;
        }
      } else if (step.t === 'parallel')
        await Promise.all([0, 1].map((slot) => turn(h, slot, step.stream[slot]!, step.plans[slot]!, false)));
      else edit(h, step);
    }
  } catch (error) {
    const message = error instanceof Error ? error.message : String(error);
    throw new Error(
      `${message}\n--- run (${spec.route}, headers ${spec.headers}):\n${h.log.slice(-12).join('\n')}`,
    );
  } finally {
    harness = undefined;
    await served.close();
    await fixture.close();
  }
}

const RUNS = Number(process.env.FUZZ_RUNS ?? 40);
const SEED = Number(process.env.FUZZ_SEED ?? 20_251_207);

describe('proxy fuzz: agent clients over real HTTP, state bound to content', () => {
  it.runIf(process.env.FUZZ_CASE !== undefined)('replays FUZZ_CASE', async () => {
    await play(JSON.parse(process.env.FUZZ_CASE!) as RunSpec);
  });

  it.skipIf(process.env.FUZZ_CASE !== undefined)(
    `holds the invariants over ${RUNS} seeded runs of up to 25 steps`,
    async () => {
      await fc.assert(fc.asyncProperty(runArb, play), {
        seed: SEED,
        numRuns: RUNS,
        endOnFailure: process.env.FUZZ_SHRINK === undefined,
        verbose: 0,
      });
      // A fuzz that never commits, recovers, streams or diverges proves little.
      for (const key of ['commits', 'recoveryRounds', 'streams', 'diverged', 'shownHits'] as const)
        expect(stats[key], key).toBeGreaterThan(0);
    },
    process.env.FUZZ_SHRINK === undefined ? 120_000 : 1_800_000,
  );
  afterAll(() => console.log('fuzz stats', stats));
});
