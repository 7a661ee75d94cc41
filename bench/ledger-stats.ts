/** Small statistics for the benchmark: percentiles and the median of repeated runs. */

/** The p-th percentile (0–100) by nearest rank; 0 for no samples. */
export function percentile(samples: readonly number[], p: number): number {
  if (samples.length === 0) return 0;
  const sorted = [...samples].sort((a, b) => a - b);
  const rank = Math.ceil((p / 100) * sorted.length);
  return sorted[Math.min(sorted.length, Math.max(1, rank)) - 1]!;
}

export const median = (samples: readonly number[]): number => percentile(samples, 50);

/** Element-wise median of equally long series: the median time of each call over the runs. */
export function medianSeries(runs: readonly (readonly number[])[]): number[] {
  const length = runs[0]?.length ?? 0;
  return Array.from({ length }, (_, index) => median(runs.map((run) => run[index] ?? 0)));
}

export interface Distribution {
  p50: number;
  p99: number;
  max: number;
  total: number;
}

export function distribution(samples: readonly number[]): Distribution {
  return {
    p50: percentile(samples, 50),
    p99: percentile(samples, 99),
    max: samples.reduce((high, value) => Math.max(high, value), 0),
    total: samples.reduce((sum, value) => sum + value, 0),
  };
}

/** The median, statistic by statistic, of the distributions of several runs. */
export function medianDistribution(runs: readonly Distribution[]): Distribution {
  return {
    p50: median(runs.map((run) => run.p50)),
    p99: median(runs.map((run) => run.p99)),
    max: median(runs.map((run) => run.max)),
    total: median(runs.map((run) => run.total)),
  };
}

/** Milliseconds a synchronous body takes. */
export function timeMs(body: () => void): number {
  const started = performance.now();
  body();
  return performance.now() - started;
}
