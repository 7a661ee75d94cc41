import { afterEach, describe, expect, it } from 'vitest';
import { countMessageTokens } from '../core/ledger.js';
import { approximateTokenCounter } from '../core/tokens.js';
import type { Message } from '../core/transcript.js';
import type { ScriptedReply, ScriptedRequest } from '../testing/scripted-reply.js';
import { AGENT_TOOLS, FOLD_TOOL, PRUNE_TOOL } from './agent-tools.js';
import { anthropicMessagesDialect } from './anthropic-messages-dialect.js';
import { chatDialect } from './chat-dialect.js';
import { responsesDialect } from './responses-dialect.js';
import { conversationBody, fileContent, type WireRoute } from './testing/agent-conversation.js';
import { type ProxyFixture, startProxyFixture } from './testing/proxy-fixture.js';
import { expandKeys, lastToolResult, pointerKeys, storeSessionOf } from './testing/recovery-pointers.js';
import { EXPAND_TOOL, RECOVERY_TOOLS } from './transparent-recovery.js';
import type { WireDialect } from './wire-dialect.js';

const DIALECTS: Record<WireRoute, WireDialect> = {
  chat: chatDialect,
  responses: responsesDialect,
  messages: anthropicMessagesDialect,
};
const ROUTES: WireRoute[] = ['chat', 'responses', 'messages'];
/** The fixture's window: room for a few files, the ledger and the proxy's tools. */
const WINDOW = 8_000;
const TURNS = 60;
/** Lines of each file the agent reads. */
const LINES = 16;

/**
 * The schema fields Gemini's function declarations read (its `Schema`): it refuses a request whose
 * tools use any other (`Unknown name "additionalProperties"`), through its OpenAI-compatible
 * endpoint too, where a client that sends no such keyword would be answered.
 */
const PORTABLE_SCHEMA_FIELDS = new Set(
  'type format title description nullable enum maxItems minItems properties required minProperties maxProperties minLength maxLength pattern example anyOf propertyOrdering default items minimum maximum'.split(
    ' ',
  ),
);

/** The fields of a schema and of every schema inside it that are not portable. */
function unportableFields(schema: Record<string, unknown>): string[] {
  return Object.entries(schema).flatMap(([field, value]) => {
    if (!PORTABLE_SCHEMA_FIELDS.has(field)) return [field];
    if (field === 'properties' && value !== null && typeof value === 'object')
      return Object.values(value).flatMap((inner) => unportableFields(inner as Record<string, unknown>));
    if (field === 'items' && value !== null && typeof value === 'object')
      return unportableFields(value as Record<string, unknown>);
    return [];
  });
}

describe("the proxy's tools", () => {
  it('use only schema fields every provider reads', () => {
    const tools = [...RECOVERY_TOOLS, ...AGENT_TOOLS];
    expect(tools.length).toBeGreaterThanOrEqual(4);
    for (const tool of tools) expect([tool.name, unportableFields(tool.parameters)]).toEqual([tool.name, []]);
  });
});

let fixture: ProxyFixture | undefined;
afterEach(async () => {
  await fixture?.close();
  fixture = undefined;
});

function transcriptOf(route: WireRoute, request: ScriptedRequest): Message[] {
  return DIALECTS[route].readTranscript(request.body as Record<string, unknown>);
}

function lastText(messages: readonly Message[]): string {
  const parts = messages.at(-1)?.parts ?? [];
  const last = parts.at(-1);
  return last?.type === 'text' ? last.text : '';
}

/** The ledger's object lines that may still be operated on (live tool outputs). */
function liveOutputs(ledger: string): string[] {
  return [...ledger.matchAll(/^(function:[\w-]+:\d+) function \S+ live(?:,consumed)?(?= \||$)/gm)].map(
    (match) => match[1]!,
  );
}

/** Every tool call of a transcript has its result, and every result its call. */
function pairsWhole(messages: readonly Message[]): boolean {
  const calls = new Set<string>();
  const results = new Set<string>();
  for (const message of messages)
    for (const part of message.parts) {
      if (part.type === 'tool-call') calls.add(part.id);
      if (part.type === 'tool-result') results.add(part.callId);
    }
  return [...calls].every((id) => results.has(id)) && [...results].every((id) => calls.has(id));
}

function measured(messages: readonly Message[]): number {
  return messages.reduce((sum, message) => sum + countMessageTokens(approximateTokenCounter, message), 0);
}

/**
 * The scripted model: on each client turn it uses one GC tool, in a cycle — fold a live output
 * the ledger lists, prune another, expand a pointer the view shows — and after the proxy's
 * answer it ends the turn. What each call was asked, and answered, is kept.
 */
function gcAgent(route: WireRoute) {
  const asked: Array<{ turn: number; tool: string; id: string }> = [];
  const script = (request: ScriptedRequest): ScriptedReply => {
    const messages = transcriptOf(route, request);
    const ledger = lastText(messages);
    if (!ledger.startsWith('[context ledger]')) return { text: 'Done with this step.' };
    const turn = asked.length;
    const live = liveOutputs(ledger);
    const pointer = pointerKeys(request.rawBody)[0];
    const choice = turn % 3;
    if (choice === 2 && pointer !== undefined) {
      asked.push({ turn, tool: EXPAND_TOOL, id: pointer });
      return { toolCalls: [{ name: EXPAND_TOOL, arguments: { id: pointer } }] };
    }
    const id = choice === 1 ? live.at(-1) : live[0];
    if (id === undefined) return { text: 'Nothing to govern.' };
    const tool = choice === 1 ? PRUNE_TOOL : FOLD_TOOL;
    asked.push({ turn, tool, id });
    return { toolCalls: [{ name: tool, arguments: { id, reason: 'read and used already' } }] };
  };
  return { asked, script };
}

describe('the agent-driven mode (--agent-tools)', () => {
  it.each(
    ROUTES.flatMap((route) => [
      { route, stream: false, workers: undefined },
      { route, stream: true, workers: 2 },
    ]),
  )(
    '$route, stream $stream, workers $workers: a 60-turn agent folds, prunes and expands through the proxy',
    async ({ route, stream, workers }) => {
      const agent = gcAgent(route);
      fixture = await startProxyFixture({
        script: agent.script,
        window: WINDOW,
        ...(workers === undefined ? {} : { workers }),
        proxy: { agentTools: true },
      });
      let session = '';
      let previous: Message[] | undefined;
      let prefixesKept = 0;
      let agentCommitted = false;
      for (let turn = 1; turn <= TURNS; turn += 1) {
        const before = fixture.upstream.requests.length;
        const askedBefore = agent.asked.length;
        const response = await fixture.post(
          route,
          conversationBody(route, { turns: turn, lines: LINES, stream }),
        );
        expect(response.status).toBe(200);
        const text = await response.text();
        // The client sees the final answer only: never the proxy's tools or its calls.
        expect(text).not.toContain('selfgc_');
        session = storeSessionOf(response);
        const sent = fixture.upstream.requests.slice(before);
        const [first] = sent;
        expect(first).toBeDefined();
        const firstMessages = transcriptOf(route, first!);
        // The prompt the headers report holds the ledger message too (no client tools here).
        expect(Number(response.headers.get('x-selfgc-tokens-after'))).toBeGreaterThanOrEqual(
          measured(firstMessages),
        );
        // The ledger is the last thing the model reads, and the request offers the GC tools.
        expect(lastText(firstMessages)).toMatch(/^\[context ledger\] budget_used_pct=\d+/);
        expect(first!.rawBody).toContain(FOLD_TOOL);
        expect(first!.rawBody).toContain(PRUNE_TOOL);
        // Where nothing was committed, this request repeats the last one up to its ledger, which
        // was last: the prefix a provider cached is read again.
        if (previous !== undefined && !agentCommitted && response.headers.get('x-selfgc-commit') === null) {
          expect(firstMessages.slice(0, previous.length - 1)).toEqual(previous.slice(0, -1));
          prefixesKept += 1;
        }
        previous = firstMessages;
        agentCommitted = agent.asked.slice(askedBefore).some((entry) => entry.tool !== EXPAND_TOOL);
        for (const request of sent) {
          const messages = transcriptOf(route, request);
          expect(pairsWhole(messages)).toBe(true);
          expect(measured(messages)).toBeLessThanOrEqual(WINDOW);
        }
      }
      expect(prefixesKept).toBeGreaterThan(TURNS / 10);
      const used = new Set(agent.asked.map((entry) => entry.tool));
      expect(used).toEqual(new Set([FOLD_TOOL, PRUNE_TOOL, EXPAND_TOOL]));
      // Each GC call was answered: the result the model read names what happened.
      const results = fixture.upstream.requests
        .map((request) => lastToolResult(request.body) ?? '')
        .filter((result) => /^(folded|pruned|error:) /.test(result));
      expect(results.some((result) => result.startsWith('folded function:'))).toBe(true);
      expect(results.some((result) => result.startsWith('pruned function:'))).toBe(true);
      // An object the agent folded shows folded from the next request on, and its payload is kept
      // byte for byte: the file the agent read.
      const folded = agent.asked.find((entry) => entry.tool === FOLD_TOOL)!;
      const laterBodies = fixture.upstream.requests.map((request) => request.rawBody);
      expect(laterBodies.some((raw) => raw.includes(`[folded ${folded.id}`))).toBe(true);
      const payload = (await expandKeys(fixture.store, session, [folded.id])).get(folded.id);
      expect(payload).toBeDefined();
      expect(payload).toMatch(/^\/\/ src\/module\d+\.ts/);
      const turnOf = Number(/module(\d+)/.exec(payload!)![1]);
      expect(payload).toBe(fileContent(turnOf, LINES));
    },
    120_000,
  );

  it('answers bad arguments and a pinned object with an error the model reads, and keeps going', async () => {
    const calls: ScriptedReply[] = [
      { toolCalls: [{ name: FOLD_TOOL, arguments: { summary: 'no id' } }] },
      { toolCalls: [{ name: PRUNE_TOOL, arguments: { id: 'conversation:user:1' } }] },
      { toolCalls: [{ name: FOLD_TOOL, arguments: { id: 'function:nothing:99' } }] },
      { text: 'Understood.' },
    ];
    fixture = await startProxyFixture({ script: calls, window: WINDOW, proxy: { agentTools: true } });
    const response = await fixture.post('chat', conversationBody('chat', { turns: 3, lines: LINES }));
    expect(response.status).toBe(200);
    expect(await response.text()).toContain('Understood.');
    const results = fixture.upstream.requests.slice(1).map((request) => lastToolResult(request.body));
    expect(results[0]).toMatch(/^error: bad arguments for fold: id: /);
    expect(results[1]).toMatch(/^error: prune of conversation:user:1 refused \(pinned\)/);
    expect(results[2]).toMatch(/^error: fold of function:nothing:99 refused \(unknown-object\)/);
  });

  it('offers no GC tools and no ledger without the option', async () => {
    fixture = await startProxyFixture({ script: [{ text: 'ok' }], window: WINDOW });
    await fixture.post('chat', conversationBody('chat', { turns: 30, lines: LINES }));
    const [request] = fixture.upstream.requests;
    expect(request!.rawBody).not.toContain(FOLD_TOOL);
    expect(request!.rawBody).not.toContain('[context ledger]');
  });
});
