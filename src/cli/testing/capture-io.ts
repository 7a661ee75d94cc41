/**
 * A `CliIo` for tests that keeps what a command writes: its standard output and error, and how
 * many progress ticks it reported.
 */
import type { CliIo } from '../cli-io.js';

export function captureIo(env?: CliIo['env']) {
  const out: string[] = [];
  const err: string[] = [];
  let progress = 0;
  const io: CliIo = {
    stdout: (text) => out.push(text),
    stderr: (text) => err.push(text),
    progress: () => {
      progress += 1;
    },
    cwd: process.cwd(),
    argv0: 'selfgc',
    ...(env ? { env } : {}),
  };
  return { io, out: () => out.join(''), err: () => err.join(''), progress: () => progress };
}
