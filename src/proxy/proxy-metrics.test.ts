import { describe, expect, it } from 'vitest';
import { createProxyMetrics } from './proxy-metrics.js';
import { parsePrometheus, sampleSum } from './testing/parse-prometheus.js';

describe('createProxyMetrics', () => {
  it('renders seeded per-arm counters before any traffic', () => {
    const samples = parsePrometheus(createProxyMetrics().render());
    for (const arm of ['governed', 'control']) {
      expect(samples).toContainEqual({ name: 'selfgc_proxy_input_tokens_total', labels: { arm }, value: 0 });
      expect(samples).toContainEqual({ name: 'selfgc_proxy_fail_open_total', labels: { arm }, value: 0 });
    }
  });

  it('adds counters per label set and escapes label values', () => {
    const metrics = createProxyMetrics();
    metrics.count('selfgc_proxy_input_tokens_total', { arm: 'governed' }, 120);
    metrics.count('selfgc_proxy_input_tokens_total', { arm: 'governed' }, 30);
    metrics.count('selfgc_proxy_input_tokens_total', { arm: 'control' }, 7);
    metrics.count('selfgc_proxy_errors_total', { arm: 'control', code: 'odd "code"\\x' });
    const samples = parsePrometheus(metrics.render());
    expect(sampleSum(samples, 'selfgc_proxy_input_tokens_total', { arm: 'governed' })).toBe(150);
    expect(sampleSum(samples, 'selfgc_proxy_input_tokens_total', { arm: 'control' })).toBe(7);
    expect(samples).toContainEqual({
      name: 'selfgc_proxy_errors_total',
      labels: { arm: 'control', code: 'odd "code"\\x' },
      value: 1,
    });
  });

  it('keeps histogram buckets cumulative with matching _count and _sum', () => {
    const metrics = createProxyMetrics();
    for (const seconds of [0.0004, 0.003, 0.003, 2, 1000]) {
      metrics.observe('selfgc_proxy_upstream_seconds', { arm: 'governed', route: 'chat' }, seconds);
    }
    const samples = parsePrometheus(metrics.render());
    const buckets = samples.filter((sample) => sample.name === 'selfgc_proxy_upstream_seconds_bucket');
    const counts = buckets.map((sample) => sample.value);
    expect(counts).toEqual([...counts].sort((left, right) => left - right));
    expect(buckets.find((sample) => sample.labels.le === '0.005')?.value).toBe(3);
    expect(buckets.find((sample) => sample.labels.le === '+Inf')?.value).toBe(5);
    expect(sampleSum(samples, 'selfgc_proxy_upstream_seconds_count')).toBe(5);
    expect(sampleSum(samples, 'selfgc_proxy_upstream_seconds_sum')).toBeCloseTo(1002.0064, 6);
  });
});
