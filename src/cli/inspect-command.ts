/**
 * `selfgc inspect <sessions.jsonl> [--session ID] [--json]`: a session's ledger.
 */
import { NotFoundError } from '../core/errors.js';
import { indexTranscript, type Ledger } from '../core/ledger.js';
import { parseRecordedSession, readSessionLines } from '../eval/load-sessions.js';
import { createTokenCounter } from '../tokenizers/create-token-counter.js';
import type { CliIo } from './cli-io.js';

export const INSPECT_HELP = `Usage: selfgc inspect <sessions.jsonl> [--session ID] [--json]

Print the ledger of one recorded session: every object (system prompt, user requests,
tool results) with its id, kind, tokens (o200k_base), anchor count, references and state.

  --session ID   the session to show (default: the first in the file)
  --json         print the ledger as JSON instead of a table
`;

function ledgerRows(ledger: Ledger) {
  return ledger.objects.map((object) => ({
    id: object.id,
    kind: object.kind,
    message: object.messageIndex,
    tokens: object.tokens,
    anchors: object.anchors.length,
    references: object.references.length,
    state: object.pinned ? `pinned (${object.pinReason})` : object.isError ? 'live, error' : 'live',
  }));
}

export function inspectCommand(
  io: CliIo,
  file: string,
  options: { session?: string; json?: boolean },
): number {
  const lines = readSessionLines(file);
  let found: ReturnType<typeof parseRecordedSession> | undefined;
  for (const [index, line] of lines.entries()) {
    if (line.trim().length === 0) continue;
    // Cheap filter before parsing the whole line.
    if (options.session && !line.includes(JSON.stringify(options.session).slice(1, -1))) continue;
    const session = parseRecordedSession(file, line, index + 1);
    if (!options.session || session.id === options.session) {
      found = session;
      break;
    }
  }
  if (!found)
    throw new NotFoundError(
      options.session ? `${file}: no session with id "${options.session}"` : `${file}: no sessions`,
    );
  const ledger = indexTranscript(found.messages, { tokenCounter: createTokenCounter('o200k_base') });
  const rows = ledgerRows(ledger);
  if (options.json) {
    io.stdout(
      `${JSON.stringify({ session: found.id, messages: ledger.messages.length, tokens: ledger.totalTokens, warnings: found.warnings, objects: rows }, null, 2)}\n`,
    );
    return 0;
  }
  io.stdout(
    `session ${found.id}: ${ledger.messages.length} messages, ${ledger.totalTokens} tokens, ${rows.length} objects\n`,
  );
  const header = ['id', 'kind', 'msg', 'tokens', 'anchors', 'refs', 'state'];
  const table = [
    header,
    ...rows.map((row) => [
      row.id,
      row.kind,
      String(row.message),
      String(row.tokens),
      String(row.anchors),
      String(row.references),
      row.state,
    ]),
  ];
  const widths = header.map((_, column) => Math.max(...table.map((row) => row[column]!.length)));
  for (const row of table)
    io.stdout(
      `${row
        .map((cell, column) => cell.padEnd(widths[column]!))
        .join('  ')
        .trimEnd()}\n`,
    );
  for (const warning of found.warnings)
    io.stderr(`warning: message ${warning.messageIndex ?? '-'}: ${warning.message}\n`);
  return 0;
}
