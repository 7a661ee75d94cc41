/**
 * zstd decoding in threads of its own, one body a thread at a time, each under a deadline. fzstd
 * (pure JavaScript; Node 20's zlib has no zstd) checks little of what a frame says, and a crafted
 * block of a few bytes can keep it busy for seconds: on the proxy's thread that would stall every
 * request. Here such a body costs its thread, which is stopped and started anew for the next
 * body. Bodies wait in turn by tenant, so one client's crafted bodies delay another's by one body
 * at most. Output is counted as it is decoded and the decoding stops past the limit.
 */
import { createRequire } from 'node:module';
import { Worker } from 'node:worker_threads';
import type { ZstdFrames } from './content-coding.js';
import { createFairQueue } from './fair-queue.js';

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

/**
 * Threads that decode at once: a body that runs out its deadline holds one of them, and the
 * bodies of other clients go on in the others.
 */
export const ZSTD_THREADS = 2;

/** One thread and the body it holds. */
interface Lane {
  worker: Worker | undefined;
  /** Whether `worker` has started: a body's deadline runs from when the thread takes it. */
  ready: boolean;
  busy: { job: Job; timer?: NodeJS.Timeout } | undefined;
  idle: NodeJS.Timeout | undefined;
}

/** Bodies waiting, by tenant, served in turn: one client's bodies never hold another's back. */
const queue = createFairQueue<Job>();
const lanes: Lane[] = Array.from({ length: ZSTD_THREADS }, () => ({
  worker: undefined,
  ready: false,
  busy: undefined,
  idle: undefined,
}));

function startWorker(lane: Lane): Worker | undefined {
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
      if (started !== lane.worker) return;
      if (reply.ready === true) {
        lane.ready = true;
        if (lane.busy !== undefined) send(lane);
        return;
      }
      finish(
        lane,
        reply.outcome ??
          (reply.buffer === undefined ? 'invalid' : new Uint8Array(reply.buffer, 0, reply.length)),
      );
    });
    // A thread that dies (out of memory, stopped) fails the body it held; the next starts another.
    const gone = () => {
      if (started !== lane.worker) return;
      lane.worker = undefined;
      finish(lane, 'failed');
    };
    started.on('error', gone);
    started.on('exit', gone);
    return started;
  } catch {
    // No thread can start here (a permission model without workers): bodies pass on undecoded.
    return undefined;
  }
}

function finish(lane: Lane, outcome: ZstdOutcome): void {
  if (lane.busy === undefined) return;
  clearTimeout(lane.busy.timer);
  const { job } = lane.busy;
  lane.busy = undefined;
  job.settle(outcome);
  next();
}

/** Each free thread takes the next body in turn. */
function next(): void {
  for (const lane of lanes) {
    // A body the lane cannot take (no thread starts) fails, and the lane takes the next.
    while (lane.busy === undefined) {
      const job = queue.next(() => true);
      if (job === undefined) {
        rest(lane);
        break;
      }
      take(lane, job);
    }
  }
}

/** A thread with nothing to do lets the process exit, and stops after a while. */
function rest(lane: Lane): void {
  lane.worker?.unref();
  clearTimeout(lane.idle);
  lane.idle = setTimeout(() => stopThread(lane), IDLE_MS).unref();
}

function take(lane: Lane, job: Job): void {
  clearTimeout(lane.idle);
  if (lane.worker === undefined) {
    lane.ready = false;
    lane.worker = startWorker(lane);
  }
  if (lane.worker === undefined) {
    job.settle('failed');
    return;
  }
  lane.worker.ref();
  lane.busy = { job };
  if (lane.ready) send(lane);
  else lane.busy.timer = stopAfter(lane, lane.worker, STARTUP_MS, 'failed');
}

/** Stop `running` after `ms` unless the body it holds is done by then, which fails with `outcome`. */
function stopAfter(lane: Lane, running: Worker, ms: number, outcome: ZstdOutcome): NodeJS.Timeout {
  return setTimeout(() => {
    // Stuck: the thread is stopped, and the next body gets a new one.
    if (lane.worker === running) lane.worker = undefined;
    void running.terminate();
    finish(lane, outcome);
  }, ms);
}

/** Hand the lane's body to its started thread, under its deadline. */
function send(lane: Lane): void {
  const running = lane.worker!;
  const held = lane.busy!;
  const { job } = held;
  clearTimeout(held.timer);
  held.timer = stopAfter(lane, running, deadlineMs(job), 'timed-out');
  try {
    // A copy of its own moves to the thread: the caller's bytes go upstream as they came if this fails.
    const bytes = new Uint8Array(job.bytes);
    running.postMessage({ bytes, limit: job.limit, inPlace: job.frames.inPlace }, [bytes.buffer]);
  } catch {
    finish(lane, 'failed');
  }
}

/** Stop an idle thread; the next body starts another. */
function stopThread(lane: Lane): void {
  const running = lane.worker;
  lane.worker = undefined;
  if (running !== undefined) void running.terminate();
}

/**
 * `bytes` decoded (whole zstd frames, as `readZstdFrames` read them: in place when all of them
 * declare their size, at most `limit` in all), or why not. Bodies wait in turn by `tenant`; one
 * that waits for a thread longer than `WAIT_MS` is `timed-out` too.
 */
export function decodeZstdInThread(
  bytes: Uint8Array,
  limit: number,
  frames: ZstdFrames,
  tenant = '',
): Promise<ZstdOutcome> {
  return new Promise<ZstdOutcome>((resolve) => {
    const job: Job = { bytes, limit, frames, settle: resolve };
    const waiting = setTimeout(() => {
      if (queue.remove(tenant, job)) resolve('timed-out');
    }, WAIT_MS).unref();
    job.settle = (outcome) => {
      clearTimeout(waiting);
      resolve(outcome);
    };
    queue.push(tenant, job);
    next();
  });
}
