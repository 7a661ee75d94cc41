/**
 * The proxy's Prometheus metrics, kept in memory and rendered by hand in the text exposition
 * format (version 0.0.4). Every series carries the A/B arm, so savings can be read per arm.
 */
import type { Arm } from './ab-split.js';

export type Labels = Readonly<Record<string, string>> & { arm: Arm };

interface MetricDefinition {
  type: 'counter' | 'histogram';
  help: string;
  /** Series created at zero for both arms, so dashboards see them before traffic does. */
  seeded?: boolean;
}

export const METRICS = {
  selfgc_proxy_requests_total: { type: 'counter', help: 'Requests answered, by route and status.' },
  selfgc_proxy_input_tokens_total: {
    type: 'counter',
    help: 'Prompt tokens reported by the upstream, cached or not.',
    seeded: true,
  },
  selfgc_proxy_cached_input_tokens_total: {
    type: 'counter',
    help: 'Prompt tokens the upstream reported as read from its cache.',
    seeded: true,
  },
  selfgc_proxy_transcript_tokens_total: {
    type: 'counter',
    help: 'Tokens of the transcripts clients sent to governed routes (before governance).',
    seeded: true,
  },
  selfgc_proxy_tokens_saved_total: {
    type: 'counter',
    help: 'Transcript tokens minus view tokens, summed over governed requests.',
    seeded: true,
  },
  selfgc_proxy_commits_total: { type: 'counter', help: 'Commits made by the governor.', seeded: true },
  selfgc_proxy_errors_total: { type: 'counter', help: 'Errors, by Self-GC error code.' },
  selfgc_proxy_fail_open_total: {
    type: 'counter',
    help: 'Governed requests served ungoverned because governance failed.',
    seeded: true,
  },
  selfgc_proxy_stateless_lane_total: {
    type: 'counter',
    help: 'Governed requests sent through the stateless lane (reduced into the window without the store), by reason: store-unavailable, governance-failed, over-size, over-time.',
  },
  selfgc_proxy_client_compaction_signals_total: {
    type: 'counter',
    help: "Answers that reported the client's whole prompt instead of the governed one, so that the client compacts its conversation, by route.",
  },
  selfgc_proxy_divergences_total: {
    type: 'counter',
    help: 'Governed requests whose history was not an append to the one governed before (edited, truncated, or another conversation under the same session id): state past the divergence stopped applying.',
    seeded: true,
  },
  selfgc_proxy_passthrough_total: {
    type: 'counter',
    help: 'Governed-route requests forwarded ungoverned as the client sent them, by reason (unreadable-shape: the adapters cannot read the conversation).',
  },
  selfgc_proxy_recovery_calls_total: {
    type: 'counter',
    help: 'Internal expand/search_context calls answered by the proxy, by tool.',
  },
  selfgc_proxy_planner_seconds: { type: 'histogram', help: 'Time spent in the governor per request.' },
  selfgc_proxy_upstream_seconds: {
    type: 'histogram',
    help: 'Upstream latency until the response headers arrived, by route.',
  },
  selfgc_proxy_overhead_seconds: {
    type: 'histogram',
    help: 'Time the proxy added to a request: total until headers minus upstream time.',
  },
} as const satisfies Record<string, MetricDefinition>;

export type MetricName = keyof typeof METRICS;
type CounterName = {
  [K in MetricName]: (typeof METRICS)[K]['type'] extends 'counter' ? K : never;
}[MetricName];
type HistogramName = Exclude<MetricName, CounterName>;

export const LATENCY_BUCKETS = [
  0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60, 120, 300,
] as const;

interface HistogramSeries {
  buckets: number[];
  sum: number;
  count: number;
}

export interface ProxyMetrics {
  count(name: CounterName, labels: Labels, value?: number): void;
  observe(name: HistogramName, labels: Labels, seconds: number): void;
  /** All metrics in the Prometheus text format. */
  render(): string;
}

function escapeLabel(value: string): string {
  return value.replace(/\\/g, '\\\\').replace(/"/g, '\\"').replace(/\n/g, '\\n');
}

function labelText(labels: Readonly<Record<string, string>>): string {
  const pairs = Object.keys(labels)
    .sort()
    .map((key) => `${key}="${escapeLabel(labels[key] ?? '')}"`);
  return pairs.join(',');
}

function braces(inner: string): string {
  return inner === '' ? '' : `{${inner}}`;
}

function formatNumber(value: number): string {
  if (value === Number.POSITIVE_INFINITY) return '+Inf';
  return Number.isInteger(value) ? String(value) : String(Number(value.toPrecision(12)));
}

export function createProxyMetrics(): ProxyMetrics {
  const counters = new Map<MetricName, Map<string, number>>();
  const histograms = new Map<MetricName, Map<string, HistogramSeries>>();
  for (const [name, definition] of Object.entries(METRICS) as Array<[MetricName, MetricDefinition]>) {
    if (definition.type === 'counter') counters.set(name, new Map());
    else histograms.set(name, new Map());
    if (definition.seeded === true) {
      for (const arm of ['governed', 'control'] as const) counters.get(name)?.set(labelText({ arm }), 0);
    }
  }

  function renderHistogram(name: string, series: Map<string, HistogramSeries>): string[] {
    const lines: string[] = [];
    for (const [labels, values] of [...series].sort(([left], [right]) => left.localeCompare(right))) {
      const prefix = labels === '' ? '' : `${labels},`;
      LATENCY_BUCKETS.forEach((bound, index) => {
        lines.push(`${name}_bucket{${prefix}le="${formatNumber(bound)}"} ${values.buckets[index] ?? 0}`);
      });
      lines.push(`${name}_bucket{${prefix}le="+Inf"} ${values.count}`);
      lines.push(`${name}_sum${braces(labels)} ${formatNumber(values.sum)}`);
      lines.push(`${name}_count${braces(labels)} ${values.count}`);
    }
    return lines;
  }

  return {
    count(name, labels, value = 1) {
      const series = counters.get(name);
      if (series === undefined || !Number.isFinite(value) || value < 0) return;
      const key = labelText(labels);
      series.set(key, (series.get(key) ?? 0) + value);
    },
    observe(name, labels, seconds) {
      const series = histograms.get(name);
      if (series === undefined || !Number.isFinite(seconds)) return;
      const key = labelText(labels);
      const values = series.get(key) ?? { buckets: LATENCY_BUCKETS.map(() => 0), sum: 0, count: 0 };
      LATENCY_BUCKETS.forEach((bound, index) => {
        if (seconds <= bound) values.buckets[index] = (values.buckets[index] ?? 0) + 1;
      });
      values.sum += seconds;
      values.count += 1;
      series.set(key, values);
    },
    render() {
      const lines: string[] = [];
      for (const [name, definition] of Object.entries(METRICS) as Array<[MetricName, MetricDefinition]>) {
        lines.push(`# HELP ${name} ${definition.help}`, `# TYPE ${name} ${definition.type}`);
        const histogram = histograms.get(name);
        if (histogram !== undefined) {
          lines.push(...renderHistogram(name, histogram));
          continue;
        }
        const series = [...(counters.get(name) ?? [])].sort(([left], [right]) => left.localeCompare(right));
        for (const [labels, value] of series) lines.push(`${name}${braces(labels)} ${formatNumber(value)}`);
      }
      return `${lines.join('\n')}\n`;
    },
  };
}

/** One `count` or `observe` call, recorded to be replayed on another thread's metrics. */
export type MetricOperation =
  | { kind: 'count'; name: CounterName; labels: Labels; value: number }
  | { kind: 'observe'; name: HistogramName; labels: Labels; value: number };

/** Metrics that only record the calls (a governance worker's, sent back with each request). */
export function createMetricsRecorder(): ProxyMetrics & { operations: MetricOperation[] } {
  const operations: MetricOperation[] = [];
  return {
    operations,
    count(name, labels, value = 1) {
      operations.push({ kind: 'count', name, labels, value });
    },
    observe(name, labels, seconds) {
      operations.push({ kind: 'observe', name, labels, value: seconds });
    },
    render: () => '',
  };
}

export function replayMetrics(metrics: ProxyMetrics, operations: readonly MetricOperation[]): void {
  for (const operation of operations) {
    if (operation.kind === 'count') metrics.count(operation.name, operation.labels, operation.value);
    else metrics.observe(operation.name, operation.labels, operation.value);
  }
}
