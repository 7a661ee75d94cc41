/**
 * Worker-thread entry of `runEval`: loads its share of sessions and evaluates them. The API key
 * of an LLM endpoint is read here, from the environment variable the options name.
 */
import { parentPort, workerData } from 'node:worker_threads';
import { type EvaluateOptions, evaluateSessions } from './evaluate-sessions.js';
import { parseRecordedSession, readSessionLines } from './load-sessions.js';

interface WorkerTask {
  /** Sessions to evaluate, by file and 1-based line, with the id the reader gave each. */
  sessions: Array<{ file: string; line: number; id: string }>;
  options: EvaluateOptions;
}

const task = workerData as WorkerTask;
const lines = new Map<string, string[]>();
const sessions = task.sessions.map(({ file, line, id }) => {
  if (!lines.has(file)) lines.set(file, readSessionLines(file));
  // The id as loadSessions read it: a second session under a taken id is qualified there.
  return { ...parseRecordedSession(file, lines.get(file)![line - 1]!, line), id };
});
const result = await evaluateSessions(
  sessions,
  task.options,
  () => parentPort?.postMessage({ type: 'progress' }),
  process.env,
);
parentPort?.postMessage({ type: 'done', ...result });
