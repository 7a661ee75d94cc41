/**
 * Weighted logistic regression, small and deterministic: features are standardized, then the
 * weights are fitted by Newton's method (iteratively reweighted least squares) with an L2 penalty.
 * Same data, same model, on any machine.
 */

export interface LogisticFit {
  mean: number[];
  scale: number[];
  /** Weights of the standardized features. */
  weights: number[];
  bias: number;
  iterations: number;
}

export interface FitOptions {
  /** L2 penalty on the weights, per unit of total sample weight (default 1e-4). */
  l2?: number;
  /** At most this many Newton steps (default 30). */
  maxIterations?: number;
}

/** The logistic function, safe at the extremes. */
export function sigmoid(z: number): number {
  if (z >= 0) return 1 / (1 + Math.exp(-z));
  const e = Math.exp(z);
  return e / (1 + e);
}

/** P(y = 1 | x) under a fitted model. */
export function predictLogistic(model: Omit<LogisticFit, 'iterations'>, x: readonly number[]): number {
  let z = model.bias;
  for (let index = 0; index < model.weights.length; index += 1)
    z += model.weights[index]! * (((x[index] ?? 0) - model.mean[index]!) / model.scale[index]!);
  return sigmoid(z);
}

/** Fit on rows `x` with labels `y` (0 or 1) and sample weights `w` (default 1 each). */
export function fitLogistic(
  x: readonly (readonly number[])[],
  y: readonly number[],
  w: readonly number[] | undefined = undefined,
  options: FitOptions = {},
): LogisticFit {
  const rows = x.length;
  if (rows === 0 || y.length !== rows)
    throw new Error('fitLogistic needs as many labels as rows, and at least one');
  const width = x[0]!.length;
  const weightOf = (row: number) => w?.[row] ?? 1;
  let total = 0;
  const mean = new Array<number>(width).fill(0);
  for (let row = 0; row < rows; row += 1) {
    total += weightOf(row);
    for (let column = 0; column < width; column += 1) mean[column]! += weightOf(row) * x[row]![column]!;
  }
  for (let column = 0; column < width; column += 1) mean[column]! /= total;
  const scale = new Array<number>(width).fill(0);
  for (let row = 0; row < rows; row += 1)
    for (let column = 0; column < width; column += 1)
      scale[column]! += weightOf(row) * (x[row]![column]! - mean[column]!) ** 2;
  for (let column = 0; column < width; column += 1) {
    const deviation = Math.sqrt(scale[column]! / total);
    // A constant feature keeps weight 0 and must not divide by zero.
    scale[column] = deviation > 1e-9 ? deviation : 1;
  }
  const z = x.map((row) => row.map((value, column) => (value - mean[column]!) / scale[column]!));
  const l2 = (options.l2 ?? 1e-4) * total;
  // Parameters: the bias (index 0), then one weight per feature.
  const beta = new Array<number>(width + 1).fill(0);
  let iterations = 0;
  for (; iterations < (options.maxIterations ?? 30); iterations += 1) {
    const gradient = new Array<number>(width + 1).fill(0);
    const hessian = Array.from({ length: width + 1 }, () => new Array<number>(width + 1).fill(0));
    for (let row = 0; row < rows; row += 1) {
      const features = z[row]!;
      let linear = beta[0]!;
      for (let column = 0; column < width; column += 1) linear += beta[column + 1]! * features[column]!;
      const p = sigmoid(linear);
      const weight = weightOf(row);
      const residual = weight * (y[row]! - p);
      const curvature = weight * p * (1 - p);
      for (let i = 0; i <= width; i += 1) {
        const xi = i === 0 ? 1 : features[i - 1]!;
        gradient[i]! += residual * xi;
        for (let j = 0; j <= i; j += 1) hessian[i]![j]! += curvature * xi * (j === 0 ? 1 : features[j - 1]!);
      }
    }
    for (let i = 0; i <= width; i += 1) {
      for (let j = 0; j < i; j += 1) hessian[j]![i] = hessian[i]![j]!;
      if (i > 0) {
        gradient[i]! -= l2 * beta[i]!;
        hessian[i]![i]! += l2;
      }
      hessian[i]![i]! += 1e-9;
    }
    const step = solve(hessian, gradient);
    let largest = 0;
    for (let i = 0; i <= width; i += 1) {
      beta[i]! += step[i]!;
      largest = Math.max(largest, Math.abs(step[i]!));
    }
    if (largest < 1e-7) {
      iterations += 1;
      break;
    }
  }
  return { mean, scale, weights: beta.slice(1), bias: beta[0]!, iterations };
}

/** Solve `a · x = b` by Gaussian elimination with partial pivoting (a is small and dense). */
function solve(a: number[][], b: number[]): number[] {
  const n = b.length;
  const m = a.map((row, index) => [...row, b[index]!]);
  for (let column = 0; column < n; column += 1) {
    let pivot = column;
    for (let row = column + 1; row < n; row += 1)
      if (Math.abs(m[row]![column]!) > Math.abs(m[pivot]![column]!)) pivot = row;
    [m[column], m[pivot]] = [m[pivot]!, m[column]!];
    const lead = m[column]![column]!;
    if (Math.abs(lead) < 1e-15) continue;
    for (let row = column + 1; row < n; row += 1) {
      const factor = m[row]![column]! / lead;
      if (factor === 0) continue;
      for (let k = column; k <= n; k += 1) m[row]![k]! -= factor * m[column]![k]!;
    }
  }
  const x = new Array<number>(n).fill(0);
  for (let row = n - 1; row >= 0; row -= 1) {
    const lead = m[row]![row]!;
    if (Math.abs(lead) < 1e-15) continue;
    let sum = m[row]![n]!;
    for (let k = row + 1; k < n; k += 1) sum -= m[row]![k]! * x[k]!;
    x[row] = sum / lead;
  }
  return x;
}

/** Area under the ROC curve of scores against 0/1 labels (weighted; ties count half). */
export function rocAuc(
  scores: readonly number[],
  labels: readonly number[],
  weights?: readonly number[],
): number {
  const order = scores.map((_score, index) => index).sort((a, b) => scores[a]! - scores[b]!);
  let positives = 0;
  let negatives = 0;
  for (let index = 0; index < labels.length; index += 1) {
    if (labels[index] === 1) positives += weights?.[index] ?? 1;
    else negatives += weights?.[index] ?? 1;
  }
  if (positives === 0 || negatives === 0) return Number.NaN;
  let area = 0;
  let negativesBelow = 0;
  for (let start = 0; start < order.length; ) {
    let end = start;
    let tiePositives = 0;
    let tieNegatives = 0;
    while (end < order.length && scores[order[end]!] === scores[order[start]!]) {
      const index = order[end]!;
      if (labels[index] === 1) tiePositives += weights?.[index] ?? 1;
      else tieNegatives += weights?.[index] ?? 1;
      end += 1;
    }
    area += tiePositives * (negativesBelow + tieNegatives / 2);
    negativesBelow += tieNegatives;
    start = end;
  }
  return area / (positives * negatives);
}
