/**
 * zstd decoding in a thread of its own, one body at a time, each under a deadline. fzstd (pure
 * JavaScript; Node 20's zlib has no zstd) checks little of what a frame says, and a crafted block
 * of a few bytes can keep it busy for seconds: on the proxy's thread that would stall every
 * request. Here such a body costs the thread, which is stopped and started anew for the next
 * body in the queue. Output is counted as it is decoded and the decoding stops past the limit.
 */
import { createRequire } from 'node:module';
import { Worker } from 'node:worker_threads';
import type { ZstdFrames } from './content-coding.js';

/**
 * How long the thread may take over one body: 250 ms, 1 ms per KiB of it and per 64 KiB it
 * declares, and, decoded block by block, half a millisecond per block that holds something and
 * 1 ms per 4 MiB of window shifted; at most two seconds. That is some three times what fzstd
 * takes for a real body (a block costs it a buffer and a shift, a declared size a copy), so only a
 * crafted body runs it out, and a small crafted one costs the thread little.
 */
function deadlineMs({ bytes, frames }: Job): number {
  const workMs = frames.inPlace
    ? frames.declared / (64 * 1024)
    : frames.blocks / 2 + frames.shifted / (4 * 1024 * 1024);
  return Math.min(2_000, 250 + bytes.byteLength / 1024 + workMs);
}
/** How long a body may wait for the thread: behind a body that runs out its deadline, it still decodes. */
const WAIT_MS = 4_000;
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
parentPort.postMessage({ ready: true });
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
  if (parts.length === 1) return parts[0];
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
    let out = decode(bytes, limit, inPlace);
    // Bytes that own their buffer, copied here rather than on the proxy's thread.
    if (out.byteOffset !== 0 || out.byteLength !== out.buffer.byteLength) out = out.slice();
    parentPort.postMessage({ buffer: out.buffer, length: out.byteLength }, [out.buffer]);
  } catch (error) {
    // fzstd's checks throw errors and RangeErrors alike; only a failed allocation is not the body's.
    const outcome =
      error instanceof TooLarge ? 'too-large' : /allocation failed/i.test(String(error)) ? 'failed' : 'invalid';
    parentPort.postMessage({ outcome });
  }
});
`;

/** What became of a body: its bytes, or why not. `timed-out` and `failed` pass it on undecoded. */
export type ZstdOutcome = Uint8Array | 'too-large' | 'invalid' | 'timed-out' | 'failed';

interface Job {
  bytes: Uint8Array;
  limit: number;
  frames: ZstdFrames;
  settle(outcome: ZstdOutcome): void;
}

interface Reply {
  ready?: true;
  buffer?: ArrayBuffer;
  length?: number;
  outcome?: 'too-large' | 'invalid' | 'failed';
}

/** How long a new thread may take to start (load fzstd) before its first body fails. */
const STARTUP_MS = 5_000;

const queue: Job[] = [];
let worker: Worker | undefined;
/** Whether `worker` has started: a body's deadline runs from when the thread takes it. */
let ready = false;
let busy: { job: Job; timer?: NodeJS.Timeout } | undefined;
let idle: NodeJS.Timeout | undefined;

function startWorker(): Worker | undefined {
  try {
    const fzstd = createRequire(import.meta.url).resolve('fzstd');
    const started = new Worker(THREAD_CODE, {
      eval: true,
      workerData: { fzstd },
      // Its heap (a part object per block; not the bytes, which readZstdFrames and the limit
      // bound) is capped: a thread that runs out fails the body it held.
      resourceLimits: { maxOldGenerationSizeMb: 256 },
    });
    started.on('message', (reply: Reply) => {
      if (started !== worker) return;
      if (reply.ready === true) {
        ready = true;
        if (busy !== undefined) send();
        return;
      }
      finish(
        reply.outcome ??
          (reply.buffer === undefined ? 'invalid' : new Uint8Array(reply.buffer, 0, reply.length)),
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
  if (worker === undefined) {
    ready = false;
    worker = startWorker();
  }
  if (worker === undefined) {
    job.settle('failed');
    next();
    return;
  }
  worker.ref();
  busy = { job };
  if (ready) send();
  else busy.timer = stopAfter(worker, STARTUP_MS, 'failed');
}

/** Stop `running` after `ms` unless the body it holds is done by then, which fails with `outcome`. */
function stopAfter(running: Worker, ms: number, outcome: ZstdOutcome): NodeJS.Timeout {
  return setTimeout(() => {
    // Stuck: the thread is stopped, and the next body gets a new one.
    if (worker === running) worker = undefined;
    void running.terminate();
    finish(outcome);
  }, ms);
}

/** Hand the busy body to the started thread, under its deadline. */
function send(): void {
  const running = worker!;
  const held = busy!;
  const { job } = held;
  clearTimeout(held.timer);
  held.timer = stopAfter(running, deadlineMs(job), 'timed-out');
  try {
    // A copy of its own moves to the thread: the caller's bytes go upstream as they came if this fails.
    const bytes = new Uint8Array(job.bytes);
    running.postMessage({ bytes, limit: job.limit, inPlace: job.frames.inPlace }, [bytes.buffer]);
  } catch {
    finish('failed');
  }
}

/** Stop the idle thread; the next body starts another. */
function stopThread(): void {
  const running = worker;
  worker = undefined;
  if (running !== undefined) void running.terminate();
}

/**
 * `bytes` decoded (whole zstd frames, as `readZstdFrames` read them: in place when all of them
 * declare their size, at most `limit` in all), or why not. A body that waits for the thread longer
 * than `WAIT_MS` is `timed-out` too.
 */
export function decodeZstdInThread(
  bytes: Uint8Array,
  limit: number,
  frames: ZstdFrames,
): Promise<ZstdOutcome> {
  return new Promise<ZstdOutcome>((resolve) => {
    const job: Job = { bytes, limit, frames, settle: resolve };
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
