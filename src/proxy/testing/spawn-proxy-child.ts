/**
 * Start `run-proxy-child.ts` in its own process and wait until it listens. Used by the crash test
 * and the load script.
 */
import { type ChildProcess, spawn } from 'node:child_process';
import { createInterface } from 'node:readline';

const ROOT = new URL('../../../', import.meta.url).pathname;

export interface ProxyChild {
  process: ChildProcess;
  url: string;
  /** Settles when the process has exited (registered at spawn, so no exit is missed). */
  exited: Promise<unknown>;
  /** JSON log lines the child printed so far. */
  logs: Array<Record<string, unknown>>;
}

export interface ProxyChildOptions {
  /** A store URL: `sqlite:<file>`, `memory:`, `redis://…`, `postgres://…`. */
  storeUrl: string;
  upstreamUrl: string;
  /** The window of every model, or `model` for each model's own. Default 2000. */
  window?: number | 'model';
  /** Count with each provider's BPE encoding, as `selfgc proxy` does. */
  tokenizer?: 'per-provider';
  quiet?: boolean;
  /** Forward every request untouched (no governor). */
  ungoverned?: boolean;
  /** Governance worker threads; 0 governs on the proxy's thread. Default 1. */
  threads?: number;
  /** Extra node flags for the child, e.g. `--cpu-prof` (the load script's `--cpu-prof-dir`). */
  nodeArgs?: readonly string[];
  /** Governance's time budget in ms, its wait for a worker included (default: the proxy's). */
  timeBudgetMs?: number;
}

export function spawnProxyChild(options: ProxyChildOptions): Promise<ProxyChild> {
  const args = [...(options.nodeArgs ?? []), '--import', 'tsx', 'src/proxy/testing/run-proxy-child.ts'];
  args.push('--store', options.storeUrl);
  args.push('--upstream', options.upstreamUrl, '--window', String(options.window ?? 2000));
  if (options.quiet === true) args.push('--quiet');
  if (options.ungoverned === true) args.push('--ungoverned');
  if (options.threads !== undefined) args.push('--threads', String(options.threads));
  if (options.tokenizer !== undefined) args.push('--tokenizer', options.tokenizer);
  if (options.timeBudgetMs !== undefined) args.push('--time-budget', String(options.timeBudgetMs));
  const child = spawn(process.execPath, args, { cwd: ROOT, stdio: ['ignore', 'pipe', 'pipe'] });
  const exited = new Promise((resolve) => child.once('exit', resolve));
  const logs: Array<Record<string, unknown>> = [];
  let stderr = '';
  // Decoded as a stream: a character split between two reads stays whole.
  child.stderr?.setEncoding('utf8');
  child.stderr?.on('data', (chunk: string) => {
    stderr += chunk;
  });
  return new Promise((resolve, reject) => {
    createInterface({ input: child.stdout! }).on('line', (line) => {
      if (!line.startsWith('{')) return; // not ours (for example `--trace-gc` output)
      const parsed = JSON.parse(line) as Record<string, unknown>;
      if (typeof parsed.ready === 'string') resolve({ process: child, url: parsed.ready, exited, logs });
      else logs.push(parsed);
    });
    child.once('exit', (code) => reject(new Error(`proxy child exited (${String(code)}): ${stderr}`)));
  });
}
