import { describe, expect, it } from 'vitest';
import { SelfGcError } from '../core/errors.js';
import { createFairQueue } from './fair-queue.js';
import { createWorkerScheduler } from './worker-scheduler.js';
import type { WorkerThread } from './worker-thread.js';

/** Threads that do nothing themselves: the jobs say what happens on them. */
function fakeThreads() {
  const started: Array<WorkerThread & { name: number; dead: boolean }> = [];
  const start = () => {
    const thread = {
      name: started.length,
      dead: false,
      ready: Promise.resolve(),
      call: async () => {
        throw new Error('not used');
      },
      post: () => undefined,
      exited: () => (thread.dead ? new SelfGcError('internal', 'exited') : undefined),
      terminate: async () => undefined,
    };
    started.push(thread);
    return thread;
  };
  return { started, start };
}

/** A promise and the functions that settle it. */
function gate() {
  let open: () => void = () => undefined;
  const opened = new Promise<void>((resolve) => {
    open = resolve;
  });
  return { opened, open };
}

const pause = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));
const never = new AbortController().signal;

describe('createFairQueue', () => {
  it('serves tenants in turn, each in arrival order', () => {
    const queue = createFairQueue<string>();
    for (const item of ['a1', 'a2', 'a3']) queue.push('a', item);
    queue.push('b', 'b1');
    queue.push('c', 'c1');
    queue.push('b', 'b2');
    const served: string[] = [];
    for (let turn = 0; turn < 10 && queue.size > 0; turn += 1) served.push(queue.next(() => true)!);
    expect(served).toEqual(['a1', 'b1', 'c1', 'a2', 'b2', 'a3']);
  });

  it('offers only each tenant’s oldest item, and takes items out wherever they wait', () => {
    const queue = createFairQueue<string>();
    queue.push('a', 'a1');
    queue.push('a', 'a2');
    queue.push('b', 'b1');
    expect(queue.next((item) => item === 'a2')).toBeUndefined();
    expect(queue.remove('a', 'a1')).toBe(true);
    expect(queue.remove('a', 'a1')).toBe(false);
    expect(queue.next((item) => item === 'a2')).toBe('a2');
    expect(queue.size).toBe(1);
  });
});

describe('createWorkerScheduler', () => {
  it('runs one job per worker, and a second tenant’s job before the rest of a first tenant’s burst', async () => {
    const threads = fakeThreads();
    const scheduler = createWorkerScheduler({ threads: 1, start: threads.start });
    const order: string[] = [];
    const first = gate();
    let running = 0;
    let most = 0;
    const job = (tenant: string, name: string, wait?: Promise<void>) =>
      scheduler.schedule({
        tenant,
        affinity: tenant,
        signal: never,
        run: async () => {
          running += 1;
          most = Math.max(most, running);
          order.push(name);
          await wait;
          running -= 1;
          return name;
        },
      });
    const all = [
      job('a', 'a1', first.opened),
      job('a', 'a2'),
      job('a', 'a3'),
      job('a', 'a4'),
      job('b', 'b1'),
    ];
    expect(scheduler.waiting()).toBe(4);
    first.open();
    expect((await Promise.all(all)).map((outcome) => ('value' in outcome ? outcome.value : 'late'))).toEqual([
      'a1',
      'a2',
      'a3',
      'a4',
      'b1',
    ]);
    expect(order).toEqual(['a1', 'a2', 'b1', 'a3', 'a4']);
    expect(most).toBe(1);
    await scheduler.close();
  });

  it('gives up on a job past its budget, waiting or running; the worker stays taken until it answers', async () => {
    const threads = fakeThreads();
    const scheduler = createWorkerScheduler({ threads: 1, start: threads.start });
    const slow = gate();
    const ran: string[] = [];
    const running = scheduler.schedule({
      tenant: 'big',
      affinity: 'big',
      budgetMs: 30,
      signal: never,
      run: async () => {
        ran.push('big');
        await slow.opened;
        return 'big';
      },
    });
    const waiting = scheduler.schedule({
      tenant: 'small',
      affinity: 'small',
      budgetMs: 30,
      signal: never,
      run: async () => {
        ran.push('small');
        return 'small';
      },
    });
    expect(await running).toEqual({ late: true });
    expect(await waiting).toEqual({ late: true });
    expect(scheduler.waiting()).toBe(0);
    slow.open();
    await pause(5);
    expect(ran).toEqual(['big']);
    const after = await scheduler.schedule({
      tenant: 'small',
      affinity: 'small',
      signal: never,
      run: async () => 'ok',
    });
    expect(after).toEqual({ value: 'ok' });
    await scheduler.close();
  });

  it('prefers the worker of a job’s affinity, and lets a free one take it after waiting', async () => {
    const threads = fakeThreads();
    const scheduler = createWorkerScheduler({ threads: 2, start: threads.start, stealAfterMs: 20 });
    const held = gate();
    const on = (affinity: string, wait?: Promise<void>) =>
      scheduler.schedule({
        tenant: affinity,
        affinity,
        signal: never,
        run: async (thread) => {
          await wait;
          return (thread as unknown as { name: number }).name;
        },
      });
    const first = await on('session-x');
    const preferred = 'value' in first ? first.value : -1;
    expect(await on('session-x')).toEqual({ value: preferred });
    const holding = on('session-x', held.opened);
    const started = performance.now();
    const moved = await on('session-x');
    expect(moved).toEqual({ value: 1 - preferred });
    expect(performance.now() - started).toBeGreaterThanOrEqual(15);
    held.open();
    expect(await holding).toEqual({ value: preferred });
    await scheduler.close();
  });

  it('replaces a worker that died, and drops a job whose request went away', async () => {
    const threads = fakeThreads();
    const scheduler = createWorkerScheduler({ threads: 1, start: threads.start });
    threads.started[0]!.dead = true;
    const outcome = await scheduler.schedule({
      tenant: 't',
      affinity: 't',
      signal: never,
      run: async (thread) => (thread as unknown as { name: number }).name,
    });
    expect(outcome).toEqual({ value: 1 });
    const held = gate();
    const busy = scheduler.schedule({ tenant: 't', affinity: 't', signal: never, run: () => held.opened });
    const gone = new AbortController();
    let ran = false;
    const dropped = scheduler.schedule({
      tenant: 'u',
      affinity: 'u',
      signal: gone.signal,
      run: async () => {
        ran = true;
      },
    });
    gone.abort(new Error('client went away'));
    await expect(dropped).rejects.toThrow('client went away');
    held.open();
    await busy;
    expect(ran).toBe(false);
    await scheduler.close();
  });
});
