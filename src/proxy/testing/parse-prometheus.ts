/**
 * A strict reader of the Prometheus text format for tests and the load script: it fails on any
 * line that is not a comment or a well-formed sample, and on samples of an undeclared metric.
 */

export interface Sample {
  name: string;
  labels: Record<string, string>;
  value: number;
}

const SAMPLE = /^([a-zA-Z_:][a-zA-Z0-9_:]*)(?:\{(.*)\})? (-?(?:\d+(?:\.\d+)?(?:e[+-]?\d+)?|\+Inf|NaN))$/;
const LABEL = /([a-zA-Z_][a-zA-Z0-9_]*)="((?:[^"\\]|\\.)*)"(?:,|$)/gy;

function parseLabels(text: string, line: string): Record<string, string> {
  const labels: Record<string, string> = {};
  LABEL.lastIndex = 0;
  let consumed = 0;
  for (let match = LABEL.exec(text); match !== null; match = LABEL.exec(text)) {
    labels[match[1]!] = match[2]!.replace(/\\n/g, '\n').replace(/\\"/g, '"').replace(/\\\\/g, '\\');
    consumed = LABEL.lastIndex;
  }
  if (consumed !== text.length) throw new Error(`bad labels in: ${line}`);
  return labels;
}

export function parsePrometheus(text: string): Sample[] {
  const declared = new Map<string, string>();
  const samples: Sample[] = [];
  for (const line of text.split('\n')) {
    if (line === '') continue;
    const type = /^# TYPE (\S+) (counter|gauge|histogram|summary|untyped)$/.exec(line);
    if (type) {
      declared.set(type[1]!, type[2]!);
      continue;
    }
    if (line.startsWith('# HELP ') || line.startsWith('#')) continue;
    const match = SAMPLE.exec(line);
    if (!match) throw new Error(`not a sample: ${line}`);
    const name = match[1]!;
    const family = declared.has(name) ? name : name.replace(/_(bucket|sum|count)$/, '');
    if (!declared.has(family)) throw new Error(`sample of an undeclared metric: ${line}`);
    const value = match[3] === '+Inf' ? Number.POSITIVE_INFINITY : Number(match[3]);
    samples.push({ name, labels: parseLabels(match[2] ?? '', line), value });
  }
  return samples;
}

/** The sum of every sample of `name` whose labels include `labels`. */
export function sampleSum(
  samples: readonly Sample[],
  name: string,
  labels: Record<string, string> = {},
): number {
  return samples
    .filter((sample) => sample.name === name)
    .filter((sample) => Object.entries(labels).every(([key, value]) => sample.labels[key] === value))
    .reduce((sum, sample) => sum + sample.value, 0);
}
