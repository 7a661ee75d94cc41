/**
 * The SDKs are optional: an application that uses only the OpenAI wrapper must not need `ai` or
 * `@anthropic-ai/sdk` installed. So the integrations import SDK types, never SDK values.
 */
import { readdirSync, readFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';

const folder = dirname(fileURLToPath(import.meta.url));
const SDK = /^(openai|@anthropic-ai\/sdk|ai|@ai-sdk\/[\w-]+)(\/|$)/;

describe('integrations', () => {
  it('import SDK types only', () => {
    const sources = readdirSync(folder).filter((name) => name.endsWith('.ts') && !name.endsWith('.test.ts'));
    const imports = sources.flatMap((name) =>
      [
        ...readFileSync(join(folder, name), 'utf8').matchAll(
          /^(import|export)(\s+type)?\b[^;]*?from\s+'([^']+)'/gm,
        ),
      ]
        .filter((match) => SDK.test(match[3]!))
        .map((match) => ({ file: name, module: match[3], typeOnly: match[2] !== undefined })),
    );
    expect(imports.length).toBeGreaterThanOrEqual(3);
    expect(imports.filter((entry) => !entry.typeOnly)).toEqual([]);
  });
});
