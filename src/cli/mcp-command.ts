/**
 * `selfgc mcp`: an MCP server on stdin/stdout through which an agent recovers what Self-GC
 * removed from its context, for one session of a store.
 */
import { existsSync, readFileSync } from 'node:fs';
import { resolve } from 'node:path';
import type { Readable } from 'node:stream';
import { BadInputError } from '../core/errors.js';
import { createGovernor } from '../core/governor/create-governor.js';
import { createMcpServer, DEFAULT_PAGE_CHARS, MAX_PAGE_CHARS, serveMcpLines } from '../mcp/index.js';
import { hashApiKey } from '../proxy/session-identity.js';
import { createStoreFromUrl } from '../stores/parse-store-url.js';
import type { CliIo } from './cli-io.js';

export const MCP_HELP = `Usage: selfgc mcp --session ID [options]

A Model Context Protocol server on stdin/stdout (one JSON-RPC message per line) through which
an agent recovers what Self-GC folded, masked or pruned out of its context, for one session of
a store. Tools: expand (the exact content of an object by the id its placeholder names, in pages
of ${DEFAULT_PAGE_CHARS.toLocaleString('en-US')} characters by default, max_chars up to ${MAX_PAGE_CHARS.toLocaleString('en-US')}; a cut-off page says the offset
of the next) and search_context (full-text search over removed content).

  --store URL          the store the proxy or the library writes, as for selfgc proxy:
                       sqlite:/abs/path/selfgc.db (default sqlite:./selfgc.db; the file must
                       exist, and a relative path is read from the directory the agent starts
                       this server in), redis://..., postgres://...
  --session ID         the session. Alone: the store's session id as is (the id a library
                       governor was given, or <keyHash>:<sessionId> for the proxy). With
                       --key-hash or --api-key-env: the proxy's session id, which it answers
                       in the x-selfgc-session header (or which the client sets in it)
  --key-hash H         the proxy's hash of the client's API key (32 hex characters)
  --api-key-env NAME   hash the API key held in environment variable NAME, as the proxy does

Logs go to stderr. The server exits when stdin closes.
`;

export interface McpSessionFlags {
  session?: string;
  keyHash?: string;
  apiKeyEnv?: string;
}

/** The store session id the flags name. */
export function storeSessionOf(
  flags: McpSessionFlags,
  env: Readonly<Record<string, string | undefined>>,
): string {
  const { session, keyHash, apiKeyEnv } = flags;
  if (session === undefined || session.trim() === '')
    throw new BadInputError('mcp needs --session ID (see selfgc mcp --help)');
  if (keyHash !== undefined && apiKeyEnv !== undefined)
    throw new BadInputError('give --key-hash or --api-key-env, not both');
  if (keyHash !== undefined) {
    if (!/^[0-9a-f]{32}$/.test(keyHash))
      throw new BadInputError(`--key-hash must be 32 lowercase hex characters, got "${keyHash}"`);
    return `${keyHash}:${session}`;
  }
  if (apiKeyEnv !== undefined) {
    const key = env[apiKeyEnv];
    if (key === undefined || key === '')
      throw new BadInputError(`--api-key-env ${apiKeyEnv}: the variable is not set`);
    return `${hashApiKey(new Headers({ authorization: `Bearer ${key}` }))}:${session}`;
  }
  return session;
}

/** A SQLite store file must exist: a path read from another directory would open an empty store. */
function requireStoreFile(store: string, cwd: string): void {
  const path = /^sqlite:(?:\/\/)?(.*)$/i.exec(store)?.[1];
  if (path === undefined || path === '' || path === ':memory:') return;
  if (!existsSync(resolve(cwd, path)))
    throw new BadInputError(
      `--store ${store}: no such file in ${cwd} (give the path the proxy writes, preferably absolute)`,
    );
}

function packageVersion(): string {
  try {
    const text = readFileSync(new URL('../../package.json', import.meta.url), 'utf8');
    const version: unknown = (JSON.parse(text) as { version?: unknown }).version;
    return typeof version === 'string' ? version : 'unknown';
  } catch {
    return 'unknown';
  }
}

export interface McpCommandOptions {
  store: string;
  /** The store session id. */
  sessionId: string;
}

export async function mcpCommand(io: CliIo, options: McpCommandOptions, input: Readable): Promise<number> {
  requireStoreFile(options.store, io.cwd);
  const store = await createStoreFromUrl(options.store);
  try {
    // expand and searchContext only read the sidecar: the provider and window are never used.
    const governor = createGovernor({ provider: 'openai', window: 128_000, store });
    const known = (await store.readSession(options.sessionId)) !== undefined;
    io.stderr(
      known
        ? `selfgc mcp: session ${options.sessionId} (store ${store.kind})\n`
        : `selfgc mcp: session ${options.sessionId} is not in this ${store.kind} store yet; expand finds nothing until something of it is folded\n`,
    );
    const server = createMcpServer({
      source: governor,
      sessionId: options.sessionId,
      version: packageVersion(),
    });
    await serveMcpLines(server, input, io.stdout);
  } finally {
    await store.close();
  }
  return 0;
}
