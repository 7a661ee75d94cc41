import type { Rate } from './eval-summary.js';

/** A rate with its Wilson score 95% interval (z = 1.96). */
export function wilson(hits: number, total: number): Rate {
  if (total === 0) return { hits, total, value: 0, low: 0, high: 0 };
  const z = 1.96;
  const p = hits / total;
  const denominator = 1 + (z * z) / total;
  const centre = (p + (z * z) / (2 * total)) / denominator;
  const margin = (z * Math.sqrt((p * (1 - p)) / total + (z * z) / (4 * total * total))) / denominator;
  return { hits, total, value: p, low: Math.max(0, centre - margin), high: Math.min(1, centre + margin) };
}
