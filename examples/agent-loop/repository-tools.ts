/**
 * The example agent's working tools, over a real repository: `read_file` returns a file's exact
 * bytes, `ls` and `grep` run the real commands. Paths are relative to the repository root and
 * may not leave it.
 */
import { execFile } from 'node:child_process';
import { readFile } from 'node:fs/promises';
import { relative, resolve } from 'node:path';
import { promisify } from 'node:util';
import type { ChatCompletionFunctionTool } from 'openai/resources/chat/completions';

const run = promisify(execFile);

/** Most lines of `grep` output shown; the rest are counted. */
const GREP_LINES = 25;

function tool(
  name: string,
  description: string,
  properties: Record<string, { type: string; description: string }>,
) {
  return {
    type: 'function',
    function: {
      name,
      description,
      parameters: {
        type: 'object',
        properties,
        required: Object.keys(properties),
        additionalProperties: false,
      },
    },
  } satisfies ChatCompletionFunctionTool;
}

/** OpenAI Chat `tools` entries for the three working tools. */
export const repositoryToolDefinitions: ChatCompletionFunctionTool[] = [
  tool('read_file', 'Read a file of the repository, exactly.', {
    path: { type: 'string', description: 'Path relative to the repository root.' },
  }),
  tool('ls', 'List a directory of the repository (`ls -p`).', {
    path: { type: 'string', description: 'Directory relative to the repository root.' },
  }),
  tool('grep', `Search TypeScript files under a directory (\`grep -rn\`); at most ${GREP_LINES} lines.`, {
    pattern: { type: 'string', description: 'A basic regular expression.' },
    path: { type: 'string', description: 'Directory relative to the repository root.' },
  }),
];

export interface RepositoryTools {
  handles(name: string): boolean;
  /** The tool's output; a failure comes back as `error: …` text, as a real tool would print it. */
  run(name: string, argumentsText: string): Promise<string>;
}

export function createRepositoryTools(root: string): RepositoryTools {
  const inside = (path: unknown): string => {
    if (typeof path !== 'string' || path === '') throw new Error('path is required');
    const absolute = resolve(root, path);
    const rel = relative(root, absolute);
    if (rel.startsWith('..') || resolve(root, rel) !== absolute)
      throw new Error(`${path} is outside the repository`);
    return rel === '' ? '.' : rel;
  };
  const tools: Record<string, (args: Record<string, unknown>) => Promise<string>> = {
    read_file: (args) => readFile(resolve(root, inside(args.path)), 'utf8'),
    ls: async (args) => (await run('ls', ['-p', inside(args.path)], { cwd: root })).stdout,
    grep: async (args) => {
      const pattern = typeof args.pattern === 'string' ? args.pattern : '';
      try {
        const { stdout } = await run('grep', ['-rn', '--include=*.ts', '-e', pattern, inside(args.path)], {
          cwd: root,
          maxBuffer: 16 * 1024 * 1024,
        });
        const lines = stdout.trimEnd().split('\n');
        const rest = lines.length - GREP_LINES;
        return [...lines.slice(0, GREP_LINES), ...(rest > 0 ? [`… ${rest} more matching lines`] : [])].join(
          '\n',
        );
      } catch (error) {
        // grep exits with 1 when nothing matches.
        if ((error as { code?: unknown }).code === 1) return 'no matches';
        throw error;
      }
    },
  };
  return {
    handles: (name) => Object.hasOwn(tools, name),
    async run(name, argumentsText) {
      try {
        const args = JSON.parse(argumentsText) as Record<string, unknown>;
        const handler = tools[name];
        if (!handler) return `error: unknown tool ${name}`;
        return await handler(args);
      } catch (error) {
        return `error: ${name} failed: ${error instanceof Error ? error.message : String(error)}`;
      }
    },
  };
}
