/**
 * The judges share no code with what the governor keeps: everything a judge runs, followed
 * through its imports, stays in this folder, the transcript's reading of messages and the BPE
 * tables. Types (the ledger's, the view's) may come from the core, since they carry no
 * behaviour, but not from the modules that build the index or render what the governor keeps.
 */
import { existsSync, readdirSync, readFileSync } from 'node:fs';
import { dirname, join, relative, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';

const judges = dirname(fileURLToPath(import.meta.url));
const src = resolve(judges, '../..');

/**
 * Modules outside this folder whose code a judge may run: reading a message is not index
 * building, and a BPE table (the rare-token judge's vocabulary) decides nothing the governor keeps.
 */
const SHARED_CODE = new Set(['core/transcript.ts', 'tokenizers/load-encoding.ts']);
/** Modules a judge may not import at all, not even for a type. */
const FORBIDDEN = new Set(['core/anchors.ts', 'core/render-replacement.ts']);

interface ImportEdge {
  specifier: string;
  typeOnly: boolean;
}

const STATIC_IMPORT = /^\s*(?:import|export)\s+(type\s+)?([^'";]*?)\s*from\s+['"]([^'"]+)['"]/gm;
const BARE_IMPORT = /^\s*import\s+['"]([^'"]+)['"]/gm;
const DYNAMIC_IMPORT = /\bimport\(\s*['"]([^'"]+)['"]\s*\)/g;

/** A statement is type-only when it says `import type`, or when every name it brings is `type X`. */
function isTypeOnly(keyword: string | undefined, clause: string): boolean {
  if (keyword) return true;
  const names = clause.match(/^\{([\s\S]*)\}$/)?.[1];
  if (names === undefined) return false;
  const specifiers = names
    .split(',')
    .map((name) => name.trim())
    .filter(Boolean);
  return specifiers.length > 0 && specifiers.every((name) => name.startsWith('type '));
}

function importsOf(source: string): ImportEdge[] {
  const edges: ImportEdge[] = [];
  for (const match of source.matchAll(STATIC_IMPORT))
    edges.push({ specifier: match[3]!, typeOnly: isTypeOnly(match[1], match[2]!.trim()) });
  for (const match of source.matchAll(BARE_IMPORT)) edges.push({ specifier: match[1]!, typeOnly: false });
  for (const match of source.matchAll(DYNAMIC_IMPORT)) edges.push({ specifier: match[1]!, typeOnly: false });
  return edges;
}

/** The source file a relative specifier names (`./x.js` is `./x.ts`), or undefined for a package. */
function resolveSource(from: string, specifier: string): string | undefined {
  if (!specifier.startsWith('.')) return undefined;
  const target = resolve(dirname(from), specifier);
  const typescript = target.replace(/\.js$/, '.ts');
  return existsSync(typescript) ? typescript : target;
}

function judgeModules(): string[] {
  return readdirSync(judges)
    .filter((name) => name.endsWith('.ts') && !name.endsWith('.test.ts'))
    .map((name) => join(judges, name));
}

/** Every problem found following the code a judge runs, as `file: reason` lines. */
function violations(): string[] {
  const found: string[] = [];
  const visited = new Set<string>();
  const pending = judgeModules();
  // Bounded by the number of source files: each is read once.
  while (pending.length > 0) {
    const file = pending.pop()!;
    if (visited.has(file)) continue;
    visited.add(file);
    const name = relative(src, file);
    for (const edge of importsOf(readFileSync(file, 'utf8'))) {
      const target = resolveSource(file, edge.specifier);
      // A package (node:module, gpt-tokenizer) is not the governor's code.
      if (target === undefined) continue;
      const targetName = relative(src, target);
      if (FORBIDDEN.has(targetName)) found.push(`${name}: imports ${targetName}`);
      else if (edge.typeOnly) continue;
      else if (target.startsWith(`${judges}/`) || SHARED_CODE.has(targetName)) pending.push(target);
      else found.push(`${name}: runs code of ${targetName}`);
    }
  }
  return found;
}

describe('judge imports', () => {
  it('finds the judge modules', () => {
    expect(judgeModules().map((file) => relative(judges, file))).toEqual(
      expect.arrayContaining(['anchor-extractor.ts', 'anchor-judge.ts', 'rare-token-judge.ts']),
    );
  });

  it('runs no code of the core but the transcript reading, and imports no index building', () => {
    expect(violations()).toEqual([]);
  });

  it('tells type-only imports from value imports', () => {
    const edges = importsOf(
      [
        "import type { Ledger } from '../../core/ledger.js';",
        "import { type ViewItem } from '../../core/project-view.js';",
        "import { type Message, messageText } from '../../core/transcript.js';",
        "import { anchorValues } from '../../core/anchors.js';",
        "import '../../core/side-effect.js';",
        "const lazy = await import('../../core/render-replacement.js');",
      ].join('\n'),
    );
    expect(edges).toEqual([
      { specifier: '../../core/ledger.js', typeOnly: true },
      { specifier: '../../core/project-view.js', typeOnly: true },
      { specifier: '../../core/transcript.js', typeOnly: false },
      { specifier: '../../core/anchors.js', typeOnly: false },
      { specifier: '../../core/side-effect.js', typeOnly: false },
      { specifier: '../../core/render-replacement.js', typeOnly: false },
    ]);
  });
});
