/**
 * `selfgc replay`: write one JSON line per cut (cut mode) or model call (session mode), in the
 * stable format other tools judge independently.
 */
import { createWriteStream, readFileSync } from 'node:fs';
import { toOpenAIChat } from '../adapters/openai-chat/convert-to-openai-chat.js';
import { BadInputError, parseJson } from '../core/errors.js';
import type { ViewItem } from '../core/project-view.js';
import { memoizeTokenCounter } from '../core/tokens.js';
import { loadSessions } from '../eval/load-sessions.js';
import { autoCuts, replayCuts } from '../eval/replay-cut.js';
import { baselinePolicy, governorPolicy, replaySession } from '../eval/replay-session.js';
import { strategyByName } from '../eval/strategies/registry.js';
import { createTokenCounter } from '../tokenizers/create-token-counter.js';
import type { CliIo } from './cli-io.js';

export const REPLAY_HELP = `Usage: selfgc replay <files...> --strategy NAME --emit out.jsonl [options]

Replay recorded sessions with one strategy and write one JSON line per cut or model call:
{"session","cut","strategy","prefixTokens","viewTokens","view","recoverable"}, where each view
item is an integer (original message i, unchanged) or an OpenAI chat message (changed/inserted).

  --strategy NAME     none, oldest-turn, tool-prune, tool-mask-prune, hybrid, clear-tool-uses,
                      last-5-observations, selfgc, oracle (upper bound: sees the continuation)
  --mode cut|session  cut: at cut points before assistant messages (default);
                      session: one model call per assistant message under --window
  --window N          context window for session mode (default 32000)
  --keep F|auto       keep share of prefix tokens in cut mode, 0..1 (default auto)
  --cuts auto|FILE    cut points: auto (4 per session) or a JSON file {sessionId: [indexes]}
  --emit FILE         where to write the JSON lines (required)
`;

export interface ReplayOptions {
  strategy: string;
  mode: 'cut' | 'session';
  window: number;
  keep: number | 'auto';
  cuts: string;
  emit: string;
}

function viewJson(items: readonly ViewItem[]): unknown[] {
  return items.flatMap((item): unknown[] =>
    item.changed ? toOpenAIChat([item.message]).messages : [item.source],
  );
}

function readCuts(file: string): Record<string, number[]> {
  const value = parseJson(readFileSync(file, 'utf8'), file);
  if (!value || typeof value !== 'object' || Array.isArray(value))
    throw new BadInputError(`${file}: expected an object {sessionId: [cut indexes]}`);
  for (const [id, cuts] of Object.entries(value)) {
    if (!Array.isArray(cuts) || !cuts.every((cut) => Number.isInteger(cut) && cut > 0))
      throw new BadInputError(`${file}: cuts of "${id}" must be positive integers`);
  }
  return value as Record<string, number[]>;
}

export async function replayCommand(io: CliIo, files: string[], options: ReplayOptions): Promise<number> {
  const strategy = strategyByName(options.strategy);
  const explicitCuts = options.cuts === 'auto' ? undefined : readCuts(options.cuts);
  const sessions = loadSessions(files);
  const counter = memoizeTokenCounter(createTokenCounter('o200k_base'));
  const out = createWriteStream(options.emit);
  let lines = 0;
  const write = (record: object) => {
    out.write(`${JSON.stringify(record)}\n`);
    lines += 1;
  };
  for (const [index, session] of sessions.entries()) {
    if (options.mode === 'cut') {
      const cuts = explicitCuts ? (explicitCuts[session.id] ?? []) : autoCuts(session.messages);
      for (const record of replayCuts({
        sessionId: session.id,
        messages: session.messages,
        cuts,
        strategies: [strategy],
        keeps: [options.keep],
        tokenCounter: counter,
      })) {
        write({
          session: record.session,
          cut: record.cut,
          strategy: record.strategy,
          prefixTokens: record.prefixTokens,
          viewTokens: record.viewTokens,
          view: viewJson(record.output.items),
          recoverable: record.recoverable,
        });
      }
    } else {
      const policy =
        options.strategy === 'selfgc'
          ? governorPolicy('selfgc', options.window, counter, 'aware')
          : baselinePolicy(strategy, options.window, false);
      for (const record of await replaySession({
        sessionId: session.id,
        messages: session.messages,
        policy,
        tokenCounter: counter,
      })) {
        write({
          session: record.session,
          cut: record.cut,
          strategy: record.strategy,
          prefixTokens: record.prefixTokens,
          viewTokens: record.viewTokens,
          view: viewJson(record.items),
          recoverable: record.recoverable,
        });
      }
    }
    io.progress(index + 1, sessions.length, 'sessions');
  }
  await new Promise<void>((resolve, reject) =>
    out.end((error?: Error | null) => (error ? reject(error) : resolve())),
  );
  io.stderr(`wrote ${lines} lines to ${options.emit}\n`);
  return 0;
}
