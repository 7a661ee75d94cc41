/**
 * Recorded sessions in the shared JSONL format: one session per line,
 * `{ id, source?, license?, meta?, messages }`, with `messages` in the OpenAI Chat Completions
 * shape (see `openai-chat/`). Pure: the caller reads the file and passes lines in.
 */
import { z } from 'zod';
import { BadInputError, parseJson } from '../core/errors.js';
import { OpenAIChatMessage } from './openai-chat/openai-chat-api.js';
import { describeIssues } from './validate-messages.js';

/** Informational metadata of a recorded session; every field optional, others allowed. */
export interface SessionMeta {
  /** The agent scaffold, e.g. `mini-swe-agent 1.15.0`, `Claude Code`. */
  system?: string;
  model?: string;
  task?: string;
  exit_status?: string;
  reward?: number;
  trajectory_format?: string;
  version?: string;
  /** Message indices where the agent auto-compacted its context (Claude Code). */
  compact_boundaries_before_message?: number[];
  [key: string]: unknown;
}

export interface RecordedSessionLine {
  /** Unique session id (`owner/repo:path`, with a `#...` suffix when one file holds several). */
  id: string;
  /** Where it came from: `owner/repo@commit:path`. */
  source?: string;
  /** Licence of the source repository. */
  license?: string;
  meta?: SessionMeta;
  messages: OpenAIChatMessage[];
}

const SessionLine = z.object({
  id: z.string().min(1),
  source: z.string().optional(),
  license: z.string().optional(),
  meta: z.record(z.string(), z.unknown()).optional(),
  messages: z.array(z.unknown()),
});

const ONE_SESSION_PER_LINE =
  'a sessions file holds one {"id", "messages": [...]} object per line (JSON lines)';

/**
 * Parse one line (1-based `lineNumber`, used in errors) of a sessions file.
 *
 * @throws BadInputError naming the line for malformed JSON, a missing `id` or `messages`, or a
 *   message that is not a valid OpenAI Chat message (the message index is named too).
 */
export function parseSessionLine(line: string, lineNumber: number): RecordedSessionLine {
  const where = `line ${lineNumber}`;
  if (line.trim() === '') throw new BadInputError(`${where}: empty line`);
  // The usual wrong files: pretty-printed JSON, a JSON array of sessions, a file of messages.
  if (line.trim() === '{' || line.trim() === '[')
    throw new BadInputError(
      `${where}: "${line.trim()}" alone: ${ONE_SESSION_PER_LINE} (is it pretty-printed JSON?)`,
    );
  const value = parseJson(line, where);
  if (Array.isArray(value)) throw new BadInputError(`${where}: a JSON array: ${ONE_SESSION_PER_LINE}`);
  if (value !== null && typeof value === 'object' && 'role' in value && !('messages' in value))
    throw new BadInputError(`${where}: a message, not a session: ${ONE_SESSION_PER_LINE}`);
  const session = SessionLine.safeParse(value);
  if (!session.success) throw new BadInputError(`${where}: ${describeIssues(session.error.issues)}`);
  const { id, source, license, meta, messages } = session.data;
  messages.forEach((message, messageIndex) => {
    const result = OpenAIChatMessage.safeParse(message);
    if (!result.success) {
      const reason = describeIssues(result.error.issues);
      throw new BadInputError(`${where} (session ${id}), message ${messageIndex}: ${reason}`, {
        messageIndex,
      });
    }
  });
  return {
    id,
    ...(source !== undefined ? { source } : {}),
    ...(license !== undefined ? { license } : {}),
    ...(meta !== undefined ? { meta: meta as SessionMeta } : {}),
    messages: messages as OpenAIChatMessage[],
  };
}

/** Every session of a whole sessions file's text; blank lines are skipped, lines numbered from 1. */
export function parseSessionsJsonl(text: string): RecordedSessionLine[] {
  return text
    .split('\n')
    .flatMap((line, index) => (line.trim() === '' ? [] : [parseSessionLine(line, index + 1)]));
}
