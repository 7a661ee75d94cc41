/**
 * Reading recorded sessions (one JSON session per line, messages in OpenAI chat shape) into
 * canonical transcripts. Errors name the file and line.
 */
import { createHash } from 'node:crypto';
import { readFileSync } from 'node:fs';
import { basename } from 'node:path';
import { fromOpenAIChat } from '../adapters/openai-chat/convert-from-openai-chat.js';
import { parseSessionLine } from '../adapters/sessions-jsonl.js';
import { BadInputError, NotFoundError } from '../core/errors.js';
import type { Message, Warning } from '../core/transcript.js';

export interface RecordedSession {
  id: string;
  file: string;
  line: number;
  messages: Message[];
  warnings: Warning[];
}

/** A session's family: the name of the file it came from, without `.jsonl`. */
export function familyOf(session: Pick<RecordedSession, 'file'>): string {
  return basename(session.file).replace(/\.jsonl$/, '');
}

/** Leave-one-family-out holds each family out of a fit on the others: it needs two at least. */
export function requireTwoFamilies(sessions: ReadonlyArray<Pick<RecordedSession, 'file'>>): void {
  if (new Set(sessions.map(familyOf)).size < 2)
    throw new BadInputError(
      '--leave-one-family-out needs sessions from at least two files: each file is a family, and one is held out at a time',
    );
}

/** The lines of a session file, or a clear error when it cannot be read. */
export function readSessionLines(file: string): string[] {
  let content: string;
  try {
    content = readFileSync(file, 'utf8');
  } catch (error) {
    const code = (error as NodeJS.ErrnoException).code;
    if (code === 'ENOENT') throw new NotFoundError(`${file}: no such file`);
    if (code === 'EISDIR') throw new BadInputError(`${file}: is a directory, not a sessions .jsonl file`);
    throw new BadInputError(`${file}: cannot read (${code ?? String(error)})`);
  }
  // A byte order mark (editors on Windows write one) is not part of the first line's JSON.
  return content.replace(/^\uFEFF/, '').split('\n');
}

/** Parse one line into a canonical session. */
export function parseRecordedSession(file: string, line: string, lineNumber: number): RecordedSession {
  let session: ReturnType<typeof parseSessionLine>;
  try {
    session = parseSessionLine(line, lineNumber);
  } catch (error) {
    if (error instanceof BadInputError)
      throw new BadInputError(`${file}: ${error.message}`, { cause: error });
    throw error;
  }
  try {
    const { messages, warnings } = fromOpenAIChat(session.messages);
    return { id: session.id, file, line: lineNumber, messages, warnings };
  } catch (error) {
    if (error instanceof BadInputError)
      throw new BadInputError(`${file}:${lineNumber} (session ${session.id}): ${error.message}`, {
        cause: error,
      });
    throw error;
  }
}

/**
 * Every session of the given files, in file order. Blank lines are skipped. Results are counted
 * by session, and a session counted twice narrows every interval it is in: a session met again
 * word for word (a file given twice, a session copied into another file) counts once, and another
 * session under an id already taken is kept under that id qualified by where it stands. `note`
 * hears of each. A malformed line is refused after the whole file is read, with the others of
 * that file counted, so that one run shows everything to fix.
 */
export function loadSessions(
  files: readonly string[],
  note: (message: string) => void = () => undefined,
): RecordedSession[] {
  const sessions: RecordedSession[] = [];
  /** Each id read, with where it stands and its line's digest (a line may be megabytes). */
  const seen = new Map<string, { session: RecordedSession; digest: string }>();
  for (const file of files) {
    const refused: Array<{ line: number; error: BadInputError }> = [];
    /** Of this file: the sessions met again word for word, by the file that held them first. */
    const copies = new Map<string, number>();
    readSessionLines(file).forEach((line, index) => {
      if (line.trim().length === 0) return;
      let session: RecordedSession;
      try {
        session = parseRecordedSession(file, line, index + 1);
      } catch (error) {
        if (!(error instanceof BadInputError)) throw error;
        refused.push({ line: index + 1, error });
        return;
      }
      const digest = createHash('sha256').update(line.trim()).digest('hex');
      const first = seen.get(session.id);
      if (first !== undefined) {
        if (first.digest === digest) {
          copies.set(first.session.file, (copies.get(first.session.file) ?? 0) + 1);
          return;
        }
        const id = `${session.id} (${file} line ${session.line})`;
        note(
          `session "${session.id}" in ${file} line ${session.line} is another than the one in ${first.session.file} line ${first.session.line}: read as "${id}"`,
        );
        session = { ...session, id };
      }
      seen.set(session.id, { session, digest });
      sessions.push(session);
    });
    for (const [from, count] of copies)
      note(
        `${file}: ${count} session${count === 1 ? '' : 's'} met again word for word, first read in ${from}: counted once`,
      );
    if (refused.length > 0) throw malformedLines(refused);
  }
  return sessions;
}

/** The first malformed line's error, and how many more there are, by line. */
function malformedLines(refused: ReadonlyArray<{ line: number; error: BadInputError }>): BadInputError {
  const [first, ...others] = refused;
  if (others.length === 0) return first!.error;
  const shown = others.slice(0, 10).map((entry) => entry.line);
  return new BadInputError(
    `${first!.error.message}; and ${others.length} more malformed line${others.length === 1 ? '' : 's'} (${shown.join(', ')}${others.length > shown.length ? ', …' : ''})`,
    { cause: first!.error },
  );
}
