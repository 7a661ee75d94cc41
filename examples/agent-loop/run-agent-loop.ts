/**
 * A long agent session under a small window, end to end: a scripted model on loopback (OpenAI
 * Chat wire format) reached through the real OpenAI SDK wrapped by `governOpenAI`, a governor
 * with a SQLite sidecar and the o200k tokenizer, real tools over a real repository, and the GC
 * tools answered from the sidecar.
 */
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import OpenAI from 'openai';
import type { ChatCompletionMessage, ChatCompletionMessageParam } from 'openai/resources/chat/completions';
import { fromOpenAIChat, type OpenAIChatMessage } from '../../src/adapters/index.js';
import { createGcToolHandler, gcToolsForOpenAIChat } from '../../src/core/gc-tools/index.js';
import { createGovernor } from '../../src/core/governor/create-governor.js';
import { createEmbeddedPlanner } from '../../src/core/planners/embedded-planner.js';
import type { CommitRecord, SidecarStore } from '../../src/core/store.js';
import { type Message, partText } from '../../src/core/transcript.js';
import { governOpenAI } from '../../src/integrations/index.js';
import { createSqliteStore } from '../../src/stores/sqlite-store.js';
import { type ScriptedUpstream, startScriptedUpstream } from '../../src/testing/index.js';
import { createTokenCounter } from '../../src/tokenizers/create-token-counter.js';
import { createRepositoryTools, repositoryToolDefinitions } from './repository-tools.js';
import { createScriptedAgent, planRepositoryTour, type TourTask, taskRequest } from './scripted-agent.js';

export interface AgentLoopOptions {
  /** Repository whose `src/` the agent tours. */
  root: string;
  /** Model calls in the session. */
  turns: number;
  /** Context window in tokens. */
  window: number;
  /** From this turn on, the agent expands the first folded file it sees. */
  expandAt: number;
  /** Called as the session goes: each commit, and the expand. */
  onEvent?: (event: AgentLoopEvent) => void;
}

export type AgentLoopEvent =
  | { type: 'commit'; turn: number; commit: CommitRecord }
  | { type: 'expand'; turn: number; recovered: Recovery };

/** An object the agent expanded, checked against what the tool returned when it ran. */
export interface Recovery {
  objectId: string;
  /** The file the fold pointer named. */
  path: string;
  /** What `expand` returned. */
  content: string;
  /** `content` is, byte for byte, what `read_file` returned the first time. */
  exact: boolean;
  /** The next request the model received carries `content` whole (followed only by its id tag). */
  inNextRequest?: boolean;
}

export interface AgentLoopSummary {
  turns: number;
  tasks: number;
  window: number;
  /** Largest view sent, and the full transcript at the end, in tokens. */
  maxViewTokens: number;
  transcriptTokens: number;
  commits: CommitRecord[];
  recovered?: Recovery;
  /** Warnings the governor raised (`over-window` would mean the guarantee broke). */
  warnings: string[];
}

const SESSION = 'agent-loop';
const SYSTEM_PROMPT =
  'You are a code-review agent in the Self-GC repository. Work with read_file, ls and grep. Old tool outputs may be folded to save context; expand(id) recovers one exactly.';

function assistantParam(message: ChatCompletionMessage): ChatCompletionMessageParam {
  return message.tool_calls?.length
    ? { role: 'assistant', content: message.content, tool_calls: message.tool_calls }
    : { role: 'assistant', content: message.content ?? '' };
}

export async function runAgentLoop(options: AgentLoopOptions): Promise<AgentLoopSummary> {
  const directory = await mkdtemp(join(tmpdir(), 'selfgc-agent-loop-'));
  const store = createSqliteStore({ path: join(directory, 'sidecar.db') });
  const tasks = planRepositoryTour(options.root);
  let upstream: ScriptedUpstream | undefined;
  try {
    upstream = await startScriptedUpstream({
      script: createScriptedAgent({ tasks, turns: options.turns, expandAt: options.expandAt }),
    });
    return await converse(options, { store, upstream, tasks });
  } finally {
    await upstream?.close();
    await store.close();
    await rm(directory, { recursive: true, force: true });
  }
}

interface Setting {
  store: SidecarStore;
  upstream: ScriptedUpstream;
  tasks: TourTask[];
}

async function converse(
  options: AgentLoopOptions,
  { store, upstream, tasks }: Setting,
): Promise<AgentLoopSummary> {
  const governor = createGovernor({
    provider: 'openai',
    window: options.window,
    store,
    tokenCounter: createTokenCounter('o200k_base'),
    showIds: true,
    // Fold outputs one by one rather than whole spans of old work at once, so that the agent
    // sees single files folded and can ask for one back (the window still always holds): the
    // planner folds a file even when its anchor index keeps more than a tenth of it.
    planner: createEmbeddedPlanner({ minFoldShare: 0 }),
    triggers: { deep: false },
  });
  const summary: AgentLoopSummary = {
    turns: 0,
    tasks: 1,
    window: options.window,
    maxViewTokens: 0,
    transcriptTokens: 0,
    commits: [],
    warnings: [],
  };
  const record = (commit: CommitRecord) => {
    summary.commits.push(commit);
    options.onEvent?.({ type: 'commit', turn: summary.turns, commit });
  };
  let lastView: Message[] = [];
  const client = governOpenAI(
    new OpenAI({ apiKey: 'sk-example', baseURL: `${upstream.url}/v1`, maxRetries: 0 }),
    {
      governor,
      sessionId: SESSION,
      onGovern: (event) => {
        if (event.status !== 'governed') return;
        const { result } = event;
        lastView = result.view;
        summary.maxViewTokens = Math.max(summary.maxViewTokens, result.viewTokens);
        summary.transcriptTokens = result.transcriptTokens;
        summary.warnings.push(...event.warnings.map((warning) => `${warning.code}: ${warning.message}`));
        if (result.commit) record(result.commit);
      },
    },
  );
  const transcript: ChatCompletionMessageParam[] = [
    { role: 'system', content: SYSTEM_PROMPT },
    { role: 'user', content: taskRequest(tasks, 1) },
  ];
  const canonical = () => fromOpenAIChat(transcript as unknown as OpenAIChatMessage[]).messages;
  const gcTools = createGcToolHandler({
    commitAgentPlan: async (sessionId, plan) => {
      const result = await governor.applyAgentPlan(sessionId, canonical(), plan);
      if (result.commit) record(result.commit);
      return result;
    },
    expand: (sessionId, objectId) => governor.expand(sessionId, objectId),
    searchContext: (sessionId, query, limit) => governor.searchContext(sessionId, query, limit),
  });
  const repository = createRepositoryTools(options.root);
  const outputs = new Map<string, string>();
  let recoveredAt: { request: number; callId: string } | undefined;

  while (summary.turns < options.turns) {
    summary.turns += 1;
    const completion = await client.chat.completions.create({
      model: 'scripted-agent',
      messages: transcript,
      tools: [...repositoryToolDefinitions, ...gcToolsForOpenAIChat()],
    });
    const message = completion.choices[0]!.message;
    transcript.push(assistantParam(message));
    const calls = (message.tool_calls ?? []).flatMap((call) => (call.type === 'function' ? [call] : []));
    if (calls.length === 0 && summary.turns < options.turns) {
      transcript.push({ role: 'user', content: taskRequest(tasks, ++summary.tasks) });
    }
    for (const call of calls) {
      const { name, arguments: argumentsText } = call.function;
      const output = gcTools.handles(name)
        ? await gcTools.handle(SESSION, { name, arguments: argumentsText })
        : await repository.run(name, argumentsText);
      outputs.set(call.id, output);
      if (name === 'expand') {
        const objectId = String((JSON.parse(argumentsText) as { id?: unknown }).id);
        summary.recovered = checkRecovery(objectId, output, lastView, outputs);
        recoveredAt = { request: upstream.requests.length, callId: call.id };
        options.onEvent?.({ type: 'expand', turn: summary.turns, recovered: summary.recovered });
      }
      transcript.push({ role: 'tool', tool_call_id: call.id, content: output });
    }
  }
  if (summary.recovered && recoveredAt) {
    const next = upstream.requests[recoveredAt.request]?.body as
      | { messages: ChatCompletionMessageParam[] }
      | undefined;
    const sent = next?.messages.find(
      (entry) => entry.role === 'tool' && entry.tool_call_id === recoveredAt?.callId,
    );
    summary.recovered.inNextRequest = carriesWhole(sent?.content, summary.recovered.content);
  }
  return summary;
}

/**
 * Which call the folded object was, from its pointer in the view the model saw, and whether
 * `expand` gave back exactly what that call returned.
 */
function checkRecovery(
  objectId: string,
  content: string,
  view: readonly Message[],
  outputs: ReadonlyMap<string, string>,
): Recovery {
  for (const part of view.flatMap((message) => message.parts)) {
    const pointer = part.type === 'tool-result' ? partText(part) : '';
    if (part.type !== 'tool-result' || !pointer.startsWith(`[folded ${objectId}: `)) continue;
    const path = /read_file path=(\S+)/.exec(pointer)?.[1] ?? '';
    return { objectId, path, content, exact: outputs.get(part.callId) === content };
  }
  return { objectId, path: '', content, exact: false };
}

/** The view shows ids as a tag after each tool result; everything before it must be `content`. */
function carriesWhole(sent: unknown, content: string): boolean {
  if (typeof sent !== 'string' || !sent.startsWith(content)) return false;
  return /^(\n\[id: [^\]\n]+\])?$/.test(sent.slice(content.length));
}
