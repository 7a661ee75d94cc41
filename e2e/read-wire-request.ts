/**
 * A model request as it went over the wire, read into one provider-neutral shape: the turns with
 * their text, tool calls and tool results, the tool definitions, the output reserve and the
 * prompt-cache breakpoints. Written apart from the proxy's own adapters on purpose: the suite
 * judges what the proxy sends, so it must not read requests through the code it judges.
 *
 * Anthropic Messages (`system`, `messages` of `text`/`tool_use`/`tool_result` blocks), OpenAI
 * Responses (`instructions`, `input` of `message`/`function_call`/`function_call_output` items)
 * and OpenAI Chat Completions (`messages` with `tool_calls` and `role: tool`).
 */

export type WireRoute = 'messages' | 'responses' | 'chat';

export interface WireCall {
  id: string;
  name: string;
  /** JSON text of the arguments. */
  arguments: string;
}

export interface WireResult {
  /** The id of the call this answers. */
  id: string;
  text: string;
}

/** One message (Messages, Chat) or one input item (Responses). */
export interface WireTurn {
  role: string;
  /** Visible text: text blocks, parts and message content (not tool results). */
  text: string;
  calls: WireCall[];
  results: WireResult[];
}

export interface WireRequest {
  route: WireRoute;
  model: string;
  /** System prompt text: `system`, `instructions`, and system/developer messages before the first user turn. */
  system: string;
  turns: WireTurn[];
  /** Every tool definition as sent (JSON), namespaces flattened. */
  tools: Array<{ name: string; json: string }>;
  /** `max_tokens`, `max_output_tokens` or `max_completion_tokens`; undefined when absent. */
  maxOutputTokens: number | undefined;
  /** Objects carrying `cache_control` anywhere in the body (Anthropic prompt-cache breakpoints). */
  cacheBreakpoints: number;
  stream: boolean;
  /** The input ends in a `compaction_trigger` item: Codex's remote compaction (Responses). */
  compactionTrigger: boolean;
}

type Json = Record<string, unknown>;

/** What each route's reader takes from a body; the rest is read the same way for every route. */
type BodyReading = Omit<WireRequest, 'route' | 'model' | 'cacheBreakpoints' | 'stream' | 'compactionTrigger'>;

function isObject(value: unknown): value is Json {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}

function arrayOf(value: unknown): unknown[] {
  return Array.isArray(value) ? value : [];
}

function stringOf(value: unknown): string {
  return typeof value === 'string' ? value : '';
}

/** Text of a content value: a string, or an array of blocks/parts with `text` (or nested `content`). */
export function contentText(content: unknown): string {
  if (typeof content === 'string') return content;
  return arrayOf(content)
    .map((part) => {
      if (typeof part === 'string') return part;
      if (!isObject(part)) return '';
      if (typeof part.text === 'string') return part.text;
      if (typeof part.thinking === 'string') return part.thinking;
      if (part.content !== undefined) return contentText(part.content);
      return '';
    })
    .filter((text) => text !== '')
    .join('\n');
}

function argumentsText(value: unknown): string {
  return typeof value === 'string' ? value : JSON.stringify(value ?? {});
}

function countCacheControl(value: unknown): number {
  if (Array.isArray(value)) return value.reduce<number>((sum, item) => sum + countCacheControl(item), 0);
  if (!isObject(value)) return 0;
  let count = value.cache_control === undefined || value.cache_control === null ? 0 : 1;
  for (const [key, child] of Object.entries(value)) {
    if (key !== 'cache_control') count += countCacheControl(child);
  }
  return count;
}

function toolEntries(tools: unknown, nameOf: (tool: Json) => string): Array<{ name: string; json: string }> {
  return arrayOf(tools).flatMap((tool) => {
    if (!isObject(tool)) return [];
    if (tool.type === 'namespace' && Array.isArray(tool.tools)) {
      const { tools: inner, ...shell } = tool;
      return [{ name: stringOf(tool.name), json: JSON.stringify(shell) }, ...toolEntries(inner, nameOf)];
    }
    return [{ name: nameOf(tool), json: JSON.stringify(tool) }];
  });
}

function readMessages(body: Json): BodyReading {
  const system = typeof body.system === 'string' ? body.system : contentText(body.system);
  const turns = arrayOf(body.messages)
    .filter(isObject)
    .map((message): WireTurn => {
      const blocks = typeof message.content === 'string' ? [] : arrayOf(message.content).filter(isObject);
      const calls = blocks
        .filter((block) => block.type === 'tool_use' || block.type === 'server_tool_use')
        .map((block) => ({
          id: stringOf(block.id),
          name: stringOf(block.name),
          arguments: argumentsText(block.input),
        }));
      const results = blocks
        .filter((block) => block.type === 'tool_result')
        .map((block) => ({ id: stringOf(block.tool_use_id), text: contentText(block.content) }));
      const text =
        typeof message.content === 'string'
          ? message.content
          : contentText(blocks.filter((block) => block.type === 'text' || block.type === 'thinking'));
      return { role: stringOf(message.role), text, calls, results };
    });
  return {
    system,
    turns,
    tools: toolEntries(body.tools, (tool) => stringOf(tool.name)),
    maxOutputTokens: typeof body.max_tokens === 'number' ? body.max_tokens : undefined,
  };
}

const RESPONSES_CALLS = new Set(['function_call', 'custom_tool_call', 'local_shell_call']);
const RESPONSES_RESULTS = new Set([
  'function_call_output',
  'custom_tool_call_output',
  'local_shell_call_output',
]);

function readResponses(body: Json): BodyReading {
  const items =
    typeof body.input === 'string'
      ? [{ type: 'message', role: 'user', content: body.input }]
      : arrayOf(body.input);
  const turns = items.filter(isObject).map((item): WireTurn => {
    const type = stringOf(item.type) || 'message';
    if (RESPONSES_CALLS.has(type)) {
      const args = item.arguments ?? item.input ?? item.action;
      const call = {
        id: stringOf(item.call_id),
        name: stringOf(item.name) || type,
        arguments: argumentsText(args),
      };
      return { role: 'assistant', text: '', calls: [call], results: [] };
    }
    if (RESPONSES_RESULTS.has(type)) {
      const output = typeof item.output === 'string' ? item.output : contentText(item.output);
      return { role: 'tool', text: '', calls: [], results: [{ id: stringOf(item.call_id), text: output }] };
    }
    if (type === 'reasoning')
      return { role: 'assistant', text: contentText(item.summary), calls: [], results: [] };
    // What a remote compaction left of the history: the API reads it, the scripted model too.
    if (type === 'compaction')
      return { role: 'assistant', text: stringOf(item.encrypted_content), calls: [], results: [] };
    return { role: stringOf(item.role), text: contentText(item.content), calls: [], results: [] };
  });
  return {
    system: stringOf(body.instructions),
    turns,
    tools: toolEntries(body.tools, (tool) => stringOf(tool.name) || stringOf(tool.type)),
    maxOutputTokens: typeof body.max_output_tokens === 'number' ? body.max_output_tokens : undefined,
  };
}

function readChat(body: Json): BodyReading {
  const turns = arrayOf(body.messages)
    .filter(isObject)
    .map((message): WireTurn => {
      const role = stringOf(message.role);
      const calls = arrayOf(message.tool_calls)
        .filter(isObject)
        .map((call) => {
          const fn = isObject(call.function) ? call.function : {};
          return { id: stringOf(call.id), name: stringOf(fn.name), arguments: argumentsText(fn.arguments) };
        });
      if (role === 'tool') {
        return {
          role,
          text: '',
          calls,
          results: [{ id: stringOf(message.tool_call_id), text: contentText(message.content) }],
        };
      }
      return { role, text: contentText(message.content), calls, results: [] };
    });
  const maxTokens = body.max_completion_tokens ?? body.max_tokens;
  return {
    system: '',
    turns,
    tools: toolEntries(body.tools, (tool) =>
      isObject(tool.function) ? stringOf(tool.function.name) : stringOf(tool.type),
    ),
    maxOutputTokens: typeof maxTokens === 'number' ? maxTokens : undefined,
  };
}

/** The route of a request path (`/v1/messages`, `/v1/responses`, `/v1/chat/completions`), or undefined. */
export function routeOfPath(url: string): WireRoute | undefined {
  const path = url.split('?')[0]!;
  if (path.endsWith('/messages')) return 'messages';
  if (path.endsWith('/responses')) return 'responses';
  if (path.endsWith('/chat/completions')) return 'chat';
  return undefined;
}

/** Read a parsed request body of the given route. Fields of a wrong shape read as empty. */
export function readWireRequest(route: WireRoute, body: unknown): WireRequest {
  const json = isObject(body) ? body : {};
  const read =
    route === 'messages' ? readMessages(json) : route === 'responses' ? readResponses(json) : readChat(json);
  return {
    route,
    model: stringOf(json.model),
    ...read,
    cacheBreakpoints: countCacheControl(json),
    stream: json.stream === true,
    compactionTrigger: route === 'responses' && endsInCompactionTrigger(json.input),
  };
}

function endsInCompactionTrigger(input: unknown): boolean {
  const last = arrayOf(input).at(-1);
  return isObject(last) && last.type === 'compaction_trigger';
}

/** The text of the request's first user turn: what opens its conversation. */
export function openingText(request: WireRequest): string {
  return request.turns.find((turn) => turn.role === 'user')?.text ?? '';
}

/** The text of the request's last user turn after the last model turn (not its tool results). */
export function lastUserText(request: WireRequest): string {
  for (let index = request.turns.length - 1; index >= 0; index -= 1) {
    const turn = request.turns[index]!;
    if (turn.role === 'user' && turn.text !== '') return turn.text;
    if (turn.role === 'assistant') break;
  }
  return '';
}

/** The results of the request's last turns: the tool results after the last model turn. */
export function latestResults(request: WireRequest): WireResult[] {
  const results: WireResult[] = [];
  for (let index = request.turns.length - 1; index >= 0; index -= 1) {
    const turn = request.turns[index]!;
    if (turn.role === 'assistant') break;
    results.unshift(...turn.results);
  }
  return results;
}

/** Every text of a request in one string: system, turns, tool arguments and results. */
export function requestText(request: WireRequest): string {
  const parts = [request.system];
  for (const turn of request.turns) {
    parts.push(
      turn.text,
      ...turn.calls.map((call) => call.arguments),
      ...turn.results.map((result) => result.text),
    );
  }
  return parts.join('\n');
}
