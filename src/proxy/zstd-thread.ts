/**
 * zstd decoding in a thread of its own, one body at a time, each under a deadline. fzstd (pure
 * JavaScript; Node 20's zlib has no zstd) checks little of what a frame says, and a crafted block
 * of a few bytes can keep it busy for seconds: on the proxy's thread that would stall every
 * request. Here such a body costs the thread, which is stopped and started anew for the next
 * body in the queue. Output is counted as it is decoded and the decoding stops past the limit.
 */
import { createRequire } from 'node:module';
import { Worker } from 'node:worker_threads';

/**
 * How long the thread may take over one body. A real body at the size limit decodes in well under
 * a second; only a crafted one comes near.
 */
const DEADLINE_MS = 2_000;
/** How long a body may wait for the thread: a body queued behind one that runs out its deadline still decodes. */
const WAIT_MS = 2 * DEADLINE_MS;
/** An idle thread is stopped after this long; the next body starts one. */
const IDLE_MS = 30_000;

/**
 * The thread's code: fzstd behind a message port. Frames that all declare their size are decoded
 * in one go, into buffers of those sizes; others block by block, counting the output, which stops
 * past the limit. Replies `too-large`, `invalid` (not zstd) or `failed` (out of memory, say).
 */
const THREAD_CODE = `
const { parentPort, workerData } = require('node:worker_threads');
const { Decompress, decompress } = require(workerData.fzstd);
class TooLarge extends Error {}
function decode(bytes, limit, inPlace) {
  if (inPlace) return decompress(bytes);
  const parts = [];
  let length = 0;
  const decoder = new Decompress((part) => {
    length += part.length;
    if (length > limit) throw new TooLarge();
    if (part.length > 0) parts.push(part);
  });
  decoder.push(bytes, true);
  const out = new Uint8Array(length);
  let offset = 0;
  for (const part of parts) {
    out.set(part, offset);
    offset += part.length;
  }
  return out;
}
parentPort.on('message', ({ bytes, limit, inPlace }) => {
  try {
    const out = decode(bytes, limit, inPlace);
    parentPort.postMessage({ buffer: out.buffer, offset: out.byteOffset, length: out.byteLength }, [out.buffer]);
  } catch (error) {
    const outcome = error instanceof TooLarge ? 'too-large' : error instanceof RangeError ? 'failed' : 'invalid';
    parentPort.postMessage({ outcome });
  }
});
`;

/** What became of a body: its bytes, or why not. `timed-out` and `failed` pass it on undecoded. */
export type ZstdOutcome = Uint8Array | 'too-large' | 'invalid' | 'timed-out' | 'failed';

interface Job {
  bytes: Uint8Array;
  limit: number;
  inPlace: boolean;
  settle(outcome: ZstdOutcome): void;
}

interface Reply {
  buffer?: ArrayBuffer;
  offset?: number;
  length?: number;
  outcome?: 'too-large' | 'invalid' | 'failed';
}

const queue: Job[] = [];
let worker: Worker | undefined;
let busy: { job: Job; timer: NodeJS.Timeout } | undefined;
let idle: NodeJS.Timeout | undefined;

function startWorker(): Worker | undefined {
  try {
    const fzstd = createRequire(import.meta.url).resolve('fzstd');
    const started = new Worker(THREAD_CODE, {
      eval: true,
      workerData: { fzstd },
      // What fzstd builds besides the bytes (a part per block) stays small.
      resourceLimits: { maxOldGenerationSizeMb: 256 },
    });
    started.on('message', (reply: Reply) => {
      if (started !== worker) return;
      finish(
        reply.outcome ??
          (reply.buffer === undefined ? 'invalid' : new Uint8Array(reply.buffer, reply.offset, reply.length)),
      );
    });
    // A thread that dies (out of memory, stopped) fails the body it held; the next starts another.
    const gone = () => {
      if (started !== worker) return;
      worker = undefined;
      finish('failed');
    };
    started.on('error', gone);
    started.on('exit', gone);
    return started;
  } catch {
    // No thread can start here (a permission model without workers): bodies pass on undecoded.
    return undefined;
  }
}

function finish(outcome: ZstdOutcome): void {
  if (busy === undefined) return;
  clearTimeout(busy.timer);
  const { job } = busy;
  busy = undefined;
  job.settle(outcome);
  next();
}

function next(): void {
  if (busy !== undefined) return;
  const job = queue.shift();
  if (job === undefined) {
    worker?.unref();
    clearTimeout(idle);
    idle = setTimeout(stopThread, IDLE_MS).unref();
    return;
  }
  clearTimeout(idle);
  worker ??= startWorker();
  if (worker === undefined) {
    job.settle('failed');
    next();
    return;
  }
  const running = worker;
  running.ref();
  const timer = setTimeout(() => {
    // Stuck on this body: the thread is stopped, and the next body gets a new one.
    worker = undefined;
    void running.terminate();
    finish('timed-out');
  }, DEADLINE_MS);
  busy = { job, timer };
  running.postMessage({ bytes: job.bytes, limit: job.limit, inPlace: job.inPlace }, [
    job.bytes.buffer as ArrayBuffer,
  ]);
}

/** Stop the thread (idle, or at shutdown); the next body starts another. */
export function stopThread(): void {
  const running = worker;
  worker = undefined;
  if (running !== undefined) void running.terminate();
}

/**
 * `bytes` decoded (whole zstd frames, already read by `readZstdFrames`; `inPlace` when all of them
 * declare their size, at most `limit` in all), or why not. A body that waits for the thread longer
 * than `WAIT_MS` is `timed-out` too.
 */
export function decodeZstdInThread(bytes: Uint8Array, limit: number, inPlace: boolean): Promise<ZstdOutcome> {
  return new Promise<ZstdOutcome>((resolve) => {
    // A copy the thread may keep: the caller's bytes go upstream as they came if this fails.
    const job: Job = { bytes: bytes.slice(), limit, inPlace, settle: resolve };
    const waiting = setTimeout(() => {
      const index = queue.indexOf(job);
      if (index < 0) return;
      queue.splice(index, 1);
      resolve('timed-out');
    }, WAIT_MS).unref();
    job.settle = (outcome) => {
      clearTimeout(waiting);
      resolve(outcome);
    };
    queue.push(job);
    next();
  });
}
