/**
 * The scripted model behind the suite's upstream: it plays an agent that works through a
 * scenario's steps with the CLI's own tools, and keeps no state of its own (which run a request
 * plays is the runner's to say). Where it is comes from the request alone (the step marker of the
 * latest tool result, which governance never folds), so it behaves the same whatever the proxy
 * did to the older turns.
 *
 * In `streaming-recovery` it needs, at the end, a value that only the first step's file showed:
 * when that is no longer in the request, it follows a recovery pointer (`expand("<id>")`) with
 * the proxy's `selfgc_expand` tool, as a real model would, if the request offers that tool. A run
 * that continues a resumed conversation (`resume`) asks for that value at once; one that goes on
 * in it with steps of its own (`forked-resume`, `rewound-resume`) counts only the results of its
 * own files, whatever results of the task it resumes the history ends with. A step it hands
 * to a subagent (`subagent`) it plays twice: the parent's call of the CLI's agent tool, and the
 * subagent's own conversation, told apart by the prompt that opens it. Asked to summarize the
 * conversation for a compaction (`compaction`), it writes a summary of where it is; a run that
 * goes on after the compaction answers from that summary alone, and one the client compacted in
 * the middle of its task (`auto-compaction`) takes its next step from it. On Messages with
 * thinking on (Claude Code's requests), every answer opens with a thinking block.
 */
import type { ScriptedReply, ScriptedRequest } from '../src/testing/index.js';
import type { AgentTools } from './agent-clis.js';
import {
  type AgentStep,
  COMPACTION_REQUEST,
  type DelegateStep,
  type FileStep,
  finalAnswer,
  type ScenarioRun,
  SECRET_LEAD,
  SUBSTEP_MARK,
  SUBTASK_MARK,
  stepName,
  summaryLine,
} from './agent-scenarios.js';
import {
  lastUserText,
  latestResults,
  openingText,
  readWireRequest,
  requestText,
  routeOfPath,
  type WireRequest,
  type WireResult,
} from './read-wire-request.js';

export const EXPAND_TOOL = 'selfgc_expand';

export interface ScriptedAgentOptions {
  tools: AgentTools;
  /** The project directory (read tools take absolute paths). */
  project: string;
  /**
   * The run a request plays, which the runner tells by the header the run's relay adds
   * (`CLIENT_HEADER`), runs that go at once too.
   */
  run(request: ScriptedRequest): ScenarioRun;
}

const STEP = /E2E-STEP-(\d+)/g;
const SUBSTEP = new RegExp(`${SUBSTEP_MARK}-(\\d+)`, 'g');
const MARKER = /E2E-RUN-[0-9a-f]+/;
const TOKEN = /E2E-TOKEN-[0-9a-f]+/;
const SECRET = new RegExp(`${SECRET_LEAD} ([a-z]+ [a-z]+ [a-z]+)\\.`);
const POINTER = /expand\("([^"]+)"\)/g;
/** A step file's last line, with the step and its token. */
const STEP_END = /E2E-STEP-(\d+) ends with (E2E-TOKEN-[0-9a-f]+)/g;
/** The summary line the scripted model writes for a compaction (`summaryLine`), whatever it saw. */
const SUMMARY_LINE = /E2E-SUMMARY (\S+) steps=(\d+) token=(\S+)/;
/** The line that ends a recovered page with more to come (the proxy's `selfgc_expand` answer). */
const NEXT_PAGE = /Call selfgc_expand with (\{"id": "[^"]+", "offset": \d+\}) for the next page\./;

/** The latest step number a text shows (`STEP` or `SUBSTEP`), or 0. */
function stepOf(text: string, pattern = STEP): number {
  let step = 0;
  for (const match of text.matchAll(pattern)) step = Math.max(step, Number(match[1]));
  return step;
}

function say(text: string): ScriptedReply {
  return { text };
}

/** Calls of the request's last model turn, by id. */
function lastCalls(request: WireRequest): Map<string, string> {
  const calls = new Map<string, string>();
  for (let index = request.turns.length - 1; index >= 0; index -= 1) {
    const turn = request.turns[index]!;
    if (turn.role !== 'assistant') {
      if (calls.size > 0) break;
      continue;
    }
    for (const call of turn.calls) calls.set(call.id, call.name);
  }
  return calls;
}

/** Recovery pointers in the request, those near a mention of `near` first. */
function pointers(request: WireRequest, near: string): string[] {
  const texts = request.turns.flatMap((turn) => [turn.text, ...turn.results.map((result) => result.text)]);
  const close: string[] = [];
  const other: string[] = [];
  for (const text of texts) {
    for (const match of text.matchAll(POINTER)) {
      const id = match[1]!;
      const list = text.includes(near) ? close : other;
      if (!list.includes(id)) list.push(id);
    }
  }
  return [...close, ...other.filter((id) => !close.includes(id))];
}

/** Ids the model already expanded in this request's turns. */
function expandedIds(request: WireRequest): Set<string> {
  const ids = new Set<string>();
  for (const turn of request.turns) {
    for (const call of turn.calls) {
      if (call.name !== EXPAND_TOOL) continue;
      try {
        const parsed = JSON.parse(call.arguments) as { id?: unknown };
        if (typeof parsed.id === 'string') ids.add(parsed.id);
      } catch {
        // A malformed call of ours cannot happen; nothing to add.
      }
    }
  }
  return ids;
}

function recover(request: WireRequest, run: ScenarioRun, results: WireResult[]): ScriptedReply {
  const secretPath = (run.steps[0] as FileStep).path;
  // A later page starts inside the file, after its marker: the request still shows it elsewhere.
  const marker =
    MARKER.exec(results.map((result) => result.text).join('\n'))?.[0] ??
    MARKER.exec(requestText(request))?.[0] ??
    'no-marker';
  const visible = SECRET.exec(requestText(request))?.[1];
  if (visible !== undefined) return say(finalAnswer({ marker, secret: visible }));
  // A page that ends before the value: read on where it says the next page starts.
  const nextPage = results.map((result) => NEXT_PAGE.exec(result.text)?.[1]).find(Boolean);
  if (nextPage !== undefined)
    return { toolCalls: [{ name: EXPAND_TOOL, arguments: JSON.parse(nextPage) as Record<string, unknown> }] };
  const offered = request.tools.some((tool) => tool.name === EXPAND_TOOL);
  const tried = expandedIds(request);
  const next = pointers(request, secretPath.split('/').pop()!).find((id) => !tried.has(id));
  if (!offered || next === undefined) {
    // Worded without the tool's name: the suite looks for that name in what the client gets.
    const why = offered ? 'no recovery pointer is left to follow' : 'the request offers no recovery tool';
    return say(`E2E-FAILED the value from ${secretPath} is gone from the context and ${why}`);
  }
  return { toolCalls: [{ name: EXPAND_TOOL, arguments: { id: next } }] };
}

/** The latest step whose file's end a text shows, with that file's token. */
function latestStepEnd(text: string): { step: number; token: string } | undefined {
  let latest: { step: number; token: string } | undefined;
  for (const match of text.matchAll(STEP_END)) {
    const step = Number(match[1]);
    if (latest === undefined || step > latest.step) latest = { step, token: match[2]! };
  }
  return latest;
}

/**
 * The summary of a compaction, in the tags the client asks for: the run's marker, the latest
 * step whose file's end the request still shows, and that file's token.
 */
function summarize(request: WireRequest): ScriptedReply {
  const text = requestText(request);
  const latest = latestStepEnd(text);
  const marker = MARKER.exec(text)?.[0] ?? 'no-marker';
  const line = summaryLine({ marker, steps: latest?.step ?? 0, token: latest?.token ?? 'none' });
  // A remote compaction is answered by one compaction item, whose content only the API reads.
  if (request.compactionTrigger) return { compaction: line };
  return say(`<analysis>The notes read so far, in order.</analysis>\n<summary>\n${line}\n</summary>`);
}

/** Whether the client asks for a compaction: in its last user turn, or by Codex's remote trigger. */
export function asksForCompaction(request: WireRequest): boolean {
  return request.compactionTrigger || COMPACTION_REQUEST.test(lastUserText(request));
}

/** After a compaction: the answer the conversation's opening summary gives, and nothing else. */
function answerFromSummary(request: WireRequest): ScriptedReply {
  const summary = SUMMARY_LINE.exec(openingText(request));
  if (summary === null) return say('E2E-FAILED the conversation does not open with the summary');
  return say(finalAnswer({ marker: summary[1]!, steps: Number(summary[2]), token: summary[3]! }));
}

/** The call that takes a file step with the CLI's own tool. */
function fileCall(options: ScriptedAgentOptions, step: FileStep) {
  return step.tool === 'read'
    ? options.tools.read(`${options.project}/${step.path}`)
    : options.tools.shell(`cat ${step.path}`);
}

/** The file steps at the head of `steps`, up to the first that is not one. */
function fileSteps(steps: readonly AgentStep[]): FileStep[] {
  const end = steps.findIndex((step) => step.tool === 'agent');
  return (end < 0 ? steps : steps.slice(0, end)) as FileStep[];
}

/** The delegate step whose subagent this conversation is (its opening prompt), with its number. */
function delegationOf(
  request: WireRequest,
  run: ScenarioRun,
): { step: DelegateStep; number: number } | undefined {
  const opening = openingText(request);
  if (!opening.includes(SUBTASK_MARK)) return undefined;
  const index = run.steps.findIndex((step) => step.tool === 'agent' && opening.includes(step.prompt));
  return index < 0 ? undefined : { step: run.steps[index] as DelegateStep, number: index + 1 };
}

/** The subagent's turn: its next file, or its report, which names the parent's step it answers. */
function playSubagent(
  options: ScriptedAgentOptions,
  delegation: { step: DelegateStep; number: number },
  text: string,
) {
  const done = stepOf(text, SUBSTEP);
  if (text !== '' && done === 0) {
    return say(`E2E-FAILED a subagent tool result without a substep marker: ${text.slice(0, 300)}`);
  }
  const next = delegation.step.steps[done];
  if (next !== undefined)
    return { text: `Substep ${done + 1}: ${next.path}.`, toolCalls: [fileCall(options, next)] };
  const marker = MARKER.exec(text)?.[0] ?? 'no-marker';
  const token = TOKEN.exec(text)?.[0] ?? 'no-token';
  return say(`E2E-SUBDONE ${stepName(delegation.number)} ${marker} token=${token}`);
}

/**
 * What a thinking model opens its answer with when a Messages request turns thinking on
 * (`enabled`, or `adaptive` as Claude Code sends it): a thinking block, empty when the request
 * asks for it omitted (`display: 'omitted'`), as the API then sends only its signature.
 */
function thinkingFor(scripted: ScriptedRequest): string | undefined {
  if (routeOfPath(scripted.path) !== 'messages') return undefined;
  const body = scripted.body;
  if (typeof body !== 'object' || body === null) return undefined;
  const { thinking } = body as { thinking?: { type?: unknown; display?: unknown } | null };
  if (thinking?.type !== 'enabled' && thinking?.type !== 'adaptive') return undefined;
  return thinking.display === 'omitted' ? '' : 'E2E thinking: where the task stands.';
}

/** The script function for `startScriptedUpstream`. */
export function createScriptedAgent(options: ScriptedAgentOptions) {
  const play = playAgent(options);
  return (scripted: ScriptedRequest): ScriptedReply => {
    const reply = play(scripted);
    const thinking = thinkingFor(scripted);
    return thinking === undefined ? reply : { ...reply, thinking };
  };
}

/** The scripted agent's answer, before any thinking. */
function playAgent(options: ScriptedAgentOptions) {
  return (scripted: ScriptedRequest): ScriptedReply => {
    const route = routeOfPath(scripted.path);
    if (route === undefined) return say('E2E side answer');
    const request = readWireRequest(route, scripted.body);
    // Codex asks for its summary without tools, as side requests are asked.
    if (asksForCompaction(request)) return summarize(request);
    const loop = request.tools.some((tool) => options.tools.loopTools.includes(tool.name));
    if (!loop) return say('E2E notes');
    const run = options.run(scripted);
    if (run.afterCompaction === true) return answerFromSummary(request);
    // A resumed run with steps of its own counts only its own results: a conversation cut back
    // to a tool result goes on with it and the new prompt in one turn.
    const latest = latestResults(request);
    const results =
      run.continues === true && run.secret === undefined
        ? latest.filter((result) => result.text.includes(run.marker))
        : latest;
    const calls = lastCalls(request);
    const internal = results.some((result) => calls.get(result.id) === EXPAND_TOOL);
    const text = results.map((result) => result.text).join('\n');
    const delegation = delegationOf(request, run);
    if (delegation !== undefined) return playSubagent(options, delegation, text);
    // A resumed run with a secret asks for it at once; one without goes on with steps of its own.
    if (internal || (run.continues === true && run.secret !== undefined))
      return recover(request, run, results);
    // A conversation the client compacted in the middle of its task: until the next step, its
    // summary says where it stands.
    const summary = results.length === 0 ? SUMMARY_LINE.exec(requestText(request)) : null;
    if (summary !== null && run.steps[Number(summary[2])] === undefined)
      return say(finalAnswer({ marker: summary[1]!, steps: Number(summary[2]), token: summary[3]! }));
    const step = summary === null ? stepOf(text) : Number(summary[2]);
    if (results.length > 0 && step === 0) {
      return say(`E2E-FAILED a tool result without a step marker: ${text.slice(0, 300)}`);
    }
    const next = run.steps[step];
    if (next?.tool === 'agent') {
      if (options.tools.delegate === undefined) return say('E2E-FAILED this CLI has no agent tool to script');
      return { text: `Step ${step + 1}: a subagent.`, toolCalls: [options.tools.delegate(next.prompt)] };
    }
    if (next !== undefined) {
      const batch = fileSteps(run.steps.slice(step, step + (run.parallel ?? 1)));
      const paths = batch.map((file) => file.path).join(', ');
      return { text: `Step ${step + 1}: ${paths}.`, toolCalls: batch.map((file) => fileCall(options, file)) };
    }
    if (run.secret !== undefined) return recover(request, run, results);
    const marker = MARKER.exec(text)?.[0] ?? 'no-marker';
    // Of several results (parallel-reads), the latest step's token.
    const token = latestStepEnd(text)?.token ?? TOKEN.exec(text)?.[0] ?? 'no-token';
    return say(finalAnswer({ marker, steps: step, token }));
  };
}
