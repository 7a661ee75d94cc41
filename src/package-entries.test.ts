/**
 * The package's entries (STYLE.md "Named exports, cheap imports"): each lists what it exports by
 * name, and importing one loads no tokenizer table — those load on the first count.
 */
import { existsSync, readFileSync } from 'node:fs';
import { dirname, join, relative, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { describe, expect, it, vi } from 'vitest';

vi.mock(import('./tokenizers/load-encoding.js'), async (importOriginal) => {
  const actual = await importOriginal();
  return {
    ...actual,
    loadEncoding: vi.fn(actual.loadEncoding),
    loadEncodingSync: vi.fn(actual.loadEncodingSync),
  };
});

const root = dirname(fileURLToPath(import.meta.url));
const packageJson = JSON.parse(readFileSync(resolve(root, '../package.json'), 'utf8')) as {
  exports: Record<string, string | { import?: string }>;
};

/** The source file of every `import` entry of package.json, the CLI and the governance worker. */
function entryFiles(): string[] {
  const built = Object.values(packageJson.exports).flatMap((target) =>
    typeof target === 'object' && target.import ? [target.import] : [],
  );
  const sources = built.map((path) => resolve(root, path.replace(/^\.\/dist\//, '').replace(/\.js$/, '.ts')));
  return [...sources, join(root, 'cli/run-main.ts'), join(root, 'proxy/governance-worker.ts')];
}

/** Specifiers a module loads when it is imported: static imports and re-exports that survive compilation. */
function runtimeImportsOf(file: string): string[] {
  const text = readFileSync(file, 'utf8');
  const specifiers = [
    ...text.matchAll(/^\s*(?:import|export)\s(?!type\b)[^'"]*?from\s+'([^']+)'/gm),
    ...text.matchAll(/^\s*import\s+'([^']+)'/gm),
  ];
  return specifiers.map((match) => match[1]!);
}

/** Every package a module graph loads at import, each with the first module that brought it in. */
function packagesLoadedBy(entry: string): Map<string, string> {
  const packages = new Map<string, string>();
  const seen = new Set<string>();
  const pending = [entry];
  while (pending.length > 0) {
    const file = pending.pop()!;
    if (seen.has(file)) continue;
    seen.add(file);
    for (const specifier of runtimeImportsOf(file)) {
      if (specifier.startsWith('.')) {
        const target = resolve(dirname(file), specifier.replace(/\.js$/, '.ts'));
        expect(existsSync(target), `${relative(root, file)} imports ${specifier}`).toBe(true);
        pending.push(target);
      } else if (!specifier.startsWith('node:') && !packages.has(specifier)) {
        packages.set(specifier, relative(root, file));
      }
    }
  }
  return packages;
}

describe('package entries', () => {
  it('finds every entry of package.json', () => {
    const entries = entryFiles();
    expect(entries.length).toBeGreaterThanOrEqual(12);
    for (const entry of entries) expect(existsSync(entry), entry).toBe(true);
  });

  it('list their exports by name', () => {
    const starred = entryFiles().filter((entry) => /^\s*export\s+\*/m.test(readFileSync(entry, 'utf8')));
    expect(starred.map((entry) => relative(root, entry))).toEqual([]);
  });

  it('import no tokenizer table: gpt-tokenizer is not in any entry module graph', () => {
    const offenders = entryFiles().flatMap((entry) =>
      [...packagesLoadedBy(entry)]
        .filter(([name]) => name === 'gpt-tokenizer' || name.startsWith('gpt-tokenizer/'))
        .map(([name, by]) => `${relative(root, entry)} loads ${name} (through ${by})`),
    );
    expect(offenders).toEqual([]);
  });

  it('load a table on the first count, not at import or when a counter is made', async () => {
    const { loadEncoding, loadEncodingSync } = await import('./tokenizers/load-encoding.js');
    const selfGc = await import('./index.js');
    expect(loadEncodingSync).not.toHaveBeenCalled();
    expect(loadEncoding).not.toHaveBeenCalled();

    const counter = selfGc.createTokenCounter('o200k_base');
    const anthropic = selfGc.tokenCounterForProvider('anthropic');
    expect(counter.count('')).toBe(0);
    expect(loadEncodingSync).not.toHaveBeenCalled();

    expect(counter.count('hello world')).toBe(2);
    expect(counter.count('Hello, world!')).toBe(4);
    expect(vi.mocked(loadEncodingSync).mock.calls).toEqual([['o200k_base']]);

    const loaded = await selfGc.loadTokenCounter('cl100k_base');
    expect(vi.mocked(loadEncoding).mock.calls).toEqual([['cl100k_base']]);
    expect(loaded.count('日本語')).toBe(4);
    // The Anthropic estimate counts with the table cl100k_base already loaded.
    expect(anthropic.count('日本語')).toBe(Math.ceil(4 * selfGc.ANTHROPIC_SCALE));
    expect(vi.mocked(loadEncodingSync).mock.calls).toEqual([['o200k_base'], ['cl100k_base']]);
  });
});
