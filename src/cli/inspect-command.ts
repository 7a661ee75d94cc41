/**
 * `selfgc inspect <sessions.jsonl> [--session ID] [--json]`: a session's ledger.
 */
import { BadInputError, NotFoundError } from '../core/errors.js';
import { indexTranscript, type Ledger } from '../core/ledger.js';
import { loadSessions } from '../eval/load-sessions.js';
import { createTokenCounter } from '../tokenizers/create-token-counter.js';
import type { CliIo } from './cli-io.js';
import { formatTable } from './format-table.js';

export const INSPECT_HELP = `Usage: selfgc inspect <sessions.jsonl> [--session ID] [--json]
       selfgc inspect --store URL --session ID [--key-hash H] [--json]

Print the ledger of one recorded session: every object (system prompt, user requests,
tool results) with its id, kind, tokens (o200k_base), anchor count, references and state.
The file is read whole and checked line by line as eval and replay read it.

With --store, show a live proxy session from its store instead. The store holds no transcript:
what it shows is the session's commits (planner, trigger, operations, tokens before and after),
its objects' committed states (fold, mask, prune; the commit that set each) and the sidecar's
payload keys and sizes (never the payloads).

  --session ID   the session to show (default: the first in the file); with --store, the id
                 "selfgc sessions list" prints
  --store URL    sqlite:./selfgc.db, redis://..., postgres://...
  --key-hash H   with --store: ID is the client's session id under this key hash
  --json         print JSON instead of tables
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

/** The ids a file holds, the first few: what `--session` takes. */
function sessionIds(sessions: ReadonlyArray<{ id: string }>): string {
  const shown = sessions.slice(0, 5).map((session) => session.id);
  return `${shown.join(', ')}${sessions.length > shown.length ? ', …' : ''}`;
}

export function inspectCommand(
  io: CliIo,
  file: string,
  options: { session?: string; json?: boolean },
): number {
  // The reader of eval and replay: a file one of them refuses, inspect refuses the same way.
  const sessions = loadSessions([file], (message) => io.stderr(`${message}\n`));
  // An empty file is refused as eval and train refuse it.
  if (sessions.length === 0) throw new BadInputError(`no sessions in ${file}`);
  const found = options.session ? sessions.find((session) => session.id === options.session) : sessions[0];
  if (!found)
    throw new NotFoundError(
      `${file}: no session with id "${options.session}" (it holds ${sessions.length}: ${sessionIds(sessions)})`,
    );
  if (options.session === undefined && sessions.length > 1)
    io.stderr(
      `showing ${found.id}, the first of ${sessions.length} sessions (--session ID for another: ${sessionIds(sessions.slice(1))})\n`,
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
  io.stdout(formatTable(table));
  for (const warning of found.warnings)
    io.stderr(`warning: message ${warning.messageIndex ?? '-'}: ${warning.message}\n`);
  return 0;
}
