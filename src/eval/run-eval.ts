/**
 * Spread an evaluation over worker threads, one share of sessions each, and aggregate.
 */
import { availableParallelism } from 'node:os';
import { Worker } from 'node:worker_threads';
import { SelfGcError } from '../core/errors.js';
import { buildSummary, type CallOutcome, type CutOutcome } from './aggregate.js';
import type { EvalSummary } from './eval-summary.js';
import { type EvaluateOptions, sampleJudgeCuts } from './evaluate-sessions.js';
import type { RecordedSession } from './load-sessions.js';
import { CONTINUATION_STEPS } from './replay-cut.js';

export interface RunEvalOptions extends EvaluateOptions {
  inputs: string[];
  command: string;
  workers?: number;
  onProgress?: (done: number, total: number) => void;
  now?: () => Date;
  /**
   * With `llm`: ask the LLM judge about this many cuts per strategy, at each strategy's own
   * budget (`sampleJudgeCuts` chooses them). Each costs one model call per strategy.
   */
  judgeSample?: number;
  /**
   * With `judgeSample`: of the judged cuts, this many per strategy also get the A/B calibration
   * (three model calls each where the view changed the prefix, and one per cut). Default none.
   */
  judgePairs?: number;
}

function startWorker(share: RecordedSession[], options: EvaluateOptions, onProgress: () => void) {
  const source = new URL(import.meta.url);
  const typescript = source.pathname.endsWith('.ts');
  const entry = new URL(typescript ? './eval-worker.ts' : './eval-worker.js', source);
  // Under tsx (tests, development) the worker registers the TypeScript loader first.
  const bootstrap = () =>
    `import { register } from ${JSON.stringify(import.meta.resolve('tsx/esm/api'))}; register(); await import(${JSON.stringify(entry.href)});`;
  const worker = new Worker(
    typescript ? new URL(`data:text/javascript,${encodeURIComponent(bootstrap())}`) : entry,
    {
      // The LLM endpoint travels as settings; the worker reads the key from its environment.
      workerData: { sessions: share.map(({ file, line, id }) => ({ file, line, id })), options },
    },
  );
  return new Promise<{ cuts: CutOutcome[]; calls: CallOutcome[] }>((resolve, reject) => {
    worker.on('message', (message: { type: string; cuts?: CutOutcome[]; calls?: CallOutcome[] }) => {
      if (message.type === 'progress') onProgress();
      else resolve({ cuts: message.cuts ?? [], calls: message.calls ?? [] });
    });
    worker.on('error', (error) =>
      reject(new SelfGcError('internal', `evaluation worker failed: ${error.message}`, { cause: error })),
    );
    worker.on('exit', (code) => {
      if (code !== 0) reject(new SelfGcError('internal', `evaluation worker exited with code ${code}`));
    });
  });
}

export async function runEval(sessions: RecordedSession[], options: RunEvalOptions): Promise<EvalSummary> {
  const workers = Math.max(1, Math.min(options.workers ?? availableParallelism(), sessions.length));
  // Longest first, dealt round-robin, so the shares take about the same time.
  const ordered = [...sessions].sort((a, b) => b.messages.length - a.messages.length);
  const shares: RecordedSession[][] = Array.from({ length: workers }, () => []);
  for (const [index, session] of ordered.entries()) shares[index % workers]!.push(session);
  let done = 0;
  const tick = () => options.onProgress?.(++done, sessions.length);
  const {
    inputs,
    command,
    workers: _workers,
    onProgress: _progress,
    now,
    judgeSample,
    judgePairs,
    ...rest
  } = options;
  // Chosen here, over all sessions, so the sample does not depend on how they are shared out.
  const judging = options.llm !== undefined && judgeSample !== undefined;
  const evaluate: EvaluateOptions = judging
    ? { ...rest, ...sampleJudgeCuts(sessions, rest, judgeSample, judgePairs ?? 0) }
    : rest;
  const results = await Promise.all(shares.map((share) => startWorker(share, evaluate, tick)));
  return buildSummary({
    inputs,
    command,
    sessions: sessions.length,
    cuts: results.flatMap((result) => result.cuts),
    calls: results.flatMap((result) => result.calls),
    window: options.window,
    now: (now ?? (() => new Date()))(),
    parameters: {
      strategies: [...options.strategies],
      modes: [...options.modes],
      window: options.window,
      cutsPerSession: options.cutsPerSession,
      sweep: [...options.sweep],
      continuationSteps: CONTINUATION_STEPS,
    },
    ...(options.llm
      ? {
          llm: {
            provider: options.llm.provider,
            model: options.llm.model,
            ...(options.strategies.includes('selfgc-llm')
              ? { plannerMode: options.llm.plannerMode ?? 'fork' }
              : {}),
            ...(judging ? { judgeSample } : {}),
            ...(judging && judgePairs ? { judgePairs } : {}),
          },
        }
      : {}),
  });
}
