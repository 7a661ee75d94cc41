/**
 * What it costs to start using the package, measured on the built package (`dist/`, from
 * `npm run build`) in fresh node processes: importing each entry by its package name, running
 * `selfgc --help`, and starting one governance worker (thread, imports, store, and with a
 * tokenizer its table). Median over runs of wall and CPU time (CPU of every thread of the child).
 */
import { execFileSync } from 'node:child_process';
import { existsSync, mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { formatTable, ms } from './ledger-report.js';
import { median } from './ledger-stats.js';

export interface StartupTime {
  name: string;
  wallMs: number;
  /** Undefined where only the parent's clock sees the child (a whole process). */
  cpuMs: number | undefined;
}

interface Sample {
  wallMs: number;
  cpuMs: number;
}

// Plain \`-e\` scripts (an async function, not --input-type=module): worker threads inherit the
// flags of the process, and --input-type would fail theirs.
const MEASURE_IMPORT = `(async () => {
const cpu = process.cpuUsage();
const started = performance.now();
await import(process.argv[1]);
const wallMs = performance.now() - started;
const { user, system } = process.cpuUsage(cpu);
process.stdout.write(JSON.stringify({ wallMs, cpuMs: (user + system) / 1000 }));
})();`;

const MEASURE_WORKER = `(async () => {
const { createGovernanceWorkers } = await import('self-gc/proxy');
const [storeUrl, tokenizer] = process.argv.slice(1);
const cpu = process.cpuUsage();
const started = performance.now();
const workers = createGovernanceWorkers({ storeUrl, threads: 1, ...(tokenizer ? { tokenizer } : {}) });
await workers.ready();
const wallMs = performance.now() - started;
const { user, system } = process.cpuUsage(cpu);
await workers.close();
process.stdout.write(JSON.stringify({ wallMs, cpuMs: (user + system) / 1000 }));
})();`;

function runScript(root: string, script: string, args: readonly string[]): Sample {
  const output = execFileSync(process.execPath, ['-e', script, ...args], {
    cwd: root,
    encoding: 'utf8',
  });
  return JSON.parse(output) as Sample;
}

function timeProcess(root: string, args: readonly string[]): number {
  const started = performance.now();
  execFileSync(process.execPath, args, { cwd: root, stdio: 'ignore' });
  return performance.now() - started;
}

function medianOf(name: string, samples: readonly Sample[]): StartupTime {
  return {
    name,
    wallMs: median(samples.map((sample) => sample.wallMs)),
    cpuMs: median(samples.map((sample) => sample.cpuMs)),
  };
}

const repeat = <T>(runs: number, body: () => T): T[] => Array.from({ length: runs }, body);

/** The package's import entries, by the names an application imports them with. */
function entryNames(root: string): string[] {
  const manifest = JSON.parse(readFileSync(join(root, 'package.json'), 'utf8')) as {
    name: string;
    exports: Record<string, unknown>;
  };
  return Object.entries(manifest.exports)
    .filter(([, target]) => typeof target === 'object' && target !== null && 'import' in target)
    .map(([path]) => (path === '.' ? manifest.name : `${manifest.name}/${path.slice(2)}`));
}

/** Start-up times of the built package under `root`, or undefined when it is not built. */
export function measureStartup(root: string, runs: number): StartupTime[] | undefined {
  if (!existsSync(join(root, 'dist/index.js'))) return undefined;
  const results = entryNames(root).map((entry) =>
    medianOf(
      `import('${entry}')`,
      repeat(runs, () => runScript(root, MEASURE_IMPORT, [entry])),
    ),
  );
  const folder = mkdtempSync(join(tmpdir(), 'selfgc-startup-'));
  try {
    const storeUrl = `sqlite:${join(folder, 'startup.db')}`;
    results.push(
      medianOf(
        'governance worker ready',
        repeat(runs, () => runScript(root, MEASURE_WORKER, [storeUrl])),
      ),
      medianOf(
        'governance worker ready, o200k_base',
        repeat(runs, () => runScript(root, MEASURE_WORKER, [storeUrl, 'o200k_base'])),
      ),
    );
  } finally {
    rmSync(folder, { recursive: true, force: true });
  }
  for (const [name, args] of [
    ['node -e "" (process)', ['-e', '']],
    ['selfgc --help (process)', ['bin/selfgc.js', '--help']],
  ] as const) {
    results.push({ name, wallMs: median(repeat(runs, () => timeProcess(root, args))), cpuMs: undefined });
  }
  return results;
}

export function formatStartupTable(results: readonly StartupTime[]): string {
  return formatTable(
    ['start-up', 'wall ms', 'cpu ms'],
    results.map((result) => [
      result.name,
      ms(result.wallMs),
      result.cpuMs === undefined ? '' : ms(result.cpuMs),
    ]),
  );
}
