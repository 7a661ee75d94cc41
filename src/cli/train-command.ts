/**
 * `selfgc train`: fit the valuator's model on recorded sessions (a user's own agent traces), and
 * check how it holds on families it was not fitted to.
 */
import { BadInputError } from '../core/errors.js';
import { loadSessions, requireTwoFamilies } from '../eval/load-sessions.js';
import {
  collectExamples,
  DEFAULT_HORIZON,
  fitEntryModel,
  leaveOneFamilyOut,
} from '../eval/train-valuator.js';
import { checkOutputPaths } from './cli-args.js';
import type { CliIo } from './cli-io.js';
import { writeOutputFile } from './output-file.js';

export const TRAIN_HELP = `Usage: selfgc train <files...> --out FILE [options]

Fit the valuator's model on recorded sessions (one JSON session per line, OpenAI chat messages):
at sampled calls, every entry a fold index could list from older messages is an example,
labelled by whether the next assistant messages used it. The model scores entries against all
others and, fitted within messages, orders the entries of one message (which an index lists
first, and which names a pruned request's tombstone keeps). Writes the model as JSON for
\`selfgc eval --model FILE\`, \`selfgc proxy --model FILE\` or createGovernor({ entryModel }).

  --out FILE                  where to write the model (required)
  --calls-per-session N       calls sampled per session (default 16)
  --horizon N                 an entry is labelled used when one of the next N assistant messages
                              uses it (default ${DEFAULT_HORIZON}: a fold's index stands for many
                              calls after the one that folded it)
  --leave-one-family-out      also fit once without each family (each input file is a family;
                              two files at least) and print its AUC held out next to its AUC in the full model,
                              over all its entries and within its messages
`;

export interface TrainOptions {
  out: string;
  callsPerSession: number;
  horizon: number;
  leaveOneFamilyOut: boolean;
}

const auc = (value: number) => (Number.isNaN(value) ? '  n/a' : value.toFixed(3));

export function trainCommand(io: CliIo, files: string[], options: TrainOptions): number {
  if (files.length === 0) throw new BadInputError('train needs at least one sessions .jsonl file');
  checkOutputPaths([['--out', options.out]], files);
  const sessions = loadSessions(files, (message) => io.stderr(`${message}\n`));
  if (sessions.length === 0) throw new BadInputError(`no sessions in ${files.join(', ')}`);
  if (options.leaveOneFamilyOut) requireTwoFamilies(sessions);
  io.stderr(`collecting examples from ${sessions.length} sessions\n`);
  const set = collectExamples(
    sessions,
    { callsPerSession: options.callsPerSession, horizon: options.horizon },
    (done) => io.progress(done, sessions.length, 'sessions'),
  );
  const model = fitEntryModel(set);
  writeOutputFile(options.out, `${JSON.stringify(model, null, 2)}\n`, '--out');
  const trained = model.trainedOn as { examples: number; used: number; auc: number; messageAuc: number };
  io.stdout(
    `model: ${options.out}\n  ${set.sessions} sessions, ${trained.examples} examples (${trained.used} used), training AUC ${auc(trained.auc)}, within messages ${auc(trained.messageAuc)}\n`,
  );
  if (options.leaveOneFamilyOut) {
    const rows = leaveOneFamilyOut(set);
    const width = Math.max(20, ...rows.map((row) => row.family.length));
    io.stdout(
      `  ${'leave one family out'.padEnd(width)}   examples   AUC held out   AUC in family   within messages: held out   in family\n`,
    );
    for (const row of rows)
      io.stdout(
        `  ${row.family.padEnd(width)}   ${String(row.examples).padStart(8)}   ${auc(row.heldOutAuc).padStart(12)}   ${auc(row.inFamilyAuc).padStart(13)}   ${auc(row.heldOutMessageAuc).padStart(25)}   ${auc(row.inFamilyMessageAuc).padStart(9)}\n`,
      );
  }
  return 0;
}
