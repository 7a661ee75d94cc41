import { readdirSync, readFileSync } from 'node:fs';
import { join, relative } from 'node:path';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';
import * as adapters from './index.js';

const root = fileURLToPath(new URL('.', import.meta.url));

function sourceFiles(dir: string): string[] {
  return readdirSync(dir, { withFileTypes: true }).flatMap((entry) => {
    const path = join(dir, entry.name);
    if (entry.isDirectory()) return entry.name === 'fixtures' ? [] : sourceFiles(path);
    return entry.name.endsWith('.ts') && !entry.name.endsWith('.test.ts') && !entry.name.endsWith('.case.ts')
      ? [path]
      : [];
  });
}

function importsOf(file: string): string[] {
  const text = readFileSync(file, 'utf8');
  return [...text.matchAll(/^\s*(?:import|export)\s(?!type\b)[^'"]*?from\s+'([^']+)'/gm)].map(
    (match) => match[1] ?? '',
  );
}

describe('adapter layering', () => {
  it('adapters import no provider SDK at runtime, only zod, node built-ins, the core and each other', () => {
    for (const file of sourceFiles(root)) {
      for (const specifier of importsOf(file)) {
        const allowed =
          specifier === 'zod' ||
          specifier === 'fast-check' ||
          specifier.startsWith('node:') ||
          specifier.startsWith('./') ||
          specifier.startsWith('../core/') ||
          specifier.startsWith('../../core/') ||
          (specifier.startsWith('../') && !specifier.startsWith('../../'));
        expect(allowed, `${relative(root, file)} imports ${specifier}`).toBe(true);
      }
    }
  });

  it('the index exposes every conversion', () => {
    const names = [
      'fromOpenAIChat',
      'toOpenAIChat',
      'fromOpenAIResponses',
      'toOpenAIResponses',
      'fromAnthropicMessages',
    ];
    const more = [
      'toAnthropicMessages',
      'fromModelMessages',
      'toModelMessages',
      'normalizeTranscript',
      'parseSessionLine',
    ];
    for (const name of [...names, ...more])
      expect(typeof (adapters as Record<string, unknown>)[name], name).toBe('function');
  });
});
