/**
 * Transparent recovery: when the view holds folded or masked objects, the model gets two extra
 * tools, `selfgc_expand` and `selfgc_search_context`. When an answer calls them, the proxy
 * answers them from the sidecar and asks the upstream again (at most `maxRounds` times), so the
 * client only ever sees the final answer, streamed (`stream-recovery.ts`) or not.
 *
 * An answer that calls the proxy's tools and the client's in the same turn goes on upstream with
 * only the proxy's calls in its turn: the client's calls are dropped, and the model, given the
 * recovered content, issues again the ones it still needs. The client never receives a call it
 * cannot answer, and what goes upstream keeps every call paired with its result.
 */
import { toSelfGcError } from '../core/errors.js';
import type { Governor } from '../core/governor/governor-types.js';
import type { TokenCounter } from '../core/tokens.js';
import { type Message, partText } from '../core/transcript.js';
import { AGENT_TOOLS, answerAgentCall, type CommitAgentPlan, isAgentTool } from './agent-tools.js';
import {
  createRecoveryBudget,
  cutPage,
  MIN_PAGE_TOKENS,
  NOTE_TOKENS,
  type RecoveryBudget,
  type RecoveryWindow,
} from './recovery-budget.js';
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
      'Call it when a placeholder says expand("<id>") and you need the original text. Long content ' +
      'comes in pages: a page ends with a line giving the offset of the next one.',
    parameters: {
      type: 'object',
      properties: {
        id: { type: 'string', description: 'The object id, e.g. function:read_file:12' },
        offset: {
          type: 'integer',
          minimum: 0,
          description: 'Character offset to start from, as a previous page names it (default 0)',
        },
      },
      required: ['id'],
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
    },
  },
];

/**
 * What recovery asks of the governor: the sidecar, by id or by search; in the agent-driven mode,
 * also a commit of the agent's own plan.
 */
export type RecoveryGovernor = Pick<Governor, 'expand' | 'searchContext'> & {
  commitAgentPlan?: CommitAgentPlan;
};

/** The proxy's own tools: recovery's, and the agent's GC tools (never a client's names). */
const INTERNAL_TOOLS = new Set([...RECOVERY_TOOLS, ...AGENT_TOOLS].map((tool) => tool.name));

/** Whether a tool is one of the proxy's own. */
export function isRecoveryTool(name: string): boolean {
  return INTERNAL_TOOLS.has(name);
}

/**
 * Whether each message read so far shows a recovery pointer: the messages a conversation repeats
 * are the same objects request after request (the transcript cache keeps them), and are read once.
 */
const showsPointer = new WeakMap<Message, boolean>();

/** Whether a view shows a recovery pointer (every fold and mask replacement names `expand("<id>")`). */
export function hasRecoveryPointers(view: readonly Message[]): boolean {
  return view.some((message) => {
    let shows = showsPointer.get(message);
    if (shows === undefined) {
      shows = message.parts.some((part) => partText(part).includes('expand("'));
      showsPointer.set(message, shows);
    }
    return shows;
  });
}

function argumentsOf(call: WireToolCall): JsonObject {
  try {
    const parsed: unknown = JSON.parse(call.arguments);
    return isJsonObject(parsed) ? parsed : {};
  } catch {
    return {};
  }
}

/** How much one result may hold. */
export interface ResultRoom {
  tokens: number;
  counter: TokenCounter;
}

function noRoom(what: string, room: ResultRoom): string {
  return (
    `[selfgc: no room left in the context window for ${what} now (${room.tokens} tokens free); ` +
    'go on with what you have, or ask again in a later turn.]'
  );
}

async function expandPage(
  governor: RecoveryGovernor,
  sessionId: string,
  call: WireToolCall,
  room: ResultRoom,
): Promise<string> {
  const { id, offset: rawOffset } = argumentsOf(call);
  if (typeof id !== 'string') return 'selfgc_expand needs {"id": "<object id>"}.';
  const text = await governor.expand(sessionId, id);
  if (text === undefined) return `No object ${id} is kept for this conversation.`;
  const offset = typeof rawOffset === 'number' && Number.isInteger(rawOffset) ? Math.max(0, rawOffset) : 0;
  if (offset > 0 && offset >= text.length) {
    return `[selfgc: ${id} has ${text.length} characters; offset ${offset} is past its end.]`;
  }
  if (room.tokens < MIN_PAGE_TOKENS) return noRoom(id, room);
  const { page, end } = cutPage(text, offset, room.tokens, room.counter);
  if (page === '') return noRoom(id, room);
  if (offset === 0 && end === text.length) return text;
  const next =
    end < text.length
      ? `Call selfgc_expand with {"id": ${JSON.stringify(id)}, "offset": ${end}} for the next page.`
      : 'This is the last page.';
  return `${page}\n[selfgc: characters ${offset}–${end} of ${text.length} of ${id}. ${next}]`;
}

async function searchHits(
  governor: RecoveryGovernor,
  sessionId: string,
  call: WireToolCall,
  room: ResultRoom,
): Promise<string> {
  const { query } = argumentsOf(call);
  if (typeof query !== 'string') return 'selfgc_search_context needs {"query": "<words>"}.';
  const hits = await governor.searchContext(sessionId, query);
  if (hits.length === 0) return `Nothing kept for this conversation matches "${query}".`;
  const lines: string[] = [];
  let tokens = 0;
  for (const hit of hits) {
    const line = `${hit.objectId}: ${hit.snippet}`;
    tokens += room.counter.count(line) + 1;
    if (tokens > room.tokens) break;
    lines.push(line);
  }
  if (lines.length === 0) return noRoom(`the matches of "${query}"`, room);
  const left = hits.length - lines.length;
  if (left > 0) lines.push(`[selfgc: ${left} more matches left out: no room in the context window.]`);
  return lines.join('\n');
}

/** The text result of one internal call, from the session's sidecar, within `room`. */
export async function answerInternalCall(
  governor: RecoveryGovernor,
  sessionId: string,
  call: WireToolCall,
  room: ResultRoom,
): Promise<string> {
  try {
    if (isAgentTool(call.name)) {
      return governor.commitAgentPlan
        ? await answerAgentCall(governor.commitAgentPlan, sessionId, call)
        : `error: ${call.name} is not offered for this request.`;
    }
    return call.name === EXPAND_TOOL
      ? await expandPage(governor, sessionId, call, room)
      : await searchHits(governor, sessionId, call, room);
  } catch (error) {
    // The model (and through it the client) reads this: the code only, never the store's message.
    return `Recovery failed (${toSelfGcError(error).code}).`;
  }
}

export interface RecoveryOptions {
  dialect: WireDialect;
  governor: RecoveryGovernor;
  /** The store session id. */
  sessionId: string;
  /** The request as first sent (with the recovery tools); read only when recovery runs. */
  body: () => JsonObject;
  /**
   * What of the client's request shapes its answer: its tool choice (echoed back), its `store`
   * (what of a Responses answer it may pass back).
   */
  client: JsonObject;
  /** The window and the view's tokens: recovery keeps every request it sends inside the window. */
  window: RecoveryWindow;
  /** Counts what recovery appends, as the governor counts the view. */
  counter: TokenCounter;
  maxRounds: number;
  onInternalCall?(name: string): void;
}

/** Recovery over the rounds of one request. */
export interface Recovery {
  /**
   * The body for the next round when `answer` calls the proxy's tools (their results appended,
   * the client's calls left out, tool use off for the last round); undefined when the answer is
   * the final one (no proxy call, rounds used up, or no room left in the window for one).
   */
  continueAfter(answer: JsonObject): Promise<JsonObject | undefined>;
  /** The final answer as the client gets it: no proxy call, no proxy tool. */
  clientAnswer(answer: JsonObject): JsonObject;
  /** Tokens of the conversation last sent upstream, once a round ran. */
  sentTokens(): number | undefined;
}

/** One round of recovery: the model's turn (its proxy calls only) and the proxy's results. */
interface RecoveryRound {
  turn: JsonObject;
  results: Array<{ id: string; output: string }>;
}

/** What stands for an earlier result that gave way to a later round's. */
export const EARLIER_RESULT_NOTE =
  '[selfgc: this result was shown in an earlier round and left out to make room for a later one; ask again for it if you still need it.]';

export function createRecovery(options: RecoveryOptions): Recovery {
  const { dialect } = options;
  const rounds: RecoveryRound[] = [];
  let first: JsonObject | undefined;
  let budget: RecoveryBudget | undefined;
  /** Tokens of the conversation last sent: a round that found no room was measured, not sent. */
  let sent: number | undefined;
  /** The first body with every round so far appended: rebuilt, so earlier results may give way. */
  const bodyWith = (list: readonly RecoveryRound[]) =>
    list.reduce((body, round) => dialect.withToolResults(body, round.turn, round.results), first!);
  return {
    async continueAfter(answer) {
      const calls = dialect.toolCallsOf(answer).filter((call) => isRecoveryTool(call.name));
      if (calls.length === 0 || rounds.length >= options.maxRounds) return undefined;
      if (dialect.awaitsResults?.(answer) === false) return undefined;
      first ??= options.body();
      budget ??= createRecoveryBudget(options.window, dialect, first, options.counter);
      const turn = dialect.keepToolCalls(answer, isRecoveryTool);
      const pending = { turn, results: calls.map((call) => ({ id: call.id, output: '' })) };
      makeRoom(budget, rounds, (list) => bodyWith([...list, pending]), calls.length);
      if (budget.used() + NOTE_TOKENS * calls.length > budget.windowTokens) return undefined;
      const results = [];
      for (const [position, call] of calls.entries()) {
        options.onInternalCall?.(call.name);
        const room = { tokens: budget.share(calls.length - position), counter: options.counter };
        const output = await answerInternalCall(options.governor, options.sessionId, call, room);
        budget.charge(output);
        results.push({ id: call.id, output });
      }
      rounds.push({ turn, results });
      const next = bodyWith(rounds);
      sent = budget.measure(next);
      // The last round may not call tools again, so the client never receives an internal call.
      return rounds.length === options.maxRounds ? dialect.withoutToolUse(next) : next;
    },
    clientAnswer(last) {
      // After rounds, the answer is the proxy's making, even when the last one called nothing.
      const leaks = dialect.toolCallsOf(last).some((call) => isRecoveryTool(call.name));
      const own =
        leaks || rounds.length > 0
          ? dialect.keepToolCalls(last, (name) => !isRecoveryTool(name), options.client)
          : last;
      const opened = rounds[0] === undefined ? own : (dialect.withTurnOpening?.(own, rounds[0].turn) ?? own);
      return dialect.hideAddedTools?.(opened, options.client, INTERNAL_TOOLS) ?? opened;
    },
    sentTokens: () => sent,
  };
}

/**
 * Before a round is answered: when the results of earlier rounds leave its `calls` less than
 * half the room they would have without them, those results give way, oldest first (each becomes
 * a one-line note), until the round has that half. So a model paging through a long object gets
 * every page in the same room, however many pages it reads. Leaves `budget` measured on the body
 * `bodyWith` builds from what is kept.
 */
function makeRoom(
  budget: RecoveryBudget,
  rounds: RecoveryRound[],
  bodyWith: (rounds: readonly RecoveryRound[]) => JsonObject,
  calls: number,
): void {
  if (rounds.length === 0) {
    budget.measure(bodyWith(rounds));
    return;
  }
  const gaveWay = (round: RecoveryRound): RecoveryRound => ({
    ...round,
    results: round.results.map((result) =>
      result.output.length > EARLIER_RESULT_NOTE.length ? { ...result, output: EARLIER_RESULT_NOTE } : result,
    ),
  });
  budget.measure(bodyWith(rounds.map(gaveWay)));
  const wanted = budget.share(calls) / 2;
  budget.measure(bodyWith(rounds));
  for (let index = 0; index < rounds.length && budget.share(calls) < wanted; index += 1) {
    rounds[index] = gaveWay(rounds[index]!);
    budget.measure(bodyWith(rounds));
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

/** Answer internal calls until the upstream's answer has none; returns that answer, as the client gets it. */
export async function recoverTransparently(
  recovery: Recovery,
  first: BufferedAnswer,
  send: (body: JsonObject) => Promise<BufferedAnswer>,
): Promise<BufferedAnswer> {
  let answer = first;
  for (;;) {
    if (answer.status !== 200 || !isJsonObject(answer.json)) return answer;
    const next = await recovery.continueAfter(answer.json);
    if (next === undefined) {
      const json = recovery.clientAnswer(answer.json);
      return json === answer.json ? answer : { ...answer, json, text: JSON.stringify(json) };
    }
    answer = await send(next);
  }
}
