import { Worker } from 'node:worker_threads';
import { describe, expect, it } from 'vitest';
import { LANE_NICENESS, lowerThreadPriority } from './thread-priority.js';

describe('lowerThreadPriority', () => {
  it.runIf(process.platform === 'linux')(
    "lowers a worker thread's priority and leaves the process's own thread as it was",
    async () => {
      const url = new URL('./thread-priority.ts', import.meta.url).href;
      const worker = new Worker(
        `import('tsx/esm/api').then(({ register }) => { register(); return import(${JSON.stringify(url)}); })
           .then(({ lowerThreadPriority }) => require('node:worker_threads').parentPort.postMessage(lowerThreadPriority(${LANE_NICENESS})));`,
        { eval: true },
      );
      const priority = await new Promise((resolve, reject) => {
        worker.once('message', resolve);
        worker.once('error', reject);
      });
      await worker.terminate();
      expect(priority).toBe(LANE_NICENESS);
      const { getPriority } = await import('node:os');
      expect(getPriority()).toBe(0);
    },
  );

  it.skipIf(process.platform === 'linux')(
    'answers undefined where the platform has no per-thread priority',
    () => {
      expect(lowerThreadPriority(LANE_NICENESS)).toBeUndefined();
    },
  );
});
