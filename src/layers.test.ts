/**
 * The layers of STYLE.md, read from the imports: the core imports no edge, edges of one tier
 * never import each other, and only the cli wires everything together.
 */
import { readdirSync, readFileSync } from 'node:fs';
import { dirname, join, relative, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';

const root = dirname(fileURLToPath(import.meta.url));

/** What each top-level folder of src/ may import besides itself. */
const ALLOWED: Record<string, readonly string[]> = {
  core: [],
  tokenizers: ['core'],
  stores: ['core'],
  adapters: ['core'],
  // The fork planner writes the agent's view with the adapters the proxy writes it with: a second
  // writer would drift from them byte by byte, and the fork would miss the agent's prompt cache.
  llm: ['core', 'adapters'],
  testing: ['core', 'adapters'],
  eval: ['core', 'tokenizers', 'stores', 'adapters', 'llm'],
  proxy: ['core', 'tokenizers', 'stores', 'adapters', 'llm'],
  integrations: ['core', 'tokenizers', 'stores', 'adapters', 'llm'],
  mcp: ['core', 'stores'],
  cli: ['core', 'tokenizers', 'stores', 'adapters', 'llm', 'eval', 'proxy', 'integrations', 'mcp'],
};
/** Tests may use real implementations as fixtures (a memory store, a real tokenizer, adapters). */
const TEST_ONLY = ['testing', 'stores', 'tokenizers', 'adapters'];

function sourceFiles(folder: string): string[] {
  return readdirSync(folder, { withFileTypes: true }).flatMap((entry) => {
    const path = join(folder, entry.name);
    if (entry.isDirectory()) return entry.name === 'fixtures' ? [] : sourceFiles(path);
    return entry.name.endsWith('.ts') ? [path] : [];
  });
}

function layerOf(path: string): string | undefined {
  const first = relative(root, path).split('/')[0];
  return first && !first.endsWith('.ts') ? first : undefined;
}

describe('layers', () => {
  const files = sourceFiles(root).filter((file) => layerOf(file) !== undefined);

  it('knows every folder of src/', () => {
    const layers = new Set(files.map(layerOf));
    for (const layer of layers) expect(Object.keys(ALLOWED), `unknown layer ${layer}`).toContain(layer);
  });

  it('has no import that crosses a layer the wrong way', () => {
    const violations: string[] = [];
    for (const file of files) {
      const layer = layerOf(file)!;
      const isTest = /\.(test|case)\.ts$/.test(file) || file.includes('/testing/');
      const text = readFileSync(file, 'utf8');
      for (const match of text.matchAll(/^\s*(?:import|export)[^'"]*?from\s+['"](\.[^'"]+)['"]/gm)) {
        const target = layerOf(resolve(dirname(file), match[1]!));
        if (!target || target === layer) continue;
        const allowed = ALLOWED[layer] ?? [];
        if (allowed.includes(target) || (isTest && TEST_ONLY.includes(target))) continue;
        violations.push(`${relative(root, file)} imports ${target} (${match[1]})`);
      }
    }
    expect(violations).toEqual([]);
  });

  it('keeps the core free of I/O and SDKs', () => {
    const io =
      /from ['"](node:(fs|http|https|net|child_process|worker_threads)|better-sqlite3|ioredis|pg|openai|@anthropic-ai\/sdk|ai|gpt-tokenizer)['"]/;
    const offenders = files.filter(
      (file) => layerOf(file) === 'core' && !file.endsWith('.test.ts') && io.test(readFileSync(file, 'utf8')),
    );
    expect(offenders.map((file) => relative(root, file))).toEqual([]);
  });
});
