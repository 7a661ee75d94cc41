/**
 * MCP's stdio transport: newline-delimited JSON-RPC read from `input`, each answer written as
 * one line, in order. Resolves when `input` ends (the client closed it) and every answer is out.
 */
import { createInterface } from 'node:readline';
import type { Readable } from 'node:stream';
import type { McpServer } from './mcp-server.js';

export async function serveMcpLines(
  server: McpServer,
  input: Readable,
  write: (text: string) => void,
): Promise<void> {
  const lines = createInterface({ input, crlfDelay: Number.POSITIVE_INFINITY });
  for await (const line of lines) {
    const answer = await server.handleLine(line);
    if (answer !== undefined) write(`${answer}\n`);
  }
}
