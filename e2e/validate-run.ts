/**
 * The validator of an end-to-end scenario: every request the scripted upstream received must be
 * one a provider accepts and the window holds, no run may see content of another run that its
 * client did not send, recovery must work and stay hidden from the client, and the CLI must
 * finish its task. Returns every violation found; an empty list is a pass.
 */
import type { TokenCounter } from '../src/core/tokens.js';
import { SENT_AGAIN_AFTER_REFUSAL } from '../src/proxy/handle-governed.js';
import { tokenCounterForProvider } from '../src/tokenizers/create-token-counter.js';
import { createScenario, groupsOf } from './agent-scenarios.js';
import {
  checkCacheBreakpoints,
  checkToolPairs,
  checkWindow,
  describeSize,
  measureRequest,
} from './check-request.js';
import {
  lastUserText,
  latestResults,
  openingText,
  readWireRequest,
  requestText,
  routeOfPath,
  type WireRequest,
  type WireRoute,
} from './read-wire-request.js';
import type { RecordedExchange } from './recording-relay.js';
import type { RunRecord, ScenarioResult } from './scenario-result.js';
import { asksForCompaction, EXPAND_TOOL } from './scripted-agent.js';

/** Every check, in the order a report lists them. */
export const CHECK_NAMES = [
  'runner',
  'task',
  'proxy-answers',
  'latest-turn',
  'tool-pairs',
  'cache-breakpoints',
  'window',
  'scenario-pressure',
  'foreign-content',
  'recovery',
  'recovery-hidden',
  'kept-state',
  'one-session',
  'resumed-history',
  'attached-file',
  'upstream-coding',
  'client-compaction',
] as const;

export type CheckName = (typeof CHECK_NAMES)[number];

export interface Violation {
  check: CheckName;
  run: string;
  /** Index of the upstream (or, for client checks, client) request, when one is at fault. */
  request?: number;
  message: string;
}

/** The project's counter for a route: Anthropic's scaled estimate for Messages, o200k for OpenAI. */
export function counterForRoute(route: WireRoute): TokenCounter {
  return tokenCounterForProvider(route === 'messages' ? 'anthropic' : 'openai');
}

function readRequests(
  requests: ReadonlyArray<{ index: number; path: string; body: unknown }>,
): Array<{ index: number; request: WireRequest }> {
  return requests.flatMap((record) => {
    const route = routeOfPath(record.path);
    return route === undefined ? [] : [{ index: record.index, request: readWireRequest(route, record.body) }];
  });
}

function parsed(text: string): unknown {
  try {
    return JSON.parse(text);
  } catch {
    return undefined;
  }
}

function clientRequests(run: RunRecord) {
  return readRequests(run.client.map((exchange) => ({ ...exchange, body: parsed(exchange.body) })));
}

function ending(text: string, length = 600): string {
  const trimmed = text.trim();
  return trimmed.length > length ? `…${trimmed.slice(-length)}` : trimmed;
}

/** The CLI ended on its own, with exit code 0, and printed the answer the run must end with. */
export function checkTask(run: RunRecord): string[] {
  const problems: string[] = [];
  if (run.timedOut) problems.push(`the CLI did not finish within its time limit (${run.durationMs} ms)`);
  else if (run.exitCode !== 0) problems.push(`the CLI exited with ${run.exitCode ?? `signal ${run.signal}`}`);
  if (run.compacts === true) {
    // A compaction prints nothing: the run must have asked the model for the summary.
    const asked = readRequests(run.upstream).some(({ request }) => asksForCompaction(request));
    if (!asked) problems.push('no request of the run asked the model for a compaction summary');
  } else if (!run.stdout.includes(run.expectedAnswer)) {
    problems.push(`its output lacks "${run.expectedAnswer}"`);
  }
  if (problems.length === 0) return [];
  return [`${problems.join('; ')}. stdout: ${ending(run.stdout)} | stderr: ${ending(run.stderr)}`];
}

/**
 * Each of `others` (what other runs' files hold) in an upstream request of the run must be in some
 * request the run's client sent.
 */
export function checkForeignContent(run: RunRecord, others: readonly string[]): Violation[] {
  const sent = run.client.map((exchange) => exchange.body).join('\n');
  const violations: Violation[] = [];
  for (const record of run.upstream) {
    const text = JSON.stringify(record.body);
    const leaked = others.filter((value) => text.includes(value) && !sent.includes(value));
    if (leaked.length > 0) {
      violations.push({
        check: 'foreign-content',
        run: run.label,
        request: record.index,
        message: `carries ${leaked.length} string(s) of another run that this run's client never sent: ${leaked.slice(0, 3).join(', ')}`,
      });
    }
  }
  return violations;
}

/** A file Claude Code attaches to a user turn (after `/compact`, or `@`-mentioned). */
const ATTACHED_FILE =
  /<system-reminder>\nResult of calling the [\w-]+ tool:\n[\s\S]*?<\/system-reminder>\n?/g;
/** What the proxy's window rescue leaves of one. */
const FOLDED_FILE = /\[folded function:[\w.-]+:\d+: [\s\S]*?expand\("function:[\w.-]+:\d+"\) recovers it\)/g;

/** A user turn's text without the files attached to it, or what their folds left (and the blank lines). */
function withoutFiles(text: string): string {
  return text.replace(ATTACHED_FILE, '').replace(FOLDED_FILE, '').replace(/\n+/g, '\n');
}

/**
 * Whether an upstream request's last user text keeps a client's: as it was; ending a longer user
 * turn, after a line break (a Chat client that never sends two user messages in a row gets a run
 * of them in its view joined, the latest last: a fold or tombstone before it), though not after
 * the same words again; or, when the client attached files to it, with them folded by the
 * proxy's window rescue and the rest as it was.
 */
function keepsUserText(text: string, words: string): boolean {
  if (text === words) return true;
  if (text.endsWith(`\n${words}`)) {
    const before = text.slice(0, -words.length - 1).replace(/\n+$/, '');
    return before !== words && !before.endsWith(`\n${words}`);
  }
  const bare = withoutFiles(words);
  return bare !== words && text.replace(FOLDED_FILE, '') !== text && withoutFiles(text) === bare;
}

/**
 * For each client request (by position in `wanted`), the upstream request (by position in
 * `texts`) that keeps its last user text, each upstream request taken for one client request at
 * most (a maximum bipartite matching); undefined for those left without one.
 */
function matchUserTexts(wanted: readonly string[], texts: readonly string[]): Array<number | undefined> {
  const holder: Array<number | undefined> = texts.map(() => undefined);
  const fits = wanted.map((words) => texts.flatMap((text, at) => (keepsUserText(text, words) ? [at] : [])));
  const place = (client: number, seen: Set<number>): boolean => {
    for (const at of fits[client]!) {
      if (seen.has(at)) continue;
      seen.add(at);
      const other = holder[at];
      if (other === undefined || place(other, seen)) {
        holder[at] = client;
        return true;
      }
    }
    return false;
  };
  for (let client = 0; client < wanted.length; client += 1) place(client, new Set());
  const matched: Array<number | undefined> = wanted.map(() => undefined);
  holder.forEach((client, at) => {
    if (client !== undefined) matched[client] = at;
  });
  return matched;
}

/**
 * Governance never touches the latest turn: the tool results a client request ends with reach
 * the upstream as they were (some upstream request ends with the same results), and so does
 * the text of its last user turn (a prompt, or what the client attaches to it; `keepsUserText`).
 * Each client request the proxy answered with 2xx went upstream, so its text must be kept by an
 * upstream request of its own: another request ending with the same words (a retry, a title
 * request) does not stand for it.
 */
export function checkLatestTurn(run: RunRecord): Violation[] {
  const upstream = readRequests(run.upstream);
  const upstreamEndings = upstream.map(({ request }) => latestResults(request).map((result) => result.text));
  const upstreamTexts = upstream.map(({ request }) => lastUserText(request));
  const answered = new Set(
    run.client
      .filter((exchange) => exchange.status !== undefined && exchange.status >= 200 && exchange.status <= 299)
      .map((exchange) => exchange.index),
  );
  const asked = clientRequests(run).map(({ index, request }) => ({
    index,
    request,
    words: lastUserText(request),
  }));
  // The upstream request that kept each answered request's words, one client request apiece.
  const owned = asked.filter(({ index, words }) => words !== '' && answered.has(index));
  const matched = matchUserTexts(
    owned.map(({ words }) => words),
    upstreamTexts,
  );
  const unkept = new Set(owned.filter((_, at) => matched[at] === undefined).map(({ index }) => index));
  const violations: Violation[] = [];
  for (const { index, request, words } of asked) {
    const anywhere = upstreamTexts.some((text) => keepsUserText(text, words));
    if (words !== '' && (unkept.has(index) || !anywhere)) {
      const alike = asked.filter((other) => other.words === words).length;
      violations.push({
        check: 'latest-turn',
        run: run.label,
        request: index,
        message: anywhere
          ? `the client's request ended with a user turn (${JSON.stringify(words.slice(0, 80))}…) that only upstream requests kept for other client requests ended with (one upstream request per client request; ${alike} client requests ended with it): the latest turn was changed or dropped`
          : `the client's request ended with a user turn (${JSON.stringify(words.slice(0, 80))}…) whose text no upstream request ended with: the latest turn was changed or dropped`,
      });
    }
    const results = latestResults(request);
    if (results.length === 0) continue;
    if (upstreamEndings.some((ending) => results.every((result) => ending.includes(result.text)))) continue;
    const texts = results.map((result) => result.text);
    violations.push({
      check: 'latest-turn',
      run: run.label,
      request: index,
      message:
        `the client's request ended with ${results.length} tool result(s) (${JSON.stringify(texts[0]!.slice(0, 80))}…) that no upstream request ended with: the latest turn was changed or dropped` +
        closestEnding(texts, upstreamEndings),
    });
  }
  return violations;
}

/**
 * Where the client's result that the upstream endings lack parts from the upstream result most
 * like it (the longest shared start): the first result no ending holds, else the first that the
 * ending holding the most of them lacks.
 */
function closestEnding(texts: readonly string[], endings: ReadonlyArray<readonly string[]>): string {
  const held = (ending: readonly string[]) => texts.filter((text) => ending.includes(text)).length;
  const fullest = endings.reduce<readonly string[]>(
    (best, ending) => (held(ending) > held(best) ? ending : best),
    [],
  );
  const missing =
    texts.find((text) => !endings.some((ending) => ending.includes(text))) ??
    texts.find((text) => !fullest.includes(text));
  if (missing === undefined) return '';
  let best: { shared: number; ending: string } | undefined;
  for (const ending of endings.flat()) {
    let shared = 0;
    while (shared < missing.length && shared < ending.length && missing[shared] === ending[shared])
      shared += 1;
    if (best === undefined || shared > best.shared) best = { shared, ending };
  }
  if (best === undefined || best.shared === 0) return '';
  const around = (value: string) =>
    JSON.stringify(value.slice(Math.max(0, best.shared - 20), best.shared + 40));
  return `; the closest upstream result parts from it at character ${best.shared} of ${missing.length}: ${around(missing)} became ${around(best.ending)}`;
}

/** Results of `selfgc_expand` calls that reached the upstream, with the text they carried. */
function expandResults(request: WireRequest): string[] {
  const expandCalls = new Set(
    request.turns.flatMap((turn) =>
      turn.calls.filter((call) => call.name === EXPAND_TOOL).map((call) => call.id),
    ),
  );
  return latestResults(request)
    .filter((result) => expandCalls.has(result.id))
    .map((result) => result.text);
}

/** The scripted model recovered the secret through `selfgc_expand`, answered by the proxy. */
export function checkRecovery(run: RunRecord): string[] {
  if (run.secret === undefined) return [];
  const upstream = readRequests(run.upstream);
  const recovered = upstream.some(({ request }) =>
    expandResults(request).some((text) => text.includes(run.secret!)),
  );
  // The secret stands at the end of a file longer than a page: it takes reading on.
  const pagedOn = upstream.some(({ request }) =>
    request.turns.some((turn) =>
      turn.calls.some((call) => call.name === EXPAND_TOOL && /"offset":\s*[1-9]/.test(call.arguments)),
    ),
  );
  if (recovered && pagedOn) return [];
  if (recovered)
    return [
      `the secret came back on the first ${EXPAND_TOOL} page: no request read a next page (offset > 0)`,
    ];
  const offering = upstream.filter(({ request }) =>
    request.tools.some((tool) => tool.name === EXPAND_TOOL),
  ).length;
  const withPointers = upstream.filter(({ request }) =>
    JSON.stringify(request.turns).includes('expand(\\"'),
  ).length;
  const expanded = upstream.filter(({ request }) => expandResults(request).length > 0).length;
  const last = upstream[upstream.length - 1];
  const kept = last !== undefined && JSON.stringify(last.request.turns).includes(run.secret);
  return [
    `no upstream request carried a ${EXPAND_TOOL} result with the secret: of ${upstream.length} upstream requests, ` +
      `${withPointers} showed recovery pointers, ${offering} offered ${EXPAND_TOOL}, ${expanded} carried ${EXPAND_TOOL} results; ` +
      `the secret was ${kept ? 'still' : 'not'} in the last one. CLI output: ${ending(run.stdout, 300)}`,
  ];
}

/** A call of a `selfgc_` tool in an answer, streamed or not, in any of the three wire formats. */
const PROXY_TOOL_CALL = /"name":\s*"(selfgc_[a-z_]+)"/;

/** The client never sees the proxy's recovery tool: not in what it sends, not in what it gets. */
export function checkRecoveryHidden(run: RunRecord): Violation[] {
  const violations: Violation[] = [];
  for (const { index, request } of clientRequests(run)) {
    const named = request.turns
      .flatMap((turn) => turn.calls)
      .filter((call) => call.name.startsWith('selfgc_'));
    if (named.length > 0)
      violations.push({
        check: 'recovery-hidden',
        run: run.label,
        request: index,
        message: `the client sent back a call of the proxy's own tool ${named[0]!.name}`,
      });
  }
  for (const exchange of run.client) {
    const call = PROXY_TOOL_CALL.exec(exchange.answer);
    if (call !== null)
      violations.push({
        check: 'recovery-hidden',
        run: run.label,
        request: exchange.index,
        message: `the answer to the client calls the proxy's own tool ${call[1]}`,
      });
  }
  return violations;
}

/**
 * A WebSocket handshake (Codex signed in with ChatGPT opens one first) that the proxy refused with
 * 426, the answer that has the client use HTTP at once.
 */
function refusedWebSocket(exchange: RecordedExchange): boolean {
  return exchange.status === 426 && /websocket/i.test(exchange.headers.upgrade ?? '');
}

/** Every request the client sent got a 2xx answer from the proxy (a WebSocket handshake its 426). */
export function checkProxyAnswers(run: RunRecord): Violation[] {
  return run.client
    .filter((exchange) => exchange.status === undefined || exchange.status < 200 || exchange.status > 299)
    .filter((exchange) => !refusedWebSocket(exchange))
    .map((exchange) => ({
      check: 'proxy-answers' as const,
      run: run.label,
      request: exchange.index,
      message: `${exchange.method} ${exchange.path} answered ${exchange.status ?? 'nothing'}: ${ending(exchange.answer, 300)}`,
    }));
}

/**
 * A file the CLI attached to the task's request is an output the proxy can fold: when a user turn
 * of the client's requests holds it (Codex attaches none), some upstream request of the run does
 * not. The task's request is pinned, and would otherwise carry it whole in every one.
 */
export function checkAttachedFile(run: RunRecord): string[] {
  const line = run.attachedLine;
  if (line === undefined) return [];
  const inUserTurn = ({ request }: { request: WireRequest }) =>
    request.turns.some((turn) => turn.role === 'user' && turn.text.includes(line));
  if (!clientRequests(run).some(inUserTurn)) return [];
  const upstream = readRequests(run.upstream);
  if (!upstream.every(({ request }) => requestText(request).includes(line))) return [];
  return [`the file the CLI attached to the task stayed whole in all ${upstream.length} upstream requests`];
}

/** The scenario really pressed the window: some request the client sent would not fit it. */
export function checkScenarioPressure(runs: readonly RunRecord[], window: number): string[] {
  let largest: ReturnType<typeof measureRequest> | undefined;
  for (const run of runs) {
    for (const { request } of clientRequests(run)) {
      const size = measureRequest(request, counterForRoute(request.route));
      if (largest === undefined || size.total > largest.total) largest = size;
    }
  }
  if (largest !== undefined && largest.total > window) return [];
  const peak = largest === undefined ? 'no model request' : describeSize(largest);
  return [
    `the client's largest request was ${peak}, within the window of ${window}: the proxy had nothing to govern`,
  ];
}

/**
 * On a platform without the binding controls (`Scenario.upstream`), the requests the proxy added
 * their beta to were refused and went again without it (`sent-again-after-refusal`): a scenario
 * where none did tested nothing. A refusal the client got is `proxy-answers`'s to report.
 */
export function checkRefusalsRemedied(result: ScenarioResult): string[] {
  if (createScenario(result.scenario).upstream?.thinkingBinding !== false) return [];
  const remedied = result.proxyLog.some(
    (entry) => Array.isArray(entry.warnings) && entry.warnings.includes(SENT_AGAIN_AFTER_REFUSAL),
  );
  return remedied
    ? []
    : [
        `no request went again after a refusal (${SENT_AGAIN_AFTER_REFUSAL}): the platform's refusal was never met`,
      ];
}

/**
 * No request dropped stored state: each conversation goes on from its own, whatever other
 * conversations (a subagent's, a side request's) the client sends under its session id. The
 * scenarios edit a conversation only by cutting it back, and part one only by resuming it twice
 * at once (`excused`, the requests whose drops are the cut steps' or the other fork's), so every
 * other drop is one conversation's state lost to another.
 */
export function checkKeptState(
  proxyLog: ScenarioResult['proxyLog'],
  excused: ReadonlySet<string> = new Set(),
): string[] {
  // A session the proxy told to compact may replace its history once, as it was told: by an
  // earlier answer, never by the answer to the request that dropped (the client had not read it).
  const signalled = new Set<unknown>();
  return proxyLog.flatMap((entry, index) => {
    const dropped = typeof entry.droppedStates === 'number' ? entry.droppedStates : 0;
    const allowed = dropped > 0 && (signalled.delete(entry.session) || excused.has(String(entry.requestId)));
    if (signalledCompaction(entry)) signalled.add(entry.session);
    if (dropped === 0 || allowed) return [];
    return [
      `proxy log entry #${index} (session ${String(entry.session)}, ${String(entry.path)}) dropped ${dropped} object state(s) at message ${String(entry.divergedAt)}: another conversation's request took its session's state`,
    ];
  });
}

/**
 * The requests (by the proxy's request id) of runs whose client sent a history cut back
 * (`rewindTo`) up to the first that committed: until a commit stores the shorter history, each
 * drops the state of the steps that were cut, as it should.
 */
export function cutBackRequests(runs: readonly RunRecord[]): Set<string> {
  return new Set(
    runs.flatMap((run) => {
      if (run.rewindTo === undefined) return [];
      const committed = run.client.findIndex((exchange) => exchange.commit !== undefined);
      return requestIds(committed < 0 ? run.client : run.client.slice(0, committed + 1));
    }),
  );
}

/**
 * The requests (by the proxy's request id) of runs that resumed one conversation at once
 * (`forked-resume`): one session holds both conversations after the history they share, so each
 * request of one drops the state the other's left. The run they resume is held to its state.
 */
export function forkedRequests(runs: readonly RunRecord[]): Set<string> {
  return new Set(
    groupsOf(runs)
      .filter((group) => group.length > 1 && group.every((run) => run.continues === true))
      .flatMap((group) => group.flatMap((run) => requestIds(run.client))),
  );
}

/** The proxy's ids of the requests (its `x-selfgc-request-id` answers). */
function requestIds(exchanges: readonly RecordedExchange[]): string[] {
  return exchanges.flatMap((exchange) => (exchange.requestId === undefined ? [] : [exchange.requestId]));
}

/** Whether the proxy reported the client's whole prompt in this answer, for the client to compact. */
function signalledCompaction(entry: ScenarioResult['proxyLog'][number]): boolean {
  return Array.isArray(entry.warnings) && entry.warnings.includes('client-compaction');
}

/**
 * A run whose CLI was to compact by itself (`auto-compaction`): the proxy answered some request
 * with the client's whole prompt (`client-compaction`), the client asked the model for a summary
 * after that, and the next request of its agent loop (one with tools, neither a side request nor
 * another compaction request) is smaller than the largest before the summary (the client
 * replaced its history).
 */
export function checkClientCompaction(run: RunRecord): string[] {
  if (run.autoCompacts !== true) return [];
  const requests = clientRequests(run);
  const signalledAt = (at: number) =>
    run.client
      .find((exchange) => exchange.index === requests[at]!.index)
      ?.warnings?.includes('client-compaction') === true;
  const signal = requests.findIndex((_, at) => signalledAt(at));
  if (signal < 0)
    return ["the proxy never reported the client's whole prompt (no client-compaction warning)"];
  const asked = requests.findIndex(({ request }, at) => at > signal && asksForCompaction(request));
  if (asked < 0)
    return ['the client never asked for a compaction summary after the proxy reported its prompt'];
  const size = (at: number) => {
    const { request } = requests[at]!;
    return measureRequest(request, counterForRoute(request.route)).total;
  };
  // A compaction request may carry the tools (Codex's remote trigger does) and come again (a retry).
  const next = requests.findIndex(
    ({ request }, at) => at > asked && request.tools.length > 0 && !asksForCompaction(request),
  );
  if (next < 0) return ['the client sent no request of its agent loop after its compaction request'];
  const before = Math.max(...requests.slice(0, asked + 1).map((_, at) => size(at)));
  if (size(next) >= before)
    return [
      `the request after the compaction (${size(next)} tokens) is no smaller than the largest before it (${before})`,
    ];
  return [];
}

/**
 * Each conversation keeps its state, resumed ones too: once governance committed in a session, a
 * request of the conversation in any other session is governed without that state. A session left
 * before anything was committed in it holds nothing to lose: a client that names no session of
 * its own is governed by the hash of its conversation's start until the first reply, and of both
 * from then on (`session-identity.ts`).
 */
export function checkOneSession(runs: readonly RunRecord[]): Violation[] {
  const violations: Violation[] = [];
  /** Per conversation (the text that opens it): the session its first commit went to. */
  let committedIn = new Map<string, string>();
  for (const run of runs) {
    // A run that does not resume is a new conversation, though it may open with the same words.
    if (run.continues !== true) committedIn = new Map();
    const flagged = new Set<string>();
    for (const { index, request } of clientRequests(run)) {
      const exchange = run.client.find((record) => record.index === index);
      if (exchange?.session === undefined) continue;
      const opening = openingText(request);
      const committed = committedIn.get(opening);
      if (committed !== undefined && committed !== exchange.session && !flagged.has(opening)) {
        flagged.add(opening);
        violations.push({
          check: 'one-session',
          run: run.label,
          request: index,
          message: `the conversation opening ${JSON.stringify(opening.slice(-80))} went on in session ${exchange.session} after governance committed in ${committed}${run.continues === true ? ' (the run it resumes included)' : ''}`,
        });
      }
      if (committed === undefined && exchange.commit !== undefined)
        committedIn.set(opening, exchange.session);
    }
  }
  return violations;
}

function checkUpstreamRequests(run: RunRecord, window: number): Violation[] {
  const violations: Violation[] = [];
  for (const { index, request } of readRequests(run.upstream)) {
    const add = (check: CheckName, problems: string[]) => {
      for (const message of problems) violations.push({ check, run: run.label, request: index, message });
    };
    add('tool-pairs', checkToolPairs(request));
    add('cache-breakpoints', checkCacheBreakpoints(request));
    add('window', checkWindow(request, counterForRoute(request.route), window));
  }
  violations.push(...checkUpstreamCoding(run));
  return violations;
}

/**
 * A body that reached the upstream as JSON names no content coding: a client's compressed body
 * (Codex signed in with ChatGPT) goes upstream decoded, the proxy's own recovery rounds too, and a
 * real upstream would try to undo a coding still named.
 */
export function checkUpstreamCoding(run: RunRecord): Violation[] {
  return run.upstream
    .filter((record) => typeof record.body === 'object' && record.headers['content-encoding'] !== undefined)
    .map((record) => ({
      check: 'upstream-coding' as const,
      run: run.label,
      request: record.index,
      message: `${record.method} ${record.path} went upstream as JSON with content-encoding: ${record.headers['content-encoding']}`,
    }));
}

/**
 * A run that resumes the conversation of the run before with steps of its own (`forked-resume`,
 * `rewound-resume`) sent that conversation's history: the run before's marker is in what its
 * client sent, or the CLI started afresh and nothing of a resume was tested (its own steps end the
 * run alike). One whose saved history was cut back (`rewindTo`) sent the file of that step and of
 * none after it, or the cut did not take and nothing was cut that could leak.
 */
export function checkResumedHistory(run: RunRecord, before: RunRecord | undefined): string[] {
  if (run.continues !== true || before === undefined || before.marker === run.marker) return [];
  const sent = run.client.map((exchange) => exchange.body).join('\n');
  if (!sent.includes(before.marker))
    return [
      `no request of the client held ${before.marker} of ${before.label}: the CLI did not resume its conversation`,
    ];
  if (run.rewindTo === undefined) return [];
  // A step file opens with its step name and its run's marker (`stepFile`).
  const steps = [...sent.matchAll(new RegExp(`E2E-STEP-(\\d+) ${before.marker}`, 'g'))].map((match) =>
    Number(match[1]),
  );
  const problems: string[] = [];
  if (!steps.includes(run.rewindTo))
    problems.push(
      `the client never sent step ${run.rewindTo} of ${before.label}, the step it was cut back to`,
    );
  const cut = [...new Set(steps.filter((step) => step > run.rewindTo!))].sort((a, b) => a - b);
  if (cut.length > 0)
    problems.push(
      `the client sent step(s) ${cut.join(', ')} of ${before.label}, cut from its saved conversation: the cut did not take`,
    );
  return problems;
}

/** The last run of the group before the run's own: the one whose conversation it resumes. */
function runBefore(runs: readonly RunRecord[], run: RunRecord): RunRecord | undefined {
  const groups = groupsOf(runs);
  return groups[groups.findIndex((group) => group.includes(run)) - 1]?.at(-1);
}

/**
 * What a run may not see unless its client sent it: the strings of the runs before it, and of
 * those that went at once with it.
 */
function othersOf(runs: readonly RunRecord[], run: RunRecord): string[] {
  const groups = groupsOf(runs);
  const at = groups.findIndex((group) => group.includes(run));
  return groups
    .slice(0, at + 1)
    .flat()
    .filter((other) => other !== run)
    .flatMap((other) => other.uniqueStrings);
}

/**
 * Runs that were to go at once did: the span from each run's first request to its last overlaps
 * every other's in the group. Otherwise the scenario tested runs one after the other.
 */
export function checkRunsOverlap(runs: readonly RunRecord[]): string[] {
  const span = (run: RunRecord) => {
    const times = run.client.map((exchange) => run.relayStartedAt + exchange.at);
    return times.length === 0 ? undefined : { from: Math.min(...times), to: Math.max(...times) };
  };
  return groupsOf(runs)
    .filter((group) => group.length > 1)
    .flatMap((group) =>
      group.flatMap((run, at) =>
        group.slice(at + 1).flatMap((other) => {
          const [one, two] = [span(run), span(other)];
          if (one === undefined || two === undefined || (one.from <= two.to && two.from <= one.to)) return [];
          return [
            `${run.label} and ${other.label} were to go at once, but one's requests all came before the other's: ${one.from}–${one.to} and ${two.from}–${two.to} ms`,
          ];
        }),
      ),
    );
}

export function validateScenario(result: ScenarioResult): Violation[] {
  const violations: Violation[] = [];
  if (result.error !== undefined) violations.push({ check: 'runner', run: '-', message: result.error });
  for (const message of checkRunsOverlap(result.runs))
    violations.push({ check: 'runner', run: '-', message });
  for (const run of result.runs) {
    for (const message of checkTask(run)) violations.push({ check: 'task', run: run.label, message });
    for (const message of checkResumedHistory(run, runBefore(result.runs, run)))
      violations.push({ check: 'resumed-history', run: run.label, message });
    if (result.proxied) {
      violations.push(...checkProxyAnswers(run));
      violations.push(...checkUpstreamRequests(run, result.window));
      violations.push(...checkLatestTurn(run));
      violations.push(...checkForeignContent(run, othersOf(result.runs, run)));
      for (const message of checkRecovery(run))
        violations.push({ check: 'recovery', run: run.label, message });
      violations.push(...checkRecoveryHidden(run));
      for (const message of checkAttachedFile(run))
        violations.push({ check: 'attached-file', run: run.label, message });
      for (const message of checkClientCompaction(run))
        violations.push({ check: 'client-compaction', run: run.label, message });
    }
  }
  if (result.proxied) {
    const excused = new Set([...cutBackRequests(result.runs), ...forkedRequests(result.runs)]);
    for (const message of checkKeptState(result.proxyLog, excused))
      violations.push({ check: 'kept-state', run: '-', message });
    violations.push(...checkOneSession(result.runs));
    for (const message of checkRefusalsRemedied(result))
      violations.push({ check: 'scenario-pressure', run: '-', message });
  }
  // A run that stopped early (a refused request) says nothing about the scenario's pressure.
  const finished = result.runs.filter((run) => checkTask(run).length === 0);
  if (finished.length > 0) {
    for (const message of checkScenarioPressure(finished, result.window))
      violations.push({ check: 'scenario-pressure', run: '-', message });
  }
  return violations;
}
