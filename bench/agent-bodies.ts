/**
 * Agent-sized request bodies for the proxy benches: what a coding agent CLI sends on each turn of
 * a long session. A large system prompt or `instructions`, 200 tool definitions with realistic
 * JSON schemas (over 100 KB of JSON), and a conversation that grows by one tool round per turn —
 * the assistant says what it does next and calls a tool, the tool answers with a file, a command's
 * output or a search — with a new user request every few rounds. Shapes follow the clients:
 * Claude Code's Anthropic Messages (system blocks, `metadata.user_id`, breakpoints on the last
 * two user turns), Codex's Responses (developer and environment messages, reasoning items with
 * encrypted content, `prompt_cache_key`), and a Chat Completions agent. Everything derives from a
 * seed, so a session's body at turn N is the same bytes in every run.
 */
import { createHash } from 'node:crypto';

export type AgentRoute = 'messages' | 'responses' | 'chat';

export const AGENT_ROUTE_PATHS: Record<AgentRoute, string> = {
  messages: '/v1/messages',
  responses: '/v1/responses',
  chat: '/v1/chat/completions',
};

/** Tools each agent declares. */
export const AGENT_TOOL_COUNT = 200;

/** Rounds between two user requests. */
const ROUNDS_PER_REQUEST = 8;

/** A deterministic stream of numbers in [0, 1) drawn from a seed. */
function drawer(seed: string): () => number {
  let counter = 0;
  let block = Buffer.alloc(0);
  let offset = 0;
  return () => {
    if (offset + 4 > block.length) {
      block = createHash('sha256').update(`${seed}\0${counter}`).digest();
      counter += 1;
      offset = 0;
    }
    const value = block.readUInt32BE(offset) / 2 ** 32;
    offset += 4;
    return value;
  };
}

const WORDS = [
  'request',
  'session',
  'buffer',
  'handler',
  'config',
  'parser',
  'token',
  'window',
  'ledger',
  'record',
  'stream',
  'upstream',
  'answer',
  'commit',
  'object',
  'payload',
  'index',
  'schema',
  'cursor',
  'offset',
  'limit',
  'retry',
  'timeout',
  'module',
  'worker',
  'thread',
  'queue',
  'event',
  'status',
  'header',
  'context',
  'result',
];

function pick<T>(draw: () => number, values: readonly T[]): T {
  return values[Math.floor(draw() * values.length)]!;
}

function words(draw: () => number, count: number): string {
  return Array.from({ length: count }, () => pick(draw, WORDS)).join(' ');
}

function identifier(draw: () => number): string {
  const first = pick(draw, WORDS);
  const second = pick(draw, WORDS);
  return `${first}${second[0]!.toUpperCase()}${second.slice(1)}${Math.floor(draw() * 100)}`;
}

/** A property of a tool's argument schema. */
function schemaProperty(draw: () => number): Record<string, unknown> {
  const description = `The ${words(draw, 2)} to use.`;
  const kind = draw();
  if (kind < 0.45) return { type: 'string', description };
  if (kind < 0.6) return { type: 'number', description, minimum: 0 };
  if (kind < 0.7) return { type: 'boolean', description };
  if (kind < 0.9) {
    return { type: 'string', enum: [pick(draw, WORDS), pick(draw, WORDS), pick(draw, WORDS)], description };
  }
  return {
    type: 'array',
    description,
    items: {
      type: 'object',
      properties: { name: { type: 'string' }, value: { type: 'string' } },
      required: ['name'],
      additionalProperties: false,
    },
  };
}

interface NeutralTool {
  name: string;
  description: string;
  parameters: Record<string, unknown>;
}

/** The agent's tools in neutral form: built-in file and shell tools, then MCP servers' tools. */
function agentTools(count: number): NeutralTool[] {
  const draw = drawer('agent-tools');
  const builtins = [
    'read_file',
    'bash',
    'grep',
    'edit_file',
    'write_file',
    'glob',
    'web_fetch',
    'todo_write',
  ];
  return Array.from({ length: count }, (_, index) => {
    const name = builtins[index] ?? `mcp__server${Math.floor(index / 12)}__${identifier(draw)}`;
    const properties: Record<string, unknown> = {};
    const fields = 2 + Math.floor(draw() * 2);
    for (let field = 0; field < fields; field += 1) properties[identifier(draw)] = schemaProperty(draw);
    const required = Object.keys(properties).slice(0, 2);
    const description = Array.from({ length: 1 + Math.floor(draw() * 2) }, () => `${words(draw, 9)}.`)
      .join(' ')
      .replace(/^./, (letter) => letter.toUpperCase());
    return {
      name,
      description,
      parameters: {
        type: 'object',
        properties,
        required,
        additionalProperties: false,
        $schema: 'http://json-schema.org/draft-07/schema#',
      },
    };
  });
}

function systemPrompt(chars: number): string {
  const draw = drawer('system-prompt');
  const lines = [
    'You are an interactive coding agent. Use the tools to read, search and edit the repository.',
  ];
  while (lines.join('\n').length < chars) {
    lines.push(`- When the ${words(draw, 3)} changes, ${words(draw, 12)}.`);
    if (draw() < 0.1) lines.push(`\n# ${words(draw, 2)}\n`);
  }
  return lines.join('\n');
}

/** One tool round: what the assistant says and calls, and what the tool answers. */
interface Round {
  /** A user request opening this round, every few rounds. */
  request?: string;
  note: string;
  tool: string;
  input: Record<string, unknown>;
  output: string;
  reasoning: string;
}

function codeLines(draw: () => number, path: string, lines: number): string {
  const rows = [`// ${path}`, `import { ${identifier(draw)} } from './${pick(draw, WORDS)}.js';`, ''];
  for (let line = 0; line < lines; line += 1) {
    const depth = '  '.repeat(Math.floor(draw() * 3));
    const roll = draw();
    if (roll < 0.15) rows.push(`${depth}export function ${identifier(draw)}(${pick(draw, WORDS)}: string) {`);
    else if (roll < 0.3) rows.push(`${depth}}`);
    else if (roll < 0.45) rows.push(`${depth}// ${words(draw, 7)}`);
    else
      rows.push(
        `${depth}const ${identifier(draw)} = ${identifier(draw)}(${identifier(draw)}, ${Math.floor(draw() * 1000)});`,
      );
  }
  return rows.join('\n');
}

function roundOf(seed: string, index: number): Round {
  const draw = drawer(`${seed}\0round\0${index}`);
  const path = `src/${pick(draw, WORDS)}/${identifier(draw)}.ts`;
  // Outputs from a few hundred characters to some 15 KB: most small, a few large.
  const lines = Math.floor(10 + draw() ** 2 * 330);
  const roll = draw();
  const common = {
    note: `Next I will look at ${path} to see how the ${words(draw, 2)} is handled.`,
    reasoning: `The ${words(draw, 4)} depends on ${path}; ${words(draw, 14)}.`,
    ...(index % ROUNDS_PER_REQUEST === 0 && index > 0
      ? { request: `Now ${words(draw, 6)} in ${path} and make sure ${words(draw, 8)}.` }
      : {}),
  };
  if (roll < 0.5) {
    return { ...common, tool: 'read_file', input: { file_path: path }, output: codeLines(draw, path, lines) };
  }
  if (roll < 0.8) {
    const command = `npx vitest run ${path.replace(/\.ts$/, '.test.ts')}`;
    const output = Array.from(
      { length: lines },
      (_, line) =>
        `${line % 9 === 0 ? ' FAIL' : ' ✓'} ${path} > ${words(draw, 5)} ${Math.floor(draw() * 90)}ms`,
    ).join('\n');
    return { ...common, tool: 'bash', input: { command, description: 'Run the tests' }, output };
  }
  const pattern = identifier(draw);
  const output = Array.from(
    { length: Math.ceil(lines / 3) },
    () =>
      `src/${pick(draw, WORDS)}/${identifier(draw)}.ts:${Math.floor(draw() * 400)}:  ${pattern}(${words(draw, 3)})`,
  ).join('\n');
  return { ...common, tool: 'grep', input: { pattern, path: 'src' }, output };
}

/** A growing agent session: its body at each turn (turn 1 holds the task and one round). */
export interface AgentSession {
  route: AgentRoute;
  /** The client's own session id (`metadata.user_id`, `prompt_cache_key`). */
  clientSessionId: string;
  /** The request body after `rounds` tool rounds. */
  bodyAt(rounds: number): Record<string, unknown>;
}

/** A rough token estimate of a body (characters / 4), for how far a session grows. */
export function approximateTokens(bodyText: string): number {
  return Math.ceil(bodyText.length / 4);
}

export function createAgentSession(route: AgentRoute, seed: string): AgentSession {
  const rounds: Round[] = [];
  const roundAt = (index: number) => {
    while (rounds.length <= index) rounds.push(roundOf(seed, rounds.length));
    return rounds[index]!;
  };
  const clientSessionId = createHash('sha256').update(`session\0${seed}`).digest('hex').slice(0, 32);
  const uuid = `${clientSessionId.slice(0, 8)}-${clientSessionId.slice(8, 12)}-4${clientSessionId.slice(13, 16)}-8${clientSessionId.slice(17, 20)}-${clientSessionId.slice(20, 32)}`;
  const task = `Task for ${seed}: find why the ${words(drawer(seed), 4)} breaks and fix it with tests.`;
  const build = { task, roundAt, uuid };
  return {
    route,
    clientSessionId: uuid,
    bodyAt(count) {
      if (route === 'messages') return messagesBody(build, count);
      if (route === 'responses') return responsesBody(build, count);
      return chatBody(build, count);
    },
  };
}

interface Build {
  task: string;
  roundAt(index: number): Round;
  uuid: string;
}

const TOOLS = agentTools(AGENT_TOOL_COUNT);
const SYSTEM = systemPrompt(14_000);

const EPHEMERAL = { type: 'ephemeral' };

/** Claude Code's shape: system blocks, breakpoints on the last two user turns, its metadata. */
function messagesBody(build: Build, count: number): Record<string, unknown> {
  const messages: Array<{ role: string; content: Array<Record<string, unknown>> }> = [
    {
      role: 'user',
      content: [
        {
          type: 'text',
          text: '<system-reminder>\nAs you answer, use the repository context.\n</system-reminder>',
        },
        { type: 'text', text: build.task },
      ],
    },
  ];
  for (let index = 0; index < count; index += 1) {
    const round = build.roundAt(index);
    const id = `toolu_${build.uuid.slice(0, 8)}_${index}`;
    messages.push({
      role: 'assistant',
      content: [
        { type: 'text', text: round.note },
        { type: 'tool_use', id, name: round.tool, input: round.input },
      ],
    });
    const results: Array<Record<string, unknown>> = [
      { type: 'tool_result', tool_use_id: id, content: round.output },
    ];
    if (round.request) results.push({ type: 'text', text: round.request });
    messages.push({ role: 'user', content: results });
  }
  let marked = 0;
  for (let index = messages.length - 1; index >= 0 && marked < 2; index -= 1) {
    const message = messages[index]!;
    if (message.role !== 'user') continue;
    const last = message.content.length - 1;
    message.content[last] = { ...message.content[last], cache_control: EPHEMERAL };
    marked += 1;
  }
  return {
    model: 'claude-sonnet-4-5',
    max_tokens: 32_000,
    system: [
      { type: 'text', text: "You are Claude Code, Anthropic's official CLI for Claude." },
      { type: 'text', text: SYSTEM, cache_control: EPHEMERAL },
    ],
    tools: TOOLS.map((tool) => ({
      name: tool.name,
      description: tool.description,
      input_schema: tool.parameters,
    })),
    metadata: { user_id: `user_${'0'.repeat(64)}_account_${build.uuid}_session_${build.uuid}` },
    messages,
    temperature: 1,
  };
}

/** Codex's shape: developer and environment messages, reasoning items, `prompt_cache_key`. */
function responsesBody(build: Build, count: number): Record<string, unknown> {
  const text = (role: string, value: string) => ({
    type: 'message',
    role,
    content: [{ type: 'input_text', text: value }],
  });
  const input: Array<Record<string, unknown>> = [
    text(
      'developer',
      '<permissions instructions>\nFilesystem sandboxing: workspace-write.\n</permissions instructions>',
    ),
    text(
      'user',
      '<environment_context>\n  <cwd>/work/project</cwd>\n  <shell>bash</shell>\n</environment_context>',
    ),
    text('user', build.task),
  ];
  for (let index = 0; index < count; index += 1) {
    const round = build.roundAt(index);
    const callId = `call_${build.uuid.slice(0, 8)}_${index}`;
    input.push({
      type: 'reasoning',
      id: `rs_${build.uuid.slice(0, 8)}_${index}`,
      summary: [{ type: 'summary_text', text: round.reasoning }],
      encrypted_content: Buffer.from(round.reasoning.repeat(3)).toString('base64'),
    });
    input.push({
      type: 'message',
      role: 'assistant',
      content: [{ type: 'output_text', text: round.note }],
    });
    input.push({
      type: 'function_call',
      call_id: callId,
      name: round.tool,
      arguments: JSON.stringify(round.input),
    });
    input.push({ type: 'function_call_output', call_id: callId, output: round.output });
    if (round.request) input.push(text('user', round.request));
  }
  return {
    model: 'gpt-5-codex',
    instructions: SYSTEM,
    input,
    tools: TOOLS.map((tool) => ({ type: 'function', ...tool, strict: false })),
    tool_choice: 'auto',
    parallel_tool_calls: false,
    reasoning: { effort: 'medium', summary: 'auto' },
    store: false,
    include: ['reasoning.encrypted_content'],
    prompt_cache_key: build.uuid,
  };
}

/** A Chat Completions agent: a system message, tool calls and tool messages. */
function chatBody(build: Build, count: number): Record<string, unknown> {
  const messages: Array<Record<string, unknown>> = [
    { role: 'system', content: SYSTEM },
    { role: 'user', content: build.task },
  ];
  for (let index = 0; index < count; index += 1) {
    const round = build.roundAt(index);
    const id = `call_${build.uuid.slice(0, 8)}_${index}`;
    messages.push({
      role: 'assistant',
      content: round.note,
      tool_calls: [
        { id, type: 'function', function: { name: round.tool, arguments: JSON.stringify(round.input) } },
      ],
    });
    messages.push({ role: 'tool', tool_call_id: id, content: round.output });
    if (round.request) messages.push({ role: 'user', content: round.request });
  }
  return {
    model: 'gpt-4.1',
    messages,
    tools: TOOLS.map((tool) => ({ type: 'function', function: tool })),
    prompt_cache_key: build.uuid,
  };
}
