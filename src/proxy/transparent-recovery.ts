/**
 * Transparent recovery: when the view holds folded or masked objects, the model gets two extra
 * tools, `selfgc_expand` and `selfgc_search_context`. When an answer calls only those, the proxy
 * answers them from the sidecar and asks the upstream again (at most `maxRounds` times), so the
 * client only ever sees the final answer. Streaming requests are not recovered (their answer is
 * already on its way to the client when its tool calls appear); they keep the recovery pointers,
 * which a client with its own GC tools can follow.
 */
import { toSelfGcError } from '../core/errors.js';
import type { Governor } from '../core/governor/governor-types.js';
import { type Message, partText } from '../core/transcript.js';
import {
  isJsonObject,
  type JsonObject,
  type ToolDefinition,
  type WireDialect,
  type WireToolCall,
} from './wire-dialect.js';

export const EXPAND_TOOL = 'selfgc_expand';
export const SEARCH_TOOL = 'selfgc_search_context';

export const RECOVERY_TOOLS: readonly ToolDefinition[] = [
  {
    name: EXPAND_TOOL,
    description:
      'Recover the exact original content of an object of this conversation that was folded or masked. ' +
      'Call it when a placeholder says expand("<id>") and you need the original text.',
    parameters: {
      type: 'object',
      properties: { id: { type: 'string', description: 'The object id, e.g. function:read_file:12' } },
      required: ['id'],
      additionalProperties: false,
    },
  },
  {
    name: SEARCH_TOOL,
    description:
      'Search the exact content of folded, masked and pruned objects of this conversation. ' +
      'Returns matching object ids with snippets.',
    parameters: {
      type: 'object',
      properties: { query: { type: 'string', description: 'Words to look for' } },
      required: ['query'],
      additionalProperties: false,
    },
  },
];

/** What recovery asks of the governor: the sidecar, by id or by search. */
export type RecoveryGovernor = Pick<Governor, 'expand' | 'searchContext'>;

const INTERNAL_TOOLS = new Set(RECOVERY_TOOLS.map((tool) => tool.name));

/** Whether a view shows a recovery pointer (every fold and mask replacement names `expand("<id>")`). */
export function hasRecoveryPointers(view: readonly Message[]): boolean {
  return view.some((message) => message.parts.some((part) => partText(part).includes('expand("')));
}

/** Calls that recovery can answer: every call of the answer is internal (and there is one). */
export function internalCallsOf(dialect: WireDialect, answer: unknown): WireToolCall[] {
  const calls = dialect.toolCallsOf(answer);
  return calls.length > 0 && calls.every((call) => INTERNAL_TOOLS.has(call.name)) ? calls : [];
}

function argumentOf(call: WireToolCall, field: string): string | undefined {
  try {
    const parsed: unknown = JSON.parse(call.arguments);
    const value = isJsonObject(parsed) ? parsed[field] : undefined;
    return typeof value === 'string' ? value : undefined;
  } catch {
    return undefined;
  }
}

/** The text result of one internal call, from the session's sidecar. */
export async function answerInternalCall(
  governor: RecoveryGovernor,
  sessionId: string,
  call: WireToolCall,
): Promise<string> {
  try {
    if (call.name === EXPAND_TOOL) {
      const id = argumentOf(call, 'id');
      if (id === undefined) return 'selfgc_expand needs {"id": "<object id>"}.';
      return (await governor.expand(sessionId, id)) ?? `No object ${id} is kept for this conversation.`;
    }
    const query = argumentOf(call, 'query');
    if (query === undefined) return 'selfgc_search_context needs {"query": "<words>"}.';
    const hits = await governor.searchContext(sessionId, query);
    if (hits.length === 0) return `Nothing kept for this conversation matches "${query}".`;
    return hits.map((hit) => `${hit.objectId}: ${hit.snippet}`).join('\n');
  } catch (error) {
    // The model (and through it the client) reads this: the code only, never the store's message.
    return `Recovery failed (${toSelfGcError(error).code}).`;
  }
}

/** An upstream answer read in full. */
export interface BufferedAnswer {
  status: number;
  headers: Headers;
  text: string;
  /** The parsed body when it is JSON. */
  json: unknown;
}

export interface RecoveryOptions {
  dialect: WireDialect;
  governor: RecoveryGovernor;
  /** The store session id. */
  sessionId: string;
  /** The request as first sent (with the recovery tools); read only when recovery runs. */
  body: () => JsonObject;
  first: BufferedAnswer;
  send(body: JsonObject): Promise<BufferedAnswer>;
  maxRounds: number;
  onInternalCall?(name: string): void;
}

/** The final answer as the client would have got it without the proxy's tools. */
export function hideRecovery(
  dialect: WireDialect,
  answer: BufferedAnswer,
  client: JsonObject,
): BufferedAnswer {
  if (dialect.hideAddedTools === undefined || !isJsonObject(answer.json)) return answer;
  const json = dialect.hideAddedTools(answer.json, client, INTERNAL_TOOLS);
  return { ...answer, json, text: JSON.stringify(json) };
}

/** Answer internal calls until the upstream's answer has none; returns that answer. */
export async function recoverTransparently(options: RecoveryOptions): Promise<BufferedAnswer> {
  let answer = options.first;
  let body: JsonObject | undefined;
  for (let round = 1; round <= options.maxRounds; round += 1) {
    if (answer.status !== 200) return answer;
    const calls = internalCallsOf(options.dialect, answer.json);
    if (calls.length === 0) return answer;
    const results = [];
    for (const call of calls) {
      options.onInternalCall?.(call.name);
      results.push({
        id: call.id,
        output: await answerInternalCall(options.governor, options.sessionId, call),
      });
    }
    body = options.dialect.withToolResults(body ?? options.body(), answer.json, results);
    // The last round may not call tools again, so the client never receives an internal call.
    if (round === options.maxRounds) body = options.dialect.withoutToolUse(body);
    answer = await options.send(body);
  }
  return answer;
}
