/**
 * zstd decoding in a thread of its own, under a deadline. fzstd (pure JavaScript; Node 20's zlib
 * has no zstd) checks little of what a frame says, and a crafted block of a few bytes can keep it
 * busy for seconds: on the proxy's thread that would stall every request. Here a body that takes
 * longer than `DEADLINE_MS` costs the thread, which is stopped and started anew for the next.
 * The bytes move to the thread and back without a copy.
 */
import { Worker } from 'node:worker_threads';

/**
 * How long one body may take. A real body at the size limit decodes in well under a second;
 * only a crafted one comes near.
 */
const DEADLINE_MS = 2_000;

/** The thread's code: fzstd's one-shot decoder behind a message port. */
const THREAD_CODE = `
const { parentPort } = require('node:worker_threads');
import(${JSON.stringify(import.meta.resolve('fzstd'))}).then(({ decompress }) => {
  parentPort.on('message', ({ id, bytes }) => {
    try {
      const out = decompress(bytes);
      parentPort.postMessage({ id, buffer: out.buffer, offset: out.byteOffset, length: out.byteLength }, [out.buffer]);
    } catch {
      parentPort.postMessage({ id, invalid: true });
    }
  });
});
`;

interface Reply {
  id: number;
  buffer?: ArrayBuffer;
  offset?: number;
  length?: number;
  invalid?: true;
}

type Outcome = Uint8Array | 'invalid' | 'timed-out';

let thread: { worker: Worker; pending: Map<number, (outcome: Outcome) => void> } | undefined;
let nextId = 0;

function currentThread(): NonNullable<typeof thread> {
  if (thread !== undefined) return thread;
  const worker = new Worker(THREAD_CODE, { eval: true });
  // The proxy may exit while the thread idles.
  worker.unref();
  const pending = new Map<number, (outcome: Outcome) => void>();
  const started = { worker, pending };
  worker.on('message', (reply: Reply) => {
    const settle = pending.get(reply.id);
    pending.delete(reply.id);
    if (reply.invalid === true || reply.buffer === undefined) settle?.('invalid');
    else settle?.(new Uint8Array(reply.buffer, reply.offset, reply.length));
  });
  const stop = () => {
    if (thread === started) thread = undefined;
    for (const settle of pending.values()) settle('timed-out');
    pending.clear();
  };
  worker.on('error', stop);
  worker.on('exit', stop);
  thread = started;
  return started;
}

/**
 * `bytes` decoded (whole zstd frames, already read by `readZstdFrames`), `invalid` when they are
 * not valid zstd, or `timed-out` when decoding outlasted the deadline (or the thread died).
 */
export function decodeZstdInThread(bytes: Uint8Array): Promise<Outcome> {
  const { worker, pending } = currentThread();
  const id = nextId++;
  // A copy the thread may keep: the caller's bytes go upstream as they came if this fails.
  const copy = bytes.slice();
  return new Promise<Outcome>((resolve) => {
    const timer = setTimeout(() => {
      // The thread is stuck on a body: the next body gets a new one; this one is stopped, and
      // whatever else it held times out with it.
      pending.delete(id);
      resolve('timed-out');
      if (thread?.worker === worker) thread = undefined;
      void worker.terminate();
    }, DEADLINE_MS);
    timer.unref();
    pending.set(id, (outcome) => {
      clearTimeout(timer);
      resolve(outcome);
    });
    worker.ref();
    worker.postMessage({ id, bytes: copy }, [copy.buffer]);
  }).finally(() => {
    if (pending.size === 0) worker.unref();
  });
}
