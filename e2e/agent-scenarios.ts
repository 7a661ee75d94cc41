/**
 * The scenarios the end-to-end suite plays with each agent CLI: the files of its project, the
 * prompt, the tool steps the scripted model takes, and the answer it must end with.
 *
 * Every run's files carry the run's own marker (`E2E-RUN-…`), every step file its step number
 * (`E2E-STEP-07`, how the scripted model knows where it is without any state of its own) and a
 * token (`E2E-TOKEN-…`) that the final answer repeats, so a final answer proves the last tool
 * result reached the model as the tool wrote it.
 */
import { randomBytes } from 'node:crypto';

export type ScenarioName =
  | 'two-runs'
  | 'long-task'
  | 'streaming-recovery'
  | 'resume'
  | 'subagent'
  | 'compaction'
  | 'auto-compaction'
  | 'parallel-reads'
  | 'concurrent-runs'
  | 'forked-resume'
  | 'rewound-resume'
  | 'no-binding-controls';

export const SCENARIO_NAMES: readonly ScenarioName[] = [
  'two-runs',
  'long-task',
  'streaming-recovery',
  'resume',
  'subagent',
  'compaction',
  'auto-compaction',
  'parallel-reads',
  'concurrent-runs',
  'forked-resume',
  'rewound-resume',
  'no-binding-controls',
];

/** One tool step: read a file with the agent's read tool, or `cat` it with its shell tool. */
export interface FileStep {
  tool: 'read' | 'shell';
  /** Path relative to the project directory. */
  path: string;
}

/**
 * A step handed to a subagent with the CLI's own agent tool (`subagent`): the subagent takes
 * `steps` in a conversation of its own, then reports its last file's token with this step's
 * number, so the parent's script knows where it is from the report alone.
 */
export interface DelegateStep {
  tool: 'agent';
  prompt: string;
  steps: FileStep[];
}

export type AgentStep = FileStep | DelegateStep;

/** In a subagent's prompt and nowhere else: how the scripted model tells its conversation apart. */
export const SUBTASK_MARK = 'E2E-SUBTASK';
/** The step marker of a subagent's files (not `E2E-STEP-`, which the parent's script reads). */
export const SUBSTEP_MARK = 'E2E-SUBSTEP';

export interface ScenarioRun {
  label: string;
  /** In every file of this run and nowhere else. */
  marker: string;
  /** Relative path → content, written before the run (the previous run's files are replaced). */
  files: Record<string, string>;
  prompt: string;
  steps: AgentStep[];
  /** The token of the last step's file, repeated by the final answer. */
  lastToken: string;
  /** Set when the answer needs a value that only an early step showed (`streaming-recovery`, `resume`). */
  secret?: string;
  /**
   * The run goes on with the previous run's conversation, resumed from the CLI's saved session
   * (`resume`): in the project as that run left it, with this run's files added. A run of the same
   * task (its marker) took its steps there already: it only recovers its secret (`resume`) or
   * compacts and answers (`compaction`); a run with a marker of its own takes its own steps
   * (`forked-resume`, `rewound-resume`).
   */
  continues?: boolean;
  /**
   * Before the run resumes it, the CLI's saved conversation is cut back to the tool result of this
   * step of the run before (`rewound-resume`): a history edited back in the middle of a task, as
   * Claude Code's `/rewind` or Codex's backtrack edit one (they cut at a user message, this cut at
   * a tool result leaves the proxy more to drop). The client then sends the shorter history, and
   * what the cut steps' files held is stale for every request of the run.
   */
  rewindTo?: number;
  /**
   * The run only has the CLI compact the conversation it goes on with (`compaction`): its prompt
   * is the CLI's compaction command, the scripted model writes the summary, and the CLI prints
   * no answer.
   */
  compacts?: boolean;
  /** The run goes on after that compaction: its conversation opens with the summary, which answers it. */
  afterCompaction?: boolean;
  /**
   * The CLI compacts the conversation by itself during the run (`auto-compaction`): the proxy
   * reports the client's whole prompt once it passes the CLI's compaction limit, the scripted
   * model writes the summary, and the run goes on from it to the end of its steps.
   */
  autoCompacts?: boolean;
  /**
   * The scripted model asks for this many steps in one turn (`parallel-reads`), each in a call of
   * its own, as models call read-only tools side by side: the client answers them in one message.
   */
  parallel?: number;
  /**
   * The run goes at once with the run before it (`concurrent-runs`, `forked-resume`), in a CLI
   * process of its own, with a HOME of its own copied from the one the runs before left (a CLI's
   * settings there name its base URL), in the same project. The scripted model tells such runs
   * apart by the header their relays add (`CLIENT_HEADER`), which the proxy passes on unread.
   */
  alongside?: boolean;
  /**
   * A file of the run that the prompt comes with, attached the CLI's own way (`long-task`: the
   * first note, so the task's request carries a file the proxy must be able to fold).
   */
  attach?: string;
}

export interface Scenario {
  name: ScenarioName;
  runs: ScenarioRun[];
  /**
   * The platform the scripted upstream plays, when not Anthropic's API: one without the
   * preserved-thinking controls (as Bedrock for a model that lacks them) refuses their beta.
   */
  upstream?: { thinkingBinding: false };
}

/** Lines per step file: about 1,950 tokens, so a handful of steps outgrow the room a small window leaves. */
const LINES_PER_FILE = 72;

const WORDS = [
  'ledger object fold sidecar anchor commit window planner harness view',
  'cache token stream upstream session tool result request answer index',
]
  .join(' ')
  .split(' ');

/**
 * Where the secret stands in its file. The secret is plain words, not an identifier, a number
 * or a path, so a fold summary has no reason to keep it as an anchor: only recovery brings it back.
 */
export const SECRET_LEAD = 'The release code is';

const SECRET_WORDS = [
  'amber birch copper dune ember fern granite harbor iris juniper',
  'kestrel lantern meadow nectar orchard pebble quartz raven saffron thistle',
  'umber violet willow yarrow zephyr acorn bramble cedar delta falcon',
]
  .join(' ')
  .split(' ');

function secretPhrase(): string {
  return Array.from(randomBytes(3), (byte) => SECRET_WORDS[byte % SECRET_WORDS.length]).join(' ');
}

function hex(bytes: number): string {
  return randomBytes(bytes).toString('hex');
}

function fileLines(title: string, count: number): string[] {
  const lines: string[] = [];
  for (let line = 1; line <= count; line += 1) {
    const words = Array.from({ length: 9 }, (_, position) => WORDS[(line * 7 + position * 3) % WORDS.length]);
    lines.push(`${title} line ${String(line).padStart(3, '0')}: ${words.join(' ')} checksum=${hex(4)}`);
  }
  return lines;
}

/**
 * The secret's file is two step files long and holds the secret near its end: a recovered page
 * (a fifth of the conversation's room at most) ends before it, so the model reads on; and it
 * stands before the last lines a mask keeps of an output (its tail), so a mask does not show it.
 */
const SECRET_FILE_LINES = 2 * LINES_PER_FILE;
const SECRET_AT_LINE = SECRET_FILE_LINES - 6;

/** A step file's step marker (`E2E-STEP-07`). */
export function stepName(step: number, mark = 'E2E-STEP'): string {
  return `${mark}-${String(step).padStart(2, '0')}`;
}

/**
 * A step file: its step marker and the run marker first, its token last; `inserted` lines go
 * in after `at` of its `count` lines.
 */
function stepFile(
  step: number,
  marker: string,
  token: string,
  inserted: string[] = [],
  count = LINES_PER_FILE,
  at = count / 2,
  mark = 'E2E-STEP',
): string {
  const name = stepName(step, mark);
  const lines = fileLines(`part ${step}`, count);
  lines.splice(at, 0, ...inserted);
  return `${name} ${marker}\n${lines.join('\n')}\n${name} ends with ${token}\n`;
}

function stepPath(step: number, folder = 'notes'): string {
  return `${folder}/part-${String(step).padStart(2, '0')}.txt`;
}

interface RunShape {
  /** The first step reads a file with a secret (`ScenarioRun.secret`). */
  secret?: boolean;
  /** Lines of each step file. */
  lines?: number;
  /** Where the step files lie, relative to the project. */
  folder?: string;
}

/** Steps alternate between the read tool and the shell tool. */
function makeRun(label: string, stepCount: number, prompt: string, shape: RunShape = {}): ScenarioRun {
  const { lines = LINES_PER_FILE, folder = 'notes' } = shape;
  const marker = `E2E-RUN-${hex(6)}`;
  const secret = shape.secret === true ? secretPhrase() : undefined;
  const files: Record<string, string> = {};
  const steps: AgentStep[] = [];
  let lastToken = '';
  for (let step = 1; step <= stepCount; step += 1) {
    const token = `E2E-TOKEN-${hex(6)}`;
    const holdsSecret = step === 1 && secret !== undefined;
    const path = holdsSecret ? `${folder}/secret.txt` : stepPath(step, folder);
    files[path] = holdsSecret
      ? stepFile(step, marker, token, [`${SECRET_LEAD} ${secret}.`], SECRET_FILE_LINES, SECRET_AT_LINE)
      : stepFile(step, marker, token, [], lines);
    steps.push({ tool: step % 2 === 1 ? 'read' : 'shell', path });
    lastToken = token;
  }
  return { label, marker, files, prompt, steps, lastToken, ...(secret === undefined ? {} : { secret }) };
}

const TWO_RUNS_PROMPT =
  'Go through the notes in notes/ one file after the other (part-01 to part-06) and tell me the token the last one ends with.';
const LONG_TASK_PROMPT =
  'Go through all fifteen notes in notes/ (part-01 to part-15), one file after the other, and tell me the token the last one ends with.';
const RECOVERY_PROMPT =
  'Read notes/secret.txt, then the notes part-02 to part-09 in notes/, and finally tell me the release code from secret.txt.';
const RESUME_FIRST_PROMPT =
  'Read notes/secret.txt, then the notes part-02 to part-09 in notes/, and tell me the token the last one ends with.';
const RESUME_PROMPT = 'Now tell me the release code from notes/secret.txt, as you read it earlier.';
const COMPACTION_PROMPT =
  'Go through all sixteen notes in notes/ (part-01 to part-16), one file after the other, and tell me the token the last one ends with.';
const AFTER_COMPACTION_PROMPT = 'Which token did the last note end with? Answer as you did before.';
const PARALLEL_PROMPT =
  'Go through all fifteen notes in notes/ (part-01 to part-15), two at a time, and tell me the token the last one ends with.';
const CONCURRENT_PROMPT =
  'Someone else works in this project at the same time. Take a folder of notes/ that is free, go through its notes one after the other (part-01 to part-08), and tell me the token the last one ends with.';
const FORK_PROMPT =
  'Someone else goes on from here at the same time. Take a folder of notes/ that is free, go through its notes one after the other (part-01 to part-06), and tell me the token the last one ends with.';
const REWOUND_FIRST_PROMPT =
  'Go through the notes in notes/ one file after the other (part-01 to part-09) and tell me the token the last one ends with.';
const REWOUND_PROMPT =
  'Forget the notes after part-04. Go through the notes in notes/after/ instead (part-01 to part-04), one after the other, and tell me the token the last one ends with.';
const SUBAGENT_PROMPT =
  'Read the notes part-01 to part-07 in notes/, then have a subagent read notes/sub-01.txt to notes/sub-04.txt, and tell me the token it reports.';

/**
 * A task, then the same conversation resumed from the CLI's saved session with a question
 * about its first step: the resumed client sends the whole history again, the first step's file
 * is no longer in the view the proxy sends, and the answer takes recovery.
 */
function resumedRuns(): ScenarioRun[] {
  const { secret, ...first } = makeRun('run-1', 9, RESUME_FIRST_PROMPT, { secret: true });
  return [first, { ...first, label: 'run-2', prompt: RESUME_PROMPT, secret: secret!, continues: true }];
}

/**
 * A task long enough for the proxy to commit, then two processes of the CLI that resume its
 * conversation at once, each from a copy of the saved session, with one prompt, and go on with
 * steps of their own. Both send the conversation's history and the CLI's id for it (Claude Code,
 * Codex, opencode keep the id on resume): one session of the proxy's, two conversations that part
 * after the history, each of whose later requests meets the state the other's left.
 */
function forkedRuns(): ScenarioRun[] {
  const first = makeRun('run-1', 6, TWO_RUNS_PROMPT);
  const fork = (label: string, folder: string): ScenarioRun => ({
    ...makeRun(label, 6, FORK_PROMPT, { folder }),
    continues: true,
  });
  return [first, fork('run-2', 'notes/a'), { ...fork('run-3', 'notes/b'), alongside: true }];
}

/**
 * A task long enough for the proxy to commit, its saved conversation cut back to the middle
 * (the steps after the fourth gone), then resumed with steps of a run of its own. The proxy's
 * state holds the cut steps, folded or not; none of their content may reach the upstream again.
 */
function rewoundRuns(): ScenarioRun[] {
  const first = makeRun('run-1', 9, REWOUND_FIRST_PROMPT);
  const after = makeRun('run-2', 4, REWOUND_PROMPT, { folder: 'notes/after' });
  return [first, { ...after, continues: true, rewindTo: 4 }];
}

/**
 * A task long enough for the proxy to commit, then the CLI's own compaction of that conversation
 * (the summary comes from the scripted model, out of the governed view), then a question that
 * only the summary answers: the conversation the client goes on with opens with the summary, and
 * the proxy must govern it as a conversation of its own (no state of the first taken or dropped).
 */
function compactedRuns(): ScenarioRun[] {
  const first = makeRun('run-1', 16, COMPACTION_PROMPT);
  return [
    first,
    { ...first, label: 'run-2', prompt: '', continues: true, compacts: true },
    { ...first, label: 'run-3', prompt: AFTER_COMPACTION_PROMPT, continues: true, afterCompaction: true },
  ];
}

/**
 * Seven steps of the parent's own, enough for the proxy to commit in its conversation, then a
 * subagent that reads four files of its own. The subagent sends the parent's session id (Claude
 * Code) and the last token the run must answer with is the one only the subagent read.
 */
function delegatingRun(): ScenarioRun {
  const run = makeRun('run-1', 7, SUBAGENT_PROMPT);
  const steps: FileStep[] = [];
  const files: Record<string, string> = {};
  let lastToken = '';
  for (let step = 1; step <= 4; step += 1) {
    lastToken = `E2E-TOKEN-${hex(6)}`;
    const path = `notes/sub-${String(step).padStart(2, '0')}.txt`;
    files[path] = stepFile(step, run.marker, lastToken, [], LINES_PER_FILE, LINES_PER_FILE / 2, SUBSTEP_MARK);
    steps.push({ tool: step % 2 === 1 ? 'read' : 'shell', path });
  }
  const prompt = `${SUBTASK_MARK}: read ${steps.map((step) => step.path).join(', ')} one after the other and report the token the last one ends with.`;
  return {
    ...run,
    files: { ...run.files, ...files },
    steps: [...run.steps, { tool: 'agent', prompt, steps }],
    lastToken,
  };
}

/** A fresh scenario: new markers, tokens and secret on every call. */
export function createScenario(name: ScenarioName): Scenario {
  switch (name) {
    case 'two-runs':
      return {
        name,
        runs: [makeRun('run-1', 6, TWO_RUNS_PROMPT), makeRun('run-2', 6, TWO_RUNS_PROMPT)],
      };
    case 'long-task':
      return { name, runs: [{ ...makeRun('run-1', 15, LONG_TASK_PROMPT), attach: stepPath(1) }] };
    case 'streaming-recovery':
      return { name, runs: [makeRun('run-1', 9, RECOVERY_PROMPT, { secret: true })] };
    case 'resume':
      return { name, runs: resumedRuns() };
    case 'subagent':
      return { name, runs: [delegatingRun()] };
    case 'compaction':
      return { name, runs: compactedRuns() };
    case 'auto-compaction':
      return { name, runs: [{ ...makeRun('run-1', 15, LONG_TASK_PROMPT), autoCompacts: true }] };
    case 'parallel-reads':
      // Files half a step's size: the two results of a turn take the room one takes elsewhere,
      // so the latest turn fits the small windows the CLIs play in (none is folded to fit).
      return {
        name,
        runs: [{ ...makeRun('run-1', 15, PARALLEL_PROMPT, { lines: LINES_PER_FILE / 2 }), parallel: 2 }],
      };
    case 'concurrent-runs':
      // Two processes of the CLI with one prompt, one project and one key: the requests that open
      // their conversations differ in nothing but the ids a client adds of its own (Cline adds
      // none). Each run's steps read files of its own, so any of them in the other's requests is
      // the other's content.
      return {
        name,
        runs: [
          makeRun('run-1', 8, CONCURRENT_PROMPT, { folder: 'notes/a' }),
          { ...makeRun('run-2', 8, CONCURRENT_PROMPT, { folder: 'notes/b' }), alongside: true },
        ],
      };
    case 'forked-resume':
      return { name, runs: forkedRuns() };
    case 'rewound-resume':
      return { name, runs: rewoundRuns() };
    case 'no-binding-controls':
      // The long task on a platform that refuses the beta the proxy adds to a changed request
      // whose model binds thinking: the first such request must go again without it, and the
      // later ones go without it at once.
      return { name, runs: [makeRun('run-1', 15, LONG_TASK_PROMPT)], upstream: { thinkingBinding: false } };
  }
}

/** The runs in the order they go, runs that go at once (`alongside`) in one group. */
export function groupsOf<Run extends { alongside?: boolean }>(runs: readonly Run[]): Run[][] {
  const groups: Run[][] = [];
  for (const run of runs) {
    if (run.alongside === true && groups.length > 0) groups[groups.length - 1]!.push(run);
    else groups.push([run]);
  }
  return groups;
}

/**
 * A line of the file the run's prompt comes with (`ScenarioRun.attach`) that no fold index lists
 * whole (over 80 characters): while a request holds it, it holds the file.
 */
export function attachedLine(run: ScenarioRun): string | undefined {
  const file = run.attach === undefined ? undefined : run.files[run.attach];
  return file?.split('\n').find((line) => line.length > 80);
}

/**
 * What no other run may see: every random value in this run's files (its marker, tokens and
 * line checksums, which fold summaries keep as anchors), and its secret.
 */
export function uniqueStrings(run: ScenarioRun): string[] {
  const values = new Set<string>();
  for (const text of Object.values(run.files)) {
    for (const match of text.matchAll(/[0-9a-f]{8,}/g)) values.add(match[0]);
  }
  if (run.secret !== undefined) values.add(run.secret);
  return [...values];
}

/** What the scripted model saw, which its final answer repeats. */
export interface SeenValues {
  marker: string;
  /** The step number of the latest tool result. */
  steps?: number;
  token?: string;
  secret?: string;
}

/** The answer the scripted model ends a run with, and that the CLI must print. */
export function finalAnswer(seen: SeenValues): string {
  const parts = [`E2E-DONE ${seen.marker}`];
  if (seen.secret !== undefined) parts.push(`secret=${seen.secret.replaceAll(' ', '-')}`);
  else parts.push(`steps=${seen.steps ?? 0}`, `token=${seen.token ?? 'none'}`);
  return parts.join(' ');
}

/**
 * What marks the request of a client's compaction in its last user turn: Claude Code asks for
 * "a detailed summary of the conversation so far" inside `<summary>` tags; Codex, compacting
 * locally, opens it with its checkpoint prompt; opencode (1.18) sends the conversation as the
 * text of that turn.
 */
export const COMPACTION_REQUEST =
  /summary of the conversation[\s\S]*<summary>|You are performing a CONTEXT CHECKPOINT COMPACTION\.|^Here is the conversation so far:\n\n<conversation>\n/;

/** The line the scripted model's summary of a compaction holds, with what it had seen. */
export function summaryLine(seen: Required<Pick<SeenValues, 'marker' | 'steps' | 'token'>>): string {
  return `E2E-SUMMARY ${seen.marker} steps=${seen.steps} token=${seen.token}`;
}

/**
 * What the CLI must print when the run went as scripted. A run that only compacts prints
 * nothing: the validator checks that it asked for the summary instead.
 */
export function expectedAnswer(run: ScenarioRun): string {
  if (run.compacts === true) return '';
  if (run.secret !== undefined) return finalAnswer({ marker: run.marker, secret: run.secret });
  return finalAnswer({ marker: run.marker, steps: run.steps.length, token: run.lastToken });
}
