/**
 * WAL checkpoints for a SQLite store, on a thread of their own. By default SQLite checkpoints
 * inside the write that takes the WAL past 1,000 pages: that write copies every page back into
 * the database file and syncs both files, several milliseconds (tens on a busy disk) that a proxy
 * request would wait for. Here a thread with its own connection runs a PASSIVE checkpoint every
 * `intervalMs`, which waits for no reader or writer and is never waited for, so writers only
 * append to the WAL. Writers keep a high automatic threshold as a safety net, should this thread
 * fall behind or stop.
 *
 * Durability does not change: a commit is in the WAL before it returns, whether or not it has
 * been copied back yet, and SQLite replays the WAL after a crash.
 */
import { createRequire } from 'node:module';
import { Worker } from 'node:worker_threads';

export interface Checkpointer {
  close(): Promise<void>;
}

/** Pages in the WAL past which a writer checkpoints itself anyway (about 40 MB). */
export const BACKGROUND_WAL_LIMIT_PAGES = 10_000;

// CommonJS, so that it runs the same from source (tsx) and built, without a loader.
const CHECKPOINTER_SOURCE = `
const { parentPort, workerData } = require('node:worker_threads');
const Database = require(workerData.driver);
const db = new Database(workerData.path, { fileMustExist: true });
const checkpoint = () => {
  try {
    db.pragma('wal_checkpoint(PASSIVE)');
  } catch {
    // Busy or gone: the next round, or the writers' own threshold, takes it.
  }
};
const timer = setInterval(checkpoint, workerData.intervalMs);
parentPort.on('message', () => {
  clearInterval(timer);
  checkpoint();
  db.close();
  parentPort.close();
});
`;

export function startCheckpointer(path: string, intervalMs = 1_000): Checkpointer {
  const driver = createRequire(import.meta.url).resolve('better-sqlite3');
  const worker = new Worker(CHECKPOINTER_SOURCE, { eval: true, workerData: { path, driver, intervalMs } });
  // Never the reason a process stays up; a failed thread leaves the checkpoints to the writers.
  worker.unref();
  worker.on('error', () => undefined);
  const exited = new Promise<void>((resolve) => worker.once('exit', () => resolve()));
  return {
    async close() {
      worker.postMessage('close');
      await exited;
    },
  };
}
