/**
 * The ledger: the objects of one session (the GC heap), indexed incrementally from the
 * canonical transcript. Ids come from per-session monotonic counters and depend only on the
 * transcript prefix, so indexing the same prefix again — or appending to it — gives the same ids.
 */
import { type Anchor, anchorWeight, extractAnchors } from './anchors.js';
import { carriesWireFields, chainLink, messageDigest } from './content-hash.js';
import { mentionBlocks } from './mention-blocks.js';
import { carryMessageMemos } from './message-memo.js';
import { MESSAGE_OVERHEAD_TOKENS, type TokenCounter } from './tokens.js';
import { type Message, messageText, type Part, partText } from './transcript.js';

/**
 * What an object is. The kind decides which operations make sense on it (`object-kinds.ts`). A
 * `skill` is a tool output that loaded instructions for the agent: a skill (`SKILL.md`, Claude
 * Code's `Skill` tool) or a rules file (`AGENTS.md`, `CLAUDE.md`, …) it read.
 */
export type ObjectKind = 'system' | 'conversation' | 'function' | 'skill';

/** Whether an object is a tool's output: a function's, or a skill the agent loaded. */
export function isToolOutput(object: Pick<LedgerObject, 'kind'>): boolean {
  return object.kind === 'function' || object.kind === 'skill';
}

/** Instruction files agents read: rules for the whole project, and skills. */
const RULES_FILE =
  /(^|[/\\\s"'])(AGENTS\.md|CLAUDE\.md|GEMINI\.md|\.cursorrules|\.cursor\/rules\/[\w.-]+|\.windsurfrules|CONVENTIONS\.md|copilot-instructions\.md)\b/;
/**
 * The pin reason of a rules file's read. Only the latest read of a file keeps it: an earlier one
 * is superseded, its text is the same file's or an older version of it.
 */
export const RULES_FILE_PIN = 'rules file';
const SKILL_FILE = /(^|[/\\\s"'])SKILL\.md\b/;
/** Tools whose output is a skill the agent loaded (Claude Code's `Skill`). */
const SKILL_TOOLS = new Set(['Skill', 'skill', 'load_skill']);
/** Longer argument values are what a call writes or runs at length, not a file it reads. */
const NAMING_VALUE_CHARS = 500;
/** Commands that print a file: one of them naming a rules file reads it. */
const READER = /^(?:cat|head|tail|sed|nl|less|more|bat|batcat|type|Get-Content)\b/;

/**
 * Whether a call reads a file matching `file`: an argument of its own is the file's path, or a
 * one-line command of which one part prints it (`sed -n 1,80p AGENTS.md`). A file the call only
 * mentions — in text it writes, a search over it, a diff of it, a task's description — does not
 * count.
 */
function readsFile(callArguments: string, file: RegExp): boolean {
  if (!file.test(callArguments)) return false;
  return argumentValues(callArguments).some((value) => {
    if (value.length > NAMING_VALUE_CHARS || value.includes('\n') || !file.test(value)) return false;
    if (!/\s/.test(value.trim())) return true;
    return value.split(/&&|\|\||;|\|/).some((part) => READER.test(part.trim()) && file.test(part));
  });
}

/** Whether a call reads a rules file (see `readsFile`). */
export function readsRulesFile(callArguments: string): boolean {
  return readsFile(callArguments, RULES_FILE);
}

/** Whether a tool call loads instructions: a skill, or a rules file read. */
function loadsInstructions(toolName: string, callArguments: string): boolean {
  return SKILL_TOOLS.has(toolName) || readsRulesFile(callArguments) || readsFile(callArguments, SKILL_FILE);
}

/** One addressable unit of the transcript. */
export interface LedgerObject {
  /** Stable id: `system:K`, `conversation:user:K`, `function:<tool>:N` or `skill:<tool>:N` (one count for both). */
  id: string;
  kind: ObjectKind;
  /** Index of the message that holds the object's payload (the user or tool message). */
  messageIndex: number;
  /**
   * For a tool output in a tool message: index of its tool-result part. Absent for an observation
   * a text-protocol client sent (`clientObservation`): its payload is its whole user message.
   */
  partIndex?: number;
  /**
   * Messages `[start, end)` a coarse operation covers: for a conversation object the user
   * message and the execution span after it, up to the next user request; for others, the
   * payload's own message. `end` grows while the span is still open.
   */
  span: { start: number; end: number };
  /**
   * For tool outputs: the tool's name, the call id and where the call is (for an observation, the
   * agent's message that wrote the command; it has no call id).
   */
  toolName?: string;
  callId?: string;
  callMessageIndex?: number;
  /** The tool call's arguments (JSON text), for summaries and supersession. */
  callArguments?: string;
  /**
   * For a tool's output a client attached to a user message (`clientAttachments`): the id of the
   * request it came with, which stays when the work after it folds.
   */
  attachedTo?: string;
  /**
   * For such an output inside the text part `partIndex` (Cline's mentioned files, after the
   * user's words in the same text): where it stands in that text. Absent when it is the whole part.
   */
  range?: TextRange;
  /** True when the tool reported a failure (or the output reads as one). */
  isError: boolean;
  /** Tokens of the payload itself (the user message, the system prompt, the tool result). */
  tokens: number;
  /** Anchors of the payload (and, for function objects, of the call's arguments), first seen first. */
  anchors: Anchor[];
  /** Indexes of later messages that mention one of this object's anchors, ascending. */
  references: number[];
  /**
   * For a system message, or instructions a client sent as a user message (`clientNote`), that
   * repeats earlier instructions word for word (agents re-send them mid-session): the id of the
   * first. Its content stays visible there, so it is neither pinned nor needed twice. A copy the
   * agent works on right after (no request of the user's own between) loses the mark: it stands
   * for that work, as a request does.
   */
  restates?: string;
  /** Pinned objects may not be touched by any operation. */
  pinned: boolean;
  pinReason?: string;
}

/** Options of the indexer. */
export interface LedgerOptions {
  tokenCounter: TokenCounter;
  /**
   * Decides pins at indexing time. The default (`defaultPin`) pins the system prompt, instructions
   * a client sends as a user message, and the user's first own request.
   */
  pin?: (object: LedgerObject, message: Message, context: PinContext) => string | undefined;
  /** Only the first this many anchors of an object are indexed for references (default 400). */
  maxAnchorsPerObject?: number;
  /** Index anchors and references (default true); false for callers that only need ids and tokens. */
  indexAnchors?: boolean;
}

/** A mutable, append-only index over one transcript. */
export interface Ledger {
  readonly messages: readonly Message[];
  readonly objects: readonly LedgerObject[];
  /** Tokens of each message in the full (unedited) view, overhead included. */
  readonly messageTokens: readonly number[];
  /** Objects by message index (the payload message). */
  readonly objectsByMessage: ReadonlyMap<number, readonly LedgerObject[]>;
  /**
   * The content chain (see `content-hash.ts`): entry `i` binds messages `0..i`, so stored state
   * that names an index can be checked against the transcript a client sends now.
   */
  readonly chain: readonly string[];
  /** Sum of `messageTokens`. */
  readonly totalTokens: number;
  /**
   * Anchors that the system prompt, the user or the agent itself wrote: visible as long as those
   * messages are, so a fold summary need not repeat them.
   */
  readonly spokenAnchors: ReadonlySet<string>;
  get(id: string): LedgerObject | undefined;
  /**
   * From which message on the recovery keys of this session carry a tag of their content
   * (`SessionState.keysTaggedFrom`; set for each call from the session's state), if they do.
   */
  keysTaggedFrom: number | undefined;
  /**
   * What the recovery key of content ending at message `end` (exclusive) ends with: `~` and the
   * start of the content chain there once it reaches `keysTaggedFrom`, else nothing. The chain
   * binds everything up to `end`: such a key names that content and no other. `reach`: the first
   * message past what fixes the content (a whole request's span ends where the next request
   * stands, so its content is fixed only with that message), `end` by default.
   */
  keyTag(end: number, reach?: number): string;
  /** The conversation object whose span holds message `index`, if any. */
  conversationAt(index: number): LedgerObject | undefined;
  /**
   * Index the given messages as the continuation of the transcript. `chain`, when the caller
   * computed it already, holds their chain links. With `bounded`, their tokens are the
   * counter's `bound` (when it has one) instead of its count, until `settle`: every token figure
   * of the ledger is then at least what counting gives, never less.
   */
  append(messages: readonly Message[], chain?: readonly string[], options?: { bounded?: boolean }): void;
  /** Messages whose tokens are bounds, not counts yet (see `append`). */
  readonly boundedMessages: number;
  /** Count the messages appended with bounds: every token figure is a count again. */
  settle(): void;
  /**
   * Take the caller's message objects in place of the indexed ones for the prefix they share.
   * The caller guarantees the same content (equal chain links); what may differ is what content
   * digests leave out, such as cache breakpoints, and the view must carry the caller's own.
   * What the core memoized for the old objects goes over to the new (`message-memo.ts`).
   */
  adoptMessages(messages: readonly Message[]): void;
  readonly options: LedgerOptions;
}

const COMMON_ANCHOR_HOLDERS = 24;

/** Characters of the content chain in a recovery key's tag (`Ledger.keyTag`). */
const KEY_TAG_CHARS = 6;

const ERROR_TEXT =
  /(^|\n)\s*(Traceback \(most recent call last\)|error[:[]|Error:|FAILED|fatal:)|<returncode>[1-9]/i;

/** What the ledger knows of an object beyond itself when it decides the object's pin. */
export interface PinContext {
  /** The user's first own request: the first user message that is not a client's note (`clientNote`). */
  taskGoal: boolean;
}

/** Instructions a client sends as a user message: Codex CLI's `AGENTS.md` and environment blocks. */
const CLIENT_INSTRUCTIONS =
  /^# AGENTS\.md instructions for [^\n]*\s*|<(INSTRUCTIONS|user_instructions|environment_context)>[\s\S]*?<\/\1>/g;
/**
 * Notes a client sends as a user message: Claude Code's local-command caveats and output, a
 * command the user ran in the client's shell (Claude Code's `!` mode, Codex's `<user_shell_command>`)
 * and its output, and the reminder of a call whose result it attaches to the next user message
 * (`clientAttachments`).
 */
const CLIENT_NOTE =
  /<(local-command-caveat|local-command-stdout|bash-input|bash-stdout|bash-stderr|user_shell_command)>[\s\S]*?<\/\1>|<system-reminder>\nCalled the [\w-]+ tool with the following input: \{[^\n]*\}\n<\/system-reminder>/g;
/**
 * Claude Code's record of a slash command: its name, its message and its arguments. A local
 * command (`/clear`, `/model`, `/plugin`) is recorded with empty arguments and answers with local
 * output. A command that prompts the model is recorded with its arguments, or with none, and the
 * prompt it expands to comes next (the goal, when the record is not).
 */
const COMMAND_BLOCKS = /<(command-name|command-message|command-args)>[^<]*<\/\1>/g;
const EMPTY_COMMAND_ARGS = '<command-args></command-args>';

/** Whether a text is one slash command's record, with empty arguments (`COMMAND_BLOCKS`). */
function localCommand(textValue: string): boolean {
  const args = textValue.match(/<command-args>/g)?.length ?? 0;
  return args === 1 && textValue.includes(EMPTY_COMMAND_ARGS) && onlyBlocks(textValue, COMMAND_BLOCKS);
}

/** Whether `pattern` matches the text, and nothing but blank space is left beside its matches. */
function onlyBlocks(textValue: string, pattern: RegExp): boolean {
  const rest = textValue.replace(pattern, '');
  return rest.length < textValue.length && rest.trim().length === 0;
}

/**
 * What a client, not the user, wrote as a user message: instructions (Codex CLI sends them before
 * the user's first request, and again at later ones), or a note about a local command. Neither is
 * the task goal.
 */
export function clientNote(message: Message): 'instructions' | 'note' | undefined {
  if (message.role !== 'user') return undefined;
  const textValue = messageText(message);
  if (onlyBlocks(textValue, CLIENT_INSTRUCTIONS)) return 'instructions';
  // Notes, and at most one local command's record among them (all three in one message).
  const rest = textValue.replace(CLIENT_NOTE, '');
  if (rest.trim() === '' && rest.length < textValue.length) return 'note';
  return localCommand(rest) ? 'note' : undefined;
}

/** What the agent ran, and its output's tool: read from a text-protocol client's observation. */
export interface ClientObservation {
  toolName: string;
  /** The call as JSON arguments, as a tool call would carry them, when the call says it. */
  callArguments?: string;
}

/**
 * Observations of a shell a text-protocol client sent: mini-swe-agent's (the return code then the
 * output, or a timeout's notice) and SWE-agent's (the output, then the open file, the directory
 * and the prompt `bash-$`).
 */
const SHELL_OBSERVATION =
  /^\s*(?:<returncode>-?\d+<\/returncode>|The last command <command>)|\(Current directory: [^\n]*\)\s*bash-\$\s*$/;
/**
 * Cline's and Roo Code's tool result: `[read_file for 'src/app.ts'] Result:`, or with targets in
 * other words (`[read_file for 'a.ts', 'b.ts'] Result:`, `[read_file for 3 files] Result:`).
 */
const RESULT_OBSERVATION = /^\[([\w-]+)(?: for ([^\n]*))?\] Result:/;
/** Results that carry what the user said (an answer, feedback on an edit): a request of theirs. */
const USER_WORDS = /<(feedback|answer|user_message)>/;
/** A fenced block of the agent's: the command a text-protocol step runs is its last one. */
const FENCED_BLOCK = /```[\w-]*[ \t]*\n([\s\S]*?)\n?```/g;
/**
 * The tools Cline, Roo Code and Kilo Code have the model use by writing XML in its text: the
 * tool's tag at the start of a line, a tag per parameter inside
 * (`<read_file>\n<path>src/app.ts</path>\n</read_file>`). Only these names are read, so that
 * HTML or XML an agent writes in its prose is not taken for a call.
 */
const XML_TOOLS: ReadonlySet<string> = new Set([
  'execute_command',
  'read_file',
  'write_to_file',
  'replace_in_file',
  'apply_diff',
  'insert_content',
  'search_and_replace',
  'search_files',
  'list_files',
  'list_code_definition_names',
  'codebase_search',
  'browser_action',
  'use_mcp_tool',
  'access_mcp_resource',
  'web_fetch',
  'ask_followup_question',
  'attempt_completion',
  'new_task',
  'switch_mode',
  'update_todo_list',
  'fetch_instructions',
  'plan_mode_respond',
]);
/** A parameter of a tool use that holds text on one line (not a file's content, not more tags). */
const XML_PARAMETER = /<([a-z][a-z_]*)>([^<\n]*)<\/\1>/g;

/**
 * The tool uses an agent wrote as XML in its text (`XML_TOOLS`), in order, each with its
 * parameters of one line (a parameter named twice keeps its first value). One pass over the
 * text: a tool's tag that is never closed is not looked for again.
 */
export function textToolUses(textValue: string): Array<{ name: string; parameters: Record<string, string> }> {
  const uses: Array<{ name: string; parameters: Record<string, string> }> = [];
  if (!textValue.includes('</')) return uses;
  const unclosed = new Set<string>();
  // A tag at the start of a line that may open a tool use (a fresh one per call: it keeps its place).
  const opening = /^<([a-z][a-z_]*)>/gm;
  for (let match = opening.exec(textValue); match !== null; match = opening.exec(textValue)) {
    const name = match[1]!;
    if (!XML_TOOLS.has(name) || unclosed.has(name)) continue;
    const close = textValue.indexOf(`</${name}>`, opening.lastIndex);
    if (close < 0) {
      unclosed.add(name);
      continue;
    }
    const parameters: Record<string, string> = Object.create(null);
    for (const [, parameter, value] of textValue.slice(opening.lastIndex, close).matchAll(XML_PARAMETER))
      parameters[parameter!] ??= value!.trim();
    if (Object.keys(parameters).length > 0) uses.push({ name, parameters });
    opening.lastIndex = close + name.length + 3;
  }
  return uses;
}

/**
 * A tool's output that a text-protocol client sent as a user message, by the client's known
 * shape: the agent wrote its command as text in `call`, the message before, and the client
 * answers with what it printed. Such a message is output, not a request: it stays inside the
 * request it serves, and folds, masks and prunes as a tool result does.
 */
export function clientObservation(
  message: Message,
  call: Message | undefined,
): ClientObservation | undefined {
  if (message.role !== 'user' || call?.role !== 'assistant') return undefined;
  const first = message.parts[0];
  if (first?.type !== 'text') return undefined;
  if (SHELL_OBSERVATION.test(first.text)) {
    const command = [...messageText(call).matchAll(FENCED_BLOCK)].at(-1)?.[1];
    return {
      toolName: 'bash',
      ...(command === undefined ? {} : { callArguments: JSON.stringify({ command }) }),
    };
  }
  const result = RESULT_OBSERVATION.exec(first.text);
  if (!result || USER_WORDS.test(messageText(message))) return undefined;
  const toolName = result[1]!;
  // One quoted target reads as itself; anything else as the client wrote it.
  const target = result[2]?.replace(/^'([^']*)'$/, '$1');
  // The call as the agent wrote it in XML, when it names that target: the first such use, which
  // is the one Cline and Roo Code run.
  const use = textToolUses(messageText(call)).find((entry) => entry.name === toolName);
  if (use !== undefined && (target === undefined || Object.values(use.parameters).includes(target)))
    return { toolName, callArguments: JSON.stringify(use.parameters) };
  return { toolName, ...(target === undefined ? {} : { callArguments: JSON.stringify({ target }) }) };
}

/**
 * Tools' outputs a client attaches to a user message as text parts of their own, each after a part
 * that names the call. Claude Code (a file the user `@`-mentioned, those it read last when it
 * compacted the conversation) wraps both in reminders; opencode (an `@`-mentioned file) sends the
 * call bare and the output as the next part.
 */
const REMINDED_CALL =
  /^<system-reminder>\nCalled the ([\w-]+) tool with the following input: (\{[^\n]*\})\n<\/system-reminder>\s*$/;
const REMINDED_RESULT = /^<system-reminder>\nResult of calling the ([\w-]+) tool:[ \n]/;
const REMINDER_END = '</system-reminder>';
const BARE_CALL = /^Called the ([\w-]+) tool with the following input: (\{[^\n]*\})\s*$/;

/** Characters `[start, end)` of a text. */
export interface TextRange {
  start: number;
  end: number;
}

/** A tool's output attached to a user message (`clientAttachments`): its part, tool and call. */
export interface ClientAttachment {
  partIndex: number;
  /** Where it stands in the part's text, when it is not the whole part (`mentionBlocks`). */
  range?: TextRange;
  toolName: string;
  /** The call's JSON arguments, when the part before says them. */
  callArguments?: string;
}

/**
 * What Cline and the clients built on it send after the user's words, as a text part of its own:
 * the state of the IDE (open tabs, the time, at first the project's files). The client's, not the
 * user's words, and sent again with every message.
 */
const ENVIRONMENT_DETAILS = /^<environment_details>\n[\s\S]*<\/environment_details>\s*$/;

/** The tool name of the environment details a client sends (`ENVIRONMENT_DETAILS`). */
export const ENVIRONMENT_TOOL = 'environment_details';

/** The tool name of the reminders a client sends after a step's results (`clientReport`). */
export const REMINDER_TOOL = 'system_reminder';
/** The tool name of the images and files a client sends after the results they came in (`clientReport`). */
export const MEDIA_TOOL = 'attached_media';

/**
 * The tool names of what a client sends inside the work, which the ledger reads as an output of
 * the step before it (`clientReport`, `clientReply`), each with the numbering (`LEDGER_IDS`) that
 * first read it so right after a tool message (`clientOutputSince`): a numbering before it took
 * such a message for a request.
 */
const CLIENT_OUTPUT_SINCE: Readonly<Record<string, number>> = {
  [ENVIRONMENT_TOOL]: 3,
  [REMINDER_TOOL]: 4,
  [MEDIA_TOOL]: 6,
  turn_aborted: 6,
  subagent_notification: 6,
  no_tool_used: 6,
  continue_prompt: 6,
  hook_feedback: 6,
  subtask_prompt: 6,
  client_warning: 6,
};
/** The numbering that first read a report after anything but a tool message: a step's media, instructions. */
const REPORTED_PAST_RESULTS_SINCE = 6;

/**
 * The numbering (`LEDGER_IDS`) that first read `object` as an output a client sent inside the
 * work, when it is one: every numbering before it took that message for a request.
 */
export function clientOutputSince(
  ledger: Pick<Ledger, 'messages'>,
  object: LedgerObject,
): number | undefined {
  if (!isObservation(object) || object.toolName === undefined) return undefined;
  const since = CLIENT_OUTPUT_SINCE[object.toolName];
  if (since === undefined) return undefined;
  return ledger.messages[object.messageIndex - 1]?.role === 'tool'
    ? since
    : Math.max(since, REPORTED_PAST_RESULTS_SINCE);
}

/** Claude Code's reminders: what its harness, not the user, tells the model. */
const CLIENT_REMINDER = /<system-reminder>[\s\S]*?<\/system-reminder>/g;
/** A reminder that carries what the user sent while the tools ran: their words, a request. */
const REMINDED_WORDS = /The user sent (?:a new|the following) message/;
/**
 * Codex's notes inside the work, each its block's tag: the outputs before it were cut off because
 * the user interrupted the turn, or a sub-agent it started reports.
 */
const CODEX_NOTE = /<(turn_aborted|subagent_notification)>[\s\S]*?<\/\1>/g;
/**
 * Whole messages a client sends after a step's results, each with its tool name: opencode's
 * prompt after a sub-agent's result, and the warnings Codex sent about how a tool was called.
 */
const CLIENT_NOTICES: ReadonlyArray<readonly [RegExp, string]> = [
  [/^Summarize the task tool output above and continue with your task\.\s*$/, 'subtask_prompt'],
  [
    /^Warning: (?:apply_patch was requested via|The maximum number of unified exec processes you can keep open is)/,
    'client_warning',
  ],
];
/** What opencode writes before the images and files a tool returned, for providers that take none in a result. */
const MEDIA_PROMPT = /^Attached image\(s\) from tool result:\s*$/;
/** Opaque parts that are a file: a PDF or a document, which a tool may return as an image does. */
const MEDIA_KINDS: ReadonlySet<string> = new Set(['file', 'input_file', 'document']);

function isMedia(part: Part): boolean {
  return part.type === 'image' || (part.type === 'opaque' && MEDIA_KINDS.has(part.kind));
}

function isEnvironment(part: Part): boolean {
  return part.type === 'text' && ENVIRONMENT_DETAILS.test(part.text);
}

/** Whether a part holds nothing but Claude Code's reminders, as `clientReport` reads them. */
function isReminder(part: Part): boolean {
  return clientReport({ role: 'user', parts: [part] }) === REMINDER_TOOL;
}

/**
 * Whether a user message is the images and files a tool returned, sent after its result: those
 * alone, or after opencode's words for them, with at most the environment details Cline sends.
 */
function carriesMedia(message: Message): boolean {
  const [first, ...rest] = message.parts;
  const parts = first?.type === 'text' && MEDIA_PROMPT.test(first.text) ? rest : message.parts;
  return parts.some(isMedia) && parts.every((part) => isMedia(part) || isEnvironment(part));
}

/**
 * The tool a user message reports as when it holds nothing but what a client sends after a
 * step's results, as a user message of its own (or in the message of the results, which the
 * ledger reads as one after them): the environment details of Cline and Roo Code
 * (`ENVIRONMENT_TOOL`); Claude Code's reminders (`REMINDER_TOOL`: its todo list, a file the user
 * changed, the date) unless one carries what the user sent meanwhile, or names a file it
 * attaches; Codex's notes (`CODEX_NOTE`); opencode's and Codex's notices (`CLIENT_NOTICES`); the
 * images and files a tool returned, which opencode and older Codex send after the result to
 * providers that take none in it (`MEDIA_TOOL`). Right after a step's outputs, it is an output of
 * that step, not a request. `afterMedia` says it follows such media, not the results themselves:
 * media there are the user's.
 */
export function clientReport(message: Message, afterMedia = false): string | undefined {
  if (message.role !== 'user' || message.parts.length === 0) return undefined;
  if (carriesMedia(message)) return afterMedia ? undefined : MEDIA_TOOL;
  if (!message.parts.every((part) => part.type === 'text')) return undefined;
  if (message.parts.every(isEnvironment)) return ENVIRONMENT_TOOL;
  const textValue = messageText(message);
  if (onlyBlocks(textValue, CODEX_NOTE)) return textValue.match(/<(\w+)>/)![1]!;
  const notice = CLIENT_NOTICES.find(([pattern]) => pattern.test(textValue));
  if (notice !== undefined) return notice[1];
  if (!onlyBlocks(textValue, CLIENT_REMINDER) || REMINDED_WORDS.test(textValue)) return undefined;
  // The reminder of a call whose result comes next, or a file attached: they open a request.
  if (clientNote(message) !== undefined || clientAttachments(message, undefined).length > 0) return undefined;
  return REMINDER_TOOL;
}

/**
 * What a client answers the model's words with, when they ended in no step it could run: Cline's
 * and Roo Code's error that no tool was used, Claude Code's prompts to go on after an answer cut
 * off, empty or malformed, and the feedback of a hook that kept the agent from ending its turn.
 */
const CLIENT_REPLIES: ReadonlyArray<readonly [RegExp, string]> = [
  [/^\[ERROR\] You did not use a tool in your previous response!/, 'no_tool_used'],
  [
    /^(?:Output token limit hit\b|Your response was cut off because it exceeded the output token limit|\[Your previous response had no visible output\.|The previous response failed to produce a valid tool call\.|Your tool call was malformed and could not be parsed\.)/,
    'continue_prompt',
  ],
  [/^(?:Stop|SubagentStop|TeammateIdle|TaskCompleted) hook feedback:\n/, 'hook_feedback'],
];

/**
 * The tool a user message right after the model's words reports as, when it is a client's answer
 * to them (`CLIENT_REPLIES`), with nothing beside it but what clients send with each message (the
 * environment details of Cline, the reminders of Claude Code): an output of the model's last
 * step, not a request.
 */
export function clientReply(message: Message): string | undefined {
  if (message.role !== 'user') return undefined;
  const [first, ...rest] = message.parts;
  if (first?.type !== 'text' || !rest.every((part) => isEnvironment(part) || isReminder(part)))
    return undefined;
  return CLIENT_REPLIES.find(([pattern]) => pattern.test(first.text))?.[1];
}

/** The text of an attached output: its part's, or its range of it. */
export function attachedText(part: Part | undefined, range: TextRange | undefined): string {
  if (part?.type !== 'text') return part ? partText(part) : '';
  return range ? part.text.slice(range.start, range.end) : part.text;
}

/**
 * The attachment `part` is, after `before`: its tool, and its call when `before` names it. A bare
 * call names the output after it only within one message (`inMessage`), as opencode sends them.
 */
function attachmentOf(
  part: Part,
  before: Part | undefined,
  inMessage: boolean,
): Omit<ClientAttachment, 'partIndex'> | undefined {
  if (part.type !== 'text') return undefined;
  const previous = before?.type === 'text' ? before.text : '';
  const result = REMINDED_RESULT.exec(part.text);
  if (result && part.text.trimEnd().endsWith(REMINDER_END)) {
    const call = REMINDED_CALL.exec(previous);
    return { toolName: result[1]!, ...(call && call[1] === result[1] ? { callArguments: call[2]! } : {}) };
  }
  const bare = inMessage ? BARE_CALL.exec(previous) : null;
  if (!bare || part.text.trim() === '' || BARE_CALL.test(part.text)) return undefined;
  return { toolName: bare[1]!, callArguments: bare[2]! };
}

/**
 * The tool outputs a client attached to a user message: text parts of their own, each with the
 * call the part before it names (in this message, or last in `previous`, a user message too:
 * clients send the two apart); the environment details Cline sends after the words; and the
 * blocks of what the user mentioned at the end of a text (`mentionBlocks`). Such output is not the
 * user's words: it folds, masks and prunes as a tool result does, while the request around it
 * stays.
 */
export function clientAttachments(message: Message, previous: Message | undefined): ClientAttachment[] {
  if (message.role !== 'user') return [];
  const attachments: ClientAttachment[] = [];
  let before = previous?.role === 'user' ? previous.parts.at(-1) : undefined;
  message.parts.forEach((part, partIndex) => {
    const attachment = attachmentOf(part, before, partIndex > 0);
    before = part;
    if (attachment) attachments.push({ partIndex, ...attachment });
    else if (part.type !== 'text') return;
    else if (partIndex > 0 && ENVIRONMENT_DETAILS.test(part.text))
      attachments.push({ partIndex, toolName: ENVIRONMENT_TOOL });
    else {
      for (const { start, end, tag, callArguments } of mentionBlocks(part.text)) {
        attachments.push({
          partIndex,
          range: { start, end },
          toolName: tag,
          ...(callArguments === undefined ? {} : { callArguments }),
        });
      }
    }
  });
  return attachments;
}

/** Whether an object is a tool's output that stands for a whole user message (`clientObservation`). */
export function isObservation(object: LedgerObject): boolean {
  return isToolOutput(object) && object.partIndex === undefined;
}

/**
 * Whether message `index` carries a tool's output: a tool message, or a user message that is an
 * observation a text-protocol client sent (`clientObservation`). A user message with outputs
 * attached (`clientAttachments`) is still a request.
 */
export function carriesOutput(ledger: Pick<Ledger, 'messages' | 'objectsByMessage'>, index: number): boolean {
  const role = ledger.messages[index]?.role;
  if (role === 'tool') return true;
  return role === 'user' && (ledger.objectsByMessage.get(index)?.some(isObservation) ?? false);
}

/**
 * A user message as the request's own words and the outputs a client attached to it
 * (`clientAttachments`), each a message of those parts; `attached` is absent when there are none.
 */
export function requestParts(message: Message): { words: Message; attached?: Message } {
  const attachments = clientAttachments(message, undefined);
  if (attachments.length === 0) return { words: message };
  const words: Part[] = [];
  const attached: Part[] = [];
  message.parts.forEach((part, partIndex) => {
    const own = attachments.filter((attachment) => attachment.partIndex === partIndex);
    if (own.length === 0) words.push(part);
    else if (part.type !== 'text' || own[0]!.range === undefined) attached.push(part);
    else {
      // The words are the text around the blocks.
      let text = '';
      let at = 0;
      for (const { range } of own) {
        text += part.text.slice(at, range!.start);
        at = range!.end;
        attached.push({ type: 'text', text: attachedText(part, range) });
      }
      words.push({ ...part, text: text + part.text.slice(at) });
    }
  });
  return { words: { ...message, parts: words }, attached: { ...message, parts: attached } };
}

/** A request's own words: the text of a user message without the tool outputs a client attached to it. */
export function requestText(message: Message): string {
  return messageText(requestParts(message).words);
}

/**
 * Whether a user message goes on with the request in `previous`: its first part is an output the
 * client attached to the call the previous message names last (`clientAttachments`).
 */
function continuesRequest(message: Message, previous: Message | undefined): boolean {
  const [first] = clientAttachments(message, previous);
  return (
    previous?.role === 'user' &&
    first?.partIndex === 0 &&
    first.range === undefined &&
    first.callArguments !== undefined
  );
}

/**
 * Where the latest turn of `messages` starts, `isOutput` telling which messages carry a tool's
 * output: the last user request if nothing answered it yet, otherwise the last assistant message
 * (with the outputs that follow it). A request that comes right after outputs no assistant
 * message has answered yet joins their turn (a client's compaction prompt, a message the user
 * sent while the tools ran), past any instructions in between: the model has not seen those
 * outputs, so they reach it as the tools wrote them. So does a request a client sent in two user
 * messages (`continuesRequest`): Claude Code names a file it attaches at the end of one.
 */
export function turnStartOf(messages: readonly Message[], isOutput: (index: number) => boolean): number {
  for (let index = messages.length - 1; index >= 0; index -= 1) {
    const role = messages[index]?.role;
    if (role === 'assistant') return index;
    if (role !== 'user' || isOutput(index)) continue;
    if (continuesRequest(messages[index]!, messages[index - 1])) continue;
    let before = index - 1;
    while (before >= 0 && messages[before]?.role === 'system') before -= 1;
    if (before < 0 || !isOutput(before)) return index;
  }
  return 0;
}

/**
 * Tools whose output is the client's summary of the conversation before it, which the agent
 * continues from (Cline's auto-compaction `summarize_task`, and its `/smol` `condense`): the
 * task as it stands, often its only statement, since the client cut the history before it.
 */
const SUMMARY_TOOLS: ReadonlySet<string> = new Set(['summarize_task', 'condense']);

/**
 * Default pins: the system prompt, instructions a client sends as a user message, the first
 * user request (the task goal), and a client's summary of the conversation (`SUMMARY_TOOLS`).
 * Without a context (a caller of its own), the first user message is taken for the task goal.
 */
export function defaultPin(
  object: LedgerObject,
  message?: Message,
  context?: PinContext,
): string | undefined {
  if (object.kind === 'system' && object.restates === undefined) return 'system prompt';
  if (isToolOutput(object) && object.toolName !== undefined && SUMMARY_TOOLS.has(object.toolName))
    return "the client's summary of the conversation before it";
  if (object.kind !== 'conversation') return undefined;
  if (message && clientNote(message) === 'instructions')
    return object.restates === undefined ? 'instructions the client sent as a user message' : undefined;
  if (context ? context.taskGoal : object.id === 'conversation:user:1')
    return 'first user request (task goal)';
  return undefined;
}

/** A tool name made safe for ids: no colons or spaces. */
export function toolIdName(name: string): string {
  return name.replace(/[^\w.-]+/g, '_') || 'tool';
}

/** Tokens of one part as sent (images at a fixed budget). */
export function partTokens(counter: TokenCounter, part: Part): number {
  // Images count as a fixed budget: their real cost depends on the provider and the resolution.
  if (part.type === 'image') return 765;
  if (part.type === 'tool-result' && typeof part.content !== 'string') {
    return part.content.reduce(
      (sum, inner) => sum + (inner.type === 'image' ? 765 : counter.count(inner.text)),
      0,
    );
  }
  return counter.count(partText(part));
}

/** Tokens of one message as sent: its parts plus framing. */
export function countMessageTokens(counter: TokenCounter, message: Message): number {
  let total = MESSAGE_OVERHEAD_TOKENS;
  for (const part of message.parts) total += partTokens(counter, part);
  return total;
}

/** Index a transcript from scratch. */
export function indexTranscript(messages: readonly Message[], options: LedgerOptions): Ledger {
  const ledger = createLedger(options);
  ledger.append(messages);
  return ledger;
}

/** An empty ledger; `append` indexes messages as they come. */
export function createLedger(options: LedgerOptions): Ledger {
  const messages: Message[] = [];
  const objects: LedgerObject[] = [];
  const messageTokens: number[] = [];
  const chain: string[] = [];
  const byId = new Map<string, LedgerObject>();
  const objectsByMessage = new Map<number, LedgerObject[]>();
  const anchorIndex = new Map<string, LedgerObject[]>();
  const calls = new Map<string, { messageIndex: number; name: string; arguments: string }>();
  const pin = options.pin ?? defaultPin;
  const maxAnchors = options.maxAnchorsPerObject ?? 400;
  let userCount = 0;
  /** The id of the task goal, once a user message is (see `PinContext`). */
  let taskGoal: string | undefined;
  let systemCount = 0;
  // The first object of each text of instructions (a system message, or instructions a client sent
  // as a user message), for restatements.
  const systemTexts = new Map<string, string>();
  /** Instructions that say again, word for word, what an earlier object said (`restatable`). */
  const noteRestatement = (object: LedgerObject, message: Message, textValue: string) => {
    if (!restatable(message)) return;
    const first = systemTexts.get(textValue);
    if (first === undefined) systemTexts.set(textValue, object.id);
    else object.restates = first;
  };
  let functionCount = 0;
  let totalTokens = 0;
  let keysTaggedFrom: number | undefined;
  /** Indexes of messages whose tokens are bounds. */
  const bounded: number[] = [];
  let openConversation: LedgerObject | undefined;
  const conversationOfMessage: (LedgerObject | undefined)[] = [];

  // The latest read of each instruction file, by tool and arguments.
  const latestSkill = new Map<string, LedgerObject>();
  const register = (object: LedgerObject, message: Message) => {
    const reason = pin(object, message, { taskGoal: object.id === taskGoal });
    if (reason !== undefined) {
      object.pinned = true;
      object.pinReason = reason;
    }
    if (object.kind === 'skill') {
      const key = `${object.toolName ?? ''}\0${object.callArguments ?? ''}`;
      const earlier = latestSkill.get(key);
      if (earlier?.pinReason === RULES_FILE_PIN) {
        earlier.pinned = false;
        delete earlier.pinReason;
      }
      latestSkill.set(key, object);
    }
    objects.push(object);
    byId.set(object.id, object);
    const list = objectsByMessage.get(object.messageIndex) ?? [];
    list.push(object);
    objectsByMessage.set(object.messageIndex, list);
  };

  const indexObjectAnchors = (object: LedgerObject, anchors: readonly Anchor[]) => {
    for (const anchor of anchors.slice(0, maxAnchors)) {
      const holders = anchorIndex.get(anchor.value) ?? [];
      holders.push(object);
      anchorIndex.set(anchor.value, holders);
    }
  };

  // A later message that mentions an anchor refers to every earlier object holding it.
  const spokenAnchors = new Set<string>();
  const recordReferences = (index: number, textValue: string, own: ReadonlySet<LedgerObject>) => {
    const seen = new Set<LedgerObject>();
    for (const anchor of extractAnchors(textValue)) {
      spokenAnchors.add(anchor.value);
      const holders = anchorIndex.get(anchor.value) ?? [];
      // An anchor that half the heap holds says nothing about which object is needed.
      if (holders.length > COMMON_ANCHOR_HOLDERS) continue;
      for (const holder of holders) {
        if (own.has(holder) || seen.has(holder) || holder.messageIndex >= index) continue;
        seen.add(holder);
        holder.references.push(index);
      }
    }
  };

  /**
   * Anchors and references are indexed when first read (a planner, a fold's summary), not as
   * messages come: most calls of a session govern nothing and never read them. Messages wait
   * in order, so the index is the one indexing each message as it came would have built.
   */
  const waiting: Array<{ index: number; message: Message; created: Array<[LedgerObject, () => Anchor[]]> }> =
    [];
  const indexWaiting = () => {
    for (const { index, message, created } of waiting.splice(0)) {
      for (const [object, anchorsOf] of created) {
        const anchors = anchorsOf();
        anchorsOfObject.set(object, anchors);
        if (object.kind === 'system') for (const anchor of anchors) spokenAnchors.add(anchor.value);
        indexObjectAnchors(object, anchors);
      }
      // Only what the agent and the user say counts as use; tool output echoing a path does not,
      // nor does an observation a text-protocol client sent as a user message, nor a tool's
      // output a client attached to one.
      const said =
        message.role === 'assistant' ||
        (message.role === 'user' && !created.some(([object]) => isObservation(object)));
      if (said) {
        const words = message.role === 'user' ? requestText(message) : messageReferenceText(message);
        recordReferences(index, words, new Set(created.map(([object]) => object)));
      }
    }
  };
  const anchorsOfObject = new WeakMap<LedgerObject, Anchor[]>();
  /** An object whose anchors and references are read through the index of waiting messages. */
  const withLazyAnchors = (object: LedgerObject): LedgerObject => {
    const references = object.references;
    Object.defineProperties(object, {
      anchors: {
        enumerable: true,
        get: () => {
          indexWaiting();
          return anchorsOfObject.get(object) ?? [];
        },
      },
      references: {
        enumerable: true,
        get: () => {
          indexWaiting();
          return references;
        },
      },
    });
    return object;
  };

  const indexAnchors = options.indexAnchors !== false;
  const indexMessage = (
    message: Message,
    index: number,
    partCounts: readonly number[],
    counter: TokenCounter,
  ) => {
    const sumOf = (counts: readonly number[]) => counts.reduce((sum, count) => sum + count, 0);
    const created: Array<[LedgerObject, () => Anchor[]]> = [];
    // Output a text-protocol client sent as a user message, inside a request the agent works on;
    // or what a client sends inside the work: after a step's outputs (`clientReport`), or in
    // answer to the model's words (`clientReply`).
    const shellObservation = openConversation ? clientObservation(message, messages[index - 1]) : undefined;
    // What it follows, past instructions a client sends between (as `turnStartOf` reads them).
    let before = index - 1;
    while (messages[before]?.role === 'system') before -= 1;
    const afterMedia =
      objectsByMessage.get(before)?.some((object) => object.toolName === MEDIA_TOOL) ?? false;
    const report = !openConversation
      ? undefined
      : messages[before]?.role === 'tool' || afterMedia
        ? clientReport(message, afterMedia)
        : messages[before]?.role === 'assistant'
          ? clientReply(message)
          : undefined;
    const observation = shellObservation ?? (report === undefined ? undefined : { toolName: report });
    if (message.role === 'system') {
      systemCount += 1;
      const object = payloadObject(`system:${systemCount}`, 'system', index, sumOf(partCounts));
      const textValue = payloadText(message.parts);
      noteRestatement(object, message, textValue);
      created.push([object, () => extractAnchors(textValue)]);
    } else if (message.role === 'user' && observation !== undefined) {
      functionCount += 1;
      const object = outputObject(
        { ...observation, ...(shellObservation ? { callMessageIndex: index - 1 } : {}) },
        messageText(message),
        index,
        functionCount,
        sumOf(partCounts),
      );
      created.push([
        object,
        () =>
          extractAnchors(`${argumentValuesText(observation.callArguments ?? '')}\n${messageText(message)}`),
      ]);
    } else if (message.role === 'user') {
      userCount += 1;
      const object = payloadObject(
        `conversation:user:${userCount}`,
        'conversation',
        index,
        sumOf(partCounts),
      );
      const textValue = payloadText(message.parts);
      // The request's own words: the outputs attached to it hold their anchors themselves.
      created.push([object, () => extractAnchors(requestText(message))]);
      openConversation = object;
      const note = clientNote(message);
      if (note === 'instructions') noteRestatement(object, message, textValue);
      if (taskGoal === undefined && note === undefined) taskGoal = object.id;
      for (const attachment of clientAttachments(message, messages[index - 1])) {
        functionCount += 1;
        const { partIndex, range, callArguments } = attachment;
        const output = attachedText(message.parts[partIndex], range);
        const tokens = range ? counter.count(output) : (partCounts[partIndex] ?? 0);
        const attached = outputObject(attachment, output, index, functionCount, tokens);
        attached.attachedTo = object.id;
        if (range) attached.range = range;
        created.push([
          attached,
          () => extractAnchors(`${argumentValuesText(callArguments ?? '')}\n${output}`),
        ]);
      }
    } else if (message.role === 'assistant') {
      for (const part of message.parts) {
        if (part.type === 'tool-call')
          calls.set(part.id, { messageIndex: index, name: part.name, arguments: part.arguments });
      }
    } else {
      message.parts.forEach((part, partIndex) => {
        if (part.type !== 'tool-result') return;
        functionCount += 1;
        const call = calls.get(part.callId);
        const object = outputObject(
          {
            toolName: call?.name ?? part.name,
            callId: part.callId,
            partIndex,
            ...(call ? { callMessageIndex: call.messageIndex, callArguments: call.arguments } : {}),
            ...(part.isError === true ? { isError: true } : {}),
          },
          partText(part),
          index,
          functionCount,
          partCounts[partIndex] ?? 0,
        );
        created.push([
          object,
          () => extractAnchors(`${argumentValuesText(call?.arguments ?? '')}\n${partText(part)}`),
        ]);
      });
    }
    // Waiting before the pin rule sees the objects, so that a rule reading anchors finds them.
    if (indexAnchors) {
      for (const [object] of created) withLazyAnchors(object);
      waiting.push({ index, message, created });
    }
    for (const [object] of created) register(object, message);
    conversationOfMessage[index] = openConversation;
    if (openConversation) {
      openConversation.span.end = index + 1;
      // Instructions sent again and then worked on stand for that work: a request like any other.
      if (message.role === 'assistant' || message.role === 'tool') delete openConversation.restates;
    }
  };

  return {
    messages,
    objects,
    messageTokens,
    chain,
    objectsByMessage,
    options,
    get keysTaggedFrom() {
      return keysTaggedFrom;
    },
    set keysTaggedFrom(from) {
      keysTaggedFrom = from;
    },
    keyTag: (end, reach = end) => {
      const link = chain[end - 1];
      return keysTaggedFrom === undefined || reach - 1 < keysTaggedFrom || link === undefined
        ? ''
        : `~${link.slice(0, KEY_TAG_CHARS)}`;
    },
    get spokenAnchors() {
      indexWaiting();
      return spokenAnchors;
    },
    get totalTokens() {
      return totalTokens;
    },
    get: (id) => byId.get(id),
    conversationAt: (index) => conversationOfMessage[index],
    get boundedMessages() {
      return bounded.length;
    },
    append(newMessages, links, appendOptions) {
      const { tokenCounter } = options;
      const bound = appendOptions?.bounded === true ? tokenCounter.bound?.bind(tokenCounter) : undefined;
      const counter = bound === undefined ? tokenCounter : { name: tokenCounter.name, count: bound };
      newMessages.forEach((message, offset) => {
        const index = messages.length;
        messages.push(message);
        chain.push(links?.[offset] ?? chainLink(chain[index - 1] ?? '', messageDigest(message)));
        // Each part is counted once: the message's tokens and its objects' come from the same counts.
        const partCounts = message.parts.map((part) => partTokens(counter, part));
        const tokens = MESSAGE_OVERHEAD_TOKENS + partCounts.reduce((sum, count) => sum + count, 0);
        messageTokens.push(tokens);
        totalTokens += tokens;
        if (bound !== undefined) bounded.push(index);
        indexMessage(message, index, partCounts, counter);
      });
    },
    settle() {
      for (const index of bounded.splice(0)) {
        const partCounts = messages[index]!.parts.map((part) => partTokens(options.tokenCounter, part));
        const parts = partCounts.reduce((sum, count) => sum + count, 0);
        totalTokens += MESSAGE_OVERHEAD_TOKENS + parts - messageTokens[index]!;
        messageTokens[index] = MESSAGE_OVERHEAD_TOKENS + parts;
        // As `indexMessage` gave them: a tool result its part's count (or its range's), any other
        // object its message's.
        const message = messages[index]!;
        for (const object of objectsByMessage.get(index) ?? []) {
          if (object.partIndex === undefined) object.tokens = parts;
          else if (object.range === undefined) object.tokens = partCounts[object.partIndex] ?? 0;
          else
            object.tokens = options.tokenCounter.count(
              attachedText(message.parts[object.partIndex], object.range),
            );
        }
      }
    },
    adoptMessages(incoming) {
      const shared = Math.min(incoming.length, messages.length);
      for (let index = 0; index < shared; index += 1) {
        carryMessageMemos(messages[index]!, incoming[index]!);
        messages[index] = incoming[index]!;
      }
    },
  };
}

/**
 * A message's text as the agent meant it: tool-call arguments as their values (decoded from
 * JSON), so that a quoted string or a script's lines read as written, not escaped.
 */
export function messageReferenceText(message: Message): string {
  return message.parts.map(referenceText).join('\n');
}

/** The text of a part that counts as a reference to earlier objects. */
function referenceText(part: Part): string {
  if (part.type === 'tool-call') return argumentValuesText(part.arguments);
  if (part.type === 'tool-result') return withoutRunEnvelope(partText(part));
  return partText(part);
}

/**
 * A few `Key: value` lines closed by `Output:` before a command's output (Codex CLI's
 * `Chunk ID`, `Wall time`, `Process exited with code`, `Original token count`): what the runner
 * said about the run, not what the command printed. Its numbers would fill indexes.
 */
const RUN_ENVELOPE = /^(?:[A-Z][A-Za-z ]{2,30}(?::| with code) [^\n]{0,40}\n){1,6}Output:\n/;

function withoutRunEnvelope(text: string): string {
  return text.replace(RUN_ENVELOPE, '');
}

/**
 * The values of a tool call's JSON arguments, one per line: keys such as "command" or
 * "file_path" are shape, not anchors.
 */
export function argumentValuesText(argumentsText: string): string {
  return argumentValues(argumentsText).join('\n');
}

/** The values of a call's arguments, nested ones too; arguments that are not JSON are one value. */
function argumentValues(argumentsText: string): string[] {
  let parsed: unknown;
  try {
    parsed = JSON.parse(argumentsText);
  } catch {
    return [argumentsText];
  }
  const values: string[] = [];
  const walk = (value: unknown) => {
    if (typeof value === 'string') values.push(value);
    else if (typeof value === 'number' || typeof value === 'boolean') values.push(String(value));
    else if (Array.isArray(value)) value.forEach(walk);
    else if (value && typeof value === 'object') Object.values(value).forEach(walk);
  };
  walk(parsed);
  return values;
}

/**
 * Whether a message of instructions can restate another: text alone, with words in it, and no
 * wire fields of its own. A block kept whole (Codex's compacted history, its change of effort)
 * shows the model more than its text, and a field beside the text (Claude Code's `output_config`
 * on an effort directive, whose text is empty; `clear_at`) acts where the message stands: two of
 * them alike in text say different things. A breakpoint is no such field.
 */
function restatable(message: Message): boolean {
  if (!message.parts.every((part) => part.type === 'text')) return false;
  return payloadText(message.parts).trim() !== '' && !carriesWireFields(message);
}

function payloadText(parts: readonly Part[]): string {
  return parts.map(partText).join('\n');
}

function payloadObject(id: string, kind: ObjectKind, index: number, tokens: number): LedgerObject {
  return {
    id,
    kind,
    messageIndex: index,
    span: { start: index, end: index + 1 },
    isError: false,
    tokens,
    anchors: [],
    references: [],
    pinned: false,
  };
}

/** Where a tool output came from: its tool, and the call when the transcript holds it. */
interface OutputSource {
  toolName: string;
  /** The tool-result part's index in its message; absent when the output is the whole message. */
  partIndex?: number;
  callId?: string;
  callMessageIndex?: number;
  callArguments?: string;
  /** The tool reported a failure. */
  isError?: boolean;
}

function outputObject(
  source: OutputSource,
  output: string,
  index: number,
  ordinal: number,
  tokens: number,
): LedgerObject {
  const { toolName, callArguments } = source;
  const kind = loadsInstructions(toolName, callArguments ?? '') ? 'skill' : 'function';
  const object: LedgerObject = {
    id: `${kind}:${toolIdName(toolName)}:${ordinal}`,
    kind,
    messageIndex: index,
    span: { start: index, end: index + 1 },
    toolName,
    isError:
      source.isError === true ||
      ERROR_TEXT.test(output.slice(0, 4000)) ||
      ERROR_TEXT.test(output.slice(-4000)),
    tokens,
    anchors: [],
    references: [],
    pinned: false,
  };
  if (source.partIndex !== undefined) object.partIndex = source.partIndex;
  if (source.callId !== undefined) object.callId = source.callId;
  if (source.callMessageIndex !== undefined) object.callMessageIndex = source.callMessageIndex;
  if (callArguments !== undefined) object.callArguments = callArguments;
  return object;
}

/** Anchors ranked by how much they say, for summaries: errors and paths first. */
export function rankAnchors(anchors: readonly Anchor[]): Anchor[] {
  return anchors
    .map((anchor, order) => ({ anchor, order }))
    .sort((a, b) => anchorWeight(b.anchor) - anchorWeight(a.anchor) || a.order - b.order)
    .map((entry) => entry.anchor);
}
