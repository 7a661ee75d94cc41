/**
 * Codex CLI 0.171's compaction through the proxy, request by request: a long governed session,
 * the compaction request, then the first request after it.
 *
 * Codex 0.171 (codex-rs `compact_remote_v2.rs`, `compact_remote_v2_attempt.rs`; its binary holds
 * no `responses/compact`) no longer calls `POST /responses/compact`: with the built-in OpenAI
 * provider (API key or ChatGPT login) or Azure, it sends its whole history to `POST /responses`
 * with `{"type":"compaction_trigger"}` appended, its own tools and instructions, streamed, and
 * takes the one `compaction` item of the answer; its history becomes the user messages it kept
 * and that item. With any other provider it compacts locally: a plain turn ending in its
 * summarization prompt, then a history of the user messages and one with the summary.
 */
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterEach, describe, expect, it } from 'vitest';
import { fileContent } from './testing/agent-conversation.js';
import { type ProxyFixture, startProxyFixture } from './testing/proxy-fixture.js';
import { expandKeys, pointerKeys, storeSessionOf } from './testing/recovery-pointers.js';

let fixture: ProxyFixture | undefined;
let server: Server | undefined;
afterEach(async () => {
  await fixture?.close();
  fixture = undefined;
  await new Promise((resolve) => (server ? server.close(resolve) : resolve(undefined)));
  server = undefined;
});

type Json = Record<string, unknown>;

const THREAD = '019a0000-0000-7000-8000-00000000c0de';
const HEADERS = { originator: 'codex_cli_rs', version: '0.171.0', 'session-id': THREAD, 'thread-id': THREAD };
const INSTRUCTIONS = 'You are Codex, based on GPT-5. You are running as a coding agent in the Codex CLI.';
const TOOLS = [
  {
    type: 'function',
    name: 'shell',
    description: 'Runs a shell command and returns its output.',
    strict: false,
    parameters: { type: 'object', properties: { command: { type: 'array', items: { type: 'string' } } } },
  },
];
const text = (role: string, value: string): Json => ({
  type: 'message',
  role,
  content: [{ type: role === 'assistant' ? 'output_text' : 'input_text', text: value }],
});
const DEVELOPER = text(
  'developer',
  '<permissions instructions>sandbox: workspace-write</permissions instructions>',
);
const ENVIRONMENT = text('user', '<environment_context>\n  <cwd>/repo</cwd>\n</environment_context>');
const TASK = text('user', 'Find why computeValue returns NaN for module 3 and fix it.');
const SUMMARIZATION_PROMPT =
  'You are performing a CONTEXT CHECKPOINT COMPACTION. Create a handoff summary for another LLM that will resume the task.';
const SUMMARY_PREFIX =
  'Another language model started to solve this problem and produced a summary of its thinking process. ' +
  'You also have access to the state of the tools that were used by that language model. Use this to build on ' +
  'the work that has already been done and avoid duplicating work. Here is the summary produced by the other ' +
  'language model, use the information in this summary to assist with your own analysis:';

/** `count` shell rounds from module `from` on, each output `lines` lines marked `marker`. */
function shellRounds(from: number, count: number, lines: number, marker: string): Json[] {
  return Array.from({ length: count }, (_, index) => {
    const module = from + index;
    const callId = `call_${marker}_${module}`;
    const command = JSON.stringify({ command: ['cat', `src/module${module}.ts`] });
    return [
      { type: 'function_call', call_id: callId, name: 'shell', arguments: command },
      { type: 'function_call_output', call_id: callId, output: fileContent(module, lines, marker) },
    ];
  }).flat();
}

function codexBody(input: Json[], tools: Json[] = TOOLS): Json {
  return {
    model: 'gpt-5-codex',
    instructions: INSTRUCTIONS,
    input,
    tools,
    tool_choice: 'auto',
    parallel_tool_calls: false,
    reasoning: { effort: 'medium' },
    store: false,
    stream: true,
    include: ['reasoning.encrypted_content'],
    prompt_cache_key: THREAD,
  };
}

const COMPACTION = { type: 'compaction', id: 'cmp_1', encrypted_content: 'gAAAAB-encrypted-summary' };

/** The server's answer to a `compaction_trigger`: one `compaction` item, streamed. */
function compactionStream(inputTokens: number): string {
  const response = (status: string, output: Json[]) => ({
    id: 'resp_compact',
    object: 'response',
    status,
    model: 'gpt-5-codex',
    output,
    usage:
      status === 'completed'
        ? { input_tokens: inputTokens, output_tokens: 900, total_tokens: inputTokens + 900 }
        : null,
  });
  const events: Json[] = [
    { type: 'response.created', response: response('in_progress', []) },
    { type: 'response.output_item.added', output_index: 0, item: COMPACTION },
    { type: 'response.output_item.done', output_index: 0, item: COMPACTION },
    { type: 'response.completed', response: response('completed', [COMPACTION]) },
  ];
  return events
    .map(
      (event, sequence) =>
        `event: ${String(event.type)}\ndata: ${JSON.stringify({ ...event, sequence_number: sequence })}\n\n`,
    )
    .join('');
}

/** The `response` of a streamed answer's `response.completed`. */
function completed(sse: string): Json {
  const event = sse
    .split('\n')
    .filter((line) => line.startsWith('data: '))
    .map((line) => JSON.parse(line.slice(6)) as Json)
    .find((payload) => payload.type === 'response.completed');
  return (event?.response as Json | undefined) ?? {};
}

const isTrigger = (body: unknown) => (body as { input: Json[] }).input.at(-1)?.type === 'compaction_trigger';
const upstreamInput = (index: number) => (fixture!.upstream.requests[index]!.body as { input: Json[] }).input;
const toolNames = (index: number) =>
  ((fixture!.upstream.requests[index]!.body as { tools?: Json[] }).tools ?? []).map((tool) => tool.name);

/** Codex's history after a remote compaction: its context, the task, the compaction, new work. */
function afterCompaction(work: Json[]): Json[] {
  return [DEVELOPER, ENVIRONMENT, TASK, COMPACTION, text('user', 'Go on.'), ...work];
}

describe('Codex 0.171 remote compaction (v2: /responses with a compaction_trigger) through the proxy', () => {
  it('a long session, its compaction request and the request after it: what goes upstream at each step', async () => {
    fixture = await startProxyFixture({
      window: 8_000,
      script: (request) =>
        isTrigger(request.body)
          ? { raw: { headers: { 'content-type': 'text/event-stream' }, body: compactionStream(5_000) } }
          : { text: 'Reading on.' },
    });
    // 1. The session grows; every request goes up folded into the window.
    const before = [DEVELOPER, ENVIRONMENT, TASK, ...shellRounds(0, 30, 48, 'before')];
    let usage = { input_tokens: 0 };
    let tokensBefore = 0;
    for (const rounds of [10, 20, 30]) {
      const answer = await fixture.post('responses', codexBody(before.slice(0, 3 + 2 * rounds)), {
        headers: HEADERS,
      });
      const sse = await answer.text();
      // What Codex counts toward `model_auto_compact_token_limit` is this usage (codex-rs
      // `ContextManager::get_total_token_usage`): the governed view, not its own history.
      usage = completed(sse).usage as { input_tokens: number };
      tokensBefore = Number(answer.headers.get('x-selfgc-tokens-before'));
      expect(usage.input_tokens).toBeLessThan(8_000);
    }
    expect(tokensBefore).toBeGreaterThan(2.5 * usage.input_tokens);
    // 2. `/compact`: the whole history, the trigger last, Codex's tools.
    const compact = await fixture.post('responses', codexBody([...before, { type: 'compaction_trigger' }]), {
      headers: HEADERS,
    });
    expect(compact.status).toBe(200);
    const compactSse = await compact.text();
    const sent = upstreamInput(3);
    // Governed like any turn: it fits the window, the trigger stays last.
    expect(Number(compact.headers.get('x-selfgc-tokens-after'))).toBeLessThanOrEqual(8_000);
    expect(compact.headers.get('x-selfgc-governance')).not.toBe('passthrough');
    expect(sent.length).toBeLessThan(before.length);
    expect(sent.at(-1)).toEqual({ type: 'compaction_trigger' });
    // So the server compacts the governed view (its fold index and pointers), not the work itself.
    // The last turn before it offered the folded work for recovery; the compaction request offers
    // none, neither tools nor pointers: the server answers it with one compaction item.
    const foldedKeys = pointerKeys(fixture.upstream.requests[2]!.rawBody);
    expect(foldedKeys.length).toBeGreaterThan(0);
    expect(toolNames(3)).toEqual(['shell']);
    expect(pointerKeys(fixture.upstream.requests[3]!.rawBody)).toEqual([]);
    expect(fixture.upstream.requests).toHaveLength(4);
    // Codex receives the compaction item as the server sent it.
    expect(completed(compactSse).output).toEqual([COMPACTION]);

    // 3. The next request: the user message kept, the compaction, the context again, new work.
    const after = afterCompaction(shellRounds(40, 12, 48, 'after'));
    const next = await fixture.post('responses', codexBody(after), { headers: HEADERS });
    expect(next.status).toBe(200);
    await next.text();
    const raw = fixture.upstream.requests[4]!.rawBody;
    // Nothing of before but what Codex sent again; the compaction in its place.
    expect(raw).not.toContain('(before)');
    expect(upstreamInput(4).slice(0, 4)).toEqual([DEVELOPER, ENVIRONMENT, TASK, COMPACTION]);
    expect(next.headers.get('x-selfgc-warnings')).toContain('transcript-diverged');
    expect(fixture.logs.at(-1)).toMatchObject({ divergedAt: 3 });
    // What the compaction was made from is no longer recoverable: the old pointers answer nothing.
    const expanded = await expandKeys(fixture.store, storeSessionOf(next), foldedKeys);
    expect([...expanded.values()]).toEqual(foldedKeys.map(() => undefined));
  });
});

describe('ids after the history goes on otherwise', () => {
  it('after a compaction, an id the model saw before it never names other content', async () => {
    // A window where each large output folds on its own (`function:shell:N`).
    fixture = await startProxyFixture({
      window: 30_000,
      script: (request) => {
        if (isTrigger(request.body))
          return {
            raw: { headers: { 'content-type': 'text/event-stream' }, body: compactionStream(20_000) },
          };
        const input = (request.body as { input: Json[] }).input;
        const resumed = input.some((item) => item.type === 'compaction');
        // After the compaction the model follows a pointer it saw before it (the summary's).
        const recovering = input.some((item) => item.name === 'selfgc_expand');
        if (resumed && !recovering)
          return {
            toolCalls: [{ name: 'selfgc_expand', arguments: JSON.stringify({ id: 'function:shell:3' }) }],
          };
        return { text: 'Reading on.' };
      },
    });
    const before = [DEVELOPER, ENVIRONMENT, TASK, ...shellRounds(0, 8, 300, 'before')];
    await (await fixture.post('responses', codexBody(before), { headers: HEADERS })).text();
    const compact = await fixture.post('responses', codexBody([...before, { type: 'compaction_trigger' }]), {
      headers: HEADERS,
    });
    await compact.text();
    const compactRaw = fixture.upstream.requests[1]!.rawBody;
    // The compaction was made from a view where function:shell:3 is `cat src/module2.ts`.
    expect(compactRaw).toMatch(
      /value2_19 = computeValue\(2, 19\)[^[]*\[… 274 of 300 lines masked \(function:shell:3,/,
    );

    const after = afterCompaction(shellRounds(10, 8, 300, 'after'));
    const next = await fixture.post('responses', codexBody(after), { headers: HEADERS });
    await next.text();
    const afterRaw = fixture.upstream.requests[2]!.rawBody;
    // The history went on otherwise at message 3 after keys had been offered: the third output
    // after it (`cat src/module12.ts`) is shown under an id of its own, tagged by that content.
    const tagged =
      /value12_19 = computeValue\(12, 19\)[^[]*\[… 274 of 300 lines masked \((function:shell:3~[0-9a-f]{6}),/;
    expect(afterRaw).toMatch(tagged);
    expect(afterRaw).not.toMatch(/\(function:shell:3,/);
    // The recovery round the proxy sent upstream: what `selfgc_expand("function:shell:3")` gave.
    const round = upstreamInput(3);
    expect(round.at(-2)).toMatchObject({ name: 'selfgc_expand', arguments: '{"id":"function:shell:3"}' });
    // An id the compaction saw hands the model nothing rather than other content.
    expect(String(round.at(-1)?.output)).toBe('No object function:shell:3 is kept for this conversation.');
    // The new id recovers its own content.
    const key = tagged.exec(afterRaw)![1]!;
    const expanded = await expandKeys(fixture.store, storeSessionOf(next), [key]);
    expect(expanded.get(key)).toContain('// src/module12.ts (after)');
  });
});

describe('the head of the history after a compaction', () => {
  it('context put after the compaction item: the conversation after it is a session of its own', async () => {
    fixture = await startProxyFixture({ window: 8_000, script: () => ({ text: 'Reading on.' }) });
    const before = [DEVELOPER, ENVIRONMENT, TASK, ...shellRounds(0, 30, 48, 'before')];
    const first = await fixture.post('responses', codexBody(before), { headers: HEADERS });
    await first.text();
    // Pre-turn compaction without `AtStart`: the next turn re-injects Codex's context at the end.
    const after = [
      TASK,
      COMPACTION,
      DEVELOPER,
      ENVIRONMENT,
      text('user', 'Go on.'),
      ...shellRounds(40, 12, 48, 'after'),
    ];
    const next = await fixture.post('responses', codexBody(after), { headers: HEADERS });
    await next.text();
    expect(next.headers.get('x-selfgc-session')).not.toBe(first.headers.get('x-selfgc-session'));
    expect(next.headers.get('x-selfgc-warnings') ?? '').not.toContain('transcript-diverged');
    expect(fixture.upstream.requests[1]!.rawBody).not.toContain('(before)');
  });
});

describe('Codex local compaction (any provider but OpenAI and Azure) through the proxy', () => {
  it('the summary turn is governed; the history after it holds nothing stale', async () => {
    fixture = await startProxyFixture({
      window: 8_000,
      script: (request) => {
        const input = (request.body as { input: Json[] }).input;
        const last = JSON.stringify(input.at(-1));
        return last.includes('CONTEXT CHECKPOINT COMPACTION')
          ? { text: 'module3 divides by computeValue(3, 0); the fix is a guard in src/module3.ts.' }
          : { text: 'Reading on.' };
      },
    });
    const before = [DEVELOPER, ENVIRONMENT, TASK, ...shellRounds(0, 30, 48, 'before')];
    await (await fixture.post('responses', codexBody(before), { headers: HEADERS })).text();
    // Codex's local compaction: the history, its prompt as a user message, no tools.
    const summaryTurn = await fixture.post(
      'responses',
      codexBody([...before, text('user', SUMMARIZATION_PROMPT)], []),
      {
        headers: HEADERS,
      },
    );
    await summaryTurn.text();
    expect(upstreamInput(1).at(-1)).toEqual(text('user', SUMMARIZATION_PROMPT));
    expect(Number(summaryTurn.headers.get('x-selfgc-tokens-after'))).toBeLessThanOrEqual(8_000);
    // The new history: the user messages, then the summary as a user message.
    const summary = text(
      'user',
      `${SUMMARY_PREFIX}\nmodule3 divides by computeValue(3, 0); the fix is a guard in src/module3.ts.`,
    );
    const after = [
      DEVELOPER,
      ENVIRONMENT,
      TASK,
      summary,
      text('user', 'Go on.'),
      ...shellRounds(40, 12, 48, 'after'),
    ];
    const next = await fixture.post('responses', codexBody(after), { headers: HEADERS });
    await next.text();
    expect(fixture.upstream.requests[2]!.rawBody).not.toContain('(before)');
    expect(upstreamInput(2).slice(0, 5)).toEqual(after.slice(0, 5));
  });
});

describe('POST /v1/responses/compact (Codex before v1 was removed) through the proxy', () => {
  it('goes upstream as the client sent it: the whole history, whatever the window', async () => {
    const received: Json[] = [];
    server = createServer((request, response) => {
      const chunks: Buffer[] = [];
      request.on('data', (chunk: Buffer) => chunks.push(chunk));
      request.on('end', () => {
        received.push({ path: request.url, body: JSON.parse(Buffer.concat(chunks).toString('utf8')) });
        response.writeHead(200, { 'content-type': 'application/json' });
        response.end(JSON.stringify({ output: [TASK, COMPACTION] }));
      });
    });
    await new Promise<void>((resolve) => server!.listen(0, '127.0.0.1', resolve));
    const url = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
    fixture = await startProxyFixture({
      window: 8_000,
      proxy: { upstreams: { openai: url, anthropic: url } },
    });
    const history = [DEVELOPER, ENVIRONMENT, TASK, ...shellRounds(0, 30, 48, 'before')];
    const body = {
      model: 'gpt-5-codex',
      instructions: INSTRUCTIONS,
      input: history,
      tools: TOOLS,
      parallel_tool_calls: false,
    };
    const answer = await fixture.fetch('/v1/responses/compact', {
      method: 'POST',
      headers: { authorization: 'Bearer sk-test-key', 'content-type': 'application/json', ...HEADERS },
      body: JSON.stringify(body),
    });
    expect(answer.status).toBe(200);
    expect(await answer.json()).toEqual({ output: [TASK, COMPACTION] });
    expect(received).toEqual([{ path: '/v1/responses/compact', body }]);
    expect(answer.headers.get('x-selfgc-tokens-before')).toBeNull();
  });
});
