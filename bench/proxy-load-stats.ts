/** Percentiles and the table the proxy load script prints. */

export function percentile(values: readonly number[], fraction: number): number {
  if (values.length === 0) return Number.NaN;
  const sorted = [...values].sort((left, right) => left - right);
  const rank = Math.min(sorted.length - 1, Math.max(0, Math.ceil(fraction * sorted.length) - 1));
  return sorted[rank]!;
}

export interface LatencySummary {
  count: number;
  p50: number;
  p90: number;
  p99: number;
  max: number;
}

export function summarize(values: readonly number[]): LatencySummary {
  return {
    count: values.length,
    p50: percentile(values, 0.5),
    p90: percentile(values, 0.9),
    p99: percentile(values, 0.99),
    max: values.length === 0 ? Number.NaN : Math.max(...values),
  };
}

export interface Check {
  name: string;
  ok: boolean;
  detail: string;
}

const milliseconds = (value: number) => (Number.isFinite(value) ? `${value.toFixed(2)} ms` : 'n/a');

export function renderTable(rows: ReadonlyArray<readonly [string, string]>): string {
  const width = Math.max(...rows.map(([label]) => label.length));
  return rows.map(([label, value]) => `${label.padEnd(width)}  ${value}`).join('\n');
}

export function latencyRows(label: string, summary: LatencySummary): Array<[string, string]> {
  return [
    [`${label} p50`, milliseconds(summary.p50)],
    [`${label} p90`, milliseconds(summary.p90)],
    [`${label} p99`, milliseconds(summary.p99)],
    [`${label} max`, milliseconds(summary.max)],
  ];
}

export function checkRows(checks: readonly Check[]): Array<[string, string]> {
  return checks.map((check) => [`check: ${check.name}`, `${check.ok ? 'PASS' : 'FAIL'}  ${check.detail}`]);
}
