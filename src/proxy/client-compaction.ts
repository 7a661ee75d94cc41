/**
 * Compaction requests of Claude Code, Codex (compacting locally), opencode, Kilo Code, Roo Code
 * and Cline, for `WireDialect.recoverable`: the client asks for a summary that replaces the
 * conversation, so the request gets neither the proxy's tools nor recovery pointers (a key copied
 * into the summary would outlive what it names). Codex's remote compaction (its input ends in a
 * `compaction_trigger`) is the Responses dialect's own.
 *
 * Each client is known by text it writes itself, where it writes it: the start of the last text
 * of the last user message (of any text of it, for Cline's instructions), or its system prompt.
 * A user who quotes a prompt inside a message of their own is not taken for the client.
 */
import { isJsonObject, type JsonObject } from './wire-dialect.js';

/** What the recognizers read of a request. */
export interface PromptTexts {
  /** The texts of the system prompt (system and developer messages, Responses `instructions`). */
  system: readonly string[];
  /** The texts of the last message (system messages after it aside), in order, when a user sent it; empty otherwise. */
  lastUser: readonly string[];
}

/** The texts of a message's content: a string, or its `text` and `input_text` parts. */
function contentTexts(content: unknown): string[] {
  if (typeof content === 'string') return [content];
  if (!Array.isArray(content)) return [];
  return content.flatMap((part) =>
    isJsonObject(part) &&
    (part.type === 'text' || part.type === 'input_text') &&
    typeof part.text === 'string'
      ? [part.text]
      : [],
  );
}

/** Whether a message (or Responses item) is a system or developer message. */
function isSystemMessage(message: unknown): message is JsonObject {
  return isJsonObject(message) && (message.role === 'system' || message.role === 'developer');
}

/**
 * What the recognizers read of a conversation: the texts of `system` (contents beside the
 * messages: Anthropic's `system`, Responses `instructions`) and of its system and developer
 * messages, and those of its last message when a user sent it. System messages after that one
 * do not count: Claude Code puts a change of effort (an Anthropic system message) after the
 * prompt, before the turn it applies to.
 */
export function promptTexts(messages: readonly unknown[], system: readonly unknown[] = []): PromptTexts {
  const last = messages.findLast((message) => !isSystemMessage(message));
  return {
    system: [...system, ...messages.filter(isSystemMessage).map((message) => message.content)].flatMap(
      contentTexts,
    ),
    lastUser: isJsonObject(last) && last.role === 'user' ? contentTexts(last.content) : [],
  };
}

/**
 * Claude Code's (2.1.x: `CRITICAL: Respond with TEXT ONLY. Do NOT call any tools.` … `Your task
 * is to create a detailed summary of …`), the last text of its last user message: Claude Code
 * denies every tool call of that request.
 */
function isClaudeCodeCompaction({ lastUser }: PromptTexts): boolean {
  const text = lastUser.at(-1);
  return (
    text !== undefined &&
    (text.startsWith('CRITICAL: Respond with TEXT ONLY') ||
      text.includes('Your task is to create a detailed summary of'))
  );
}

/**
 * Codex's when it compacts locally (a provider other than OpenAI's; codex-rs/core/templates/
 * compact/prompt.md), sent as the last user message; other agents copied it.
 */
function isCheckpointCompaction({ lastUser }: PromptTexts): boolean {
  return lastUser.at(-1)?.startsWith('You are performing a CONTEXT CHECKPOINT COMPACTION.') === true;
}

/**
 * opencode's (sst/opencode; Kilo Code's CLI is built on it), the prompt it sends after the
 * history: up to 1.3 `defaultPrompt` (plugins add context after it), packages/opencode/src/
 * session/compaction.ts; in 1.14 and Kilo `buildPrompt`, a new summary or an update of the last;
 * with `compaction.mode: "suffix"` (unreleased at 1.18.33) packages/core/src/session/
 * compaction-suffix.ts; in 1.18 packages/core/src/session/compaction.ts `buildPrompt`, where the
 * history itself is the text of the one message.
 */
const OPENCODE_PROMPTS = [
  'Provide a detailed prompt for continuing our conversation above.',
  'Create a new anchored summary from the conversation history above.',
  'Update the anchored summary below using the conversation history above.',
  'Summarize the older portion of the preceding conversation. This is a summarization task, not a request to continue the conversation.',
  'Here is the conversation so far:\n\n<conversation>\n',
];

/** Kilo's fallback when the history is too large for one request (kilocode/session/compaction-chunks.ts). */
const KILO_CHUNK_PROMPT =
  /^Summarize conversation chunk \d+ of \d+\.\nOnly summarize facts present in this chunk\./;

function isOpencodeCompaction({ lastUser }: PromptTexts): boolean {
  const text = lastUser.at(-1);
  if (text === undefined) return false;
  return OPENCODE_PROMPTS.some((prompt) => text.startsWith(prompt)) || KILO_CHUNK_PROMPT.test(text);
}

/**
 * Roo Code's "condense context" (src/core/condense/index.ts), and Kilo Code's extension before
 * its rewrite: at first this request last, whatever the system prompt (its own or the user's);
 * now, this system prompt whatever condensing prompt comes last (o-series models get it after
 * a `Formatting re-enabled` line), and by default the condensing prompt that starts so
 * (src/shared/support-prompt.ts `CONDENSE`).
 */
const ROO_REQUEST = 'Summarize the conversation so far, as described in the prompt instructions.';
const ROO_SYSTEM =
  'You are a helpful AI assistant tasked with summarizing conversations.\n\nCRITICAL: This is a summarization-only request. DO NOT call any tools or functions.';
const ROO_CONDENSE = 'CRITICAL: This summarization request is a SYSTEM OPERATION, not a user message.';

function isRooCondense({ system, lastUser }: PromptTexts): boolean {
  const text = lastUser.at(-1);
  if (system.some((prompt) => prompt.includes(ROO_SYSTEM))) return true;
  if (text === undefined) return false;
  // A model whose roles must alternate gets it joined to the user message before it.
  return text === ROO_REQUEST || text.endsWith(`\n${ROO_REQUEST}`) || text.startsWith(ROO_CONDENSE);
}

/**
 * Cline's: its auto-compaction appends `summarizeTask()` to the turn's user message, and `/smol`
 * (`/compact`) puts `condenseToolResponse()` at the head of the user's text
 * (src/core/prompts/contextManagement.ts, commands.ts); the model answers with the summary as
 * the `summarize_task` or `condense` call. A model whose roles must alternate gets the texts of a
 * message joined by newlines.
 */
const CLINE_INSTRUCTIONS = [
  '<explicit_instructions type="summarize_task">\n',
  '<explicit_instructions type="condense">\n',
];

function isClineSummary({ lastUser }: PromptTexts): boolean {
  return lastUser.some((text) =>
    CLINE_INSTRUCTIONS.some((opening) => text.startsWith(opening) || text.includes(`\n${opening}`)),
  );
}

/** Whether a request is one of these clients' compaction requests. */
export function isClientCompaction(texts: PromptTexts): boolean {
  return [
    isClaudeCodeCompaction,
    isCheckpointCompaction,
    isOpencodeCompaction,
    isRooCondense,
    isClineSummary,
  ].some((recognizes) => recognizes(texts));
}
