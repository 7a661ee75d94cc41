/**
 * The example's model: a script, served over loopback in the OpenAI Chat wire format, that
 * tours a repository task by task. It decides from what it receives — the governed view — so it
 * sees exactly what a real model would: fold pointers instead of old outputs. Once past
 * `expandAt`, it asks for the most recently folded file back with `expand(id)`.
 */
import { readdirSync, readFileSync, statSync } from 'node:fs';
import { join } from 'node:path';
import type { ScriptedReply, ScriptedRequest } from '../../src/testing/index.js';

/** One tool call the agent will make. */
export interface AgentStep {
  name: 'ls' | 'read_file' | 'grep';
  arguments: Record<string, string>;
  /** The assistant text before the call. */
  note: string;
}

/** One user request of the session and the calls the agent makes for it. */
export interface TourTask {
  directory: string;
  steps: AgentStep[];
}

export interface TourOptions {
  /** Files larger than this are not read (default 5000 bytes). */
  maxFileBytes?: number;
  /** Files read per directory (default 4). */
  readsPerTask?: number;
}

/** Directories under `src/` with TypeScript files, in order, and what the agent does in each. */
export function planRepositoryTour(root: string, options: TourOptions = {}): TourTask[] {
  const maxBytes = options.maxFileBytes ?? 5000;
  const tasks: TourTask[] = [
    { directory: 'src', steps: [{ name: 'ls', arguments: { path: 'src' }, note: 'Listing src/.' }] },
  ];
  for (const directory of directoriesUnder(root, 'src')) {
    const files = readdirSync(join(root, directory))
      .filter((name) => name.endsWith('.ts') && statSync(join(root, directory, name)).size <= maxBytes)
      .sort((a, b) => Number(a.endsWith('.test.ts')) - Number(b.endsWith('.test.ts')) || a.localeCompare(b))
      .slice(0, options.readsPerTask ?? 4)
      .map((name) => `${directory}/${name}`);
    if (files.length === 0) continue;
    const steps: AgentStep[] = [
      { name: 'ls', arguments: { path: directory }, note: `Listing ${directory}.` },
    ];
    for (const path of files)
      steps.push({ name: 'read_file', arguments: { path }, note: `Reading ${path}.` });
    const exported = files
      .map((path) => /export (?:async )?function (\w+)/.exec(readFileSync(join(root, path), 'utf8'))?.[1])
      .find(Boolean);
    if (exported)
      steps.push({
        name: 'grep',
        arguments: { pattern: exported, path: 'src' },
        note: `Who uses ${exported}?`,
      });
    tasks.push({ directory, steps });
  }
  return tasks;
}

function directoriesUnder(root: string, directory: string): string[] {
  const children = readdirSync(join(root, directory), { withFileTypes: true })
    .filter((entry) => entry.isDirectory() && entry.name !== 'fixtures' && entry.name !== 'node_modules')
    .map((entry) => `${directory}/${entry.name}`)
    .sort();
  return children.flatMap((child) => [child, ...directoriesUnder(root, child)]);
}

/** The text of user request `number` (1-based); past the last task the tour starts over. */
export function taskRequest(tasks: readonly TourTask[], number: number): string {
  const task = tasks[(number - 1) % tasks.length]!;
  const pass = number > tasks.length ? ' again, as a second pass' : '';
  return number === 1
    ? 'Task 1: survey the layers of this repository, starting with the folders of src/.'
    : `Task ${number}: review ${task.directory}${pass}: read its main files and find who uses what they export.`;
}

type WireMessage = { role: string; content?: unknown; tool_calls?: Array<{ function: { name: string } }> };

const TASK = /Task (\d+):/;
const FOLDED_FILE = /\[folded (function:read_file:\d+): read_file path=(\S+) → ok/g;

function textOf(message: WireMessage): string {
  if (typeof message.content === 'string') return message.content;
  if (!Array.isArray(message.content)) return '';
  return message.content
    .map((part: { text?: unknown }) => (typeof part.text === 'string' ? part.text : ''))
    .join('\n');
}

/** The task being worked on and how many of its calls were made, read from the view. */
function progress(messages: readonly WireMessage[], tasks: readonly TourTask[]) {
  for (let index = messages.length - 1; index >= 0; index -= 1) {
    const message = messages[index]!;
    const number = message.role === 'user' ? TASK.exec(textOf(message))?.[1] : undefined;
    if (number === undefined) continue;
    const done = messages
      .slice(index + 1)
      .filter((later) => later.tool_calls?.some((call) => call.function.name !== 'expand')).length;
    return { task: tasks[(Number(number) - 1) % tasks.length]!, done };
  }
  return { task: tasks[0]!, done: 0 };
}

/** The most recent fold pointer of a file read, in the view. */
function latestFoldedFile(messages: readonly WireMessage[]): { objectId: string; path: string } | undefined {
  const text = messages
    .filter((message) => message.role === 'tool')
    .map(textOf)
    .join('\n');
  const last = [...text.matchAll(FOLDED_FILE)].at(-1);
  return last ? { objectId: last[1]!, path: last[2]! } : undefined;
}

export interface ScriptedAgentOptions {
  tasks: readonly TourTask[];
  /** The call that ends the session. */
  turns: number;
  /** From this turn on, expand the first folded file seen. */
  expandAt: number;
}

/** The script for `startScriptedUpstream`: one reply per model call. */
export function createScriptedAgent(
  options: ScriptedAgentOptions,
): (request: ScriptedRequest) => ScriptedReply {
  let expanded = false;
  return (request) => {
    const turn = request.index + 1;
    const messages = ((request.body as { messages?: WireMessage[] }).messages ?? []) as WireMessage[];
    if (turn >= options.turns) return { text: `Tour finished after ${turn} turns.` };
    const folded = !expanded && turn >= options.expandAt ? latestFoldedFile(messages) : undefined;
    if (folded) {
      expanded = true;
      return {
        text: `I need the exact text of ${folded.path} again; it was folded.`,
        toolCalls: [{ name: 'expand', arguments: { id: folded.objectId } }],
      };
    }
    const { task, done } = progress(messages, options.tasks);
    const step = task.steps[done];
    if (step) return { text: step.note, toolCalls: [{ name: step.name, arguments: step.arguments }] };
    const reads = task.steps.filter((candidate) => candidate.name === 'read_file').length;
    return { text: `Reviewed ${task.directory}: ${reads} files read, exports and their users noted.` };
  };
}
