/**
 * One governance worker thread, started and spoken to: requests out, replies matched back by id.
 * A thread that dies answers everything it still owed with a `lost` failure, so no caller waits
 * for it; whoever holds it starts another.
 */
import { Worker } from 'node:worker_threads';
import { SelfGcError } from '../core/errors.js';
import type { GovernanceWorkerData, WorkerReply, WorkerRequest } from './governance-workers.js';

export interface WorkerThread {
  /** Settles once the worker is ready (rejects when it could not start). */
  readonly ready: Promise<void>;
  /** Send a request (its id from `message(id)`) and wait for the reply. */
  call(message: (id: number) => WorkerRequest, transfer?: ArrayBuffer[]): Promise<WorkerReply>;
  /** Send a message that gets no reply (an abort). */
  post(message: WorkerRequest): void;
  /** Why the thread is gone, once it is. */
  exited(): SelfGcError | undefined;
  terminate(): Promise<void>;
}

/**
 * The worker's module next to this one: `.js` when built; `.ts` when this runs from source under
 * tsx (tests, scripts), whose loader a worker does not inherit on Node 20, so it registers it.
 */
function newWorker(data: GovernanceWorkerData): Worker {
  if (!import.meta.url.endsWith('.ts')) {
    return new Worker(new URL('./governance-worker.js', import.meta.url), { workerData: data });
  }
  const entry = new URL('./governance-worker.ts', import.meta.url).href;
  const tsx = import.meta.resolve('tsx/esm/api');
  const code = `import(${JSON.stringify(tsx)}).then(({ register }) => { register(); return import(${JSON.stringify(entry)}); });`;
  return new Worker(code, { eval: true, workerData: data });
}

export function startWorkerThread(data: GovernanceWorkerData): WorkerThread {
  const worker = newWorker(data);
  worker.unref();
  const pending = new Map<number, (reply: WorkerReply) => void>();
  let exited: SelfGcError | undefined;
  const ready = new Promise<void>((resolve, reject) => {
    pending.set(0, (reply) =>
      reply.ok ? resolve() : reject(new SelfGcError(reply.error.code, reply.error.message)),
    );
  });
  // Awaited by every call; a failed start is reported there, not as an unhandled rejection.
  ready.catch(() => undefined);
  const failAll = (error: SelfGcError) => {
    exited ??= error;
    for (const [id, resolve] of pending) {
      resolve({ id, ok: false, error: { code: error.code, message: error.message }, lost: true });
    }
    pending.clear();
  };
  worker.on('message', (reply: WorkerReply) => {
    const resolve = pending.get(reply.id);
    pending.delete(reply.id);
    resolve?.(reply);
  });
  worker.on('error', (error) =>
    failAll(new SelfGcError('internal', `governance worker failed: ${error.message}`)),
  );
  worker.on('exit', (code) => failAll(new SelfGcError('internal', `governance worker exited (${code})`)));
  let nextId = 1;
  return {
    ready,
    async call(message, transfer = []) {
      await ready;
      const request = message(nextId++);
      if (exited !== undefined) {
        return {
          id: request.id,
          ok: false,
          error: { code: exited.code, message: exited.message },
          lost: true,
        };
      }
      return new Promise((resolve) => {
        pending.set(request.id, resolve);
        worker.postMessage(request, transfer);
      });
    },
    post(message) {
      if (exited === undefined) worker.postMessage(message);
    },
    exited: () => exited,
    async terminate() {
      await worker.terminate();
    },
  };
}
