/**
 * `selfgc replay`: write one JSON line per cut (cut mode) or model call (session mode), in the
 * stable format other tools judge independently.
 */
import { readFileSync } from 'node:fs';
import { toOpenAIChat } from '../adapters/openai-chat/convert-to-openai-chat.js';
import { BadInputError, parseJson } from '../core/errors.js';
import type { ViewItem } from '../core/project-view.js';
import { memoizeTokenCounter } from '../core/tokens.js';
import type { Message, Warning } from '../core/transcript.js';
import { sessionPolicies } from '../eval/evaluate-sessions.js';
import { endpointContext, type LlmEndpoint } from '../eval/llm-endpoint.js';
import { loadSessions } from '../eval/load-sessions.js';
import { autoCuts, replayableCuts, replayCuts } from '../eval/replay-cut.js';
import { type CallRecord, replaySession } from '../eval/replay-session.js';
import { strategyByName } from '../eval/strategies/registry.js';
import { plannerFallbackOf } from '../eval/strategies/selfgc-llm-strategy.js';
import { createTokenCounter } from '../tokenizers/create-token-counter.js';
import { checkOutputPaths } from './cli-args.js';
import type { CliIo } from './cli-io.js';
import { LLM_FLAGS_HELP } from './llm-flags.js';
import { openOutputStream } from './output-file.js';

export const REPLAY_HELP = `Usage: selfgc replay <files...> --strategy NAME --emit out.jsonl [options]

Replay recorded sessions with one strategy and write one JSON line per cut or model call:
{"session","cut","strategy","prefixTokens","viewTokens","view","recoverable"}, where each view
item is an integer (original message i, unchanged) or an OpenAI chat message (changed/inserted).

  --strategy NAME     none, oldest-turn, tool-prune, tool-mask-prune, hybrid, clear-tool-uses,
                      last-5-observations, selfgc, oracle (upper bound: sees the continuation);
                      selfgc-paper (selfgc under the paper's commit policy, in session mode);
                      selfgc-llm (the LLM planner) and selfgc-hints (selfgc with the LLM's
                      hints) need --llm-url and --llm-model
  --mode cut|session  cut: at cut points before assistant messages (default);
                      session: one model call per assistant message under --window
  --window N          context window, session mode only (default 32000)
  --keep F|auto       keep share of prefix tokens, cut mode only: a share in (0, 1] or auto
                      (default auto)
  --cuts auto|FILE    cut mode only; cut points: auto (4 per session) or a JSON file {sessionId: [indexes]},
                      a cut i seeing messages 0..i-1; sessions not in the input and cuts with
                      no assistant message at or after them are named on stderr and skipped
  --emit FILE         where to write the JSON lines (required)

${LLM_FLAGS_HELP}`;

export interface ReplayOptions {
  strategy: string;
  mode: 'cut' | 'session';
  window: number;
  keep: number | 'auto';
  cuts: string;
  emit: string;
  /** The endpoint of `selfgc-llm`. */
  llm?: LlmEndpoint;
}

/** The fields a cut or call record shares with the emitted line. */
type EmittedRecord = Pick<
  CallRecord,
  'session' | 'cut' | 'strategy' | 'prefixTokens' | 'viewTokens' | 'recoverable'
>;

function viewJson(items: readonly ViewItem[]): unknown[] {
  return items.flatMap((item): unknown[] =>
    item.changed ? toOpenAIChat([item.message]).messages : [item.source],
  );
}

function readCuts(file: string): Record<string, number[]> {
  let text: string;
  try {
    text = readFileSync(file, 'utf8');
  } catch (error) {
    const code = (error as NodeJS.ErrnoException).code;
    throw new BadInputError(
      `--cuts ${file}: ${code === 'ENOENT' ? 'no such file' : `cannot read (${code ?? String(error)})`}`,
    );
  }
  const value = parseJson(text, file);
  if (!value || typeof value !== 'object' || Array.isArray(value))
    throw new BadInputError(`${file}: expected an object {sessionId: [cut indexes]}`);
  for (const [id, cuts] of Object.entries(value)) {
    if (!Array.isArray(cuts) || !cuts.every((cut) => Number.isInteger(cut) && cut > 0))
      throw new BadInputError(`${file}: cuts of "${id}" must be positive integers`);
  }
  return value as Record<string, number[]>;
}

/**
 * What of a cuts file replay cannot use: sessions not in the input, cuts past a session's end or
 * with no assistant message after them. Refused when nothing is left, said on stderr otherwise.
 */
function checkCuts(
  io: CliIo,
  file: string,
  cuts: Record<string, number[]>,
  sessions: ReadonlyArray<{ id: string; messages: readonly Message[] }>,
): void {
  const byId = new Map(sessions.map((session) => [session.id, session]));
  const skipped: string[] = [];
  let replayable = 0;
  for (const [id, wanted] of Object.entries(cuts)) {
    const session = byId.get(id);
    if (session === undefined) {
      skipped.push(`session "${id}" is not in the input`);
      continue;
    }
    const usable = new Set(replayableCuts(session.messages, wanted));
    replayable += usable.size;
    const unusable = [...new Set(wanted)].filter((cut) => !usable.has(cut));
    if (unusable.length > 0)
      skipped.push(
        `session "${id}" (${session.messages.length} messages) has no assistant message at or after cut ${unusable.join(', ')}`,
      );
  }
  if (replayable === 0)
    throw new BadInputError(
      `--cuts ${file}: no cut to replay${skipped.length > 0 ? `: ${skipped.join('; ')}` : ''}`,
    );
  for (const reason of skipped) io.stderr(`--cuts ${file}: skipped: ${reason}\n`);
}

export async function replayCommand(io: CliIo, files: string[], options: ReplayOptions): Promise<number> {
  checkOutputPaths([['--emit', options.emit]], options.cuts === 'auto' ? files : [...files, options.cuts]);
  const context = endpointContext(options.llm, io.env ?? {});
  const strategy = strategyByName(options.strategy, context);
  const explicitCuts = options.cuts === 'auto' ? undefined : readCuts(options.cuts);
  const sessions = loadSessions(files, (message) => io.stderr(`${message}\n`));
  if (explicitCuts !== undefined && options.mode === 'cut')
    checkCuts(io, options.cuts, explicitCuts, sessions);
  const counter = memoizeTokenCounter(createTokenCounter('o200k_base'));
  const sessionPolicy = () => sessionPolicies(options.strategy, options.window, counter, context)[0];
  if (options.mode === 'session' && !sessionPolicy())
    throw new BadInputError(`${options.strategy} runs in cut mode only (--mode cut)`);
  const output = openOutputStream(options.emit, '--emit');
  const out = output.stream;
  // A write that fails (disk full, file removed) stops the replay at the next session.
  let writeError: Error | undefined;
  out.on('error', (error) => {
    writeError ??= error;
  });
  const failedWrite = () =>
    new BadInputError(`--emit: cannot write ${options.emit} (${writeError?.message})`, { cause: writeError });
  let lines = 0;
  const write = (record: object) => {
    out.write(`${JSON.stringify(record)}\n`);
    lines += 1;
  };
  const fallbacks: string[] = [];
  // One line of the stable format per cut or call; a planner fallback is noted for the summary.
  const emit = (
    record: EmittedRecord,
    items: readonly ViewItem[],
    warnings: readonly Warning[] | undefined,
  ) => {
    const fallback = plannerFallbackOf(warnings);
    if (fallback) fallbacks.push(fallback.message);
    write({
      session: record.session,
      cut: record.cut,
      strategy: record.strategy,
      prefixTokens: record.prefixTokens,
      viewTokens: record.viewTokens,
      view: viewJson(items),
      recoverable: record.recoverable,
    });
  };
  // 'close' follows both a finished and a failed stream.
  const closed = () =>
    new Promise<void>((resolve) => {
      if (out.closed) return resolve();
      out.once('close', () => resolve());
      out.end();
    });
  try {
    for (const [index, session] of sessions.entries()) {
      if (options.mode === 'cut') {
        const cuts = explicitCuts ? (explicitCuts[session.id] ?? []) : autoCuts(session.messages);
        for (const record of await replayCuts({
          sessionId: session.id,
          messages: session.messages,
          cuts,
          strategies: [strategy],
          keeps: [options.keep],
          tokenCounter: counter,
        })) {
          emit(record, record.output.items, record.output.warnings);
        }
      } else {
        for (const record of await replaySession({
          sessionId: session.id,
          messages: session.messages,
          // A fresh policy per session: a governor's state belongs to its session.
          policy: sessionPolicy()!,
          tokenCounter: counter,
        })) {
          emit(record, record.items, record.warnings);
        }
      }
      io.progress(index + 1, sessions.length, 'sessions');
      // Backpressure: lines wait on disk, not in memory; a failed write shows up here.
      if (out.writableNeedDrain && writeError === undefined) {
        await new Promise<void>((resolve) => {
          const done = () => {
            out.off('drain', done);
            out.off('error', done);
            resolve();
          };
          out.on('drain', done);
          out.on('error', done);
        });
      }
      if (writeError !== undefined) break;
    }
  } catch (error) {
    await closed();
    output.discard();
    throw error;
  }
  await closed();
  if (writeError !== undefined) {
    output.discard();
    throw failedWrite();
  }
  output.commit();
  io.stderr(`wrote ${lines} lines to ${options.emit}\n`);
  if (fallbacks.length > 0)
    io.stderr(
      `${options.strategy}: the llm planner failed ${fallbacks.length} time(s) and the embedded planner stood in (last: ${fallbacks.at(-1)})\n`,
    );
  return 0;
}
